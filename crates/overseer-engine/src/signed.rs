//! Decisions exist only with their signed record, on the engine's side: what
//! happens when the store finds a decision in the database that no verifying
//! audit record backs (written with `sqlite3`, not through Overseer). The
//! store has already put the gate back as its record says (pending when no
//! record says anything) and signed a `security_event`; the engine does not
//! act on it, tells the run's timeline and the user, and waits on.

use crate::Records;
use overseer_core::activity::{Activity, SecurityEntry, SecurityEvent};
use overseer_core::{ApiError, GateDecision, GateId, GateView};
use overseer_store::DecisionMismatch;

impl Records {
    /// Marks a decided gate effected, unless its decision is not the one its
    /// signed record holds: then the refusal is reported and the decision
    /// the record backs (if any) is returned instead.
    pub(crate) fn effect_signed(&self, gate: GateId) -> Result<Option<GateDecision>, ApiError> {
        let now = self.clock.now();
        let (view, forged) = self.write(|tx| tx.effect_decision(gate, now))?;
        if let Some(m) = forged {
            self.decision_refused(&view, &m);
        }
        Ok(view.decision)
    }

    /// At start, before anything acts: every decided gate nothing acted on
    /// yet is checked against its signed record.
    pub(crate) fn reconcile_decisions_at_start(&self) -> Result<usize, ApiError> {
        let now = self.clock.now();
        let refused = self.write(|tx| tx.reconcile_unacted(now))?;
        for (view, m) in &refused {
            self.decision_refused(view, m);
        }
        Ok(refused.len())
    }

    /// The timeline and the user hear about a decision that was not acted on.
    fn decision_refused(&self, gate: &GateView, m: &DecisionMismatch) {
        tracing::error!(gate = %gate.id, run = %gate.run_id, "{m}");
        let text = match &gate.decision {
            None => format!(
                "A decision on gate {} was written into the database outside Overseer, with no signed record; it was not acted on and the gate waits for a real decision ({m})",
                gate.id
            ),
            Some(d) => format!(
                "The decision on gate {} was changed in the database outside Overseer; Overseer acts on the signed decision instead ('{}' by {}) ({m})",
                gate.id, d.option, d.actor
            ),
        };
        if let Err(e) = self.record_activity(
            gate.run_id,
            Activity::Security(SecurityEntry {
                text: text.clone(),
                event: Some(SecurityEvent::DecisionWithoutRecord),
                gate_id: Some(gate.id),
                ..SecurityEntry::default()
            }),
        ) {
            tracing::error!(
                gate = %gate.id,
                "cannot record the refused decision in the timeline: {}",
                e.message
            );
        }
        // The gate put back (pending again: the inbox shows it and the user
        // is told) was published with the write that put it back.
    }
}
