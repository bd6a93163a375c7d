//! The delegated supervisor, pure: verdicts, policies, autonomy per gate kind,
//! and how the votes on a gate resolve (the user always wins).
//!
//! The engine wires evaluators (rules, an external command, an LLM) to gates and
//! steps; everything that decides what their answers *mean* lives here.

use crate::{Actor, FieldError, GateKind, Millis, RunId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What an evaluator (or a human) says. Gates take approve / reject / escalate /
/// advise; finished steps take continue / reorient / pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Reject,
    /// Hand the decision to the human, with a reason (also what every evaluator
    /// failure records).
    Escalate,
    /// A recommendation only; the human decides.
    Advise,
    Continue,
    Reorient,
    Pause,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [
        Verdict::Approve,
        Verdict::Reject,
        Verdict::Escalate,
        Verdict::Advise,
        Verdict::Continue,
        Verdict::Reorient,
        Verdict::Pause,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Reject => "reject",
            Verdict::Escalate => "escalate",
            Verdict::Advise => "advise",
            Verdict::Continue => "continue",
            Verdict::Reorient => "reorient",
            Verdict::Pause => "pause",
        }
    }

    /// Accepts the lower-case names and the upper-case ones of the verdicts
    /// document (`CONTINUE`, `REORIENT`, `PAUSE`).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether this verdict makes sense for `subject`.
    pub fn fits(self, subject: Subject) -> bool {
        match subject {
            Subject::Gate => matches!(
                self,
                Verdict::Approve | Verdict::Reject | Verdict::Escalate | Verdict::Advise
            ),
            Subject::Step => matches!(self, Verdict::Continue | Verdict::Reorient | Verdict::Pause),
            // A message an agent sent the supervisor: answered (ADVISE, the
            // answer goes back to the agent), handed to a human (ESCALATE),
            // or taken note of (CONTINUE). Never a decision.
            Subject::Message => matches!(
                self,
                Verdict::Continue | Verdict::Advise | Verdict::Escalate
            ),
        }
    }
}

/// What is being evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// A pending gate (plan, tool call, merge review, ...).
    Gate,
    /// A finished step of a run (the verdicts document's CONTINUE / REORIENT / PAUSE).
    Step,
    /// A message an agent addressed to the supervisor.
    Message,
}

/// How much authority the supervisor has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// Records advise / escalate; the human decides every gate.
    #[default]
    Advisory,
    /// A gate passes only when the supervisor and the human both approve.
    Cosign,
    /// The supervisor decides; the human can override until the effect happens.
    Autonomous,
}

impl Autonomy {
    pub const ALL: [Autonomy; 3] = [Autonomy::Advisory, Autonomy::Cosign, Autonomy::Autonomous];

    pub fn as_str(self) -> &'static str {
        match self {
            Autonomy::Advisory => "advisory",
            Autonomy::Cosign => "cosign",
            Autonomy::Autonomous => "autonomous",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// Which evaluator answers for the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EvaluatorConfig {
    /// Deterministic rules; every verdict cites the rule that fired.
    #[default]
    Rules,
    /// An external command: one JSON object on stdin, one verdict object on stdout.
    Command {
        command: String,
        #[serde(default)]
        args: Vec<String>,
    },
    /// An OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp, vLLM,
    /// hosted providers).
    Openai {
        base_url: String,
        model: String,
        /// Name of the environment variable holding the API key, if any. The key
        /// itself is never stored.
        #[serde(default)]
        api_key_env: Option<String>,
    },
}

/// The supervisor policy of a workspace, or of a task (which overrides it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SupervisorPolicy {
    /// Off by default: a fresh install behaves exactly as without a supervisor.
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub autonomy: Autonomy,
    /// Per-gate-kind authority, e.g. advisory on plans, autonomous on merges.
    #[serde(default)]
    pub gate_authority: BTreeMap<GateKind, Autonomy>,
    #[serde(default)]
    pub evaluator: EvaluatorConfig,
    /// REORIENT verdicts on the same step before it becomes PAUSE.
    #[serde(default = "default_max_reorient")]
    pub max_reorient_attempts: u32,
    /// How long an evaluator may take before it counts as failed.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// Evaluate every step, not only those the confidence model flags.
    #[serde(default)]
    pub always_supervise: bool,
    /// How long a supervisor_pause gate waits for a human before the run is
    /// terminated (and the termination logged).
    #[serde(default = "default_pause_timeout")]
    pub pause_timeout_seconds: u64,
    /// How long an autonomous supervisor's approve or reject waits before it
    /// takes effect: the gate stays open to humans meanwhile, and a human's
    /// decision within it wins. 0: at once.
    #[serde(default = "default_grace")]
    pub grace_seconds: u64,
}

