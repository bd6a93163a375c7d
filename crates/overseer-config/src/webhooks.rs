//! `[webhooks]` in `overseer.toml`: how long a receiver may take to answer,
//! how deliveries are retried, and how a burst to one hook is batched.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[webhooks]` in `overseer.toml`. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksConfig {
    /// How long one attempt may take, connecting to reading the answer
    /// (default 10 s). A receiver that takes longer has failed that attempt.
    pub timeout_seconds: Option<u64>,
    /// The wait before the first retry (default 2,000 ms); each later wait
    /// is five times the one before.
    pub first_retry_ms: Option<u64>,
    /// Attempts in all before a delivery is given up on (default 6).
    pub attempts: Option<u32>,
    /// After a request to a hook, events for it within this long are sent
    /// together, as one batch, when it has passed (default 5,000 ms; 0:
    /// every event its own request). The first event of a quiet hook goes
    /// at once.
    pub batch_window_ms: Option<u64>,
}

impl WebhooksConfig {
    pub fn is_default(&self) -> bool {
        *self == WebhooksConfig::default()
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_seconds.unwrap_or(10).clamp(1, 120))
    }

    /// Attempts in all (at least 1, at most 12).
    pub fn attempts(&self) -> u32 {
        self.attempts.unwrap_or(6).clamp(1, 12)
    }

    /// How long after a request to a hook new events for it wait, to be
    /// sent together (at most a minute).
    pub fn batch_window(&self) -> Duration {
        Duration::from_millis(self.batch_window_ms.unwrap_or(5_000).min(60_000))
    }

    /// The wait after the `failed`-th failed attempt (1: the first):
    /// `first_retry_ms` × 5^(failed − 1), at most a day.
    pub fn retry_after(&self, failed: u32) -> Duration {
        let first = self.first_retry_ms.unwrap_or(2_000);
        let factor = 5u64.saturating_pow(failed.saturating_sub(1));
        Duration::from_millis(first.saturating_mul(factor).min(86_400_000))
    }
}

#[cfg(test)]
mod tests {
    use super::WebhooksConfig;
    use std::time::Duration;

    #[test]
    fn the_default_schedule_grows_five_times_each_retry() {
        let c = WebhooksConfig::default();
        let waits: Vec<Duration> = (1..c.attempts()).map(|n| c.retry_after(n)).collect();
        assert_eq!(
            waits,
            [2, 10, 50, 250, 1250].map(Duration::from_secs),
            "six attempts: at once, then after 2 s, 10 s, 50 s, 250 s and 1,250 s"
        );
        assert_eq!(c.timeout(), Duration::from_secs(10));
        assert_eq!(c.batch_window(), Duration::from_secs(5));
    }
}
