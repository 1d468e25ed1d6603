//! Errors: one enum for everything the client can report, and a coarse [`ErrorKind`] to match on.
//! What each error means for retrying (its kind, which cached locations it invalidates, how
//! long to pause, whether to retry at all) is decided in one place: [`exceptions`].

pub(crate) mod exceptions;

use std::time::Duration;

use crate::ops::Mutation;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a caller can do about an error. Match on [`Error::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
    /// A deadline passed: the RPC timeout, the operation timeout, or a connect timeout. For a
    /// write, the server never got it (otherwise the kind is [`ErrorKind::OutcomeUnknown`]).
    Timeout,
    /// A write may or may not have been applied: an attempt reached the server (or may have)
    /// and its answer was lost, and the client could not find out. Read the row to know. A
    /// retried increment, append or check-and-mutate is never applied twice (nonces); a
    /// retried put or delete may be, which is harmless for them. A delete of a column's newest
    /// version without a timestamp is not harmless to apply twice and is not retried after
    /// such an attempt.
    OutcomeUnknown,
    /// The client or a server could not prove who it is: a Kerberos login or SASL exchange
    /// failed, the server refused the client's credentials, or a certificate was refused.
    /// Never retried: credentials or trust settings must change first.
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

    /// The deepest `Caused by:` line of the server's stack trace, without that prefix: why
    /// the server failed, where the first line may only say what failed (a snapshot's first
    /// line names the snapshot, and what went wrong is in its cause). Only the main chain
    /// counts: Java starts its causes at the line's start and indents a suppressed
    /// exception's, which it prints after them.
    pub fn root_cause(&self) -> Option<&str> {
        self.message
            .lines()
            .filter_map(|l| l.strip_prefix("Caused by: "))
            .next_back()
            .map(str::trim_end)
            .filter(|c| !c.is_empty())
    }

    /// The message without its stack frames: the first line and, when the trace has one and
    /// the first line does not give it, a `Caused by:` line with the root cause. What
    /// [`root_cause`](Self::root_cause) and this type's `Display` read from it stays the same.
    pub fn summary(&self) -> String {
        match self.untold_cause() {
            Some(cause) => format!("{}\nCaused by: {cause}", self.first_line()),
            None => self.first_line().to_string(),
        }
    }

    /// The root cause when the first line does not already give it (an exception HBase made
    /// from its cause alone starts with the cause's text): what `summary` and `Display` add.
    fn untold_cause(&self) -> Option<&str> {
        self.root_cause()
            .filter(|cause| !self.first_line().contains(cause))
    }

    /// A per-action or per-region exception of a `Multi` response: only a class name and the
    /// stringified exception (no flags; the class says what it is, see `exceptions`).
    pub(crate) fn from_name_and_message(class_name: String, message: String) -> RemoteException {
        let mut e = RemoteException {
            class_name,
            message,
            moved_to: None,
            do_not_retry: false,
            server_overloaded: false,
        };
        if exceptions::remote_verdict(&e).cache == exceptions::CacheAction::MovedTo {
            e.moved_to = parse_moved_message(&e.message);
        }
        e
    }
}

/// RegionMovedException's message: `Region moved to: hostname=H port=P startCode=S. …`.
fn parse_moved_message(message: &str) -> Option<String> {
    let host = message
        .split("hostname=")
        .nth(1)?
        .split_whitespace()
        .next()?;
    let port = message
        .split("port=")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?;
    Some(format!("{host}:{port}"))
}

impl std::fmt::Display for RemoteException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.short_class_name(), self.first_line())?;
        match self.untold_cause() {
            Some(cause) => write!(f, " (caused by {})", clipped(cause, CAUSE_SHOWN)),
            None => Ok(()),
        }
    }
}

/// How much of a root cause an error's message shows, in bytes (`RemoteException::message`
/// keeps all of it).
const CAUSE_SHOWN: usize = 200;

/// `text` cut to at most `max` bytes at a character boundary, with `…` where it was cut.
fn clipped(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return text.into();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end]).into()
}

/// One buffered mutation that failed for good: the mutation itself (a put or a delete, with
/// its row and cells) and why it failed, as Java's `RetriesExhaustedWithDetailsException`
/// gives each failed row's mutation. A listener tells a failed put from a failed delete by
/// [`mutation`](Self::mutation), not by remembering which rows it deleted.
///
/// Its `Debug` form names the mutation (kind, row, cell count, heap size) without its cells,
/// so that a failed flush's `{:?}` or `unwrap` does not print megabytes of values.
#[derive(thiserror::Error)]
#[error("{} of row {}: {error}", self.kind(), String::from_utf8_lossy(self.row()))]
pub struct FailedMutation {
    pub(crate) mutation: Mutation,
    pub(crate) error: Error,
}

impl FailedMutation {
    pub(crate) fn new(mutation: Mutation, error: Error) -> FailedMutation {
        FailedMutation { mutation, error }
    }

    /// The mutation's row key.
    pub fn row(&self) -> &bytes::Bytes {
        self.mutation.row()
    }

    /// The mutation that failed, as it was buffered: a [`Mutation::Put`] or a
    /// [`Mutation::Delete`].
    pub fn mutation(&self) -> &Mutation {
        &self.mutation
    }

    /// Why it failed. Its [`kind`](Error::kind) says whether it was not applied or its outcome
    /// is unknown ([`ErrorKind::OutcomeUnknown`]).
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The mutation and the error, to keep or send again without a clone.
    pub fn into_parts(self) -> (Mutation, Error) {
        (self.mutation, self.error)
    }

    /// `put` or `delete`, for messages.
    fn kind(&self) -> &'static str {
        match self.mutation {
            Mutation::Put(_) => "put",
            Mutation::Delete(_) => "delete",
        }
    }
}

impl std::fmt::Debug for FailedMutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailedMutation")
            .field("kind", &self.kind())
            .field("row", self.row())
            .field("cells", &self.mutation.cells())
            .field("heap_size", &self.mutation.heap_size())
            .field("error", &self.error)
            .finish()
    }
}

/// Every failure the client reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A TCP connection could not be made (refused, unreachable, or no handshake within the
    /// connect timeout).
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The server, `host:port`.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Connecting to this server failed moments ago; it is not tried again until the
    /// failed-server expiry passes (`ClientConfigBuilder::failed_server_expiry`), so callers
    /// fail fast and look the region up again.
    #[error("{addr} failed recently ({reason}); not connecting again yet")]
    RecentlyFailed {
        /// The server, `host:port`.
        addr: String,
        /// Why the last connect failed.
        reason: String,
    },
    /// A TCP connection failed while in use.
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
    /// No bootstrap server of the RPC connection registry answered (each refused the
    /// connection, timed out, or did not know); `message` says what each did.
    #[error("no bootstrap server answered {what} ({}): {message}", servers.join(","))]
    Bootstrap {
        /// The servers asked, `host:port`, in the order tried.
        servers: Vec<String>,
        /// The question (`GetMetaRegionLocations`, `GetActiveMaster`, `GetClusterId`).
        what: String,
        /// Each server's failure.
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
    /// A master procedure (create, delete, split, a snapshot on HBase 2.6+…) finished with a
    /// failure.
    #[error("procedure {proc_id} failed: {message}")]
    ProcedureFailed {
        /// The master's procedure id.
        proc_id: u64,
        /// The failure the master recorded.
        message: String,
    },
    /// Buffered mutations that could not be applied; every other buffered mutation was
    /// acknowledged by HBase. Each failure's kind says whether it was not applied or its
    /// outcome is unknown ([`ErrorKind::OutcomeUnknown`]).
    #[error("{} buffered mutations failed{}; first: {}", failures.len() as u64 + dropped, if *dropped > 0 { format!(" ({dropped} not kept)") } else { String::new() }, failures.first().map(|f| f.to_string()).unwrap_or_default())]
    MutationsFailed {
        /// Each failed mutation and its error, up to the mutator's
        /// [`max_failures_kept`](crate::MutatorConfig::max_failures_kept) and
        /// [`max_failure_bytes_kept`](crate::MutatorConfig::max_failure_bytes_kept); a server message
        /// repeated by many failures is kept whole once, the others keep its first line.
        failures: Vec<FailedMutation>,
        /// Failures beyond those kept: counted, not kept (the failure listener saw them all).
        dropped: u64,
    },
    /// The BufferedMutator refused or could not send this write: it was closed, or its
    /// flusher is gone (the runtime shut down). Nothing was applied.
    #[error("BufferedMutator for {table}: {reason}")]
    MutatorClosed {
        /// The mutator's table.
        table: String,
        /// Why it refused.
        reason: String,
    },
    /// A scan ended before it was complete without an error of its own: the task reading it
    /// stopped (its runtime shut down, or it panicked). The rows delivered before are right;
    /// the rest were not read. Scanning again (from after the last row) may succeed.
    #[error("the scan of {table} ended before it was complete: {reason}")]
    ScanAborted {
        /// The scanned table.
        table: String,
        /// Why it ended.
        reason: String,
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
    /// A write failed after an attempt that may have been applied (its request may have
    /// reached the server, and no answer came). See [`ErrorKind::OutcomeUnknown`].
    #[error(
        "outcome unknown after {attempts} attempts (an attempt may have been applied): {last}"
    )]
    OutcomeUnknown {
        /// Attempts made.
        attempts: u32,
        /// The error that ended the operation.
        #[source]
        last: Box<Error>,
    },
}

impl Error {
    /// What a caller can do about this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::RetriesExhausted { last, .. } => last.kind(),
            Error::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            Error::MutationsFailed { failures, .. } => failures
                .first()
                .map_or(ErrorKind::Retryable, |f| f.error.kind()),
            e => exceptions::verdict(e).kind,
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
            Error::Connect { addr, source } => Error::Connect {
                addr: addr.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::RecentlyFailed { addr, reason } => Error::RecentlyFailed {
                addr: addr.clone(),
                reason: reason.clone(),
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
            Error::Bootstrap {
                servers,
                what,
                message,
            } => Error::Bootstrap {
                servers: servers.clone(),
                what: what.clone(),
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
            Error::OutcomeUnknown { attempts, last } => Error::OutcomeUnknown {
                attempts: *attempts,
                last: Box::new(last.duplicate()),
            },
            Error::MutatorClosed { table, reason } => Error::MutatorClosed {
                table: table.clone(),
                reason: reason.clone(),
            },
            Error::ScanAborted { table, reason } => Error::ScanAborted {
                table: table.clone(),
                reason: reason.clone(),
            },
            Error::MutationsFailed { failures, dropped } => Error::MutationsFailed {
                dropped: *dropped,
                failures: failures
                    .iter()
                    .map(|f| FailedMutation::new(f.mutation.clone(), f.error.duplicate()))
                    .collect(),
            },
        }
    }

    /// A per-action or per-region exception of a `Multi` response from `server`.
    pub(crate) fn from_action_exception(server: &str, pair: hbase_proto::NameBytesPair) -> Error {
        let message = pair
            .value
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default();
        Error::Remote {
            server: server.to_string(),
            exception: RemoteException::from_name_and_message(pair.name, message),
        }
    }

    /// The server exception behind this error, for shortening a kept copy.
    pub(crate) fn remote_mut(&mut self) -> Option<&mut RemoteException> {
        match self {
            Error::Remote { exception, .. } => Some(exception),
            Error::RetriesExhausted { last, .. } | Error::OutcomeUnknown { last, .. } => {
                last.remote_mut()
            }
            _ => None,
        }
    }

    /// The server exception behind this error, if a server raised one.
    pub fn remote(&self) -> Option<&RemoteException> {
        match self {
            Error::Remote { exception, .. } => Some(exception),
            Error::RetriesExhausted { last, .. } | Error::OutcomeUnknown { last, .. } => {
                last.remote()
            }
            _ => None,
        }
    }
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

    /// A failed put's `Debug` names it, its row, cell count and heap size, not its values.
    #[test]
    fn a_failed_mutations_debug_leaves_out_its_cells() {
        let value = "v".repeat(10_000);
        let put = crate::ops::Put::new("row-1")
            .add("f", "a", value.clone())
            .add("f", "b", value);
        let heap = put.heap_size();
        let failed = FailedMutation::new(put.into(), Error::InvalidInput("refused".into()));
        let shown = format!("{failed:?}");
        assert!(shown.len() < 300, "{} bytes: {shown}", shown.len());
        for part in [
            "kind: \"put\"",
            "row-1",
            "cells: 2",
            &format!("heap_size: {heap}"),
            "refused",
        ] {
            assert!(shown.contains(part), "{part} in {shown}");
        }
        let delete = crate::ops::Delete::new("r").column("f", "a").family("g");
        let failed = FailedMutation::new(delete.into(), Error::InvalidInput("no".into()));
        assert!(format!("{failed:?}").contains("cells: 2"));
        let failures = Error::MutationsFailed {
            failures: vec![failed],
            dropped: 0,
        };
        assert!(format!("{failures:?}").contains("kind: \"delete\""));
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

    /// A message built with a cause of its own (as HBase's snapshot failures are): the first
    /// line names the snapshot, the deepest `Caused by:` of the main chain says what went
    /// wrong, and the error says both. A suppressed exception's cause (indented, printed
    /// after the chain) is not the root cause; a cause the first line gives is not repeated;
    /// a long one is cut.
    #[test]
    fn the_deepest_cause_follows_a_first_line_that_lacks_it() {
        let e = RemoteException {
            class_name: "org.apache.hadoop.hbase.snapshot.HBaseSnapshotException".into(),
            message: "org.apache.hadoop.hbase.snapshot.HBaseSnapshotException: Snapshot s had an error.  Procedure s { waiting=[] done=[] }\n\
                      \tat org.apache.hadoop.hbase.master.snapshot.SnapshotManager.isSnapshotDone(SnapshotManager.java:1)\n\
                      Caused by: org.apache.hadoop.hbase.errorhandling.ForeignException$ProxyThrowable via rs1:java.io.IOException: flush failed\n\
                      \tat org.apache.hadoop.hbase.errorhandling.ForeignException.deserialize(ForeignException.java:1)\n\
                      \t... 7 more\n\
                      Caused by: java.io.IOException: region r is closing  \n\
                      \tat X.y(X.java:1)\n\
                      \tSuppressed: java.lang.RuntimeException: unlock failed\n\
                      \t\tat X.z(X.java:2)\n\
                      \tCaused by: java.lang.RuntimeException: lock lost\n\
                      \t\tat X.w(X.java:3)\n"
                .into(),
            moved_to: None,
            do_not_retry: false,
            server_overloaded: false,
        };
        // The main chain's last cause, not the suppressed exception's printed after it.
        assert_eq!(
            e.root_cause(),
            Some("java.io.IOException: region r is closing")
        );
        assert_eq!(
            e.to_string(),
            "HBaseSnapshotException: org.apache.hadoop.hbase.snapshot.HBaseSnapshotException: \
             Snapshot s had an error.  Procedure s { waiting=[] done=[] } \
             (caused by java.io.IOException: region r is closing)"
        );
        let short = RemoteException {
            message: e.summary(),
            ..e.clone()
        };
        assert_eq!(short.message.lines().count(), 2);
        assert_eq!(short.to_string(), e.to_string());
        let plain = RemoteException {
            message: "E: no cause\n\tat a(A.java:1)\n".into(),
            ..e.clone()
        };
        assert_eq!(plain.root_cause(), None);
        assert_eq!(plain.summary(), "E: no cause");
        assert_eq!(plain.to_string(), "HBaseSnapshotException: E: no cause");
        // A cause the first line already gives (an exception made from its cause alone) is
        // not said twice.
        let said = RemoteException {
            message: "X: java.io.IOException: disk full\n\tat a(A.java:1)\nCaused by: java.io.IOException: disk full\n".into(),
            ..e.clone()
        };
        assert_eq!(said.root_cause(), Some("java.io.IOException: disk full"));
        assert_eq!(said.summary(), said.first_line());
        assert_eq!(
            said.to_string(),
            "HBaseSnapshotException: X: java.io.IOException: disk full"
        );
        // A long cause is cut in the message, at a character boundary.
        let long = RemoteException {
            message: format!(
                "E: failed\nCaused by: java.io.IOException: {}\n",
                "é".repeat(300)
            ),
            ..e
        };
        let shown = long.to_string();
        let cause = shown.split(" (caused by ").nth(1).unwrap();
        assert!(cause.ends_with("…)"), "{shown}");
        assert!(cause.len() <= CAUSE_SHOWN + "…)".len(), "{}", cause.len());
        assert_eq!(
            long.root_cause().unwrap().len(),
            "java.io.IOException: ".len() + 600
        );
    }

    #[test]
    fn moved_message_parses() {
        let m = "Region moved to: hostname=127.0.0.1 port=40279 startCode=17960. As of locationSeqNum=12.";
        assert_eq!(parse_moved_message(m).as_deref(), Some("127.0.0.1:40279"));
        assert_eq!(parse_moved_message("nothing"), None);
        let e = RemoteException::from_name_and_message(
            "org.apache.hadoop.hbase.exceptions.RegionMovedException".into(),
            m.into(),
        );
        assert_eq!(e.moved_to.as_deref(), Some("127.0.0.1:40279"));
    }
}
