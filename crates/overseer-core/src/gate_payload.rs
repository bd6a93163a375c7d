//! What a gate is about: one payload type per kind of gate, and
//! [`GateBody`], the kind with its payload.
//!
//! The engine opens gates only with these types; the store writes them as
//! the JSON the `gates.payload` column has always held (the same keys), and
//! reads them back with [`GateBody::decode`], which never fails: a payload an
//! older version wrote that does not fit its kind's type is kept, raw, next
//! to an empty payload of its kind. Agent-supplied fields are untrusted text.

use crate::gate::{AskKind, GateKind};
use crate::plan::{PlanProposal, PlanSource};
use crate::rules::{AlwaysGated, ToolRequest};
use crate::session::{AskQuestion, NoticeKind};
use serde::{Deserialize, Serialize};

/// A gate's kind and its payload. On the wire it is two keys of the gate,
/// `kind` and `payload`, so the window narrows `payload` by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum GateBody {
    /// The agent's plan, before any step runs.
    Plan(PlanProposal),
    ToolCall(ToolCallGate),
    StepReview(StepRecord),
    SupervisorPause(SupervisorPauseGate),
    Deviation(DeviationGate),
    MergeReview(MergeReviewGate),
    Question(QuestionGate),
}

impl GateBody {
    pub fn kind(&self) -> GateKind {
        match self {
            GateBody::Plan(_) => GateKind::Plan,
            GateBody::ToolCall(_) => GateKind::ToolCall,
            GateBody::StepReview(_) => GateKind::StepReview,
            GateBody::SupervisorPause(_) => GateKind::SupervisorPause,
            GateBody::Deviation(_) => GateKind::Deviation,
            GateBody::MergeReview(_) => GateKind::MergeReview,
            GateBody::Question(_) => GateKind::Question,
        }
    }

    /// The payload alone, as the `gates.payload` column and the audit log
    /// hold it.
    pub fn payload_json(&self) -> serde_json::Value {
        let encoded = match self {
            GateBody::Plan(p) => serde_json::to_value(p),
            GateBody::ToolCall(p) => serde_json::to_value(p),
            GateBody::StepReview(p) => serde_json::to_value(p),
            GateBody::SupervisorPause(p) => serde_json::to_value(p),
            GateBody::Deviation(p) => serde_json::to_value(p),
            GateBody::MergeReview(p) => serde_json::to_value(p),
            GateBody::Question(p) => serde_json::to_value(p),
        };
        // These types have string keys only: encoding them cannot fail.
        encoded.unwrap_or(serde_json::Value::Null)
    }

    /// Reads a stored payload as `kind`'s type. Never fails: a payload that
    /// does not fit (an older version's shape, a hand-edited row) gives an
    /// empty payload of `kind` and the stored JSON, kept as it was (`Null`
    /// when the text is not JSON at all).
    pub fn decode(kind: GateKind, raw: &str) -> (GateBody, Option<serde_json::Value>) {
        fn typed<T: serde::de::DeserializeOwned>(
            raw: &str,
            wrap: fn(T) -> GateBody,
        ) -> Option<GateBody> {
            serde_json::from_str::<T>(raw).ok().map(wrap)
        }
        let body = match kind {
            GateKind::Plan => typed(raw, GateBody::Plan),
            GateKind::ToolCall => typed(raw, GateBody::ToolCall),
            GateKind::StepReview => typed(raw, GateBody::StepReview),
            GateKind::SupervisorPause => typed(raw, GateBody::SupervisorPause),
            GateKind::Deviation => typed(raw, GateBody::Deviation),
            GateKind::MergeReview => typed(raw, GateBody::MergeReview),
            GateKind::Question => typed(raw, GateBody::Question),
        };
        match body {
            Some(b) => (b, None),
            None => (
                GateBody::empty(kind),
                Some(serde_json::from_str(raw).unwrap_or(serde_json::Value::Null)),
            ),
        }
    }

