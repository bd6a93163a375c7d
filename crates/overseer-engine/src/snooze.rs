//! Snoozing an inbox item: the user puts a pending gate off until a time.
//! Until then it is out of the inbox's list and "needs you"; at that time it
//! wakes, told again as just opened, so it is back in the inbox and notifies
//! again (a blocking ask as loudly as when it opened). The time is stored
//! with the gate, so a snooze outlives an engine restart. A snoozed gate
//! still has its own timer: a question that expires meanwhile takes its
//! default, as it would have in the inbox.

use crate::Engine;
use overseer_core::{Actor, ApiError, EngineEvent, ErrorCode, GateId, GateView, Millis};
use std::sync::Arc;
use std::time::Duration;

/// The shortest snooze: 5 seconds.
pub const MIN_SNOOZE_MS: Millis = 5_000;
/// The longest snooze: 30 days.
pub const MAX_SNOOZE_MS: Millis = 30 * 24 * 3600 * 1000;

impl Engine {
    /// Snoozes a pending gate until `until` (milliseconds since the epoch):
    /// 5 s to 30 days from now. Only a human snoozes.
    pub fn snooze_gate(
        &self,
        gate: GateId,
        until: Millis,
        actor: &Actor,
    ) -> Result<GateView, ApiError> {
        if !actor.is_user() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "only a human can snooze an inbox item",
            ));
        }
        let now = self.clock.now();
        if until < now + MIN_SNOOZE_MS || until > now + MAX_SNOOZE_MS {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "gate {gate}: snooze for 5 seconds to 30 days (until {} is {})",
                    overseer_core::device::utc_text(until),
                    if until < now + MIN_SNOOZE_MS {
                        "too soon"
                    } else {
                        "too far off"
                    }
                ),
            ));
        }
        Ok(self.write(|tx| tx.snooze_gate(gate, until, actor, now))?)
    }
}

/// Wakes snoozed gates when their time comes, also those whose time passed
/// while the engine was down (at once, on start).
pub(crate) fn start_wakes(engine: Arc<Engine>) {
    use tokio::sync::broadcast::error::RecvError;
    engine.clone().spawn_cancellable(async move {
        let mut rx = engine.subscribe();
        loop {
            let now = engine.clock.now();
            let next = engine.store().next_snooze_end().unwrap_or_else(|e| {
                tracing::error!("snoozed gates: {e}");
                None
            });
            if next.is_some_and(|at| at <= now) {
                if let Err(e) = engine.write(|tx| tx.wake_snoozed(now)) {
                    tracing::error!("snoozed gates: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            }
            let wait = next.map_or(Duration::from_secs(3600), |at| {
                Duration::from_millis(u64::try_from(at - now).unwrap_or(0))
            });
            let deadline = tokio::time::Instant::now() + wait;
            // A new snooze changes its run's row: look again then.
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    ev = rx.recv() => match ev {
                        Ok(EngineEvent::RunChanged { .. }) | Err(RecvError::Lagged(_)) => break,
                        Ok(_) => {}
                        Err(RecvError::Closed) => return,
                    },
                }
            }
        }
    });
}
