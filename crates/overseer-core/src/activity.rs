//! The entries of a run's timeline, typed: one variant per kind the engine
//! records. On the wire and in the database an entry is `{kind, payload}`;
//! the window narrows `payload` by `kind`.
//!
//! Entries already stored keep showing: [`Activity::decode`] never fails. A
//! kind this build does not know, or a payload of an older shape, becomes
//! [`Activity::Unrecognized`] with its raw kind and JSON.

use crate::gate_payload::StepRecord;
use crate::message::{MessageStatus, MessageTo};
use crate::plan::PlanProposal;
use crate::RunId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One timeline entry. Every text field is untrusted unless the engine wrote
/// it (agents' messages, titles, paths, output): shown inertly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum Activity {
    /// The agent's message (its chunks of one turn, joined).
    Message { text: String },
    /// The agent's reasoning.
    Thought { text: String },
    /// The agent's progress list; each one replaces the previous.
    Plan { entries: Vec<ProgressEntry> },
    /// A plan put up for approval.
    PlanProposed(PlanProposal),
    /// The current state of one of the agent's tool calls (replace the
    /// previous state with the same `id`).
    ToolCall(ToolCallEntry),
    /// A permission rule allowed a tool call; `text` names the rule and its layer.
    ToolAllowed(RuleDecision),
    /// A permission rule denied a tool call; `text` is the reason and the layer.
    ToolDenied(RuleDecision),
    /// An "always" answer added a rule for the rest of the run or session.
    RuleAdded { text: String },
    /// A check command ran.
    Sensor(SensorRun),
    /// A step of the approved plan began (`step` counts from 1).
    StepStarted { step: u32, text: String },
    /// A step ended: its evidence and, once scored, its confidence (boxed:
    /// the largest entry by far).
    StepFinished(Box<StepRecord>),
    /// The agent hit a problem the user must weigh.
    Deviation { text: String, cause: String },
    /// The supervisor's verdict on a step.
    Verdict {
        verdict: crate::supervision::Verdict,
        /// Its rationale.
        text: String,
        correction: Option<String>,
    },
    /// Someone steered the run.
    UserInstruction {
        text: String,
        /// The actor, as its string (`user:app`, `user:cli`).
        by: String,
    },
    /// The engine failed the run or a step of it.
    Error { text: String },
    /// The agent broke the protocol.
    ProtocolError { text: String },
    /// The agent read a file through Overseer.
    FileRead { path: String },
    /// The agent wrote a file through Overseer.
    FileWritten { path: String, bytes: u64 },
    /// Overseer refused the agent a file; `text` is why.
    FileRefused { path: String, text: String },
    /// Files changed outside the plan.
    Drift { text: String, files: Vec<String> },
    /// A batch of the agent's stderr (`text`: the lines joined).
    Log { text: String, lines: u32 },
    /// The agent's session mode.
    Mode { mode: String, text: String },
    /// Something Overseer treats as a security event.
    Security(SecurityEntry),
    /// The agent's ACP session started or resumed.
    Session {
        text: String,
        /// The modes it offers.
        modes: Vec<AgentMode>,
    },
    /// No plan gate (the profile or task says `plan = "skip"`).
    PlanSkipped { text: String },
    /// How the engine answered the agent's exit-plan request.
    PlanAnswer { text: String },
    /// An outside session (a terminal Claude Code, Codex, an MCP client) reached Overseer.
    SessionStarted { text: String },
    /// An outside session told the user something.
    Notice { text: String, title: Option<String> },
    /// An outside session ended its turn.
    TurnEnded { text: String, title: Option<String> },
    /// The user's steering reached the session.
    SteeringDelivered { text: String },
    /// An outside session reported a step (`report_step`).
    StepReported {
        step: String,
        status: String,
        summary: String,
        #[serde(default)]
        files_touched: Vec<String>,
    },
    /// A question an outside session had asked before was withdrawn.
    GateWithdrawn { text: String },
    /// A message the run sent through the hub.
    MessageSent(MessageEntry),
    /// A message delivered to the run.
    MessageReceived(MessageEntry),
    /// A failed step will be tried again after `wait_ms`.
    RetryQueued {
        text: String,
        attempt: u32,
        wait_ms: u64,
        /// The failure's tail.
        error: String,
    },
    /// The engine restarted and the run carries on.
    CarriedOn { text: String },
    /// A question still pending was asked again after a restart.
    QuestionAgain { text: String },
    /// How a merge went (`outcome` is absent when auto-advance did not merge).
    Merge {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        outcome: Option<MergeOutcome>,
    },
    /// A merge review was approved and waits for the supervisor's co-sign.
    Cosign {
        gate_id: crate::GateId,
        /// The approver, as its actor string.
        by: String,
        text: String,
    },
    /// A person decided one of the run's gates through a paired device (a
    /// browser, a phone): who, through what, and what they chose.
    Decided {
        gate_id: crate::GateId,
        option: String,
        /// The person, as its actor string (`user:ana`).
        by: String,
        device: crate::DeviceRef,
        text: String,
    },
    /// An entry this build cannot read (an unknown kind or an older shape),
    /// kept as stored and shown as its text.
    Unrecognized(UnrecognizedEntry),
}