    /// A payload of `kind` with nothing in it: what an unreadable stored
    /// payload reads as (its raw JSON is kept beside it). A deviation's cause
    /// reads as `turn_failed`, so an unreadable one is never taken for a
    /// failed merge.
    pub fn empty(kind: GateKind) -> GateBody {
        match kind {
            GateKind::Plan => GateBody::Plan(PlanProposal {
                goal: String::new(),
                steps: Vec::new(),
                files: Vec::new(),
                risks: Vec::new(),
                markdown: None,
                source: PlanSource::default(),
            }),
            GateKind::ToolCall => GateBody::ToolCall(ToolCallGate {
                tool_call: AgentToolCall::default(),
                request: ToolRequest {
                    tool: String::new(),
                    kind: crate::ToolKind::Other,
                    command: None,
                    paths: Vec::new(),
                    resolved: Vec::new(),
                },
                reason: String::new(),
                rule: None,
                always_gated: None,
                always_gated_why: None,
                agent_options: Vec::new(),
                ask_kind: None,
                risk: None,
            }),
            GateKind::StepReview => GateBody::StepReview(StepRecord::default()),
            GateKind::SupervisorPause => GateBody::SupervisorPause(SupervisorPauseGate {
                rationale: String::new(),
                step: None,
                timeout_seconds: None,
                ask_kind: None,
            }),
            GateKind::Deviation => GateBody::Deviation(DeviationGate {
                cause: DeviationCause::TurnFailed,
                error: String::new(),
                mode: None,
                attempts: None,
                max_attempts: None,
            }),
            GateKind::MergeReview => GateBody::MergeReview(MergeReviewGate::default()),
            GateKind::Question => GateBody::Question(QuestionGate {
                message: String::new(),
                schema: serde_json::Value::Null,
                questions: Vec::new(),
                ask_kind: None,
                notice: None,
            }),
        }
    }

    /// The kind of ask its opener declared, if it declared one.
    pub fn declared_ask_kind(&self) -> Option<AskKind> {
        match self {
            GateBody::ToolCall(p) => p.ask_kind,
            GateBody::SupervisorPause(p) => p.ask_kind,
            GateBody::Question(p) => p.ask_kind,
            GateBody::Plan(_)
            | GateBody::StepReview(_)
            | GateBody::Deviation(_)
            | GateBody::MergeReview(_) => None,
        }
    }

    /// What kind of ask this gate is ([`crate::gate::ask_kind`]).
    pub fn ask_kind(&self, auto_at: Option<crate::Millis>) -> AskKind {
        crate::gate::ask_kind(self.kind(), self.declared_ask_kind(), auto_at)
    }

    /// A question gate's question (None for the other kinds).
    pub fn question(&self) -> Option<&QuestionGate> {
        match self {
            GateBody::Question(q) => Some(q),
            GateBody::Plan(_)
            | GateBody::ToolCall(_)
            | GateBody::StepReview(_)
            | GateBody::SupervisorPause(_)
            | GateBody::Deviation(_)
            | GateBody::MergeReview(_) => None,
        }
    }

    /// The failure a deviation is about (None for the other kinds).
    pub fn deviation_error(&self) -> Option<&str> {
        match self {
            GateBody::Deviation(d) => Some(&d.error),
            GateBody::Plan(_)
            | GateBody::ToolCall(_)
            | GateBody::StepReview(_)
            | GateBody::SupervisorPause(_)
            | GateBody::MergeReview(_)
            | GateBody::Question(_) => None,
        }
    }
}

/// A tool call the rules send to a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ToolCallGate {
    /// The call as the agent described it: untrusted, shown as given.
    #[serde(default)]
    pub tool_call: AgentToolCall,
    /// The call as the permission rules saw it.
    pub request: ToolRequest,
    /// Why no rule decided it: why a human is asked.
    #[serde(default)]
    pub reason: String,
    /// The rule that sent it to a human, when one did (e.g. `confinement`).
    #[serde(default)]
    pub rule: Option<String>,
    /// The always-gated category it falls in: a human sees it every time.
    #[serde(default)]
    pub always_gated: Option<AlwaysGated>,
    /// That category in words.
    #[serde(default)]
    pub always_gated_why: Option<String>,
    /// The answers the agent offered (ACP permission options).
    #[serde(default)]
    pub agent_options: Vec<AgentOption>,
    /// Declared by external sessions (`blocking`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub ask_kind: Option<AskKind>,
    /// How much it can harm ([`crate::rules::risk_of`]); absent on gates
    /// opened before risk was assessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub risk: Option<crate::rules::Risk>,
}

/// A tool call as the agent described it (ACP's fields; a hook's `id`,
/// `title`, `kind`, `raw_input` and `name`). Every field is the agent's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ts_rs::TS)]
pub struct AgentToolCall {
    /// The agent's id for the call (a hook's: the ask's key).
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    /// ACP tool kind (`read`, `edit`, `delete`, `execute`... on the wire).
    #[serde(default)]
    pub kind: Option<crate::ToolKind>,
    /// How far it went; None when the agent said nothing this version knows.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::tool::lenient_status"
    )]
    #[ts(optional)]
    pub status: Option<crate::ToolCallStatus>,
    /// The tool's input as the agent sent it (an edit's new content...).
    #[serde(default)]
    pub raw_input: Option<serde_json::Value>,
    /// Files the call touches, as the agent named them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<String>>", optional)]
    pub locations: Vec<String>,
    /// Text the agent attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub text: Option<String>,
    /// The agent's own tool name (`Bash`, `mcp__server__tool`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub name: Option<String>,
}

