//! Agents that reach Overseer from outside: a Claude Code or Codex session a
//! user runs in a terminal (through its hooks), or any MCP client running
//! `overseer mcp`. Each such session is a run (origin other than
//! [`RunOrigin::Launched`]) so its asks are gates in the same inbox, decided
//! by the same rules, "always" answers and supervisor as launched runs.
//!
//! These are the words of that protocol, independent of any vendor: what a
//! session asks ([`SessionAsk`]) and what Overseer answers ([`SessionAnswer`]).
//! An external agent can ask and report through them; it can never decide.

use crate::RunId;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum RunOrigin {
    /// Overseer launched the agent (over ACP) in a repository of its own.
    #[default]
    Launched,
    /// A Claude Code session, through its hooks.
    ClaudeCode,
    /// A Codex session, through its hooks.
    Codex,
    /// An MCP client running `overseer mcp`.
    Mcp,
}

impl RunOrigin {
    pub const ALL: [RunOrigin; 4] = [
        RunOrigin::Launched,
        RunOrigin::ClaudeCode,
        RunOrigin::Codex,
        RunOrigin::Mcp,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunOrigin::Launched => "launched",
            RunOrigin::ClaudeCode => "claude_code",
            RunOrigin::Codex => "codex",
            RunOrigin::Mcp => "mcp",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// The agent's name as a user knows it.
    pub fn label(self) -> &'static str {
        match self {
            RunOrigin::Launched => "Overseer",
            RunOrigin::ClaudeCode => "Claude Code",
            RunOrigin::Codex => "Codex",
            RunOrigin::Mcp => "MCP client",
        }
    }

    /// True for sessions that run outside Overseer (not contained by it).
    pub fn is_external(self) -> bool {
        match self {
            RunOrigin::Launched => false,
            RunOrigin::ClaudeCode | RunOrigin::Codex | RunOrigin::Mcp => true,
        }
    }
}

/// An external session as it names itself. Untrusted: it only says which
/// fleet row an ask belongs to, never who may decide it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRef {
    pub origin: RunOrigin,
    /// The agent's own session id (Claude's `session_id`, Codex's, or one
    /// `overseer mcp` made up for its client).
    pub session_id: String,
    /// Where the session works (absolute).
    pub cwd: PathBuf,
    /// A finer name of the agent, e.g. the MCP client's (`cursor`).
    #[serde(default)]
    pub agent: Option<String>,
}

/// The hook a tool call came through: before the tool runs, or where the
/// agent would show its own permission prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStage {
    PreToolUse,
    PermissionRequest,
}

/// One question of an `ask_user` batch (the planner-questions schema).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AskQuestion {
    /// A short tab label (at most 30 characters).
    pub header: String,
    pub question: String,
    #[serde(default)]
    pub options: Vec<AskOption>,
    /// Several options may be chosen.
    #[serde(default)]
    pub multiple: bool,
    /// A free-text answer is allowed (default true).
    #[serde(default = "yes")]
    pub custom: bool,
    /// The answer taken when the question expires unanswered: one of the
    /// options' labels when it has options, else the words to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub default: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AskOption {
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// One step of a plan an external agent asks approval for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStepInput {
    #[serde(default)]
    pub agent: Option<String>,
    pub title: String,
}

/// What an external notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// The agent tells the user something (Claude's `Notification`).
    Notification,
    /// The agent ended its turn (Claude's and Codex's `Stop`).
    Stop,
}

