//! How long to wait between attempts: the pluggable [`RetryPolicy`] and HBase's schedule.
//! Whether to retry at all, and what to forget, is the exception table's call
//! (`error::exceptions`); the policy sees only errors worth retrying.

use std::time::Duration;

use rand::Rng;

use crate::error::exceptions::{self, PauseClass};
use crate::error::Error;

/// HBase's backoff multipliers (`HConstants.RETRY_BACKOFF`), applied to the base pause.
pub const RETRY_BACKOFF: [u32; 13] = [1, 2, 3, 5, 10, 20, 40, 100, 100, 100, 100, 200, 200];

/// Decides how long to wait before the next attempt, and when to stop. The default is
/// [`HBaseBackoff`]; plug another in with
/// [`ClientConfigBuilder::retry_policy`](crate::ClientConfigBuilder::retry_policy).
///
/// The client asks only after an error worth retrying (never after a do-not-retry error), and
/// never waits past the operation deadline whatever the policy says.
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
        let verdict = exceptions::verdict(error);
        // Asked to send the rest at once: no retry spent (as Java's batch caller), only the
        // operation timeout bounds these.
        let immediate = verdict.pause == PauseClass::Immediate;
        if (attempt > self.retries && !immediate) || verdict.retry == exceptions::Retry::No {
            return None;
        }
        let base = match verdict.pause {
            PauseClass::Immediate => return Some(Duration::ZERO),
            PauseClass::Throttled => {
                if let Some(wait) = error.remote().and_then(|r| throttle_wait(&r.message)) {
                    return Some(wait);
                }
                self.pause
            }
            PauseClass::Overloaded => self.pause_overloaded,
            PauseClass::Normal => self.pause,
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

/// The wait in an RpcThrottlingException message, e.g.
/// `"number of requests exceeded - wait 1sec, 500ms"` or `"… - wait 1hr, 2mins, 3sec, 0ms"`
/// (HBase writes hours as `hr`/`hrs`, minutes as `min`/`mins`). The server's numbers are not
/// trusted: a wait too long to add up is the longest there is, which no deadline outlasts.
pub(crate) fn throttle_wait(message: &str) -> Option<Duration> {
    let tail = message.lines().next()?.rsplit("wait ").next()?;
    let mut total = Duration::ZERO;
    let mut found = false;
    for part in tail.split(',') {
        let part = part.trim();
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let Ok(n) = digits.parse::<u64>() else {
            continue;
        };
        let unit = part[digits.len()..].trim_start();
        let d = if unit.starts_with("ms") {
            Duration::from_millis(n)
        } else if unit.starts_with("sec") {
            Duration::from_secs(n)
        } else if unit.starts_with("min") {
            Duration::from_secs(n.saturating_mul(60))
        } else if unit.starts_with("hr") || unit.starts_with("hour") {
            Duration::from_secs(n.saturating_mul(3600))
        } else if unit.starts_with("day") {
            Duration::from_secs(n.saturating_mul(86400))
        } else {
            continue;
        };
        total = total.saturating_add(d);
        found = true;
    }
    found.then_some(total)
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

    fn remote(class: &str, message: &str) -> Error {
        Error::Remote {
            server: "h:1".into(),
            exception: crate::RemoteException {
                class_name: format!("org.apache.hadoop.hbase.{class}"),
                message: message.into(),
                moved_to: None,
                do_not_retry: false,
                server_overloaded: false,
            },
        }
    }

    #[test]
    fn throttling_and_immediate_retries() {
        let p = HBaseBackoff {
            pause: Duration::from_millis(100),
            pause_overloaded: Duration::from_secs(1),
            retries: 5,
        };
        let t = remote(
            "quotas.RpcThrottlingException",
            "number of request exceeded - wait 1sec, 500ms\n\tat x",
        );
        assert_eq!(p.next_pause(1, &t), Some(Duration::from_millis(1500)));
        assert_eq!(
            throttle_wait("read size exceeded - wait 2mins, 3sec"),
            Some(Duration::from_secs(123))
        );
        // HBase's own spelling of hours (RpcThrottlingException.stringFromMillis).
        assert_eq!(
            throttle_wait("number of requests exceeded - wait 1hr, 0ms"),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(
            throttle_wait("write size limit exceeded - wait 2hrs, 1min, 4sec, 5ms"),
            Some(Duration::from_millis(7_264_005))
        );
        // Numbers too large to add up saturate instead of overflowing.
        assert_eq!(
            throttle_wait("wait 18446744073709551615hrs, 18446744073709551615sec, 9ms"),
            Some(Duration::MAX)
        );
        let r = remote("RetryImmediatelyException", "");
        assert_eq!(p.next_pause(2, &r), Some(Duration::ZERO));
        // Past the retries too: an immediate retry spends none.
        assert_eq!(p.next_pause(p.retries + 5, &r), Some(Duration::ZERO));
        let too_large = remote("MultiActionResultTooLarge", "");
        assert_eq!(
            p.next_pause(p.retries + 1, &too_large),
            Some(Duration::ZERO)
        );
        let q = remote("CallQueueTooBigException", "");
        assert!(p.next_pause(1, &q).unwrap() >= Duration::from_secs(1));
    }
}