fn default_max_reorient() -> u32 {
    3
}
fn default_timeout() -> u64 {
    30
}
fn default_pause_timeout() -> u64 {
    900
}
/// The design's auto-proceed: 10 s.
fn default_grace() -> u64 {
    10
}

impl Default for SupervisorPolicy {
    fn default() -> Self {
        SupervisorPolicy {
            enabled: false,
            autonomy: Autonomy::Advisory,
            gate_authority: BTreeMap::new(),
            evaluator: EvaluatorConfig::Rules,
            max_reorient_attempts: default_max_reorient(),
            timeout_seconds: default_timeout(),
            always_supervise: false,
            pause_timeout_seconds: default_pause_timeout(),
            grace_seconds: default_grace(),
        }
    }
}

/// An autonomous supervisor's decision waiting for its grace period to end:
/// until `at` the gate stays open and a human's decision replaces it; at
/// `at` it takes effect (`by` decides the gate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct PendingEffect {
    /// The gate option the supervisor chose.
    pub option: String,
    /// Approve or reject.
    pub verdict: Verdict,
    /// The supervisor that voted.
    pub by: Actor,
    /// When it takes effect (ms since the epoch): the window counts down to it.
    pub at: Millis,
    /// The supervisor's reason, as it gave it.
    #[serde(default)]
    pub rationale: Option<String>,
}

/// The supervisor's latest word on a gate: its vote, its advice, or its
/// escalation, with why. Shown on the gate's card where the human decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SupervisorAdvice {
    pub verdict: Verdict,
    /// The gate option it would choose (or chose), when it named one.
    #[serde(default)]
    pub option: Option<String>,
    #[serde(default)]
    pub rationale: Option<String>,
    /// Which supervisor (`supervisor:rules`, `supervisor:openai:MODEL`).
    pub by: String,
    pub at: Millis,
}

impl PendingEffect {
    /// When a decision voted at `now` under `policy` takes effect, or None
    /// when it takes effect at once (a grace of 0).
    pub fn deadline(policy: &SupervisorPolicy, now: Millis) -> Option<Millis> {
        let ms = i64::try_from(policy.grace_seconds.min(MAX_GRACE_SECONDS) * 1000).ok()?;
        (ms > 0).then(|| now.saturating_add(ms))
    }
}

/// What an evaluator answered, before the engine records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct EvaluatorOutput {
    pub verdict: Verdict,
    pub rationale: String,
    /// For REORIENT: the correction sent to the agent.
    #[serde(default)]
    pub correction: Option<String>,
    /// Self-reported confidence in [0, 1].
    #[serde(default)]
    pub confidence: Option<f64>,
    /// The rule that fired (rules evaluator), if any.
    #[serde(default)]
    pub rule_ref: Option<String>,
    /// The model the evaluator ran on, if any.
    #[serde(default)]
    pub model_id: Option<String>,
    /// Version stamp of the evaluator's prompt, if any.
    #[serde(default)]
    pub prompt_version: Option<String>,
}

/// One decision on a gate or a step, by a human, the supervisor, a rule or a
/// timer: what the "Why?" drawer shows. Stored with its audit sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct DecisionRecord {
    pub id: i64,
    pub run_id: RunId,
    pub gate_id: Option<crate::GateId>,
    pub actor: Actor,
    pub verdict: Verdict,
    /// The gate option this decision chose, when it chose one.
    pub option: Option<String>,
    pub rationale: Option<String>,
    pub correction: Option<String>,
    pub rule_ref: Option<String>,
    /// For a permission rule's allow or denial: the rules that decided and
    /// their layers. None for every other decision, and for decisions
    /// recorded before it was kept (their rationale names the layer).
    pub provenance: Option<crate::rules::Provenance>,
    pub model_id: Option<String>,
    pub prompt_version: Option<String>,
    pub confidence: Option<f64>,
    /// What triggered the decision, e.g. `gate_opened:12` or `step_finished:3`.
    pub source_event: Option<String>,
    pub audit_seq: i64,
    pub at: Millis,
    /// A supervisor's vote that did not stand: the human who decided the
    /// gate otherwise (first, or by overriding it). Worked out when the
    /// story is read, never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub overruled_by: Option<Actor>,
    /// The paired device a person decided through (`actor` is that
    /// person); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub device: Option<crate::DeviceRef>,
}