/// What an external session asks or reports. `key` is the asker's own id
/// for the ask: asked again with the same key (after a reconnect or an
/// engine restart) it finds the same gate instead of opening another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum SessionAsk {
    /// May this tool call run?
    ToolCall {
        #[serde(default)]
        key: Option<String>,
        /// The agent's tool name: `Bash`, `Edit`, `mcp__server__tool`, ...
        tool: String,
        /// The tool's input as the agent gave it.
        #[serde(default)]
        input: serde_json::Value,
        stage: ToolStage,
    },
    /// Questions for the user (`ask_user`); blocks until answered or, with
    /// an expiry, until it expires (then the defaults apply, or it is
    /// declined when no question has one).
    Questions {
        #[serde(default)]
        key: Option<String>,
        questions: Vec<AskQuestion>,
        /// The asker's expiry, [`QUESTION_EXPIRY_MIN`] to
        /// [`QUESTION_EXPIRY_MAX`] seconds; none: the task's, else the
        /// global default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_in_seconds: Option<u64>,
    },
    /// A plan to approve (`request_plan_approval`).
    Plan {
        #[serde(default)]
        key: Option<String>,
        goal: String,
        #[serde(default)]
        steps: Vec<PlanStepInput>,
        #[serde(default)]
        files: Vec<String>,
        #[serde(default)]
        risks: Vec<String>,
    },
    /// A step the agent finished (`report_step`); the answer is the
    /// supervisor's verdict.
    ReportStep {
        #[serde(default)]
        key: Option<String>,
        step: String,
        status: String,
        summary: String,
        #[serde(default)]
        files_touched: Vec<String>,
    },
    /// Something to tell the user; never waits for a decision.
    Notice {
        kind: NoticeKind,
        #[serde(default)]
        title: Option<String>,
        message: String,
    },
    /// The session is over.
    End,
    /// A message to the hub (`send_message`): the supervisor, the user, or a
    /// broadcast; never a peer directly.
    SendMessage {
        to: crate::message::MessageTo,
        body: String,
        /// The id of the conversation this message belongs to (a reply
        /// carries the correlation id of what it answers).
        #[serde(default)]
        correlation_id: Option<String>,
    },
    /// Messages addressed to this session (`read_messages`), oldest first.
    ReadMessages {
        /// Only messages with a greater id.
        #[serde(default)]
        after: Option<i64>,
    },
    /// A question for another agent profile (`consult`), answered by a
    /// read-only child run on a snapshot of the asking run's worktree. Only
    /// a run Overseer launched may ask it, and a consultation may not.
    Consult {
        /// The agent profile (a name in `overseer.toml`) that answers.
        profile: String,
        /// The question: the child run's prompt.
        question: String,
        /// How long the asker waits, [`CONSULT_TIMEOUT_MIN`] to
        /// [`CONSULT_TIMEOUT_MAX`] seconds; none: [`CONSULT_TIMEOUT_DEFAULT`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_seconds: Option<u64>,
    },
}

/// The shortest wait for a consultation's answer (seconds).
pub const CONSULT_TIMEOUT_MIN: u64 = 5;
/// The longest wait for a consultation's answer: an hour.
pub const CONSULT_TIMEOUT_MAX: u64 = 3600;
/// The wait for a consultation's answer when the asker sets none.
pub const CONSULT_TIMEOUT_DEFAULT: u64 = 600;

/// `Err(what to fix)` for a consultation's wait outside its bounds.
pub fn check_consult_timeout(seconds: u64) -> Result<(), String> {
    if (CONSULT_TIMEOUT_MIN..=CONSULT_TIMEOUT_MAX).contains(&seconds) {
        Ok(())
    } else {
        Err(format!(
            "timeout_seconds is {seconds}; it must be {CONSULT_TIMEOUT_MIN} to {CONSULT_TIMEOUT_MAX} (leave it out for {CONSULT_TIMEOUT_DEFAULT})"
        ))
    }
}

impl SessionAsk {
    /// The asker's key, for asks that open a gate.
    pub fn key(&self) -> Option<&str> {
        match self {
            SessionAsk::ToolCall { key, .. }
            | SessionAsk::Questions { key, .. }
            | SessionAsk::Plan { key, .. }
            | SessionAsk::ReportStep { key, .. } => key.as_deref(),
            SessionAsk::Notice { .. }
            | SessionAsk::End
            | SessionAsk::SendMessage { .. }
            | SessionAsk::ReadMessages { .. }
            | SessionAsk::Consult { .. } => None,
        }
    }
}

/// Overseer's answer on a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolDecision {
    Allow,
    Deny,
    /// Overseer has nothing to add (a rule allows it before the tool
    /// runs): the agent's own permission system goes on as it would.
    Pass,
}

/// The shortest expiry an asker may set on its questions (seconds).
pub const QUESTION_EXPIRY_MIN: u64 = 10;
/// The longest expiry an asker may set on its questions: 7 days.
pub const QUESTION_EXPIRY_MAX: u64 = 7 * 24 * 3600;

