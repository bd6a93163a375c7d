//! Deciding a gate: the answer of a person (or of the engine on their
//! rule's authority) taking effect. A review's decision merges, rejects or
//! aborts exactly as from the dashboard; a failed merge's deviation retries
//! or releases the run.

use crate::Supervision;
use overseer_core::{
    parse_choice, Activity, Actor, ApiError, DeviationCause, DeviationChoice, DeviationGate,
    ErrorCode, GateBody, GateId, GateKind, GateView, MergeReviewChoice, RunId, RunView,
};

impl Supervision {
    /// Decides any gate as `actor`. Review gates go through approve / reject /
    /// abort so that merging and killing happen exactly as from the dashboard.
    /// A person's decision through a paired device also goes on the run's
    /// timeline, naming them and the device.
    pub fn decide_gate(
        &self,
        gate_id: GateId,
        option: &str,
        context: Option<&str>,
        actor: &Actor,
    ) -> Result<GateView, ApiError> {
        let decided = self.decide_gate_as(gate_id, option, context, actor)?;
        if let (Some(device), Some(d)) = (actor.device(), &decided.decision) {
            if d.device.as_ref() == Some(device) {
                let by = actor.to_string();
                self.record_activity_or_warn(
                    decided.run_id,
                    Activity::Decided {
                        gate_id,
                        option: d.option.clone(),
                        text: format!(
                            "{}: '{}' chosen by {by} through {device}",
                            decided.title, d.option
                        ),
                        by,
                        device: device.clone(),
                    },
                );
            }
        }
        Ok(decided)
    }

    fn decide_gate_as(
        &self,
        gate_id: GateId,
        option: &str,
        context: Option<&str>,
        actor: &Actor,
    ) -> Result<GateView, ApiError> {
        let gate = self.gate(gate_id)?;
        if gate.kind() == GateKind::MergeReview {
            let choice = parse_choice::<MergeReviewChoice>(option)
                .map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
            match choice {
                MergeReviewChoice::Approve => self.approve_run(gate.run_id, actor)?,
                MergeReviewChoice::Reject => {
                    self.reject_run(gate.run_id, context.unwrap_or_default(), actor)?
                }
                MergeReviewChoice::Abort => self.abort_run(gate.run_id, actor)?,
            };
            return self.gate(gate_id);
        }
        if let GateBody::Deviation(DeviationGate {
            cause: DeviationCause::MergeFailed,
            ..
        }) = gate.body
        {
            return self.decide_merge_deviation(&gate, option, context, actor);
        }
        let now = self.clock.now();
        Ok(self.write(|tx| tx.decide_gate(gate_id, option, context, actor, now))?)
    }

    /// Approve = merge (the one [`Engine::merge_run`]), then record. If the
    /// merge cannot happen safely nothing is recorded as merged: the user gets
    /// the reason and a deviation gate. On a review the supervisor co-signs,
    /// the approval is a vote that waits for the supervisor's (the run stays
    /// in review, "waiting for the co-sign"). A second approval never merges
    /// twice.
    pub fn approve_run(&self, id: RunId, actor: &Actor) -> Result<RunView, ApiError> {
        self.approve_review(id, actor)
    }

    fn decide_merge_deviation(
        &self,
        gate: &GateView,
        option: &str,
        context: Option<&str>,
        actor: &Actor,
    ) -> Result<GateView, ApiError> {
        let now = self.clock.now();
        self.write(|tx| tx.decide_gate(gate.id, option, context, actor, now))?;
        match parse_choice::<DeviationChoice>(option) {
            Ok(DeviationChoice::Retry) => {
                self.approve_run(gate.run_id, actor)?;
            }
            Ok(DeviationChoice::Replan | DeviationChoice::Stop) | Err(_) => {
                let reason = context.unwrap_or("the work could not be merged");
                let review_pending = self
                    .run(gate.run_id)?
                    .pending_gate
                    .is_some_and(|g| g.kind == GateKind::MergeReview);
                if review_pending {
                    self.reject_run(gate.run_id, reason, actor)?;
                } else {
                    // The review was decided approve (the merge then failed):
                    // the human's stop releases the run as rejected.
                    self.transition(
                        gate.run_id,
                        overseer_core::RunEvent::Reject,
                        Some(reason),
                        actor,
                    )?;
                }
            }
        }
        self.gate(gate.id)
    }

    /// Decides a pending gate nobody waits for any more with its kind's
    /// declining choice, as the engine. A gate decided meanwhile is left.
    pub(crate) fn withdraw_gate(&self, gate: GateId, why: &str) {
        let Ok(view) = self.gate(gate) else { return };
        if view.decision.is_some() {
            return;
        }
        let choice = view.kind().decline_choice();
        match self.decide_gate(gate, choice.as_str(), Some(why), &Actor::Engine) {
            Ok(_) => {
                // Nobody acts on a withdrawn gate: acted on as far as a
                // restart's check of unacted decisions goes.
                if let Err(e) = self.effect_signed(gate) {
                    tracing::warn!(gate = %gate, "a withdrawn gate not marked acted on: {}", e.message);
                }
                self.record_activity_or_warn(
                    view.run_id,
                    Activity::GateWithdrawn {
                        text: format!("{}: withdrawn ({why})", view.title),
                    },
                );
            }
            Err(e) => tracing::debug!(gate = %gate, "not withdrawn: {}", e.message),
        }
    }
}
