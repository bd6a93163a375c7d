//! Waiting on a gate's decision: every part of the engine that asks (a run's
//! driver, external sessions, a flood pause) waits here.

use crate::{Records, Shared};
use overseer_core::{ApiError, ErrorCode, GateDecision, GateId};
use std::sync::Arc;
use std::time::Duration;

/// How often every waiter reads its gate again although nothing the engine
/// wrote changed it. A decision written into the database from outside the
/// engine (someone with the file but not the signing key) changes no
/// watched gate: this is how it is found, refused and put back while the
/// run waits. Only when another connection committed (SQLite's
/// `data_version`): with 1,000 waiters that is 200 small indexed reads a
/// second while someone writes the file, none otherwise.
pub(crate) const FORGED_SWEEP: Duration = Duration::from_secs(5);

/// Every [`FORGED_SWEEP`], has each waiter look at its gate again, when
/// something other than the engine wrote to the database meanwhile (while
/// nothing did, no gate can have changed unseen, and the waiters cost
/// nothing).
pub(crate) async fn sweep(engine: Arc<Shared>) {
    loop {
        tokio::time::sleep(FORGED_SWEEP).await;
        let shared = engine.clone();
        let elsewhere = tokio::task::spawn_blocking(move || shared.written_elsewhere()).await;
        match elsewhere {
            Ok(Ok(false)) => {}
            Ok(Ok(true)) => engine.gate_watch.look_again(),
            // Cannot tell: look.
            Ok(Err(e)) => {
                tracing::warn!("cannot tell whether the database was written from outside: {e}");
                engine.gate_watch.look_again();
            }
            Err(_) => engine.gate_watch.look_again(),
        }
    }
}

/// Waits for a gate's decision. The gate is already in the database. Woken
/// only when that gate's row changed (the store's writer says which gates
/// each commit changed), so a waiter costs nothing while other gates, its
/// own run's timeline and other runs change.
pub(crate) async fn wait_gate(engine: &Records, gate: GateId) -> Result<GateDecision, ApiError> {
    let mut wait = engine.gate_watch.watch(gate);
    loop {
        // Seen: a change from here on wakes the wait below.
        wait.seen();
        if engine.gate(gate)?.decision.is_some() {
            // Acting on it now: from here on nobody can override it, and a
            // human's override made before this point is what we act on. A
            // decision its signed record does not back is not acted on.
            if let Some(d) = engine.effect_signed(gate)? {
                return Ok(d);
            }
        }
        if !wait.changed().await {
            return Err(ApiError::new(ErrorCode::Internal, "the engine is stopping"));
        }
    }
}
