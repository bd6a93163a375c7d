//! The engine's side of the caps: counting a run's uses, pausing it past a
//! cap (a security entry, one notification) and carrying it on when the
//! user lets it.
use super::*;
use crate::{Runs, Supervision};
/// A connection to a run's socket, counted while it is open.
pub struct Connection {
    engine: Arc<Runs>,
    run: RunId,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(f) = lock(&self.engine.floods.runs).get_mut(&self.run) {
            f.connections = f.connections.saturating_sub(1);
        }
    }
}

impl Supervision {
    /// One use of the engine by `run` (a call on its socket, a message, a
    /// notice): refused while it is paused, and past its rate it pauses it.
    pub fn flood_use(&self, run: RunId, what: Use) -> Result<(), ApiError> {
        match self.floods.take(run, what, Instant::now())? {
            None => Ok(()),
            Some(cap) => Err(self.flood_pause(run, cap)),
        }
    }

    /// A new connection to `run`'s socket, counted until it is dropped.
    pub fn flood_connect(self: &Arc<Self>, run: RunId) -> Result<Connection, ApiError> {
        self.floods.check_paused(run)?;
        let over = {
            let mut runs = lock(&self.floods.runs);
            let f = runs.entry(run).or_default();
            f.connections += 1;
            f.connections > self.floods.limits.connections
        };
        let conn = Connection {
            engine: self.runs_layer(),
            run,
        };
        if over {
            drop(conn);
            return Err(self.flood_pause(run, Cap::Connections));
        }
        Ok(conn)
    }

    /// Opens a gate the run's agent asked for, unless the run is paused or
    /// has its cap of asks waiting already (then the run is paused).
    pub(crate) fn flood_admit_gate<T>(
        &self,
        run: RunId,
        open: impl FnOnce() -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        self.floods.check_paused(run)?;
        let opening = self.floods.opening_lock(run);
        let _one_at_a_time = lock(&opening);
        let pending = self.store().pending_count_of_run(run)?;
        if pending >= self.floods.limits.pending_asks {
            return Err(self.flood_pause(run, Cap::PendingAsks));
        }
        open()
    }

    /// Pauses `run` for going past `cap` (once: a run already paused only
    /// counts the refusal), and returns the error its agent gets.
    pub(crate) fn flood_pause(&self, run: RunId, cap: Cap) -> ApiError {
        let limits = *self.floods.limits();
        let error = refused(run, cap, &limits);
        if !self.floods.pause(run, cap) {
            return error;
        }
        let what = cap.describe(&limits);
        tracing::warn!(run = %run, cap = cap.as_str(), "run {run} went past its cap ({what}): paused");
        let text = format!(
            "this run went past its cap ({what}): Overseer paused it and refuses what it asks until you resume it"
        );
        self.audit(
            &Actor::Engine,
            overseer_core::audit::AuditPayload::SecurityEvent(
                overseer_core::audit::SecurityPayload::Flood {
                    run_id: run,
                    cap: cap.as_str().to_owned(),
                    what: what.to_string(),
                },
            ),
        );
        self.record_activity_or_warn(
            run,
            Activity::Security(SecurityEntry {
                text: text.clone(),
                event: Some(SecurityEvent::Flood),
                ..SecurityEntry::default()
            }),
        );
        let spec = GateSpec::new(
            run,
            GateBody::Deviation(DeviationGate {
                cause: DeviationCause::Flood,
                error: text,
                mode: None,
                attempts: None,
                max_attempts: None,
            }),
            &format!("Run {run} flooded Overseer ({what}): paused"),
            vec![
                GateOption::choice(DeviationChoice::Retry, "Resume the run"),
                GateOption::choice(DeviationChoice::Stop, "Stop the run"),
            ],
        );
        let gate = match self.open_gate_spec(&spec, &Actor::Engine) {
            Ok(g) => {
                self.floods.set_gate(run, g);
                Some(g)
            }
            Err(e) => {
                tracing::error!(run = %run, "the pause gate could not be opened: {}", e.message);
                None
            }
        };
        // What it asked is withdrawn (its askers hear "declined"): the
        // user's inbox holds the pause, not the flood, and a resumed run
        // starts under its cap again.
        let pending = self.store().pending_gates_of_run(run);
        // A turn waiting on its plan gate is left to it: cancelling would
        // abandon that gate (the driver plans again with another), and the
        // agent does nothing before the user decides the plan anyway.
        let plan_waiting = pending
            .as_ref()
            .is_ok_and(|p| p.iter().any(|g| g.kind() == GateKind::Plan));
        match pending {
            Ok(pending) => {
                for g in pending
                    .iter()
                    .filter(|g| matches!(g.kind(), GateKind::Question | GateKind::ToolCall))
                {
                    self.withdraw_gate(g.id, "the run was paused for flooding Overseer");
                }
            }
            Err(e) => tracing::warn!(run = %run, "a paused run's asks not withdrawn: {e}"),
        }
        if let Some(me) = self.me.upgrade() {
            if let Some(live) = self.live.get(run).filter(|_| !plan_waiting) {
                let engine = me.clone();
                me.spawn_task(async move {
                    // Resumed before this task ran (a loaded machine): the
                    // turn now running is the resumed one; leave it be.
                    if engine.floods.paused_gate(run).is_none() {
                        return;
                    }
                    engine.floods.note_turn_cancelled(run);
                    if let Err(e) = live.conn.cancel().await {
                        tracing::debug!(run = %run, "cancelling a paused run's turn: {e}");
                    }
                });
            }
            if let Some(gate) = gate {
                let engine = me.clone();
                me.spawn_task(async move { after_pause(&engine, run, gate).await });
            }
        }
        error
    }
}

impl Supervision {
    /// The user resumed `run` on its pause gate: the pause is lifted (once,
    /// whoever acts on the decision first) and the timeline says so.
    pub(crate) fn flood_resumed(&self, run: RunId, gate: GateId, by: &Actor) {
        let Some(refused) = self.floods.resume(run, Some(gate)) else {
            return;
        };
        self.record_activity_or_warn(
            run,
            Activity::Security(SecurityEntry {
                text: format!(
                    "{by} resumed the run after it was paused for flooding ({refused} uses refused meanwhile)"
                ),
                ..SecurityEntry::default()
            }),
        );
    }
}

/// Carries out the user's decision on a pause gate: Resume lifts the pause,
/// Stop aborts the run.
async fn after_pause(engine: &Arc<Supervision>, run: RunId, gate: GateId) {
    let Ok(d) = crate::waiting::wait_gate(engine, gate).await else {
        return;
    };
    match d.choice::<DeviationChoice>() {
        Ok(DeviationChoice::Retry) => engine.flood_resumed(run, gate, &d.actor),
        Ok(DeviationChoice::Stop | DeviationChoice::Replan) | Err(_) => {
            let actor = d.actor.clone();
            let engine = engine.clone();
            let stopped = overseer_contain::blocking::off_worker(move || {
                engine.abort_run(run, &actor).map(|_| ())
            });
            if let Err(e) = stopped {
                tracing::warn!(run = %run, "a paused run could not be stopped: {}", e.message);
            }
        }
    }
}
