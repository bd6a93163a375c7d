//! Where a launched run is in its life, kept at every change so that an
//! engine restarted after a crash carries the run on from there instead of
//! dropping it (and the user's pending decisions with it).
//!
//! A run's driver moves between two phases: planning (until a plan is
//! approved) and executing the approved plan step by step. Between them it
//! waits on gates: the plan, a step review, a supervisor's pause, a
//! deviation. The [`Checkpoint`] says which phase, which step, and the last
//! gate whose decision the driver acted on; a gate of the run opened after
//! that one is the one the driver was waiting on (or had just been
//! answered) when the engine stopped, and a restarted driver waits on it
//! again ([`on_resume`] says what happens to each of the run's gates).

use crate::gate::{AskKind, GateKind};
use crate::plan::PlanProposal;
use crate::GateId;
use serde::{Deserialize, Serialize};

/// The phase a launched run's driver is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Progress {
    /// The next turn asks for a plan; `guidance` is what the user (or the
    /// last failure) said for it.
    Planning { guidance: String },
    /// Carrying out `plan`; `step` (0-based) is the step under way, tried
    /// `retries` times after failures and corrected `reorients` times.
    Executing {
        plan: PlanProposal,
        step: usize,
        retries: u32,
        reorients: u32,
        guidance: String,
    },
    /// Every step is done: the run goes to review (or is merged, when the
    /// user's auto-advance rule says so).
    Finishing,
}

impl Default for Progress {
    fn default() -> Self {
        Progress::Planning {
            guidance: String::new(),
        }
    }
}

/// A run's progress as the driver last wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Checkpoint {
    pub progress: Progress,
    /// The last gate whose decision the driver acted on: the run's gates
    /// after it were opened since (and not yet acted on when it was written).
    #[serde(default)]
    pub after_gate: Option<GateId>,
    /// The rules the user's "always" answers added for the rest of the run
    /// (each from a signed decision on a tool-call gate).
    #[serde(default)]
    pub always: Vec<crate::rules::Rule>,
}

/// What a restarted engine does with a gate of a run it carries on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnResume {
    /// The driver waits on it again (the plan, a step review, a supervisor's
    /// pause, a deviation): it stays pending with its timer, and its decision
    /// is acted on as if the engine had never stopped.
    WaitAgain,
    /// Its asker was a request of the agent's process, which is gone: a
    /// tool call is never answered blindly; the gate is withdrawn and the
    /// agent, carried on, asks again if it still needs to.
    Withdraw,
    /// A question or notice stays pending; an answer given later reaches the
    /// agent as an instruction for its next turn.
    AnswerAsSteering,
    /// Not the driver's: the merge review (the run has finished working).
    Leave,
}

/// What happens to one of the run's pending gates when a restarted engine
/// carries the run on. `keyed`: the gate was opened for an ask of the
/// agent's own MCP tools (its asker, that tool call, is gone with the agent).
pub fn on_resume(kind: GateKind, keyed: bool, ask_kind: AskKind) -> OnResume {
    let drivers = !keyed && ask_kind != AskKind::Info;
    match kind {
        GateKind::Question => OnResume::AnswerAsSteering,
        GateKind::Plan | GateKind::StepReview | GateKind::SupervisorPause | GateKind::Deviation
            if drivers =>
        {
            OnResume::WaitAgain
        }
        GateKind::Plan | GateKind::StepReview | GateKind::SupervisorPause | GateKind::Deviation
            if ask_kind == AskKind::Info =>
        {
            OnResume::AnswerAsSteering
        }
        GateKind::Plan
        | GateKind::StepReview
        | GateKind::SupervisorPause
        | GateKind::Deviation
        | GateKind::ToolCall => OnResume::Withdraw,
        GateKind::MergeReview => OnResume::Leave,
    }
}

/// What the agent hears first when its run is carried on after a restart.
pub fn resume_note(session_resumed: bool) -> String {
    if session_resumed {
        "Overseer was restarted while you worked, and your session was resumed. \
         Anything you were about to do that needed permission was not done: ask again if you still need it."
            .to_owned()
    } else {
        "Overseer was restarted while you worked on this task, and this is a new session. \
         Your work so far is in this repository (see `git log` and `git status`); \
         anything you were about to do that needed permission was not done. Carry on from where you were."
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_are_asked_again_and_the_drivers_gates_wait_again() {
        use AskKind::{Blocking, Info, Question};
        assert_eq!(
            on_resume(GateKind::ToolCall, false, Blocking),
            OnResume::Withdraw
        );
        assert_eq!(
            on_resume(GateKind::ToolCall, true, Blocking),
            OnResume::Withdraw
        );
        for kind in [
            GateKind::Plan,
            GateKind::StepReview,
            GateKind::SupervisorPause,
            GateKind::Deviation,
        ] {
            assert_eq!(on_resume(kind, false, Blocking), OnResume::WaitAgain);
            assert_eq!(on_resume(kind, false, Question), OnResume::WaitAgain);
            // The agent's own MCP ask for a plan or a step's review: its
            // asker is gone, it asks again.
            assert_eq!(on_resume(kind, true, Blocking), OnResume::Withdraw);
        }
        assert_eq!(
            on_resume(GateKind::Question, false, Blocking),
            OnResume::AnswerAsSteering
        );
        assert_eq!(
            on_resume(GateKind::Question, true, Question),
            OnResume::AnswerAsSteering
        );
        assert_eq!(
            on_resume(GateKind::Question, true, Info),
            OnResume::AnswerAsSteering
        );
        assert_eq!(
            on_resume(GateKind::MergeReview, false, Question),
            OnResume::Leave
        );
    }

    #[test]
    fn a_checkpoint_reads_back_what_was_written() {
        let c = Checkpoint {
            progress: Progress::Executing {
                plan: PlanProposal::skipped("goal"),
                step: 2,
                retries: 1,
                reorients: 0,
                guidance: "g".into(),
            },
            after_gate: Some(GateId(7)),
            always: vec![crate::rules::Rule::parse("Bash(npm test)").expect("rule")],
        };
        let text = serde_json::to_string(&c).expect("serialize");
        let back: Checkpoint = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, c);
        let fresh: Checkpoint =
            serde_json::from_str(r#"{"progress":{"phase":"planning","guidance":""}}"#)
                .expect("parse");
        assert_eq!(fresh, Checkpoint::default());
    }
}
