//! Read models shown by the window and the CLI, and the events the engine pushes
//! after each commit. The UI renders these; it never computes state of its own.

use crate::activity::{ProgressEntry, SensorRun};
use crate::{
    GateDecision, GateId, GateKind, GateOption, GateStatus, Millis, RunId, RunState, TaskId,
};
use serde::{Deserialize, Serialize};

/// The gate a run is waiting on, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct PendingGate {
    pub id: GateId,
    pub kind: GateKind,
    /// An `info` item alone does not make the run need you.
    #[serde(default = "blocking")]
    pub ask_kind: crate::gate::AskKind,
}

/// One row of the fleet dashboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
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
    /// True when the run waits on a human: pending review, or an open gate
    /// that asks something (an `info` item only tells). The store decides it
    /// in one SQL definition for rows, counts and order alike.
    pub needs_you: bool,
    /// The run's place in the dashboard's default order ([`attention_rank`]):
    /// smaller first, ties by id. Every client sorts by it; none re-derives it.
    #[serde(default)]
    pub attention_rank: i64,
    /// The human's reason, for rejected runs.
    pub release_note: Option<String>,
    pub pending_gate: Option<PendingGate>,
    /// The step the agent works on: the first unfinished entry of its latest
    /// plan (as the agent reported it: untrusted text).
    #[serde(default)]
    #[ts(optional = nullable)]
    pub current_step: Option<String>,
    /// The latest result of each sensor (check command), once any ran.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub sensors: Option<SensorSummary>,
    /// The run's latest gate, pending or decided: where "Why?" starts for a
    /// run whose decision is made.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub last_gate: Option<PendingGate>,
    /// Where the run came from: launched by Overseer, or an agent outside it
    /// (a terminal Claude Code or Codex session, an MCP client).
    #[serde(default)]
    pub origin: crate::RunOrigin,
    /// For an external session: its own id and where it works.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub session: Option<crate::session::ExternalSession>,
    /// What a human can do with the run now ([`run_actions`]): the row, the
    /// run page and the keyboard show exactly these, and the engine refuses
    /// the rest.
    #[serde(default)]
    pub actions: RunActions,
    /// The agent's latest report of its context and cumulative cost
    /// (untrusted figures, checked to be possible), once it sent one.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub usage: Option<Box<crate::usage::RunUsage>>,
    /// The budget this run's cost is held to (its task's `max_cost`, else
    /// its workspace's), when one is set.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub max_cost: Option<f64>,
    /// For a consultation (a read-only child run answering another run's
    /// `consult`): the run that asked.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub parent: Option<RunId>,
}

/// What a human can do with a run in its current state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunActions {
    /// Approve its review (merge): a launched run pending review.
    pub approve: bool,
    /// Reject its review: a launched run pending review.
    pub reject: bool,
    /// Stop it: abort a launched run (its agent is killed), or stop an
    /// external session (its later tool calls are refused). Any run not
    /// released yet.
    pub abort: bool,
    /// The run has a repository of its own whose diff can be shown (an
    /// external session has none).
    pub diff: bool,
    /// The agent is working and can take an instruction for its next turn:
    /// neither released nor done (pending review).
    pub steer: bool,
}

/// What a human can do with a run from `origin` in `state`: one rule for
/// the window, the CLI and the engine's own checks.
pub fn run_actions(state: RunState, origin: crate::RunOrigin) -> RunActions {
    let external = origin != crate::RunOrigin::Launched;
    let review = !external && state == RunState::PendingReview;
    let released = state.is_released();
    RunActions {
        approve: review,
        reject: review,
        abort: !released,
        diff: !external,
        steer: !released && state != RunState::PendingReview,
    }
}

/// How a run's sensors stand: the latest result of each check command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct SensorSummary {
    pub passed: u32,
    pub failed: u32,
    /// Each command's latest result, in the order they first ran (the
    /// user's own commands: shown on hover).
    #[serde(default)]
    pub results: Vec<SensorResult>,
}

/// A check command's latest result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct SensorResult {
    pub command: String,
    pub passed: bool,
}