/// One answer an agent offers to a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AgentOption {
    /// The agent's id for it (they differ between agents).
    pub option_id: String,
    /// Its label, as the agent wrote it.
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// A finished step as the engine weighed it: a step review's payload, the
/// step of a supervisor pause, the step's timeline entry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ts_rs::TS)]
pub struct StepRecord {
    /// The step's number in the plan (1-based).
    pub step: u32,
    /// The plan the step belongs to.
    #[serde(default)]
    pub plan: Option<PlanProposal>,
    /// Files changed outside the plan's declared files.
    #[serde(default)]
    pub drift: Vec<String>,
    /// The step made destructive tool calls.
    #[serde(default)]
    pub destructive: bool,
    #[serde(default)]
    pub checks_passed: u32,
    #[serde(default)]
    pub checks_total: u32,
    /// Each sensor (check command) run after the step.
    #[serde(default)]
    pub sensors: Vec<StepSensor>,
    /// Turns retried for this step.
    #[serde(default)]
    pub retries: u32,
    #[serde(default)]
    pub tool_calls_ok: u32,
    #[serde(default)]
    pub tool_calls_total: u32,
    /// The end of the agent's transcript for the step (untrusted).
    #[serde(default)]
    pub summary: String,
    /// The step's confidence score (0 to 1), once scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub confidence: Option<f64>,
    /// How the score came about, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub explain: Option<String>,
    /// What the step's turns cost (the agent's cumulative cost at the
    /// step's end less at its start), when the agent reports a cost and
    /// the step's start was seen by this engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cost: Option<crate::usage::RunCost>,
}

/// One sensor's result in a [`StepRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct StepSensor {
    pub command: String,
    pub passed: bool,
    /// None when the command did not exit (timed out, killed).
    #[serde(default)]
    pub exit_code: Option<i32>,
}

/// The supervisor paused the run (or an external session's step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SupervisorPauseGate {
    /// The supervisor's reason.
    pub rationale: String,
    /// The step it paused after (a run's step; none for a session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub step: Option<StepRecord>,
    /// After this long unanswered, the run is aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub timeout_seconds: Option<u64>,
    /// Declared by external sessions (`blocking`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub ask_kind: Option<AskKind>,
}

/// What a deviation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum DeviationCause {
    /// The agent's turn failed (an error, a crash, a timeout).
    TurnFailed,
    /// The agent switched itself to a mode the run does not allow.
    ModeBreach,
    /// Approved work could not be merged: deciding it retries the merge or
    /// rejects the run.
    MergeFailed,
    /// The run asked, messaged or connected past its caps (a flood): it
    /// is paused until the user resumes or stops it.
    Flood,
    /// The run's reported cost reached its budget (`max_cost`): it takes no
    /// new turn until the user raises the budget and goes on, or stops it.
    Budget,
}

impl DeviationCause {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviationCause::TurnFailed => "turn_failed",
            DeviationCause::ModeBreach => "mode_breach",
            DeviationCause::MergeFailed => "merge_failed",
            DeviationCause::Flood => "flood",
            DeviationCause::Budget => "budget",
        }
    }
}

/// A failed turn, a mode breach, a failed merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct DeviationGate {
    pub cause: DeviationCause,
    /// The failure, in words (may quote the agent: untrusted).
    pub error: String,
    /// A mode breach: the mode the agent switched itself to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub mode: Option<String>,
    /// Retries so far (none for a failed merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub attempts: Option<u32>,
    /// Retries allowed before retry is no longer offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub max_attempts: Option<u32>,
}

/// A run waiting in pending_review: what to review is the run's diff, read
/// from its worktree. The payload names the diff's files that other tools
/// run or load on their own (judged when the run entered review, from its
/// base commit to the reviewed commit): such a merge is never made without
/// a human.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ts_rs::TS)]
pub struct MergeReviewGate {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<crate::autorun::AutoRunFile>>")]
    pub auto_run: Vec<crate::autorun::AutoRunFile>,
}

