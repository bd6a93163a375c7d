//! The supervisor in a gate's notification: its advice (the option it
//! would choose, in one line why) and, on a co-signed gate, whether it
//! approved and waits for the user's approval. A gate's notification goes
//! out when it opens, before the supervisor answered; when its word
//! arrives, the gate is told again with it, under the same tag, so the
//! desktop replaces the first notification rather than adding a second.

use crate::engine::Shared;
use overseer_core::supervision::{Autonomy, Verdict};
use overseer_core::{EngineEvent, GateStatus, GateView};

/// The longest rationale a notification carries, in characters.
const RATIONALE: usize = 160;

/// The supervisor's latest word on `g`, in one line for its notification:
/// None when it said nothing yet, or when its decision waits for its
/// grace (that has a notification of its own, with the countdown).
pub(crate) fn advice_line(g: &GateView) -> Option<String> {
    if g.pending_effect.is_some() {
        return None;
    }
    let a = g.advice.as_ref()?;
    let label = a.option.as_deref().map(|o| {
        g.options
            .iter()
            .find(|x| x.id == o)
            .map_or(o, |x| x.label.as_str())
    });
    let why = a
        .rationale
        .as_deref()
        .map(|r| {
            r.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
        })
        .filter(|r| !r.is_empty())
        .map(|r| match r.char_indices().nth(RATIONALE) {
            Some((cut, _)) => format!(": {}…", &r[..cut]),
            None => format!(": {r}"),
        })
        .unwrap_or_default();
    let named = |l: Option<&str>| l.map(|l| format!(" “{l}”")).unwrap_or_default();
    let cosign = g.authority == Some(Autonomy::Cosign);
    Some(match a.verdict {
        Verdict::Advise => format!("The supervisor advises{}{why}", named(label)),
        Verdict::Approve if cosign => format!(
            "The supervisor approved{}{why}. It passes once you approve too (co-sign)",
            named(label)
        ),
        Verdict::Approve => format!("The supervisor approves{}{why}", named(label)),
        Verdict::Reject if cosign => format!(
            "The supervisor objects{}{why}. Your approval overrides it (co-sign)",
            named(label)
        ),
        Verdict::Reject => format!("The supervisor would refuse{}{why}", named(label)),
        Verdict::Escalate => format!("The supervisor hands this to you{why}"),
        Verdict::Continue | Verdict::Reorient | Verdict::Pause => return None,
    })
}

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