impl DecisionRecord {
    /// Marks this record overruled when it is a supervisor's vote on `gate`
    /// that a human decided otherwise.
    pub fn mark_overruled(&mut self, decision: Option<&crate::GateDecision>) {
        let Some(d) = decision else { return };
        let voted_otherwise = self.option.as_deref() != Some(d.option.as_str());
        if matches!(self.actor, Actor::Supervisor(_)) && d.actor.is_user() && voted_otherwise {
            self.overruled_by = Some(d.actor.clone());
        }
    }
}

// ---------------------------------------------------------------------------
// Verdict selection for finished steps (the verdicts document's logic).

/// Whether the agent raised concerns, and how serious.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Concerns {
    #[default]
    None,
    /// Concerns that seem valid but that the agent could handle itself.
    Valid,
    /// Concerns a human must look at before the run goes on.
    Critical,
}

/// What an evaluator established about a finished step: the questions the
/// verdicts document asks, in its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StepFacts {
    /// The agent's interpretation of the task is fundamentally wrong.
    pub interpretation_wrong: bool,
    /// The agent went outside its declared scope.
    pub out_of_scope: bool,
    /// What it did (out of scope) was destructive or irreversible.
    pub destructive: bool,
    /// The approach is suboptimal, but the goal is achieved.
    pub suboptimal_but_achieved: bool,
    pub concerns: Concerns,
    /// The agent's confidence is low, but its output looks correct.
    pub low_confidence_but_correct: bool,
}

/// One row of the selection table: the first row whose `when` holds decides.
/// A table, not nested ifs, so that each branch has a name the decision can
/// cite (`rule_ref`) and a test of its own.
#[derive(Debug, Clone, Copy)]
pub struct VerdictRow {
    /// Stable name of the row, recorded with the decision.
    pub id: &'static str,
    pub when: fn(&StepFacts) -> bool,
    pub verdict: Verdict,
    /// Why, in words a human reads in the "Why?" drawer.
    pub rationale: &'static str,
}

/// The verdicts document's selection logic, in its order (earlier rows win,
/// so the order is the logic). The last row always matches.
pub const VERDICT_TABLE: &[VerdictRow] = &[
    VerdictRow {
        id: "wrong_interpretation",
        when: |f| f.interpretation_wrong,
        verdict: Verdict::Pause,
        rationale:
            "the agent's interpretation is fundamentally wrong: a human must clarify the intent",
    },
    VerdictRow {
        id: "out_of_scope_destructive",
        when: |f| f.out_of_scope && f.destructive,
        verdict: Verdict::Pause,
        rationale:
            "the agent went outside its declared scope with destructive or irreversible actions",
    },
    VerdictRow {
        id: "out_of_scope",
        when: |f| f.out_of_scope,
        verdict: Verdict::Reorient,
        rationale: "the agent went outside its declared scope: reoriented with a scope reminder",
    },
    VerdictRow {
        id: "suboptimal_but_achieved",
        when: |f| f.suboptimal_but_achieved,
        verdict: Verdict::Continue,
        rationale: "the approach is suboptimal but the goal is achieved: not over-correcting",
    },
    VerdictRow {
        id: "critical_concerns",
        when: |f| f.concerns == Concerns::Critical,
        verdict: Verdict::Pause,
        rationale: "the agent raised critical concerns that a human should review",
    },
    VerdictRow {
        id: "valid_concerns",
        when: |f| f.concerns == Concerns::Valid,
        verdict: Verdict::Continue,
        rationale: "the agent raised valid concerns and was appropriately cautious",
    },
    VerdictRow {
        id: "low_confidence_correct",
        when: |f| f.low_confidence_but_correct,
        verdict: Verdict::Continue,
        rationale:
            "confidence is low but the output looks correct: the agent may be overly cautious",
    },
    VerdictRow {
        id: "on_track",
        when: |_| true,
        verdict: Verdict::Continue,
        rationale: "execution is on track",
    },
];