/// A question from the agent: an elicitation form, an external session's
/// questions, or (`ask_kind: info`) a notice the user may reply to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionGate {
    /// The question, as the agent wrote it.
    pub message: String,
    /// The form's JSON Schema (the agent's; `null` for free text).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    #[ts(as = "Option<serde_json::Value>", optional)]
    pub schema: serde_json::Value,
    /// An external session's questions, one form field each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<AskQuestion>>", optional)]
    pub questions: Vec<AskQuestion>,
    /// `question` when a timer answers it, `info` for a notice, else
    /// `blocking`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub ask_kind: Option<AskKind>,
    /// A notice: what raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub notice: Option<NoticeKind>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_is_kind_and_payload_on_the_wire() {
        let body = GateBody::Deviation(DeviationGate {
            cause: DeviationCause::MergeFailed,
            error: "conflict in a.rs".into(),
            mode: None,
            attempts: None,
            max_attempts: None,
        });
        let wire = serde_json::to_value(&body).expect("serializes");
        assert_eq!(
            wire,
            json!({"kind": "deviation", "payload": {"cause": "merge_failed", "error": "conflict in a.rs"}})
        );
        assert_eq!(
            body.payload_json(),
            json!({"cause": "merge_failed", "error": "conflict in a.rs"})
        );
        let back: GateBody = serde_json::from_value(wire).expect("reads back");
        assert_eq!(back, body);
    }

    #[test]
    fn payloads_of_today_decode_as_their_types() {
        let (body, raw) = GateBody::decode(
            GateKind::Question,
            r#"{"message":"Claude finished","ask_kind":"info","notice":"stop"}"#,
        );
        assert_eq!(raw, None);
        assert_eq!(body.declared_ask_kind(), Some(AskKind::Info));
        let (body, raw) = GateBody::decode(GateKind::MergeReview, "{}");
        assert_eq!(
            (body, raw),
            (GateBody::MergeReview(MergeReviewGate::default()), None)
        );
    }

    #[test]
    fn payloads_the_untyped_engine_wrote_decode_as_their_types() {
        // As the engine's json! literals wrote them before these types.
        let tool = r#"{"tool_call":{"id":"c1","title":"Run rm -rf build","kind":"execute","status":null,
            "raw_input":{"command":"rm -rf build"},"locations":["/w/build"]},
            "request":{"tool":"Bash","kind":"execute","command":"rm -rf build","paths":["/w/build"]},
            "reason":"deletes files: rm -rf build","rule":null,"always_gated":"delete_files",
            "always_gated_why":"deletes files",
            "agent_options":[{"option_id":"a1","name":"Allow","kind":"allow_once"}]}"#;
        let (body, raw) = GateBody::decode(GateKind::ToolCall, tool);
        assert_eq!(raw, None);
        let GateBody::ToolCall(call) = body else {
            panic!("a tool call: {body:?}")
        };
        assert_eq!(call.always_gated, Some(AlwaysGated::DeleteFiles));
        assert_eq!(call.request.command.as_deref(), Some("rm -rf build"));
        assert_eq!(call.agent_options[0].kind, "allow_once");
        let record = r#"{"step":2,"plan":{"goal":"g","steps":[{"title":"a"}]},"drift":[],
            "destructive":false,"checks_passed":1,"checks_total":1,
            "sensors":[{"command":"npm test","passed":true,"exit_code":0}],"retries":0,
            "tool_calls_ok":3,"tool_calls_total":3,"summary":"done","confidence":0.9,"explain":"all passed"}"#;
        let (body, raw) = GateBody::decode(GateKind::StepReview, record);
        assert_eq!(raw, None);
        assert!(
            matches!(&body, GateBody::StepReview(s) if s.confidence == Some(0.9) && s.step == 2)
        );
        let pause =
            format!(r#"{{"rationale":"out of scope","step":{record},"timeout_seconds":900}}"#);
        let (body, raw) = GateBody::decode(GateKind::SupervisorPause, &pause);
        assert_eq!(raw, None);
        assert!(
            matches!(&body, GateBody::SupervisorPause(p) if p.step.as_ref().is_some_and(|s| s.summary == "done"))
        );
        let (body, raw) = GateBody::decode(
            GateKind::Deviation,
            r#"{"cause":"mode_breach","error":"acts unasked","mode":"auto","attempts":0,"max_attempts":10}"#,
        );
        assert_eq!(raw, None);
        assert_eq!(body.deviation_error(), Some("acts unasked"));
    }

    #[test]
    fn a_payload_that_does_not_fit_is_kept_raw_beside_an_empty_one() {
        let (body, raw) = GateBody::decode(
            GateKind::ToolCall,
            r#"{"tool":"Bash","command":"npm install pg-migrate"}"#,
        );
        assert_eq!(body, GateBody::empty(GateKind::ToolCall));
        assert_eq!(
            raw,
            Some(json!({"tool": "Bash", "command": "npm install pg-migrate"}))
        );
        let (body, raw) = GateBody::decode(GateKind::Deviation, "not json");
        assert_eq!(body.kind(), GateKind::Deviation);
        assert_eq!(raw, Some(serde_json::Value::Null));
    }
}
