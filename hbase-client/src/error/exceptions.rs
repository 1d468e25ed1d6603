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
//!   `RpcThrottlingException`, none for a `RetryImmediatelyException`, which spends no retry
//!   either (Java's batch caller resends at once, its count of tries unchanged).
//! - The master: a failed call to the master forgets it (the next attempt asks the registry
//!   which master is active) only when the call is retried and failed with a connection
//!   exception (`ClientExceptionsUtil.isConnectionException`: a refused or timed-out connect, a
//!   closed connection, a call timeout, a server marked failed, and the JDK's socket classes)
//!   or a `ServerNotRunningYetException` (a backup master answering), as Java's
//!   `AsyncMasterRequestRpcRetryingCaller` does; any other answer came from the master meant.
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
//! - `IllegalArgumentIOException`, Hadoop's `AccessControlException` (and its subclass
//!   `AuthorizationException`) and `SaslException`, plain IOExceptions to Java, are never
//!   retried: an illegal argument or a refused permission stays so, and retrying it would only
//!   make its caller wait out the operation timeout for an error of the wrong kind.
//!
//! The errors the client raises itself have no class to compare and are not in that test: a
//! refused or unreachable server drops every region cached on it, as a stopped one does; a
//! connect that fails, a connection lost and a call that timed out forget the master, as the
//! Java classes for them (`ConnectException`, `ConnectionClosedException`,
//! `CallTimeoutException`, `FailedServerException`) do.

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
    /// What a call to the master failing with it says of that master.
    pub(crate) master: MasterAction,
}