/// A gate with its options and, once decided, its decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct GateView {
    pub id: GateId,
    pub run_id: RunId,
    /// The gate's `kind` and what it is about (`payload`): the plan, the
    /// tool call, the error..., typed by kind.
    #[serde(flatten)]
    pub body: crate::GateBody,
    /// The payload as stored, when it does not fit its kind's type (written
    /// by an older version): `payload` is then empty and this is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub unreadable_payload: Option<serde_json::Value>,
    pub status: GateStatus,
    pub title: String,
    pub options: Vec<GateOption>,
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
    /// Blocking, question or info ([`crate::gate::ask_kind`]).
    #[serde(default = "blocking")]
    pub ask_kind: crate::gate::AskKind,
    /// The option approving it in a batch picks ([`batch_choice`]), or
    /// None: it must be decided on its own.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub batch_option: Option<String>,
    /// An autonomous supervisor's decision waiting for its grace period to
    /// end (only while the gate is pending): the card counts down to its
    /// `at`, and a human may decide otherwise until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub pending_effect: Option<crate::supervision::PendingEffect>,
    /// Snoozed by the user until then: out of the inbox and "needs you"
    /// until it wakes (and notifies again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub snoozed_until: Option<Millis>,
    /// The supervisor's latest vote on the gate (advice, a vote awaiting a
    /// co-sign, an escalation), shown on its card as it arrives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub advice: Option<crate::supervision::SupervisorAdvice>,
}

impl GateView {
    pub fn kind(&self) -> GateKind {
        self.body.kind()
    }
}

/// The choice a batch approval makes on `g`, or None when `g` must be
/// decided on its own. The window offers batch approval for exactly these.
///
/// Batchable (low risk, and nothing to read beyond the title): a step
/// review's "proceed" (the step passed its checks; the confidence model
/// only asked for a glance), and a tool call's "yes" (once: a batch never
/// adds an "always" rule) unless it is always-gated. Never batchable: info
/// items (read, reply or dismiss), plans (the point is to read them),
/// questions (they need answers), deviations (retry, replan or stop is a
/// judgement), supervisor pauses (the supervisor asked for a human), merge
/// reviews (the diff deserves a look), always-gated tool calls
/// (destructive by definition), a payload that could not be read, and any
/// option that needs a reason.
pub fn batch_choice(g: &GateView) -> Option<crate::GateChoice> {
    use crate::{GateBody, GateChoice, StepReviewChoice, ToolCallChoice};
    if g.status != GateStatus::Pending
        || g.ask_kind == crate::gate::AskKind::Info
        || g.unreadable_payload.is_some()
    {
        return None;
    }
    let wanted = match &g.body {
        GateBody::StepReview(_) => GateChoice::StepReview(StepReviewChoice::Proceed),
        // Never a call that can harm much (its risk high or critical).
        GateBody::ToolCall(call)
            if call.always_gated.is_none()
                && call
                    .risk
                    .as_ref()
                    .is_none_or(|r| r.level < crate::rules::RiskLevel::High) =>
        {
            GateChoice::ToolCall(ToolCallChoice::Yes)
        }
        GateBody::ToolCall(_)
        | GateBody::Plan(_)
        | GateBody::SupervisorPause(_)
        | GateBody::Deviation(_)
        | GateBody::MergeReview(_)
        | GateBody::Question(_) => return None,
    };
    g.options
        .iter()
        .any(|o| o.id == wanted.as_str() && !o.requires_context)
        .then_some(wanted)
}

fn blocking() -> crate::gate::AskKind {
    crate::gate::AskKind::Blocking
}

pub use crate::activity::ActivityView;

