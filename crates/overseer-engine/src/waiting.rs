//! Waiting on a gate's decision: every part of the engine that asks (a run's
//! driver, external sessions, a flood pause) waits here.

use crate::Engine;
use overseer_core::{ApiError, ErrorCode, GateDecision, GateId};

/// Waits for a gate's decision. The gate is already in the database. Woken
/// by changes of the gate's run only (its decisions, its row), so a waiter
/// costs nothing while other runs' gates open and close.
pub(crate) async fn wait_gate(engine: &Engine, gate: GateId) -> Result<GateDecision, ApiError> {
    let run = engine.gate(gate)?.run_id;
    let mut rx = engine.gate_watch.watch(run);
    loop {
        // Seen: a change from here on wakes the wait below.
        rx.borrow_and_update();
        if engine.gate(gate)?.decision.is_some() {
            // Acting on it now: from here on nobody can override it, and a
            // human's override made before this point is what we act on. A
            // decision its signed record does not back is not acted on.
            if let Some(d) = engine.effect_signed(gate)? {
                return Ok(d);
            }
        }
        if rx.changed().await.is_err() {
            return Err(ApiError::new(ErrorCode::Internal, "the engine is stopping"));
        }
    }
}