/// What a failed call to the master says of the master called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MasterAction {
    /// It answered (or may still): keep calling it.
    Keep,
    /// The connection to it is lost, or it is not the active master yet (a backup master):
    /// ask the registry which master is active before the next attempt.
    Forget,
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
            master: MasterAction::Keep,
        }
    }

    /// The same verdict, which also forgets the master (only for a retried error: one never
    /// retried ends the operation, and Java keeps its master then).
    const fn forgets_master(self) -> Self {
        Verdict {
            master: MasterAction::Forget,
            ..self
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
/// The connection to the server is lost (a server's own socket or timeout exception, as
/// Java's `ClientExceptionsUtil.isConnectionException` lists them): retried, the region looked
/// up again, and a master called forgotten.
const CONNECTION_LOST: Verdict = UNKNOWN.forgets_master();
/// A timeout on the server's side (a row lock, a procedure, the client's deadline): the region
/// is looked up again, as after any other exception Java does not single out; Java counts the
/// two classes among its connection exceptions, so a master called is forgotten.
const TIMED_OUT: Verdict = Verdict::new(Timeout, DropRegion, Normal, Retry::Yes).forgets_master();

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
            Verdict::new(kind, DropServer, Normal, Retry::Yes).forgets_master()
        }
        Error::RecentlyFailed { .. } => {
            Verdict::new(Retryable, DropServer, Normal, Retry::Yes).forgets_master()
        }
        Error::Connection { .. } | Error::ConnectionClosed { .. } => {
            Verdict::new(Retryable, DropRegion, Normal, Retry::Yes).forgets_master()
        }
        // A call that timed out: only that call failed, and at most its region's location is
        // stale (the connection layer decides whether the server is dead). Java's
        // CallTimeoutException, a connection exception to its master caller.
        Error::Timeout { .. } => TIMED_OUT,
        // A corrupt frame closes its connection; the region is where it was.
        Error::Protocol(_) => BUSY,
        Error::ZooKeeper { .. } | Error::Bootstrap { .. } => BUSY,
        Error::RegionOffline { .. } => MOVED,
        Error::TableNotFound(_) => NOT_FOUND,
        Error::Authentication { .. } | Error::Tls { .. } => REFUSED,
        Error::TableDisabled(_) | Error::InvalidInput(_) | Error::ProcedureFailed { .. } => NEVER,
        Error::RetriesExhausted { last, .. } => Verdict {
            retry: Retry::No,
            master: MasterAction::Keep,
            ..verdict(last)
        },
        Error::OutcomeUnknown { .. } => Verdict::new(OutcomeUnknown, Keep, Normal, Retry::No),
        Error::MutationsFailed { .. } => Verdict::new(Retryable, Keep, Normal, Retry::No),
        Error::MutatorClosed { .. } => NEVER,
        Error::ScanAborted { .. } => Verdict::new(Retryable, Keep, Normal, Retry::No),
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
    // Still starting: its regions are being assigned; from a master, it is a backup master
    // (or one not started yet), so the active one is looked up again.
    (&["ServerNotRunningYetException"], UNKNOWN.forgets_master()),
    // A master starting up or going away: retried, and it stays the master to call (only a
    // lost connection or ServerNotRunningYetException forgets it); for a region's location,
    // Java's ClientExceptionsUtil drops it as after any exception it does not single out.
    (
        &["PleaseHoldException", "MasterNotRunningException"],
        UNKNOWN,
    ),
    // The connection to the server is lost (the JDK's classes a server can send too; not
    // ClosedChannelException, which has no constructor from a message: Java cannot make one
    // from a server's answer and gives up on it).
    (
        &[
            "ConnectionClosedException",
            "ConnectionClosingException",
            "FailedServerException",
            "ConnectException",
            "SocketTimeoutException",
            "SyncFailedException",
            "EOFException",
        ],
        CONNECTION_LOST,
    ),
    // On this server, which is busy.
    (&["RegionTooBusyException"], BUSY),
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
    // The server gave up waiting (see TIMED_OUT).
    (&["CallTimeoutException", "TimeoutIOException"], TIMED_OUT),
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
            // An authentication or authorization rejection (Hadoop's classes;
            // AuthorizationException is a subclass of AccessControlException).
            "AccessControlException",
            "AuthorizationException",
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
    use super::{CacheAction, MasterAction, PauseClass, RemoteException, Retry, CLASSES};

    /// The short class names the table knows.
    pub fn known_classes() -> impl Iterator<Item = &'static str> {
        CLASSES.iter().flat_map(|(names, _)| names.iter().copied())
    }

    /// The verdict on `e` as `[retry, cache, pause, master]`: `yes`/`no` (a lost scanner is
    /// `no`: only a scan reopens), `keep`/`drop`/`moved`/`drop-server`,
    /// `normal`/`overloaded`/`throttled`/`immediate` or `-` when it is not retried, and
    /// `forget`/`keep`: whether a master call failing with it forgets the master.
    pub fn verdict_words(e: &RemoteException) -> [&'static str; 4] {
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
        let master = match v.master {
            MasterAction::Keep => "keep",
            MasterAction::Forget => "forget",
        };
        [if retried { "yes" } else { "no" }, cache, pause, master]
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
    fn the_master_is_forgotten_only_when_it_may_be_gone() {
        use MasterAction::{Forget, Keep as Stay};
        for class in [
            "ServerNotRunningYetException",
            "CallTimeoutException",
            "ConnectionClosedException",
            "EOFException",
        ] {
            assert_eq!(class_verdict(class).master, Forget, "{class}");
        }
        for class in [
            "PleaseHoldException",
            "MasterNotRunningException",
            "NotServingRegionException",
            "SomethingNewException",
            "AccessDeniedException",
        ] {
            assert_eq!(class_verdict(class).master, Stay, "{class}");
        }
        // A flagged class is never retried, and then the master stays.
        let v = remote_verdict(&remote("EOFException", true, false));
        assert_eq!((v.retry, v.master), (Retry::No, Stay));
        let refused = Error::Connect {
            addr: "h:1".into(),
            source: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        };
        assert_eq!(verdict(&refused).master, Forget);
        assert_eq!(verdict(&Error::Protocol("bad frame".into())).master, Stay);
        let wrapped = Error::RetriesExhausted {
            attempts: 2,
            last: Box::new(refused),
        };
        assert_eq!(verdict(&wrapped).master, Stay);
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