/// Pushed to every subscriber after a commit, never before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
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
    /// A message went through the hub (delivered, or held back).
    MessagePosted {
        message: crate::message::MessageView,
    },
    /// A workspace was added or its settings changed (from any surface).
    WorkspaceChanged {
        name: String,
    },
    /// A task's settings changed.
    TaskChanged {
        task_id: TaskId,
    },
    /// A device was paired or revoked (a revoked device's connections are
    /// closed at once).
    DeviceChanged {
        device: crate::device::DeviceView,
    },
    /// Too many wrong pairing codes were typed: every outstanding code was
    /// burned (a code still shown is dead; a new pairing works at once).
    PairingCodesBurned {
        codes: u32,
    },
    /// Serving browsers was switched on or off, moved, or failed (the
    /// address in use, a certificate that cannot be used): how it stands.
    WebServingChanged {
        status: crate::web::WebStatus,
    },
}

/// Milliseconds a rank keeps for the time inside its group: 2^44 ms is
/// about 557 years after 1970, and seven groups of it stay below 2^53, so
/// the rank is exact as a JavaScript number.
const RANK_SPAN: i64 = 1 << 44;

/// A run's place in the fleet dashboard's default ("needs you first") order,
/// as one number: smaller comes first, ties break by run id.
///
/// Runs that need the user come first, the longest waiting first; then the
/// rest by state (review, running, retry queued, claimed, queued, released),
/// the most recent change first within a state. The engine computes it for
/// every row it sends, so the window, the tray and the first-screen query
/// all sort by this one rule.
pub fn attention_rank(state: RunState, needs_you: bool, state_since: Millis) -> i64 {
    let since = state_since.clamp(0, RANK_SPAN - 1);
    if needs_you {
        return since;
    }
    let group = match state {
        RunState::PendingReview => 1,
        RunState::Running => 2,
        RunState::RetryQueued => 3,
        RunState::Claimed => 4,
        RunState::Queued => 5,
        RunState::Released { .. } => 6,
    };
    group * RANK_SPAN + (RANK_SPAN - 1 - since)
}

/// The step a run is on, from its latest progress list: the entry in
/// progress, else the first pending one. None when every entry is done.
pub fn current_step(entries: &[ProgressEntry]) -> Option<String> {
    let with = |status: &str| {
        entries
            .iter()
            .find(|e| e.status == status)
            .map(|e| e.content.clone())
    };
    with("in_progress").or_else(|| with("pending"))
}

/// The latest result of each sensor, from a run's `sensor` entries in
/// order. None before any sensor ran.
pub fn sensor_summary(results: &[SensorRun]) -> Option<SensorSummary> {
    let mut latest: Vec<(&str, bool)> = Vec::new();
    for r in results {
        match latest.iter_mut().find(|(c, _)| *c == r.command) {
            Some(entry) => entry.1 = r.passed,
            None => latest.push((&r.command, r.passed)),
        }
    }
    if latest.is_empty() {
        return None;
    }
    let passed = latest.iter().filter(|(_, p)| *p).count();
    Some(SensorSummary {
        passed: u32::try_from(passed).unwrap_or(u32::MAX),
        failed: u32::try_from(latest.len() - passed).unwrap_or(u32::MAX),
        results: latest
            .into_iter()
            .map(|(command, passed)| SensorResult {
                command: command.to_owned(),
                passed,
            })
            .collect(),
    })
}