/// The first row of [`VERDICT_TABLE`] that matches.
pub fn select_verdict(f: &StepFacts) -> &'static VerdictRow {
    // The fallback is the table's catch-all row, which `find` reaches anyway.
    VERDICT_TABLE
        .iter()
        .find(|row| (row.when)(f))
        .unwrap_or(&VERDICT_TABLE[VERDICT_TABLE.len() - 1])
}

/// A REORIENT once the step was already reoriented `max` times becomes PAUSE:
/// an agent that keeps drifting needs a human, not another correction.
/// Other verdicts pass unchanged.
pub fn after_reorient_limit(verdict: Verdict, reorients_so_far: u32, max: u32) -> Verdict {
    if verdict == Verdict::Reorient && reorients_so_far >= max {
        Verdict::Pause
    } else {
        verdict
    }
}

/// Whether the supervisor weighs a finished step: only when a policy enables
/// it, and then every step (`always_supervise`) or the ones the confidence
/// model does not clear on its own: below the high band, files changed
/// outside the plan, or an always-gated operation during the step.
pub fn weighs_step(
    policy: &SupervisorPolicy,
    band: crate::confidence::Band,
    drifted: bool,
    destructive: bool,
) -> bool {
    policy.enabled
        && (policy.always_supervise
            || band != crate::confidence::Band::High
            || drifted
            || destructive)
}

/// What a decided supervisor pause does with the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseOutcome {
    /// A human let the step through: it is weighed on as usual.
    Proceed,
    /// A human corrected the agent: the step again, with the correction.
    Modify,
    /// Nobody answered within the pause's timeout: the run is terminated
    /// (`supervisor_rejected`), and the termination says so.
    Terminate,
    /// A human aborted the run.
    Abort,
}

/// A supervisor pause's decision: its choice (None: an option the gate does
/// not know, read as the safe one) and whether its timer made it.
pub fn pause_outcome(
    choice: Option<crate::gate::SupervisorPauseChoice>,
    by_timer: bool,
) -> PauseOutcome {
    use crate::gate::SupervisorPauseChoice as C;
    match choice {
        Some(C::Proceed) => PauseOutcome::Proceed,
        Some(C::Modify) => PauseOutcome::Modify,
        Some(C::Abort) | None if by_timer => PauseOutcome::Terminate,
        Some(C::Abort) | None => PauseOutcome::Abort,
    }
}

/// How a correction reaches the agent (the verdicts document's wording).
pub fn correction_prompt(correction: &str) -> String {
    format!("SUPERVISOR CORRECTION: {correction}\n\nPlease re-attempt the task with this guidance.")
}

// ---------------------------------------------------------------------------
// Policies and authority.

/// The longest an evaluator may be given to answer. A gate waits on it, so
/// anything longer would hold a run for no good reason.
pub const MAX_EVALUATOR_TIMEOUT_SECONDS: u64 = 3600;

/// The longest grace an autonomous decision may wait: an hour. Longer, and
/// the supervisor no longer decides anything a human would not.
pub const MAX_GRACE_SECONDS: u64 = 3600;

/// The policy for a task: the task's own, else the workspace's, else the
/// default (disabled). A task's policy replaces the workspace's whole, so
/// what applies is always one policy a human wrote down.
pub fn resolve_policy(
    task: Option<&SupervisorPolicy>,
    workspace: Option<&SupervisorPolicy>,
) -> SupervisorPolicy {
    task.or(workspace).cloned().unwrap_or_default()
}

impl SupervisorPolicy {
    /// The supervisor's authority on a gate of `kind`: None when it is off or
    /// never decides such gates. A per-kind entry in `gate_authority` wins
    /// over `autonomy`. Questions are the human's to answer, so the supervisor
    /// is advisory on them at most; supervisor pauses and deviations exist to
    /// ask a human, so it has no say at all.
    pub fn authority(&self, kind: GateKind) -> Option<Autonomy> {
        if !self.enabled {
            return None;
        }
        let level = self
            .gate_authority
            .get(&kind)
            .copied()
            .unwrap_or(self.autonomy);
        match kind {
            GateKind::Plan | GateKind::ToolCall | GateKind::StepReview | GateKind::MergeReview => {
                Some(level)
            }
            GateKind::Question => Some(Autonomy::Advisory),
            GateKind::SupervisorPause | GateKind::Deviation => None,
        }
    }