/// One entry of the agent's progress list (as the agent reported it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ProgressEntry {
    pub content: String,
    /// `high`, `medium` or `low`.
    #[serde(default)]
    pub priority: String,
    /// `pending`, `in_progress` or `completed` (the agent may say anything).
    pub status: String,
}

/// A tool call as the agent described it so far.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ts_rs::TS)]
pub struct ToolCallEntry {
    pub id: String,
    pub title: Option<String>,
    /// ACP tool kind (`read`, `edit`, `execute`, ... on the wire).
    pub kind: Option<crate::ToolKind>,
    /// How far it went; None when the agent said nothing this version knows.
    #[serde(default, deserialize_with = "crate::tool::lenient_status")]
    pub status: Option<crate::ToolCallStatus>,
    /// The call's input, verbatim (any JSON the agent sent).
    pub raw_input: Option<Value>,
    /// Files the call touches, as the agent named them.
    #[serde(default)]
    pub locations: Vec<String>,
    /// The text content the agent attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub text: Option<String>,
    /// The agent's own tool name, when it says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub name: Option<String>,
}

/// A permission rule's decision on a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RuleDecision {
    /// The call's title (matches its `tool_call` entry's).
    pub title: String,
    /// ACP tool kind.
    pub kind: crate::ToolKind,
    /// The rule or reason, and its layer.
    pub text: String,
    /// The rules that decided and their layers (absent in entries written
    /// before it was kept: their `text` names the layer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub provenance: Option<crate::rules::Provenance>,
}

/// One run of a check command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct SensorRun {
    pub command: String,
    /// None when it did not exit (killed, not started).
    pub exit_code: Option<i32>,
    pub passed: bool,
    /// Its output (the tail).
    #[serde(default)]
    pub output: String,
}

/// A security event. `text` says it in words; the other fields say which
/// event it was, for the ones that carry more.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ts_rs::TS)]
pub struct SecurityEntry {
    pub text: String,
    /// Which event, for the ones others look for again (None for the rest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub event: Option<SecurityEvent>,
    /// The mode an agent switched itself to, which acts unasked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub mode: Option<String>,
    /// The gate whose decision had no record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub gate_id: Option<crate::GateId>,
    /// An unrecorded merge: the base branch, the commit it was at, and the
    /// run's commits found on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub base: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub base_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub found: Option<Vec<String>>,
    /// The tool call the agent carried out without asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool_call: Option<String>,
    /// Files the event is about (agent configuration that grants permissions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub files: Option<Vec<String>>,
    /// The process that reached Overseer's socket from inside a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub pid: Option<i64>,
}

/// A security event others look for again by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum SecurityEvent {
    /// A gate's decision had no signed record: it was refused.
    DecisionWithoutRecord,
    /// The run's commits were found on the base branch without a merge of
    /// Overseer's (said once per run).
    UnrecordedMerge,
    /// The run went past one of its caps (pending asks, messages, notices,
    /// connections, the rate of asks): it was paused.
    Flood,
    /// The agent carried out a tool call that changes something (edit,
    /// delete, move, execute) without asking, where the rules would have
    /// asked: the run was stopped.
    UnaskedAction,
    /// The repository holds agent configuration that grants permissions
    /// (shown at the run's setup).
    AgentConfigGrants,
}

/// A session mode an agent offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AgentMode {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
}

/// A message through the hub, as a run's timeline keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct MessageEntry {
    /// The body.
    pub text: String,
    pub to: MessageTo,
    /// The sender, as an actor string.
    pub from: String,
    pub status: MessageStatus,
    pub blocked_reason: Option<String>,
    pub correlation_id: Option<String>,
    pub message_id: i64,
}

