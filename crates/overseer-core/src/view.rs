//! Read models shown by the window and the CLI, and the events the engine pushes
//! after each commit. The UI renders these; it never computes state of its own.

use crate::{
    GateDecision, GateId, GateKind, GateOption, GateStatus, Millis, RunId, RunState, TaskId,
};
use serde::{Deserialize, Serialize};

/// The gate a run is waiting on, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct PendingGate {
    pub id: GateId,
    pub kind: GateKind,
}

/// One row of the fleet dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunView {
    pub id: RunId,
    pub task_id: TaskId,
    pub task_title: String,
    pub workspace: String,
    pub agent: String,
    pub state: RunState,
    /// When the run entered its current state.
    pub state_since: Millis,
    pub created_at: Millis,
    /// True when the run waits on a human: pending review or an open gate.
    pub needs_you: bool,
    /// The human's reason, for rejected runs.
    pub release_note: Option<String>,
    pub pending_gate: Option<PendingGate>,
}

/// A gate with its options and, once decided, its decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct GateView {
    pub id: GateId,
    pub run_id: RunId,
    pub kind: GateKind,
    pub status: GateStatus,
    pub title: String,
    pub options: Vec<GateOption>,
    /// What the gate is about (plan, tool call, error), as its opener wrote it.
    pub payload: serde_json::Value,
    pub opened_at: Millis,
    pub decision: Option<GateDecision>,
    /// When a timer decides the gate if nobody has (step_review auto-proceed,
    /// an expiring question's default, an unanswered supervisor pause).
    #[serde(default)]
    pub auto_at: Option<Millis>,
    /// The option the timer picks.
    #[serde(default)]
    pub auto_option: Option<String>,
    /// The supervisor's authority on this gate (None: no supervisor).
    #[serde(default)]
    pub authority: Option<crate::supervision::Autonomy>,
    /// The engine acted on the decision: nobody can override it any more.
    #[serde(default)]
    pub effected: bool,
}

/// One entry of a run's activity timeline (agent message, plan, tool call,
/// sensor result), as the agent or the engine reported it. Untrusted text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ActivityView {
    pub id: i64,
    pub run_id: RunId,
    pub at: Millis,
    pub kind: String,
    pub payload: serde_json::Value,
}

/// Pushed to every subscriber after a commit, never before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EngineEvent {
    RunChanged {
        run: RunView,
    },
    GateOpened {
        gate_id: GateId,
        run_id: RunId,
        kind: GateKind,
    },
    GateDecided {
        gate_id: GateId,
        run_id: RunId,
        kind: GateKind,
    },
    /// Something happened in a run (stored in its timeline first).
    RunActivity {
        activity: ActivityView,
    },
    /// A run was aborted and its whole process tree is gone.
    OrchestrationAborted {
        run_id: RunId,
        killed: Vec<u32>,
    },
}

/// Whether a run in `state` with `pending_gate` needs the user.
pub fn needs_you(state: RunState, pending_gate: Option<&PendingGate>) -> bool {
    state == RunState::PendingReview || pending_gate.is_some()
}
