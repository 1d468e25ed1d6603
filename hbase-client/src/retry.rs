//! Deciding what to do after a failed attempt: which cache entries to drop, and how long to wait.

use std::time::Duration;

use rand::Rng;

use crate::error::{Error, ErrorKind};

/// HBase's backoff multipliers (`HConstants.RETRY_BACKOFF`), applied to the base pause.
pub const RETRY_BACKOFF: [u32; 13] = [1, 2, 3, 5, 10, 20, 40, 100, 100, 100, 100, 200, 200];

/// What a failed attempt means for the client's cached state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// The region is elsewhere: drop its cached location (or install the new one).
    Relocate,
    /// The server is unusable: drop its connection and every region cached on it.
    DropServer,
    /// Transient: keep the cache, back off.
    Backoff,
    /// Never retry.
    Fail,
}

pub(crate) fn recovery(e: &Error) -> Recovery {
    match e {
        Error::Remote { exception, .. } => match exception.short_class_name() {
            "NotServingRegionException" | "RegionMovedException" => Recovery::Relocate,
            "RegionServerStoppedException"
            | "RegionServerAbortedException"
            | "ServerNotRunningYetException" => Recovery::DropServer,
            _ if e.kind() == ErrorKind::DoNotRetry || e.kind() == ErrorKind::NotFound => {
                Recovery::Fail
            }
            _ => Recovery::Backoff,
        },
        Error::Connection { .. } | Error::ConnectionClosed { .. } | Error::Protocol(_) => {
            Recovery::DropServer
        }
        // A call that timed out may mean a half-open server; the next attempt relocates.
        Error::Timeout { .. } => Recovery::DropServer,
        Error::ZooKeeper { .. } => Recovery::Backoff,
        Error::RegionOffline { .. } => Recovery::Backoff,
        Error::TableNotFound(_) | Error::InvalidInput(_) | Error::ProcedureFailed { .. } => {
            Recovery::Fail
        }
        Error::RetriesExhausted { .. } | Error::MutationsFailed { .. } => Recovery::Fail,
    }
}

/// Decides whether and when to try again. The default is [`HBaseBackoff`].
pub trait RetryPolicy: Send + Sync + std::fmt::Debug {
    /// The pause before attempt `attempt + 1` (attempts count from 1) after `error`, or `None`
    /// to give up.
    fn next_pause(&self, attempt: u32, error: &Error) -> Option<Duration>;
}

/// HBase's schedule: `pause × RETRY_BACKOFF[attempt-1]` plus up to 1% jitter, for at most
/// `retries` retries. Overloaded servers get a longer base pause.
#[derive(Debug, Clone)]
pub struct HBaseBackoff {
    /// Base pause.
    pub pause: Duration,
    /// Base pause when the server said it is overloaded.
    pub pause_overloaded: Duration,
    /// Retries after the first attempt.
    pub retries: u32,
}

impl RetryPolicy for HBaseBackoff {
    fn next_pause(&self, attempt: u32, error: &Error) -> Option<Duration> {
        if attempt > self.retries || recovery(error) == Recovery::Fail {
            return None;
        }
        let overloaded = error.remote().is_some_and(|r| r.server_overloaded);
        let base = if overloaded {
            self.pause_overloaded
        } else {
            self.pause
        };
        let step = RETRY_BACKOFF[(attempt as usize - 1).min(RETRY_BACKOFF.len() - 1)];
        let pause = base * step;
        let jitter = pause.as_nanos() as u64 / 100;
        let jitter = if jitter > 0 {
            rand::rng().random_range(0..=jitter)
        } else {
            0
        };
        Some(pause + Duration::from_nanos(jitter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_follows_hbase_table() {
        let p = HBaseBackoff {
            pause: Duration::from_millis(100),
            pause_overloaded: Duration::from_secs(1),
            retries: 3,
        };
        let e = Error::ConnectionClosed {
            addr: "a".into(),
            reason: "x".into(),
        };
        let first = p.next_pause(1, &e).unwrap();
        assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(101));
        let third = p.next_pause(3, &e).unwrap();
        assert!(third >= Duration::from_millis(300) && third <= Duration::from_millis(303));
        assert!(p.next_pause(4, &e).is_none());
        assert!(p.next_pause(1, &Error::TableNotFound("t".into())).is_none());
    }
}