/// How a run's merge ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum MergeOutcome {
    /// A new merge commit is on the base branch.
    Merged { commit: String },
    /// Merged before (a crash after git's merge, or a second approval): the
    /// record was completed, nothing was merged again.
    AlreadyMerged { commit: Option<String> },
    /// The reviewed work was already on the base branch although Overseer
    /// never merged it: a security event; nothing was merged again.
    MergedOutside,
    /// The run committed nothing: there is nothing to merge.
    NothingToMerge,
    /// The run has no repository (a seeded demo run).
    NoRepository,
}

/// A stored entry this build cannot read, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct UnrecognizedEntry {
    pub kind: String,
    pub payload: Value,
}

impl Activity {
    /// The entry stored as `kind` with `payload`. Never fails: what does not
    /// fit its kind's shape is kept as [`Activity::Unrecognized`].
    pub fn decode(kind: &str, payload: Value) -> Activity {
        let tagged = serde_json::json!({ "kind": kind, "payload": payload });
        match serde_json::from_value::<Activity>(tagged) {
            Ok(a) => a,
            Err(_) => Activity::Unrecognized(UnrecognizedEntry {
                kind: kind.to_owned(),
                payload,
            }),
        }
    }

    /// The entry as stored: its kind and its payload (an unrecognized one
    /// as it came).
    pub fn encode(&self) -> (String, Value) {
        if let Activity::Unrecognized(u) = self {
            return (u.kind.clone(), u.payload.clone());
        }
        match serde_json::to_value(self) {
            Ok(Value::Object(mut m)) => {
                let kind = match m.remove("kind") {
                    Some(Value::String(k)) => k,
                    _ => String::new(),
                };
                (kind, m.remove("payload").unwrap_or(Value::Null))
            }
            // Unreachable for an adjacently tagged enum of plain data.
            Ok(_) | Err(_) => (String::new(), Value::Null),
        }
    }

    /// The kind as stored (`message`, `tool_call`, ...).
    pub fn kind(&self) -> String {
        self.encode().0
    }

    /// The entry's text (else its summary, its title, its JSON): what the
    /// CLI prints for it.
    pub fn text(&self) -> String {
        match self {
            Activity::Message { text }
            | Activity::Thought { text }
            | Activity::RuleAdded { text }
            | Activity::StepStarted { text, .. }
            | Activity::Deviation { text, .. }
            | Activity::Verdict { text, .. }
            | Activity::UserInstruction { text, .. }
            | Activity::Error { text }
            | Activity::ProtocolError { text }
            | Activity::FileRefused { text, .. }
            | Activity::Drift { text, .. }
            | Activity::Log { text, .. }
            | Activity::Mode { text, .. }
            | Activity::Session { text, .. }
            | Activity::PlanSkipped { text }
            | Activity::PlanAnswer { text }
            | Activity::SessionStarted { text }
            | Activity::Notice { text, .. }
            | Activity::TurnEnded { text, .. }
            | Activity::SteeringDelivered { text }
            | Activity::GateWithdrawn { text }
            | Activity::RetryQueued { text, .. }
            | Activity::CarriedOn { text }
            | Activity::QuestionAgain { text }
            | Activity::Merge { text, .. }
            | Activity::Cosign { text, .. }
            | Activity::Decided { text, .. } => text.clone(),
            Activity::ToolAllowed(d) | Activity::ToolDenied(d) => d.text.clone(),
            Activity::Security(s) => s.text.clone(),
            Activity::MessageSent(m) | Activity::MessageReceived(m) => m.text.clone(),
            Activity::StepReported { summary, .. } => summary.clone(),
            Activity::StepFinished(r) => r.summary.clone(),
            Activity::ToolCall(c) => match c.text.as_ref().or(c.title.as_ref()) {
                Some(t) => t.clone(),
                None => self.encode().1.to_string(),
            },
            // No words of their own: their JSON, as stored.
            Activity::Plan { .. }
            | Activity::PlanProposed(_)
            | Activity::Sensor(_)
            | Activity::FileRead { .. }
            | Activity::FileWritten { .. } => self.encode().1.to_string(),
            Activity::Unrecognized(u) => u
                .payload
                .as_object()
                .and_then(|m| {
                    m.get("text")
                        .or_else(|| m.get("summary"))
                        .or_else(|| m.get("title"))
                })
                .and_then(|v| v.as_str())
                .map_or_else(|| u.payload.to_string(), str::to_owned),
        }
    }