    /// Checks the policy: every setting in error, by its path inside the
    /// policy (`timeout_seconds`, `gate_authority.deviation`,
    /// `evaluator.api_key_env`, see [`FieldError`]); each message says what
    /// to fix.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        if self.max_reorient_attempts == 0 {
            errors.push(FieldError::new(
                "max_reorient_attempts",
                "max_reorient_attempts must be at least 1 (use 1 to pause at the first drift)",
            ));
        }
        if self.timeout_seconds == 0 || self.timeout_seconds > MAX_EVALUATOR_TIMEOUT_SECONDS {
            errors.push(FieldError::new(
                "timeout_seconds",
                format!(
                    "timeout_seconds = {} is out of range: give 1 to {MAX_EVALUATOR_TIMEOUT_SECONDS} seconds",
                    self.timeout_seconds
                ),
            ));
        }
        if self.grace_seconds > MAX_GRACE_SECONDS {
            errors.push(FieldError::new(
                "grace_seconds",
                format!(
                    "grace_seconds = {} is out of range: give 0 (at once) to {MAX_GRACE_SECONDS} seconds",
                    self.grace_seconds
                ),
            ));
        }
        if self.pause_timeout_seconds == 0 {
            errors.push(FieldError::new(
                "pause_timeout_seconds",
                "pause_timeout_seconds must be at least 1 second: give how long a paused run waits for you",
            ));
        }
        for kind in self
            .gate_authority
            .keys()
            .filter(|k| matches!(k, GateKind::SupervisorPause | GateKind::Deviation))
        {
            errors.push(FieldError::new(
                format!("gate_authority.{}", kind.as_str()),
                format!(
                    "the supervisor has no authority over {} gates: only a human decides them; remove that entry from gate_authority",
                    kind.as_str()
                ),
            ));
        }
        match &self.evaluator {
            EvaluatorConfig::Rules => {}
            EvaluatorConfig::Command { command, .. } => {
                if command.trim().is_empty() {
                    errors.push(FieldError::new(
                        "evaluator.command",
                        "the supervisor command is empty: give the program to run",
                    ));
                }
            }
            EvaluatorConfig::Openai {
                base_url,
                model,
                api_key_env,
            } => {
                if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                    errors.push(FieldError::new(
                        "evaluator.base_url",
                        format!(
                            "base_url '{base_url}' must start with http:// or https://, e.g. http://127.0.0.1:11434/v1"
                        ),
                    ));
                }
                if model.trim().is_empty() {
                    errors.push(FieldError::new(
                        "evaluator.model",
                        "the model is empty: name the model the endpoint serves",
                    ));
                }
                if let Some(Err(why)) = api_key_env.as_deref().map(check_env_name) {
                    errors.push(FieldError::new("evaluator.api_key_env", why));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// Checks that `name` names an environment variable (letters, digits and
/// `_`, not starting with a digit) and does not look like a secret pasted
/// in its place: a key stored in a setting would land in the signed,
/// append-only audit log for good.
pub fn check_env_name(name: &str) -> Result<(), String> {
    if looks_like_secret(name) {
        return Err("this looks like a key: give the NAME of the environment variable that holds it (e.g. OPENAI_API_KEY), never the key itself".to_owned());
    }
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "'{name}' is not an environment variable name: letters, digits and _, e.g. OPENAI_API_KEY"
        ));
    }
    Ok(())
}

/// Known key prefixes, or a long mix of digits, lower and upper case.
fn looks_like_secret(s: &str) -> bool {
    const PREFIXES: [&str; 5] = ["sk-", "sk_", "ghp_", "xox", "AIza"];
    PREFIXES.iter().any(|p| s.starts_with(p))
        || (s.len() >= 32
            && s.chars().any(|c| c.is_ascii_digit())
            && s.chars().any(|c| c.is_ascii_lowercase())
            && s.chars().any(|c| c.is_ascii_uppercase()))
}

