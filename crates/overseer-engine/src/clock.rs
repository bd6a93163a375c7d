use overseer_core::Millis;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the engine gets the time from; core never reads it itself.
pub trait Clock: Send + Sync {
    fn now(&self) -> Millis;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}