    /// Whether this entry changes a run's fleet row (its current step or
    /// its sensors column).
    pub fn changes_run_row(&self) -> bool {
        matches!(self, Activity::Plan { .. } | Activity::Sensor(_))
    }
}

/// One entry of a run's activity timeline, as the engine recorded it.
/// Untrusted text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(from = "StoredEntry")]
pub struct ActivityView {
    pub id: i64,
    pub run_id: RunId,
    pub at: crate::Millis,
    #[serde(flatten)]
    pub entry: Activity,
}

impl ActivityView {
    /// The kind as stored (`message`, `tool_call`, ...).
    pub fn kind(&self) -> String {
        self.entry.kind()
    }

    /// The payload as stored (the JSON the window reads by `kind`).
    pub fn payload(&self) -> Value {
        self.entry.encode().1
    }
}

/// An entry as it travels before its payload is read: whatever a newer or
/// older engine sent decodes (see [`Activity::decode`]).
#[derive(Deserialize)]
struct StoredEntry {
    id: i64,
    run_id: RunId,
    at: crate::Millis,
    kind: String,
    #[serde(default)]
    payload: Value,
}

impl From<StoredEntry> for ActivityView {
    fn from(s: StoredEntry) -> Self {
        ActivityView {
            id: s.id,
            run_id: s.run_id,
            at: s.at,
            entry: Activity::decode(&s.kind, s.payload),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_travels_as_kind_and_payload_beside_its_ids() {
        let view = ActivityView {
            id: 7,
            run_id: RunId(3),
            at: 1_000,
            entry: Activity::FileWritten {
                path: "src/lib.rs".into(),
                bytes: 12,
            },
        };
        let wire = serde_json::to_value(&view).expect("serializes");
        assert_eq!(
            wire,
            json!({"id": 7, "run_id": 3, "at": 1_000, "kind": "file_written",
                   "payload": {"path": "src/lib.rs", "bytes": 12}})
        );
        let back: ActivityView = serde_json::from_value(wire).expect("decodes");
        assert_eq!(back, view);
    }

    #[test]
    fn what_this_build_cannot_read_is_kept_as_it_came() {
        let odd = Activity::decode("teleport", json!({"text": "beamed"}));
        assert_eq!(
            odd,
            Activity::Unrecognized(UnrecognizedEntry {
                kind: "teleport".into(),
                payload: json!({"text": "beamed"}),
            })
        );
        assert_eq!(odd.encode(), ("teleport".into(), json!({"text": "beamed"})));
        // A known kind of an older shape, and a payload that is not an object.
        assert!(matches!(
            Activity::decode("message", json!({"body": "hi"})),
            Activity::Unrecognized(_)
        ));
        assert!(matches!(
            Activity::decode("sensor", json!(null)),
            Activity::Unrecognized(_)
        ));
        // An entry of a kind a newer engine sends reaches an older window or
        // CLI as unrecognized, and goes on through it unchanged.
        let wire = json!({"id": 1, "run_id": 2, "at": 3, "kind": "teleport", "payload": [1, 2]});
        let view: ActivityView = serde_json::from_value(wire).expect("never refused");
        let again: ActivityView =
            serde_json::from_value(serde_json::to_value(&view).expect("serializes"))
                .expect("decodes");
        assert_eq!(again, view);
        assert_eq!(view.kind(), "teleport");
        assert_eq!(view.payload(), json!([1, 2]));
    }

    #[test]
    fn optional_fields_absent_today_stay_absent() {
        let security = Activity::Security(SecurityEntry {
            text: "the agent runs UNCONTAINED".into(),
            ..SecurityEntry::default()
        });
        assert_eq!(
            security.encode(),
            (
                "security".into(),
                json!({"text": "the agent runs UNCONTAINED"})
            )
        );
        let merge = Activity::Merge {
            text: "merged".into(),
            outcome: Some(MergeOutcome::Merged {
                commit: "abc".into(),
            }),
        };
        assert_eq!(
            merge.encode().1,
            json!({"text": "merged", "outcome": {"outcome": "merged", "commit": "abc"}})
        );
        assert_eq!(Activity::decode("merge", merge.encode().1), merge);
    }
}