/// The gate option a supervisor's verdict picks, where it may pick one.
/// Escalate and advise never pick one (they hand the choice to the human), and
/// neither does anything on questions, deviations or supervisor pauses.
pub fn verdict_option(kind: GateKind, verdict: Verdict) -> Option<&'static str> {
    use crate::gate::{MergeReviewChoice, PlanChoice, StepReviewChoice, ToolCallChoice};
    let (approve, reject) = match kind {
        GateKind::Plan => (PlanChoice::Approve.as_str(), PlanChoice::Reject.as_str()),
        GateKind::MergeReview => (
            MergeReviewChoice::Approve.as_str(),
            MergeReviewChoice::Reject.as_str(),
        ),
        GateKind::ToolCall => (ToolCallChoice::Yes.as_str(), ToolCallChoice::No.as_str()),
        GateKind::StepReview => (
            StepReviewChoice::Proceed.as_str(),
            StepReviewChoice::Stop.as_str(),
        ),
        GateKind::Question | GateKind::Deviation | GateKind::SupervisorPause => return None,
    };
    match verdict {
        Verdict::Approve => Some(approve),
        Verdict::Reject => Some(reject),
        Verdict::Escalate
        | Verdict::Advise
        | Verdict::Continue
        | Verdict::Reorient
        | Verdict::Pause => None,
    }
}

// ---------------------------------------------------------------------------
// Votes: the user always wins.
//
// A gate collects votes (the human's, the supervisor's) and its resolution is
// a pure function of the supervisor's authority on it and the votes in order.
// The store records every vote and settles the gate when this says Decided.

/// One vote on a gate, by a human or the supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    pub actor: Actor,
    /// A human's vote is approve when it picks the gate's approving option,
    /// reject otherwise.
    pub verdict: Verdict,
    /// The option chosen: humans always choose one; a supervisor's approve or
    /// reject maps to one ([`verdict_option`]); escalate and advise may name a
    /// recommendation, which never decides.
    pub option: Option<String>,
    pub at: Millis,
}

/// Where a gate stands after its votes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "resolution", rename_all = "snake_case")]
pub enum Resolution {
    /// Still open. `awaiting_cosign`: a human approved a co-signed gate and it
    /// waits for the supervisor's approval (or for the human to confirm).
    Pending {
        awaiting_cosign: bool,
    },
    Decided {
        option: String,
        by: Actor,
    },
}

/// Why a vote was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VoteRefused {
    #[error("this gate is already decided and closed to further votes: see its decision in the run's history")]
    GateClosed,
    #[error("a human already decided this gate, and the user always wins: the supervisor's vote was not counted")]
    UserAlreadyDecided,
    /// The vote itself is not valid; the message says why and what to do.
    #[error("{0}")]
    NotAllowed(String),
}

fn is_supervisor(v: &Vote) -> bool {
    matches!(v.actor, Actor::Supervisor(_))
}

/// A human vote that counts: it picked an option.
fn is_user_choice(v: &Vote) -> bool {
    v.actor.is_user() && v.option.is_some()
}

/// A supervisor vote that decides where the supervisor may decide.
fn supervisor_decides(v: &Vote) -> bool {
    is_supervisor(v)
        && matches!(v.verdict, Verdict::Approve | Verdict::Reject)
        && v.option.is_some()
}

