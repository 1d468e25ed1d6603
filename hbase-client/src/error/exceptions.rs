//! The one exception table: what every error means for the retrying caller.
//!
//! For each server exception class (and each error the client raises itself) it says which
//! [`ErrorKind`] callers see, which cached locations the error shows to be stale, how long to
//! pause before the next attempt, and whether to retry at all. `Error::kind`, the retrying
//! caller (`runtime::caller`), the backoff policy, the meta locator and the scanner all read
//! it; nothing else matches class names.
//!
//! Facts it follows (HBase 2.6), checked by running the Java client (hbase-shaded-client)
//! beside it on every concrete IOException class of the hbase-server 2.6.4 jars and their
//! HBase dependencies (`exception_table_agrees_with_the_java_client` in tests/retries.rs):
//!
//! - Retry: the classes below that extend `DoNotRetryIOException` are never retried. A
//!   per-action exception inside a `Multi` response is only a class name and a message
//!   (`NameBytesPair`, no flag), so its class is all there is to go by; a whole-call exception
//!   also carries the server's `do_not_retry` flag (set when the class extends
//!   `DoNotRetryIOException` where it was thrown), which always wins.
//! - Cached locations follow the Java client's `ClientExceptionsUtil.isMetaClearingException`:
//!   a `RegionMovedException` moves the region; the "region is certainly on this server"
//!   exceptions (busy, throttled, overloaded, retry immediately, too big) keep it; anything
//!   else drops the region's location (`RegionOpeningException` too: it is a
//!   `NotServingRegionException`).
//! - Pauses: the overloaded pause for an `HBaseServerException` that says so
//!   (`CallQueueTooBigException`, `CallDroppedException`), the server's wait for an
//!   `RpcThrottlingException`, none for a `RetryImmediatelyException`.
//!
//! Where it differs from the Java client on purpose (the test expects exactly these):
//!
//! - A class the Java client cannot load or construct from a message (a server-only class such
//!   as `WALSyncTimeoutIOException` or `SpaceLimitingException`, a coprocessor's own) is read as
//!   a Java client that has the class reads it: by the server's `do_not_retry` flag, and by name
//!   in a `Multi` answer. The Java client instead gives up on such a class in a whole call's
//!   answer (it becomes a `DoNotRetryIOException`) and, in a `Multi` answer, fails the whole
//!   answer with an `IOException` that it retries, even when the class is a
//!   `DoNotRetryIOException` on the server.
//! - A never-retried exception keeps the cached location (Java's batch callers drop it first;
//!   its single-request callers, like us, leave it).
//! - `RegionServerStoppedException` and `RegionServerAbortedException` drop every region cached
//!   on that server, not only the one called.
//! - `MasterNotRunningException` and `PleaseHoldException`, which only a master raises, keep the
//!   master's location, as Java's master caller keeps its master.
//! - `IllegalArgumentIOException`, Hadoop's `AccessControlException` and `SaslException`, plain
//!   IOExceptions to Java, are never retried: an illegal argument or a refused permission stays
//!   so.
//!
//! The errors the client raises itself have no class to compare and are not in that test: a
//! refused or unreachable server drops every region cached on it, as a stopped one does.

use super::{Error, ErrorKind, RemoteException};

/// What one error means for the retrying caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// What callers see.
    pub(crate) kind: ErrorKind,
    /// What the error shows to be stale in the location cache.
    pub(crate) cache: CacheAction,
    /// How long to wait before the next attempt.
    pub(crate) pause: PauseClass,
    /// Whether another attempt can succeed.
    pub(crate) retry: Retry,
}

/// Cached locations an error invalidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheAction {
    /// Nothing is stale: the region is where the cache says.
    Keep,
    /// The region's cached location is stale.
    DropRegion,
    /// The region moved, and the exception says where to (cache that instead).
    MovedTo,
    /// The server is gone or unreachable: every region cached on it is stale.
    DropServer,
}

/// The base pause class of the next attempt (scaled by the backoff schedule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PauseClass {
    /// The client's pause.
    Normal,
    /// The server said it is overloaded: the longer overloaded pause.
    Overloaded,
    /// The server asked for an immediate retry.
    Immediate,
    /// A quota: the server says how long to wait (in the message).
    Throttled,
}

/// Whether to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Another attempt may succeed.
    Yes,
    /// It never will.
    No,
    /// A scanner is gone (lease expired, server restarted): a scan reopens after the last row
    /// it delivered; for anything else this is `No`.
    ReopenScanner,
}