/// What `runs` cost together, one total per currency (in the order each
/// currency first appears): amounts in different currencies never add up.
pub fn cost_totals<'a>(runs: impl IntoIterator<Item = &'a RunView>) -> Vec<crate::usage::RunCost> {
    let mut totals: Vec<crate::usage::RunCost> = Vec::new();
    for cost in runs
        .into_iter()
        .filter_map(|r| r.usage.as_ref()?.cost.as_ref())
    {
        match totals.iter_mut().find(|t| t.currency == cost.currency) {
            Some(t) => t.amount += cost.amount,
            None => totals.push(cost.clone()),
        }
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunOrigin;

    /// A pending gate of `kind` with these options (an empty payload of
    /// its kind, as if readable).
    fn pending(kind: GateKind, options: Vec<GateOption>) -> GateView {
        GateView {
            id: GateId(1),
            run_id: RunId(1),
            body: crate::GateBody::decode(kind, "{}").0,
            unreadable_payload: None,
            status: GateStatus::Pending,
            title: "t".into(),
            options,
            opened_at: 0,
            decision: None,
            auto_at: None,
            auto_option: None,
            authority: None,
            effected: false,
            ask_kind: crate::gate::AskKind::Blocking,
            batch_option: None,
            pending_effect: None,
            snoozed_until: None,
            advice: None,
        }
    }

    #[test]
    fn only_a_step_review_and_a_tool_call_not_always_gated_may_be_approved_in_a_batch() {
        use crate::{GateChoice, StepReviewChoice, ToolCallChoice};
        let review = pending(
            GateKind::StepReview,
            vec![
                GateOption::choice(StepReviewChoice::Proceed, "Proceed"),
                GateOption::choice(StepReviewChoice::Stop, "Stop").with_required_context(),
            ],
        );
        assert_eq!(
            batch_choice(&review),
            Some(GateChoice::StepReview(StepReviewChoice::Proceed))
        );
        let yes = vec![GateOption::choice(ToolCallChoice::Yes, "Yes")];
        let call = pending(GateKind::ToolCall, yes.clone());
        assert_eq!(
            batch_choice(&call),
            Some(GateChoice::ToolCall(ToolCallChoice::Yes))
        );
        // Destructive by definition: always decided on its own.
        let mut gated = call.clone();
        if let crate::GateBody::ToolCall(t) = &mut gated.body {
            t.always_gated = Some(crate::rules::AlwaysGated::DeleteFiles);
        }
        assert_eq!(batch_choice(&gated), None);
        // A call that can harm much (deleting a file, leaving the worktree):
        // on its own too, while a medium one may go in a batch.
        for (level, batched) in [
            (crate::rules::RiskLevel::High, false),
            (crate::rules::RiskLevel::Critical, false),
            (crate::rules::RiskLevel::Medium, true),
        ] {
            let mut risky = call.clone();
            if let crate::GateBody::ToolCall(t) = &mut risky.body {
                t.risk = Some(crate::rules::Risk {
                    level,
                    why: "deletes a file".into(),
                });
            }
            assert_eq!(batch_choice(&risky).is_some(), batched, "{level:?}");
        }
        // Decided, an info item, an unreadable payload, an option that needs
        // a reason: never in a batch.
        let mut decided = call.clone();
        decided.status = GateStatus::Decided;
        assert_eq!(batch_choice(&decided), None);
        let mut info = call.clone();
        info.ask_kind = crate::gate::AskKind::Info;
        assert_eq!(batch_choice(&info), None);
        let mut unreadable = call.clone();
        unreadable.unreadable_payload = Some(serde_json::json!({"old": true}));
        assert_eq!(batch_choice(&unreadable), None);
        let reasoned = pending(
            GateKind::StepReview,
            vec![GateOption::choice(StepReviewChoice::Proceed, "Proceed").with_required_context()],
        );
        assert_eq!(batch_choice(&reasoned), None);
        // The kinds that need a judgement, whatever they offer.
        for kind in [
            GateKind::Plan,
            GateKind::Question,
            GateKind::Deviation,
            GateKind::SupervisorPause,
            GateKind::MergeReview,
        ] {
            let g = pending(
                kind,
                kind.options()
                    .into_iter()
                    .map(|c| GateOption {
                        id: c.as_str().to_owned(),
                        label: c.as_str().to_owned(),
                        requires_context: false,
                    })
                    .collect(),
            );
            assert_eq!(batch_choice(&g), None, "{kind:?}");
        }
    }

    fn entry(content: &str, status: &str) -> ProgressEntry {
        ProgressEntry {
            content: content.into(),
            priority: "medium".into(),
            status: status.into(),
        }
    }

    fn check(command: &str, passed: bool) -> SensorRun {
        SensorRun {
            command: command.into(),
            exit_code: Some(i32::from(!passed)),
            passed,
            output: String::new(),
        }
    }

    #[test]
    fn a_run_offers_review_only_when_launched_and_pending_review_and_steering_only_while_it_works()
    {
        for state in RunState::all() {
            for origin in [
                RunOrigin::Launched,
                RunOrigin::ClaudeCode,
                RunOrigin::Codex,
                RunOrigin::Mcp,
            ] {
                let a = run_actions(state, origin);
                let launched = origin == RunOrigin::Launched;
                let review = state == RunState::PendingReview;
                assert_eq!(a.approve, launched && review, "{state} {origin:?}");
                assert_eq!(a.reject, a.approve, "{state} {origin:?}");
                assert_eq!(a.abort, !state.is_released(), "{state} {origin:?}");
                assert_eq!(a.diff, launched, "{state} {origin:?}");
                assert_eq!(
                    a.steer,
                    !state.is_released() && !review,
                    "{state} {origin:?}"
                );
            }
        }
        // The cases users meet, spelled out.
        let running = run_actions(RunState::Running, RunOrigin::Launched);
        assert!(running.steer && running.abort && !running.approve);
        let stopped = run_actions(
            RunState::Released {
                reason: crate::ReleaseReason::AbortedByUser,
            },
            RunOrigin::ClaudeCode,
        );
        assert_eq!(stopped, RunActions::default());
    }

    #[test]
    fn the_current_step_is_the_entry_in_progress_else_the_first_pending() {
        let plan = [
            entry("Read the code", "completed"),
            entry("Write the greeting", "pending"),
            entry("Run the tests", "in_progress"),
        ];
        assert_eq!(current_step(&plan).as_deref(), Some("Run the tests"));
        let plan = [
            entry("Read the code", "completed"),
            entry("Write the greeting", "pending"),
        ];
        assert_eq!(current_step(&plan).as_deref(), Some("Write the greeting"));
        assert_eq!(current_step(&[entry("Read", "completed")]), None);
        assert_eq!(current_step(&[]), None);
    }

    #[test]
    fn sensors_count_the_latest_result_of_each_command() {
        let results = [
            check("npm test", false),
            check("npm run lint", true),
            check("npm test", true),
        ];
        assert_eq!(
            sensor_summary(&results),
            Some(SensorSummary {
                passed: 2,
                failed: 0,
                results: vec![
                    SensorResult {
                        command: "npm test".into(),
                        passed: true
                    },
                    SensorResult {
                        command: "npm run lint".into(),
                        passed: true
                    },
                ],
            })
        );
        assert_eq!(
            sensor_summary(&[check("npm test", false)]),
            Some(SensorSummary {
                passed: 0,
                failed: 1,
                results: vec![SensorResult {
                    command: "npm test".into(),
                    passed: false
                }],
            })
        );
        assert_eq!(sensor_summary(&[]), None);
    }

    #[test]
    fn the_attention_rank_puts_runs_that_need_you_first_longest_wait_first_then_by_state() {
        use crate::ReleaseReason;
        let merged = RunState::Released {
            reason: ReleaseReason::Merged,
        };
        // (id, state, since, needs you)
        let runs = [
            (1, merged, 50, false),
            (2, RunState::Running, 10, true),
            (3, RunState::PendingReview, 5, true),
            (4, RunState::Running, 20, false),
            (5, RunState::Running, 30, false),
            (6, RunState::Queued, 99, false),
            (7, RunState::RetryQueued, 1, false),
            (8, RunState::Claimed, 1, false),
            (9, RunState::Running, 30, false),
        ];
        let mut order = runs.to_vec();
        order.sort_by_key(|&(id, state, since, needs)| (attention_rank(state, needs, since), id));
        let ids: Vec<i64> = order.iter().map(|r| r.0).collect();
        // Needs-you by longest wait; then running (newest change first, ties
        // by id), retry queued, claimed, queued, released.
        assert_eq!(ids, vec![3, 2, 5, 9, 4, 7, 8, 6, 1]);
        // Exact as a JavaScript number, whatever the clock says.
        for since in [i64::MIN, -1, 0, 1_800_000_000_000, i64::MAX] {
            for needs in [true, false] {
                let r = attention_rank(merged, needs, since);
                assert!((0..1 << 53).contains(&r), "{since} {needs}: {r}");
            }
        }
    }
}