/// Whether `new` may be cast on a gate with these (accepted) votes.
/// `autonomy`: the supervisor's authority on the gate (None: no supervisor).
/// `effected`: the engine already acted on the gate's decision, so nothing
/// can change it any more.
pub fn accept_vote(
    autonomy: Option<Autonomy>,
    votes: &[Vote],
    effected: bool,
    new: &Vote,
) -> Result<(), VoteRefused> {
    if effected {
        return Err(VoteRefused::GateClosed);
    }
    if !new.verdict.fits(Subject::Gate) {
        return Err(VoteRefused::NotAllowed(format!(
            "'{}' is a verdict for finished steps: a gate takes approve, reject, escalate or advise",
            new.verdict.as_str()
        )));
    }
    let user_voted = votes.iter().any(is_user_choice);
    match &new.actor {
        Actor::User(_) | Actor::Person { .. } => {
            if new.option.is_none() {
                return Err(VoteRefused::NotAllowed(
                    "a human decision must choose one of the gate's options".to_owned(),
                ));
            }
            match autonomy {
                // A human may vote again while a co-signed gate is pending
                // (e.g. approving again after the supervisor objected).
                Some(Autonomy::Cosign) => match resolve(autonomy, None, votes) {
                    Resolution::Decided { .. } => Err(VoteRefused::GateClosed),
                    Resolution::Pending { .. } => Ok(()),
                },
                // The first human vote decides (or overrides an autonomous
                // supervisor); a human does not get to change their mind
                // after deciding.
                None | Some(Autonomy::Advisory) | Some(Autonomy::Autonomous) => {
                    if user_voted {
                        Err(VoteRefused::GateClosed)
                    } else {
                        Ok(())
                    }
                }
            }
        }
        Actor::Supervisor(_) => match autonomy {
            None => Err(VoteRefused::NotAllowed(
                "the supervisor has no authority on this gate: only a human decides it".to_owned(),
            )),
            Some(Autonomy::Cosign) => {
                let user_refused = votes
                    .iter()
                    .any(|v| is_user_choice(v) && v.verdict != Verdict::Approve);
                if user_refused {
                    Err(VoteRefused::UserAlreadyDecided)
                } else if matches!(resolve(autonomy, None, votes), Resolution::Decided { .. }) {
                    Err(VoteRefused::GateClosed)
                } else {
                    Ok(())
                }
            }
            Some(Autonomy::Advisory) | Some(Autonomy::Autonomous) => {
                if user_voted {
                    Err(VoteRefused::UserAlreadyDecided)
                } else if autonomy == Some(Autonomy::Autonomous)
                    && votes.iter().any(supervisor_decides)
                {
                    Err(VoteRefused::GateClosed)
                } else {
                    Ok(())
                }
            }
        },
        Actor::Engine | Actor::Agent(_) => Err(VoteRefused::NotAllowed(format!(
            "{} cannot vote on gates: agents ask and report, only a human or the supervisor decides",
            new.actor
        ))),
    }
}

/// How the votes resolve. `approve_option` names the gate's approving option:
/// on a co-signed gate a human's vote counts as approval when it picks that
/// option (or its verdict is approve); any other choice decides at once.
///
/// - No supervisor, or advisory: the first human vote decides.
/// - Autonomous: the latest human vote decides; without one, the first
///   supervisor approve or reject does.
/// - Cosign: a human's approval decides once the supervisor approved too
///   (before or after), or when the human approved after the supervisor
///   objected (the human overrode it knowingly). The supervisor alone never
///   decides.
pub fn resolve(
    autonomy: Option<Autonomy>,
    approve_option: Option<&str>,
    votes: &[Vote],
) -> Resolution {
    let decided = |v: &Vote, option: &str| Resolution::Decided {
        option: option.to_owned(),
        by: v.actor.clone(),
    };
    let first_decider = |pred: fn(&Vote) -> bool| {
        votes
            .iter()
            .find(|v| pred(v))
            .and_then(|v| v.option.as_deref().map(|o| decided(v, o)))
    };
    match autonomy {
        None | Some(Autonomy::Advisory) => {
            first_decider(is_user_choice).unwrap_or(Resolution::Pending {
                awaiting_cosign: false,
            })
        }
        Some(Autonomy::Autonomous) => votes
            .iter()
            .rev()
            .find(|v| is_user_choice(v))
            .and_then(|v| v.option.as_deref().map(|o| decided(v, o)))
            .or_else(|| first_decider(supervisor_decides))
            .unwrap_or(Resolution::Pending {
                awaiting_cosign: false,
            }),
        Some(Autonomy::Cosign) => {
            let approves = |v: &Vote| {
                v.verdict == Verdict::Approve
                    || (approve_option.is_some() && v.option.as_deref() == approve_option)
            };
            let supervisor_approved = votes
                .iter()
                .any(|v| is_supervisor(v) && v.verdict == Verdict::Approve);
            for (i, v) in votes.iter().enumerate() {
                let Some(option) = v.option.as_deref().filter(|_| v.actor.is_user()) else {
                    continue;
                };
                if !approves(v) {
                    return decided(v, option);
                }
                let objected_before = votes
                    .iter()
                    .take(i)
                    .any(|s| is_supervisor(s) && s.verdict != Verdict::Approve);
                if supervisor_approved || objected_before {
                    return decided(v, option);
                }
            }
            Resolution::Pending {
                awaiting_cosign: votes.iter().any(is_user_choice),
            }
        }
    }
}
