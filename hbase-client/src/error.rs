//! Errors: one enum for everything the client can report, and a coarse [`ErrorKind`] to match on.

use std::time::Duration;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a caller can do about an error. Match on [`Error::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The region is not served where the client thought (split, moved, opening). The client
    /// relocates and retries these itself; a caller sees them only once retries run out.
    RegionMoved,
    /// A transient failure: a connection dropped, a server busy, overloaded or restarting.
    /// Trying again later may succeed.
    Retryable,
    /// The table (or another named object) does not exist.
    NotFound,
    /// The request can never succeed as sent: the server said so, or the input was invalid.
    DoNotRetry,
    /// A deadline passed: the RPC timeout, the operation timeout, or a connect timeout.
    Timeout,
    /// The client or a server could not prove who it is: a Kerberos login or SASL exchange
    /// failed, the server refused the client's credentials, or a server certificate was not
    /// trusted. Never retried: credentials or trust settings must change first.
    Authentication,
}

/// An exception raised by an HBase server, as sent in the RPC response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteException {
    /// Fully qualified Java class name, e.g. `org.apache.hadoop.hbase.NotServingRegionException`.
    pub class_name: String,
    /// The server's message and stack trace.
    pub message: String,
    /// For `RegionMovedException`: where the region is now, as `host:port`.
    pub moved_to: Option<String>,
    /// The server marked this as never worth retrying.
    pub do_not_retry: bool,
    /// The server said it is overloaded (call queue full, call dropped).
    pub server_overloaded: bool,
}

impl RemoteException {
    /// The class name without its package, e.g. `NotServingRegionException`.
    pub fn short_class_name(&self) -> &str {
        self.class_name
            .rsplit('.')
            .next()
            .unwrap_or(&self.class_name)
    }

    /// The first line of the message, which is what the server meant to say.
    pub fn first_line(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

impl std::fmt::Display for RemoteException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.short_class_name(), self.first_line())
    }
}

/// One buffered mutation that failed for good.
#[derive(Debug, thiserror::Error)]
#[error("row {}: {error}", String::from_utf8_lossy(row))]
pub struct FailedMutation {
    /// The mutation's row key.
    pub row: bytes::Bytes,
    /// Why it failed.
    pub error: Error,
}

/// Every failure the client reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The table does not exist.
    #[error("table {0} does not exist")]
    TableNotFound(String),
    /// The table is disabled: its regions stay offline until it is enabled.
    #[error("table {0} is disabled")]
    TableDisabled(String),
    /// A server raised an exception for this call.
    #[error("{server} raised {exception}")]
    Remote {
        /// The server that answered, `host:port`.
        server: String,
        /// What it raised.
        exception: RemoteException,
    },
    /// A TCP connection could not be made or failed while in use.
    #[error("connection to {addr} failed: {source}")]
    Connection {
        /// The server, `host:port`.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The connection was closed while the call was in flight, or was already closed.
    #[error("connection to {addr} closed: {reason}")]
    ConnectionClosed {
        /// The server, `host:port`.
        addr: String,
        /// Why it closed.
        reason: String,
    },
    /// A deadline passed.
    #[error("{what} timed out after {after:?}")]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The configured limit that passed.
        after: Duration,
    },
    /// ZooKeeper could not be reached or did not have what HBase should have put there.
    #[error("ZooKeeper {quorum}: {message}")]
    ZooKeeper {
        /// The quorum string used.
        quorum: String,
        /// What went wrong.
        message: String,
    },
    /// Bytes from the network did not follow HBase's protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The caller's input can never be sent (detected before sending).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The region holding the row has no server right now (being assigned, split or moved).
    #[error("region {region} is not online")]
    RegionOffline {
        /// The region name.
        region: String,
    },
    /// A master procedure (create, delete, split…) finished with a failure.
    #[error("procedure {proc_id} failed: {message}")]
    ProcedureFailed {
        /// The master's procedure id.
        proc_id: u64,
        /// The failure the master recorded.
        message: String,
    },
    /// Buffered mutations that could not be applied; every other buffered mutation was
    /// acknowledged by HBase.
    #[error("{} buffered mutations failed; first: {}", failures.len(), failures.first().map(|f| f.to_string()).unwrap_or_default())]
    MutationsFailed {
        /// Each failed mutation's row and error.
        failures: Vec<FailedMutation>,
    },
    /// Authentication failed: a Kerberos login (keytab, principal, KDC), the SASL exchange, or
    /// the server refused the client's credentials.
    #[error("authentication failed{}: {message}", server.as_deref().map(|s| format!(" with {s}")).unwrap_or_default())]
    Authentication {
        /// The server (`host:port`) when a server was involved; `None` for a local login.
        server: Option<String>,
        /// What failed, naming the principal, keytab or server principal involved.
        message: String,
    },
    /// A TLS handshake failed because a certificate was refused (an untrusted issuer, a host
    /// name mismatch, a missing or refused client certificate).
    #[error("TLS with {addr} failed: {message}")]
    Tls {
        /// The server, `host:port`.
        addr: String,
        /// What was refused and why.
        message: String,
    },
    /// The retry budget (attempts) ran out; `last` is the final attempt's error.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The error of the last attempt.
        #[source]
        last: Box<Error>,
    },
}

impl Error {
    /// What a caller can do about this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::TableNotFound(_) => ErrorKind::NotFound,
            Error::Remote { exception, .. } => remote_kind(exception),
            Error::Connection { source, .. } if source.kind() == std::io::ErrorKind::TimedOut => {
                ErrorKind::Timeout
            }
            Error::Connection { .. } | Error::ConnectionClosed { .. } => ErrorKind::Retryable,
            Error::ZooKeeper { .. } => ErrorKind::Retryable,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Protocol(_) => ErrorKind::Retryable,
            Error::RegionOffline { .. } => ErrorKind::RegionMoved,
            Error::InvalidInput(_) | Error::ProcedureFailed { .. } | Error::TableDisabled(_) => {
                ErrorKind::DoNotRetry
            }
            Error::Authentication { .. } | Error::Tls { .. } => ErrorKind::Authentication,
            Error::RetriesExhausted { last, .. } => last.kind(),
            Error::MutationsFailed { failures } => failures
                .first()
                .map_or(ErrorKind::Retryable, |f| f.error.kind()),
        }
    }

    /// True when trying the same operation again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind(), ErrorKind::Retryable | ErrorKind::RegionMoved)
    }

    /// A copy, for reporting one failure against several actions. I/O errors are kept as text.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::TableNotFound(t) => Error::TableNotFound(t.clone()),
            Error::TableDisabled(t) => Error::TableDisabled(t.clone()),
            Error::Remote { server, exception } => Error::Remote {
                server: server.clone(),
                exception: exception.clone(),
            },
            Error::Connection { addr, source } => Error::Connection {
                addr: addr.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::ConnectionClosed { addr, reason } => Error::ConnectionClosed {
                addr: addr.clone(),
                reason: reason.clone(),
            },
            Error::Timeout { what, after } => Error::Timeout {
                what: what.clone(),
                after: *after,
            },
            Error::ZooKeeper { quorum, message } => Error::ZooKeeper {
                quorum: quorum.clone(),
                message: message.clone(),
            },
            Error::Protocol(m) => Error::Protocol(m.clone()),
            Error::InvalidInput(m) => Error::InvalidInput(m.clone()),
            Error::RegionOffline { region } => Error::RegionOffline {
                region: region.clone(),
            },
            Error::ProcedureFailed { proc_id, message } => Error::ProcedureFailed {
                proc_id: *proc_id,
                message: message.clone(),
            },
            Error::Authentication { server, message } => Error::Authentication {
                server: server.clone(),
                message: message.clone(),
            },
            Error::Tls { addr, message } => Error::Tls {
                addr: addr.clone(),
                message: message.clone(),
            },
            Error::RetriesExhausted { attempts, last } => Error::RetriesExhausted {
                attempts: *attempts,
                last: Box::new(last.duplicate()),
            },
            Error::MutationsFailed { failures } => Error::MutationsFailed {
                failures: failures
                    .iter()
                    .map(|f| FailedMutation {
                        row: f.row.clone(),
                        error: f.error.duplicate(),
                    })
                    .collect(),
            },
        }
    }

    /// The region was not where the client looked, or had no server: the cue to check
    /// whether its table was disabled.
    pub(crate) fn is_region_unavailable(&self) -> bool {
        match self {
            Error::RegionOffline { .. } => true,
            Error::Remote { exception, .. } => matches!(
                exception.short_class_name(),
                "NotServingRegionException" | "RegionMovedException"
            ),
            _ => false,
        }
    }

    /// The server exception behind this error, if a server raised one.
    pub fn remote(&self) -> Option<&RemoteException> {
        match self {
            Error::Remote { exception, .. } => Some(exception),
            Error::RetriesExhausted { last, .. } => last.remote(),
            _ => None,
        }
    }
}

fn remote_kind(e: &RemoteException) -> ErrorKind {
    match e.short_class_name() {
        "NotServingRegionException"
        | "RegionMovedException"
        | "RegionOpeningException"
        | "RegionServerStoppedException"
        | "RegionServerAbortedException"
        | "ServerNotRunningYetException" => ErrorKind::RegionMoved,
        "TableNotFoundException" | "NamespaceNotFoundException" | "UnknownRegionException" => {
            ErrorKind::NotFound
        }
        "CallTimeoutException" | "OperationTimeoutExceededException" => ErrorKind::Timeout,
        _ if e.do_not_retry => ErrorKind::DoNotRetry,
        _ if is_do_not_retry_class(e.short_class_name()) => ErrorKind::DoNotRetry,
        _ => ErrorKind::Retryable,
    }
}

/// Exceptions that extend DoNotRetryIOException on the server; older servers may not set the
/// `do_not_retry` flag, so the names matter too.
fn is_do_not_retry_class(short: &str) -> bool {
    matches!(
        short,
        "DoNotRetryIOException"
            | "TableExistsException"
            | "TableNotEnabledException"
            | "TableNotDisabledException"
            | "NoSuchColumnFamilyException"
            | "UnknownScannerException"
            | "OutOfOrderScannerNextException"
            | "FailedSanityCheckException"
            | "RequestTooBigException"
            | "AccessDeniedException"
            | "UnsupportedCellCodecException"
            | "UnsupportedCompressionCodecException"
            | "InvalidFamilyOperationException"
            | "NamespaceExistException"
            | "ConstraintException"
            | "CorruptHFileException"
            | "IllegalArgumentIOException"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(class: &str, dnr: bool) -> Error {
        Error::Remote {
            server: "h:1".into(),
            exception: RemoteException {
                class_name: class.into(),
                message: "msg\nstack".into(),
                moved_to: None,
                do_not_retry: dnr,
                server_overloaded: false,
            },
        }
    }

    #[test]
    fn kinds_follow_exception_classes() {
        let nsre = remote("org.apache.hadoop.hbase.NotServingRegionException", false);
        assert_eq!(nsre.kind(), ErrorKind::RegionMoved);
        assert!(nsre.is_retryable());
        let tnf = remote("org.apache.hadoop.hbase.TableNotFoundException", true);
        assert_eq!(tnf.kind(), ErrorKind::NotFound);
        let exists = remote("org.apache.hadoop.hbase.TableExistsException", false);
        assert_eq!(exists.kind(), ErrorKind::DoNotRetry);
        let busy = remote("org.apache.hadoop.hbase.RegionTooBusyException", false);
        assert_eq!(busy.kind(), ErrorKind::Retryable);
        assert_eq!(busy.to_string(), "h:1 raised RegionTooBusyException: msg");
        let wrapped = Error::RetriesExhausted {
            attempts: 3,
            last: Box::new(busy),
        };
        assert_eq!(wrapped.kind(), ErrorKind::Retryable);
        assert!(wrapped.remote().is_some());
    }
}
