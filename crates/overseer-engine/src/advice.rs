//! The supervisor in a gate's notification. A gate's notification goes
//! out when it opens, before the supervisor answered; when its word
//! arrives, the gate is told again with it, under the same tag, so the
//! desktop replaces the first notification rather than adding a second.
//! The line itself (its advice: the option it would choose, in one line
//! why, and on a co-signed gate whether it approved and waits for the
//! user's approval) is the notification's: `notify::advice_line`.

use crate::engine::Shared;
use overseer_core::supervision::Verdict;
use overseer_core::{EngineEvent, GateStatus, GateView};

impl Shared {
    /// The supervisor's word on `gate` arrived: tells the gate again with
    /// it (same kind, title and tag as when it opened, so the desktop
    /// replaces that notification). Nothing when the gate no longer asks
    /// anyone (decided, snoozed), when its decision waits for its grace
    /// (told with its countdown), or when it escalated (its own blocking
    /// notification says so).
    pub(crate) fn tell_advice(&self, gate: &GateView) {
        let Some(advice) = &gate.advice else { return };
        if gate.status != GateStatus::Pending
            || gate.snoozed_until.is_some()
            || gate.pending_effect.is_some()
            || advice.verdict == Verdict::Escalate
        {
            return;
        }
        let Ok(run) = self.run(gate.run_id) else {
            return;
        };
        let opened = EngineEvent::GateOpened {
            gate_id: gate.id,
            run_id: gate.run_id,
            kind: gate.kind(),
        };
        let Some(mut n) = crate::notify::notification_for(&opened, &run, Some(gate)) else {
            return;
        };
        n.urgency = n.kind.urgency(Some(gate.ask_kind), &self.urgencies());
        self.tell(
            &n,
            crate::webhooks::About {
                run: Some(&run),
                gate: Some(gate.id),
                key: Some(format!("gate:{}:advice:{}", gate.id, advice.at)),
            },
        );
    }
}