impl Verdict {
    const fn new(kind: ErrorKind, cache: CacheAction, pause: PauseClass, retry: Retry) -> Self {
        Verdict {
            kind,
            cache,
            pause,
            retry,
        }
    }
}

use CacheAction::*;
use ErrorKind::*;
use PauseClass::*;

const NEVER: Verdict = Verdict::new(DoNotRetry, Keep, Normal, Retry::No);
const NOT_FOUND: Verdict = Verdict::new(NotFound, Keep, Normal, Retry::No);
const MOVED: Verdict = Verdict::new(RegionMoved, DropRegion, Normal, Retry::Yes);
const BUSY: Verdict = Verdict::new(Retryable, Keep, Normal, Retry::Yes);
const SCANNER_LOST: Verdict = Verdict::new(DoNotRetry, Keep, Normal, Retry::ReopenScanner);
/// A server class we do not know: retry, and look the region up again, as a Java client that
/// has the class does (one that has not gives up; see the module's documentation).
const UNKNOWN: Verdict = Verdict::new(Retryable, DropRegion, Normal, Retry::Yes);
/// Credentials or trust refused: never retried (they must change first), nothing is stale.
const REFUSED: Verdict = Verdict::new(Authentication, Keep, Normal, Retry::No);

/// The verdict on `e`.
pub(crate) fn verdict(e: &Error) -> Verdict {
    match e {
        Error::Remote { exception, .. } => remote_verdict(exception),
        Error::Connect { source, .. } => {
            let kind = if source.kind() == std::io::ErrorKind::TimedOut {
                Timeout
            } else {
                Retryable
            };
            Verdict::new(kind, DropServer, Normal, Retry::Yes)
        }
        Error::RecentlyFailed { .. } => Verdict::new(Retryable, DropServer, Normal, Retry::Yes),
        Error::Connection { .. } | Error::ConnectionClosed { .. } => {
            Verdict::new(Retryable, DropRegion, Normal, Retry::Yes)
        }
        // A call that timed out: only that call failed, and at most its region's location is
        // stale (the connection layer decides whether the server is dead).
        Error::Timeout { .. } => Verdict::new(Timeout, DropRegion, Normal, Retry::Yes),
        // A corrupt frame closes its connection; the region is where it was.
        Error::Protocol(_) => BUSY,
        Error::ZooKeeper { .. } | Error::Bootstrap { .. } => BUSY,
        Error::RegionOffline { .. } => MOVED,
        Error::TableNotFound(_) => NOT_FOUND,
        Error::Authentication { .. } | Error::Tls { .. } => REFUSED,
        Error::TableDisabled(_) | Error::InvalidInput(_) | Error::ProcedureFailed { .. } => NEVER,
        Error::RetriesExhausted { last, .. } => Verdict {
            retry: Retry::No,
            ..verdict(last)
        },
        Error::OutcomeUnknown { .. } => Verdict::new(OutcomeUnknown, Keep, Normal, Retry::No),
        Error::MutationsFailed { .. } => Verdict::new(Retryable, Keep, Normal, Retry::No),
        Error::MutatorClosed { .. } => NEVER,
    }
}

/// Whether a connection-level exception (call id -1, the server closes next) refuses the
/// client's credentials: the connection then fails every call with [`Error::Authentication`]
/// (whose verdict is [`REFUSED`]), never retried.
pub(crate) fn refuses_credentials(e: &RemoteException) -> bool {
    matches!(
        e.short_class_name(),
        "AccessDeniedException"
            | "BadAuthException"
            | "SaslException"
            | "AccessControlException"
            | "AuthorizationException"
    )
}

/// The verdict on a server exception: its class, and the server's flags.
pub(crate) fn remote_verdict(e: &RemoteException) -> Verdict {
    let v = class_verdict(e.short_class_name());
    if e.server_overloaded && v.retry == Retry::Yes {
        return Verdict {
            pause: Overloaded,
            cache: Keep,
            ..v
        };
    }
    if e.do_not_retry && v.retry == Retry::Yes {
        return NEVER;
    }
    v
}

