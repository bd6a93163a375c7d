//! The Overseer domain, pure: no I/O, no async runtime, no database, no clock.
//!
//! Everything that decides what may happen lives here so that it can be tested
//! exhaustively; the store persists what this crate decides and the engine wires
//! it to the world. Time is always passed in as [`Millis`].
//!
//! Table of contents:
//! - [`agent`]: agents' session modes, planning strategies, exit-plan answers.
//! - [`autorun`]: files other tools run or load on their own (never merged without a human).
//! - [`plan`]: plans, the planning and step prompts, and where plans come from.
//! - [`progress`]: where a launched run is (planning, which step), kept so a restart carries it on.
//! - [`run`]: the run state machine, `apply(state, event, now)`.
//! - [`gate`]: gates (pending decisions), their kinds, options and decisions.
//! - [`gate_payload`]: what each kind of gate is about (its typed payload).
//! - [`actor`]: who did something (user via app or CLI, a person via a device, supervisor, engine, agent).
//! - [`device`]: paired devices (browsers, phones), their persons, pairing codes.
//! - [`role`]: who may do what: the owner, approvers (per workspace), observers.
//! - [`audit`]: what each signed audit record says (its typed payload).
//! - [`error`]: error codes that cross the IPC boundary as `{code, message}`.
//! - [`rules`]: permission rules in Claude Code's syntax, always-gated operations.
//! - [`unasked`]: tool calls an agent carried out without asking, judged against the rules.
//! - [`repo_grants`]: agent configuration files in a repository that grant permissions.
//! - [`confidence`]: confidence per step, approval modes and their bands.
//! - [`supervision`]: supervisor verdicts, policies, autonomy, vote resolution.
//! - [`session`]: agents that reach us from outside (hooks, MCP): their asks and our answers.
//! - [`message`]: agent-to-agent messages through the hub.
//! - [`web`]: serving browsers: the owner's setting (loopback, or TLS) and how serving went.
//! - [`view`]: the read models the UI and the CLI show, and the events pushed to them.

// Domain matches list every variant: a new state or event must force a decision.
#![deny(clippy::wildcard_enum_match_arm)]

pub mod activity;
pub mod actor;
pub mod agent;
pub mod audit;
pub mod autorun;
pub mod confidence;
pub mod device;
pub mod error;
pub mod gate;
pub mod gate_payload;
pub mod message;
pub mod plan;
pub mod progress;
pub mod questions;
pub mod repo_grants;
pub mod role;
pub mod rules;
pub mod run;
pub mod session;
pub mod supervision;
pub mod tool;
pub mod unasked;
pub mod urgency;
pub mod usage;
pub mod view;
pub mod web;

pub use activity::Activity;
pub use actor::{Actor, OwnerSurface};
pub use device::{DeviceRef, DeviceView};
pub use error::{ApiError, ErrorCode, FieldError};
pub use gate::{
    ask_kind, check_decision, merge_review_options, parse_choice, AskKind, Choice, DecisionError,
    DeviationChoice, GateChoice, GateDecision, GateKind, GateOption, GateStatus, MergeReviewChoice,
    PlanChoice, QuestionChoice, RequestedChoice, StepReviewChoice, SupervisorPauseChoice,
    ToolCallChoice,
};
pub use gate_payload::{
    AgentOption, AgentToolCall, DeviationCause, DeviationGate, GateBody, MergeReviewGate,
    QuestionGate, StepRecord, StepSensor, SupervisorPauseGate, ToolCallGate,
};
pub use role::{Access, Grant, Role, Target};
pub use run::{
    apply, InvalidTransition, ReleaseReason, RetryPolicy, RunEvent, RunState, Transition,
};
pub use session::{RunOrigin, SessionAnswer, SessionAsk, SessionRef};
pub use tool::{ToolCallStatus, ToolKind};
pub use usage::{format_cost, RunCost, RunUsage};
pub use view::cost_totals;
pub use view::{
    ActivityView, EngineEvent, GateView, PendingGate, RunActions, RunView, SensorResult,
    SensorSummary,
};

/// Milliseconds since the Unix epoch. Core never reads a clock: callers pass it in.
pub type Millis = i64;

/// An id of its own type for each kind of row, so a gate's id can never
/// be passed where a run's is meant. On the wire and in the database it is
/// the bare number (`serde(transparent)`, `number` in TypeScript).
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash,
            serde::Serialize, serde::Deserialize, ts_rs::TS,
        )]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                s.trim()
                    .parse()
                    .map($name)
                    .map_err(|_| format!("'{s}' is not a {} id: give its number", $what))
            }
        }

        impl From<i64> for $name {
            fn from(id: i64) -> Self {
                $name(id)
            }
        }

        impl From<$name> for i64 {
            fn from(id: $name) -> i64 {
                id.0
            }
        }

        impl PartialEq<i64> for $name {
            fn eq(&self, other: &i64) -> bool {
                self.0 == *other
            }
        }

        /// An id in a JSON payload (an audit record's `run_id`) is its number.
        impl PartialEq<$name> for serde_json::Value {
            fn eq(&self, other: &$name) -> bool {
                self.as_i64() == Some(other.0)
            }
        }

        #[cfg(feature = "sqlite")]
        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.0.into())
            }
        }

        #[cfg(feature = "sqlite")]
        impl rusqlite::types::FromSql for $name {
            fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                i64::column_result(v).map($name)
            }
        }
    };
}

id_type!(
    /// Identifier of a run (one attempt at a task by one agent).
    RunId,
    "run"
);
id_type!(
    /// Identifier of a task.
    TaskId,
    "task"
);
id_type!(
    /// Identifier of a gate.
    GateId,
    "gate"
);
id_type!(
    /// Identifier of a paired device (a browser, a phone).
    DeviceId,
    "device"
);

#[cfg(test)]
mod id_tests {
    use super::{GateId, RunId, TaskId};

    #[test]
    fn an_id_is_its_bare_number_on_the_wire_and_parses_from_a_users_text() {
        assert_eq!(serde_json::to_string(&RunId(7)).expect("json"), "7");
        let gate: GateId = serde_json::from_str("12").expect("a number reads as an id");
        assert_eq!(gate, GateId(12));
        assert_eq!(" 42 ".parse::<TaskId>(), Ok(TaskId(42)));
        let err = "run-3".parse::<RunId>().expect_err("not a number");
        assert!(err.contains("not a run id"), "{err}");
        // An id in a JSON payload compares as its number.
        assert_eq!(serde_json::json!(5), RunId(5));
        assert_ne!(serde_json::json!("5"), RunId(5));
    }
}