/// How a batch of questions was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionsAction {
    Answered,
    /// The user chose not to answer.
    Declined,
    /// Nobody answered (withdrawn, expired without defaults).
    Cancelled,
    /// Nobody answered before the questions expired: the asker's defaults
    /// are the answers.
    Defaulted,
}

/// The answer to one question of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    pub header: String,
    pub question: String,
    /// The labels of the options chosen.
    pub selected: Vec<String>,
    /// The user's own words, if any.
    #[serde(default)]
    pub custom: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum PlanVerdict {
    Approved,
    ChangesRequested {
        feedback: String,
    },
    Rejected {
        #[serde(default)]
        reason: Option<String>,
    },
}

/// The supervisor's verdict on a reported step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepVerdict {
    Continue,
    Reorient {
        correction: String,
    },
    /// Stop working and wait: the user (or the supervisor) said so.
    Pause {
        reason: String,
    },
}

/// What Overseer answers an external session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum SessionAnswer {
    Tool {
        decision: ToolDecision,
        /// Why (a rule, the user's reason); shown to the agent on a deny.
        #[serde(default)]
        reason: Option<String>,
    },
    Questions {
        action: QuestionsAction,
        #[serde(default)]
        answers: Vec<QuestionAnswer>,
    },
    Plan {
        #[serde(flatten)]
        verdict: PlanVerdict,
    },
    Step {
        #[serde(flatten)]
        verdict: StepVerdict,
    },
    /// A notice or an end was recorded. `steering` is what the user asked
    /// the agent to do next, delivered once (a `Stop` can carry it back).
    Noted {
        run: RunId,
        #[serde(default)]
        steering: Option<String>,
    },
    /// A message was stored (delivered, or held back by the policy).
    Message {
        message: crate::message::MessageView,
    },
    Messages {
        messages: Vec<crate::message::MessageView>,
    },
    /// A consultation's answer: the child run's final message.
    Consult {
        /// The consulted agent's answer, as it said it (untrusted text).
        text: String,
        /// The child run that answered (its own timeline and cost).
        run: RunId,
        /// What the child run cost, when its agent reported a cost.
        #[serde(default)]
        cost: Option<crate::usage::RunCost>,
        /// True when no answer came in time: the child run was stopped and
        /// `text` says so.
        #[serde(default)]
        timed_out: bool,
    },
}

/// Where an external session runs, shown on its fleet row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ExternalSession {
    pub session_id: String,
    pub cwd: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_and_answers_read_as_their_wire_names() {
        let ask: SessionAsk = serde_json::from_value(serde_json::json!({
            "ask": "tool_call", "key": "k1", "tool": "Bash",
            "input": {"command": "ls"}, "stage": "pre_tool_use"
        }))
        .expect("tool call");
        assert_eq!(ask.key(), Some("k1"));
        let q: SessionAsk = serde_json::from_value(serde_json::json!({
            "ask": "questions",
            "questions": [{"header": "Tone", "question": "Which tone?", "options": [{"label": "Formal"}]}]
        }))
        .expect("questions");
        let SessionAsk::Questions { questions, .. } = q else {
            panic!("not questions: {q:?}")
        };
        assert!(
            questions[0].custom,
            "custom answers are allowed unless said otherwise"
        );
        let answer = SessionAnswer::Step {
            verdict: StepVerdict::Reorient {
                correction: "use the API".into(),
            },
        };
        assert_eq!(
            serde_json::to_value(&answer).expect("json"),
            serde_json::json!({"answer": "step", "verdict": "REORIENT", "correction": "use the API"})
        );
        let plan = SessionAnswer::Plan {
            verdict: PlanVerdict::ChangesRequested {
                feedback: "smaller".into(),
            },
        };
        assert_eq!(
            serde_json::to_value(&plan).expect("json"),
            serde_json::json!({"answer": "plan", "verdict": "changes_requested", "feedback": "smaller"})
        );
    }

    #[test]
    fn origins_round_trip_through_their_stored_names() {
        for o in RunOrigin::ALL {
            assert_eq!(RunOrigin::parse(o.as_str()), Some(o));
        }
        assert!(!RunOrigin::Launched.is_external());
        assert!(RunOrigin::Mcp.is_external());
    }
}