/// The server classes the table knows, by short name, and what each means; a class not here
/// gets [`UNKNOWN`].
const CLASSES: &[(&[&str], Verdict)] = &[
    // The region is elsewhere.
    (
        &["NotServingRegionException", "WrongRegionException"],
        MOVED,
    ),
    (
        &["RegionMovedException"],
        Verdict::new(RegionMoved, MovedTo, Normal, Retry::Yes),
    ),
    // Opening here, soon; but a NotServingRegionException, whose location Java drops too.
    (&["RegionOpeningException"], MOVED),
    // The server is going away: everything cached on it is stale.
    (
        &[
            "RegionServerStoppedException",
            "RegionServerAbortedException",
        ],
        Verdict::new(RegionMoved, DropServer, Normal, Retry::Yes),
    ),
    // Still starting: its regions are being assigned.
    (&["ServerNotRunningYetException"], UNKNOWN),
    // On this server, which is busy.
    (
        &[
            "RegionTooBusyException",
            "PleaseHoldException",
            "MasterNotRunningException",
        ],
        BUSY,
    ),
    (
        &["CallQueueTooBigException", "CallDroppedException"],
        Verdict::new(Retryable, Keep, Overloaded, Retry::Yes),
    ),
    (
        &["RpcThrottlingException"],
        Verdict::new(Retryable, Keep, Throttled, Retry::Yes),
    ),
    (
        &["RetryImmediatelyException", "MultiActionResultTooLarge"],
        Verdict::new(Retryable, Keep, Immediate, Retry::Yes),
    ),
    // The server gave up waiting (a row lock, a procedure, the client's deadline): the region
    // is looked up again, as after any other exception Java does not single out.
    (
        &["CallTimeoutException", "TimeoutIOException"],
        Verdict::new(Timeout, DropRegion, Normal, Retry::Yes),
    ),
    (
        &["OperationTimeoutExceededException"],
        Verdict::new(Timeout, Keep, Normal, Retry::No),
    ),
    (
        &[
            "TableNotFoundException",
            "NamespaceNotFoundException",
            "UnknownRegionException",
            "SnapshotDoesNotExistException",
            "UnknownSnapshotException",
            "ReplicationPeerNotFoundException",
        ],
        NOT_FOUND,
    ),
    (
        &[
            "UnknownScannerException",
            "ScannerResetException",
            "OutOfOrderScannerNextException",
            "LeaseException",
        ],
        SCANNER_LOST,
    ),
    // DoNotRetryIOException and its subclasses in HBase 2.6.
    (
        &[
            "DoNotRetryIOException",
            "DoNotRetryRegionException",
            "AccessDeniedException",
            "BadAuthException",
            "ConcurrentTableModificationException",
            "ConstraintException",
            "CoprocessorException",
            "CorruptHFileException",
            "CorruptedSnapshotException",
            "EmptyServiceNameException",
            "ExportSnapshotException",
            "FailedSanityCheckException",
            "FatalConnectionException",
            "HBaseSnapshotException",
            "InvalidFamilyOperationException",
            "InvalidLabelException",
            "LabelAlreadyExistsException",
            "MasterStoppedException",
            "MergeRegionException",
            "NamespaceExistException",
            "NoServerForRegionException",
            "NoSuchColumnFamilyException",
            "NotAllMetaRegionsOnlineException",
            "QuotaExceededException",
            "RequestTooBigException",
            "RestoreSnapshotException",
            "RowTooBigException",
            "ServerTooBusyException",
            "SnapshotCreationException",
            "SnapshotExistsException",
            "SnapshotTTLExpiredException",
            "SpaceLimitingException",
            "StoppedRpcClientException",
            "TableExistsException",
            "TableNotDisabledException",
            "TableNotEnabledException",
            "ThrottlingException",
            "UnknownProtocolException",
            "UnknownServiceException",
            "UnsupportedCellCodecException",
            "UnsupportedCompressionCodecException",
            "UnsupportedCryptoException",
            "WrongVersionException",
            // Not a DoNotRetryIOException in HBase, but an illegal argument stays illegal.
            "IllegalArgumentIOException",
            // An authentication or authorization rejection (Hadoop's classes).
            "AccessControlException",
            "SaslException",
        ],
        NEVER,
    ),
];

fn class_verdict(short: &str) -> Verdict {
    CLASSES
        .iter()
        .find(|(names, _)| names.contains(&short))
        .map_or(UNKNOWN, |(_, v)| *v)
}

/// The table in words, for the oracle test that runs the Java client beside it
/// (`exception_table_agrees_with_the_java_client` in tests/retries.rs, through
/// tests/support/bin/exception_facts.rs). Not part of the public API.
#[doc(hidden)]
pub mod oracle {
    use super::{CacheAction, PauseClass, RemoteException, Retry, CLASSES};

    /// The short class names the table knows.
    pub fn known_classes() -> impl Iterator<Item = &'static str> {
        CLASSES.iter().flat_map(|(names, _)| names.iter().copied())
    }

    /// The verdict on `e` as `[retry, cache, pause]`: `yes`/`no` (a lost scanner is `no`: only a
    /// scan reopens), `keep`/`drop`/`moved`/`drop-server`, and
    /// `normal`/`overloaded`/`throttled`/`immediate`, or `-` when it is not retried.
    pub fn verdict_words(e: &RemoteException) -> [&'static str; 3] {
        let v = super::remote_verdict(e);
        let retried = v.retry == Retry::Yes;
        let cache = match v.cache {
            CacheAction::Keep => "keep",
            CacheAction::DropRegion => "drop",
            CacheAction::MovedTo => "moved",
            CacheAction::DropServer => "drop-server",
        };
        let pause = match v.pause {
            _ if !retried => "-",
            PauseClass::Normal => "normal",
            PauseClass::Overloaded => "overloaded",
            PauseClass::Throttled => "throttled",
            PauseClass::Immediate => "immediate",
        };
        [if retried { "yes" } else { "no" }, cache, pause]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(class: &str, dnr: bool, overloaded: bool) -> RemoteException {
        RemoteException {
            class_name: format!("org.apache.hadoop.hbase.{class}"),
            message: String::new(),
            moved_to: None,
            do_not_retry: dnr,
            server_overloaded: overloaded,
        }
    }

    #[test]
    fn server_flags_win_over_the_class() {
        let v = remote_verdict(&remote("SomethingNewException", true, false));
        assert_eq!((v.kind, v.retry), (DoNotRetry, Retry::No));
        let v = remote_verdict(&remote("SomethingNewException", false, false));
        assert_eq!(
            (v.kind, v.cache, v.retry),
            (Retryable, DropRegion, Retry::Yes)
        );
        let v = remote_verdict(&remote("SomethingNewException", false, true));
        assert_eq!((v.pause, v.cache), (Overloaded, Keep));
        // A flagged scanner loss still lets the scan reopen.
        let v = remote_verdict(&remote("UnknownScannerException", true, false));
        assert_eq!(v.retry, Retry::ReopenScanner);
        let v = remote_verdict(&remote("TableNotFoundException", true, false));
        assert_eq!(v.kind, NotFound);
    }

    #[test]
    fn one_decision_per_class() {
        // ServerNotRunningYetException: retryable, the region looked up again (it used to be
        // a moved region in one place and a dropped server in another).
        let v = class_verdict("ServerNotRunningYetException");
        assert_eq!(
            (v.kind, v.cache, v.retry),
            (Retryable, DropRegion, Retry::Yes)
        );
        assert_eq!(class_verdict("RegionMovedException").cache, MovedTo);
        assert_eq!(class_verdict("RegionOpeningException").cache, DropRegion);
        assert_eq!(class_verdict("TimeoutIOException").cache, DropRegion);
        assert_eq!(class_verdict("CallQueueTooBigException").pause, Overloaded);
        assert_eq!(class_verdict("SpaceLimitingException").retry, Retry::No);
        assert_eq!(
            class_verdict("RegionServerStoppedException").cache,
            DropServer
        );
    }

    #[test]
    fn client_side_errors() {
        let refused = Error::Connect {
            addr: "h:1".into(),
            source: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        };
        assert_eq!(verdict(&refused).cache, DropServer);
        let timeout = Error::Timeout {
            what: "Get".into(),
            after: std::time::Duration::from_secs(1),
        };
        assert_eq!(
            (verdict(&timeout).kind, verdict(&timeout).cache),
            (Timeout, DropRegion)
        );
        let refused = Error::Authentication {
            server: Some("h:1".into()),
            message: "no".into(),
        };
        assert_eq!(verdict(&refused), REFUSED);
        let tls = Error::Tls {
            addr: "h:1".into(),
            message: "unknown issuer".into(),
        };
        assert_eq!(
            (verdict(&tls).kind, verdict(&tls).retry),
            (Authentication, Retry::No)
        );
        let wrapped = Error::RetriesExhausted {
            attempts: 2,
            last: Box::new(timeout),
        };
        assert_eq!(
            (verdict(&wrapped).kind, verdict(&wrapped).retry),
            (Timeout, Retry::No)
        );
    }
}
