//! Supervision end to end: the real engine, the demo agent as a real child
//! process, real git repositories. Permission rules on real tool calls, the
//! delegated supervisor deciding within its authority, a failing evaluator
//! handing the gate to the human, drift corrected then paused, manual step
//! approval, steering, and every decision's story verified.

use crate::common;
use common::Captured;

use common::{pending_gate, start, start_with, state, until, world, world_with, World};
use overseer_core::confidence::ApprovalMode;
use overseer_core::rules::RuleSet;
use overseer_core::supervision::{Autonomy, EvaluatorConfig, SupervisorPolicy, Verdict};
use overseer_core::{Actor, ErrorCode, GateId, GateKind, GateView, RunId, RunState};
use overseer_engine::{LogNotifier, NotificationKind};
use overseer_store::{TaskSettings, WorkspaceSettings};
use std::sync::Arc;

fn supervised(policy: SupervisorPolicy) -> WorkspaceSettings {
    WorkspaceSettings {
        supervisor: Some(policy),
        ..Default::default()
    }
}

/// A policy whose autonomous decisions take effect at once (a grace of 0,
/// as before grace periods existed): the tests that set a grace say so.
fn policy(autonomy: Autonomy, evaluator: EvaluatorConfig) -> SupervisorPolicy {
    SupervisorPolicy {
        enabled: true,
        autonomy,
        evaluator,
        grace_seconds: 0,
        ..SupervisorPolicy::default()
    }
}

/// A command evaluator: `script` run by `sh -c`, the gate's JSON on stdin.
fn sh_evaluator(script: &str) -> EvaluatorConfig {
    EvaluatorConfig::Command {
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
    }
}

/// The file a held evaluator waits for, in the run's worktree (where a
/// contained evaluator runs).
const GO: &str = ".git/overseer-test-go";

/// Lets an evaluator waiting for [`GO`] answer.
fn let_the_supervisor_answer(w: &World, run: RunId) {
    let worktree = w.engine.worktree_path("demo", run);
    std::fs::write(worktree.join(GO), "").expect("let the supervisor answer");
}

/// An evaluator that holds its answer: the gate stays open while a test looks.
const HOLD: &str = "cat >/dev/null; sleep 600";

/// Says yes to every tool call of `run` until `pred` holds.
async fn yes_until<T>(
    w: &World,
    run: i64,
    what: &str,
    mut pred: impl FnMut(&overseer_engine::Engine) -> Option<T>,
) -> T {
    until(w, what, |e| {
        for g in e.gates(true).ok()? {
            if g.run_id == run && g.kind() == GateKind::ToolCall {
                let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
            }
        }
        pred(e)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_deny_without_asking_and_destructive_calls_always_ask() {
    let settings = WorkspaceSettings {
        permissions: RuleSet::parse(
            &["Bash(rm -rf build/)".to_owned()],
            &[],
            &["Edit(.env)".to_owned()],
        )
        .expect("rules"),
        ..Default::default()
    };
    let w = world_with(settings, Arc::new(LogNotifier), "").await;
    let run = start(&w, "destructive");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // rm -rf is allowed by a rule, and still asks: it is always gated.
    let rm = pending_gate(&w, run, GateKind::ToolCall).await;
    assert_eq!(
        rm.body.payload_json()["always_gated"],
        "destructive_shell",
        "{}",
        rm.body.payload_json()
    );
    assert!(
        !rm.options.iter().any(|o| o.id == "always"),
        "no 'always' for an always-gated call: {:?}",
        rm.options
    );
    w.engine
        .decide_gate(rm.id, "yes", None, &Actor::cli())
        .expect("yes");
    // The step that did destructive work stops for a human whatever its
    // confidence: each plan step is weighed on its own.
    let review = pending_gate(&w, run, GateKind::StepReview).await;
    assert!(review.auto_at.is_none(), "a hard stop has no timer");
    assert_eq!(
        review.body.payload_json()["step"],
        1,
        "{}",
        review.body.payload_json()
    );
    w.engine
        .decide_gate(review.id, "proceed", None, &Actor::cli())
        .expect("proceed");
    // Step 2: the .env edit is denied by the rule, without a gate.
    let activity = until(&w, "the denied .env edit", |e| {
        let activity = e.activity(run, 0).ok()?;
        activity
            .iter()
            .any(|a| {
                a.kind() == "tool_denied"
                    && a.payload()["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("Edit(.env)"))
            })
            .then_some(activity)
    })
    .await;
    assert!(
        activity
            .iter()
            .any(|a| a.kind() == "step_started" && a.payload()["step"] == 2),
        "{activity:?}"
    );
    assert!(
        !w.engine
            .gates(false)
            .expect("gates")
            .iter()
            .any(|g| g.run_id == run && g.title.contains(".env")),
        "the denied edit never asked"
    );
    assert!(!w.engine.worktree_path("demo", run).join(".env").exists());
    // Whatever step 2's confidence asks for, the run ends in review.
    until(&w, "the run in review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id == run && g.kind() == GateKind::StepReview {
                let _ = e.decide_gate(g.id, "proceed", None, &Actor::cli());
            }
        }
        (e.run(run).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autonomous_rules_supervisor_runs_a_task_and_every_decision_has_its_story() {
    let notes = Arc::new(Captured::default());
    let w = world_with(
        supervised(policy(Autonomy::Autonomous, EvaluatorConfig::Rules)),
        notes.clone(),
        "",
    )
    .await;
    let run = start(&w, "happy");
    // Nobody decides: the supervisor approves the plan and the edits, and
    // escalates the merge review (no sensors passed, so a human must look).
    state(&w, run, RunState::PendingReview).await;
    let gates: Vec<_> = w
        .engine
        .gates(false)
        .expect("gates")
        .into_iter()
        .filter(|g| g.run_id == run)
        .collect();
    let plan = gates
        .iter()
        .find(|g| g.kind() == GateKind::Plan)
        .expect("plan gate");
    let d = plan.decision.clone().expect("decided");
    assert_eq!(d.actor, Actor::Supervisor("rules".into()));
    assert_eq!(d.option, "approve");
    assert!(plan.effected);
    let story = w.engine.gate_story(plan.id).expect("story");
    assert!(story.verified);
    assert!(story
        .decisions
        .iter()
        .any(|d| d.verdict == Verdict::Approve
            && d.rule_ref.as_deref() == Some("rules:plan_complete")));
    let review = until(&w, "the supervisor's escalation", |e| {
        let g = e
            .gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::MergeReview)?;
        let story = e.gate_story(g.id).ok()?;
        story
            .decisions
            .iter()
            .any(|d| d.verdict == Verdict::Escalate)
            .then_some(g)
    })
    .await;
    assert!(review.decision.is_none(), "escalated, not decided");
    assert!(
        notes.wait_for(NotificationKind::SupervisorEscalated).await,
        "{:?}",
        notes.kinds()
    );
    // The human still decides, and wins.
    w.engine.approve_run(run, &Actor::app()).expect("approve");
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_evaluator_escalates_notifies_and_never_approves() {
    let notes = Arc::new(Captured::default());
    let garbage = sh_evaluator("cat >/dev/null; echo 'looks fine to me'");
    let w = world_with(
        supervised(policy(Autonomy::Autonomous, garbage)),
        notes.clone(),
        "",
    )
    .await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let story = until(&w, "the escalation", |e| {
        let s = e.gate_story(plan.id).ok()?;
        (!s.decisions.is_empty()).then_some(s)
    })
    .await;
    let d = &story.decisions[0];
    assert_eq!(d.verdict, Verdict::Escalate);
    assert_eq!(d.rule_ref.as_deref(), Some("evaluator_failed:garbage"));
    assert!(matches!(d.actor, Actor::Supervisor(_)));
    assert!(story.gate.decision.is_none(), "never an approval on error");
    assert!(notes.wait_for(NotificationKind::SupervisorFailed).await);
    w.engine
        .decide_gate(plan.id, "reject", Some("not today"), &Actor::cli())
        .expect("the human decides");
    state(
        &w,
        run,
        RunState::Released {
            reason: overseer_core::ReleaseReason::PlanRejected,
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_reoriented_until_the_limit_then_paused_for_the_human() {
    let mut p = policy(Autonomy::Advisory, EvaluatorConfig::Rules);
    p.max_reorient_attempts = 2;
    let w = world_with(supervised(p), Arc::new(LogNotifier), "").await;
    let run = start(&w, "drift");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let pause = yes_until(&w, run.into(), "the supervisor's pause", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::SupervisorPause)
    })
    .await;
    let activity = w.engine.activity(run, 0).expect("activity");
    let verdicts: Vec<&str> = activity
        .iter()
        .filter_map(|a| match &a.entry {
            overseer_core::Activity::Verdict { verdict, .. } => Some(verdict.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(verdicts, ["reorient", "reorient", "pause"], "{activity:?}");
    // The agent's reply to the correction (its messages are flushed to the
    // timeline in batches).
    until(&w, "the agent's reply to the correction", |e| {
        e.activity(run, 0).ok()?.into_iter().find(|a| {
            a.kind() == "message"
                && a.payload()["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("SUPERVISOR CORRECTION: Stay within the files"))
        })
    })
    .await;
    assert!(
        pause.auto_at.is_some(),
        "an unanswered pause terminates the run"
    );
    w.engine
        .decide_gate(pause.id, "proceed", None, &Actor::cli())
        .expect("proceed");
    state(&w, run, RunState::PendingReview).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reorients_are_counted_per_step() {
    // One reorient allowed per step: the first step drifts, is reoriented
    // once, still drifts and is paused; the human lets it through. The
    // second step drifts too: it gets its own reorient before its pause
    // (the count of the first step does not carry over).
    let mut p = policy(Autonomy::Advisory, EvaluatorConfig::Rules);
    p.max_reorient_attempts = 1;
    let w = world_with(supervised(p), Arc::new(LogNotifier), "").await;
    let run = start(&w, "drift_twice");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let pause_of = |e: &overseer_engine::Engine, not: Option<GateId>| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::SupervisorPause && Some(g.id) != not)
    };
    let first = yes_until(&w, run.into(), "the first step's pause", |e| {
        pause_of(e, None)
    })
    .await;
    w.engine
        .decide_gate(first.id, "proceed", None, &Actor::cli())
        .expect("proceed");
    let second = yes_until(&w, run.into(), "the second step's pause", |e| {
        pause_of(e, Some(first.id))
    })
    .await;
    let activity = w.engine.activity(run, 0).expect("activity");
    let verdicts: Vec<&str> = activity
        .iter()
        .filter_map(|a| match &a.entry {
            overseer_core::Activity::Verdict { verdict, .. } => Some(verdict.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        verdicts,
        ["reorient", "pause", "reorient", "pause"],
        "each step has its own reorient"
    );
    w.engine
        .decide_gate(second.id, "proceed", None, &Actor::cli())
        .expect("proceed");
    state(&w, run, RunState::PendingReview).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_approval_stops_after_each_step_and_steering_reaches_the_agent() {
    let w = world_with(WorkspaceSettings::default(), Arc::new(LogNotifier), "").await;
    let run = start_with(
        &w,
        "happy",
        TaskSettings {
            approval: ApprovalMode::Manual,
            ..Default::default()
        },
    );
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // Mid-turn, while the first edit waits for a yes: steer.
    let first = pending_gate(&w, run, GateKind::ToolCall).await;
    w.engine
        .steer_run(run, "also say goodbye", &Actor::cli())
        .expect("steer");
    w.engine
        .decide_gate(first.id, "yes", None, &Actor::cli())
        .expect("yes");
    let review = yes_until(&w, run.into(), "the step review", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::StepReview)
    })
    .await;
    assert!(
        review.body.payload_json()["confidence"].as_f64().is_some(),
        "{}",
        review.body.payload_json()
    );
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(activity.iter().any(|a| a.kind() == "user_instruction"));
    until(&w, "the agent's reply to the instruction", |e| {
        e.activity(run, 0).ok()?.into_iter().find(|a| {
            a.kind() == "message"
                && a.payload()["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("USER INSTRUCTION: also say goodbye"))
        })
    })
    .await;
    let err = w
        .engine
        .decide_gate(review.id, "stop", None, &Actor::cli())
        .expect_err("stop needs a reason");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    w.engine
        .decide_gate(review.id, "proceed", None, &Actor::cli())
        .expect("proceed");
    // Manual approval stops after every step: step 2 has its own review.
    let second = yes_until(&w, run.into(), "step 2's review", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::StepReview && g.id != review.id)
    })
    .await;
    assert_eq!(
        second.body.payload_json()["step"],
        2,
        "{}",
        second.body.payload_json()
    );
    w.engine
        .decide_gate(second.id, "proceed", None, &Actor::cli())
        .expect("proceed");
    state(&w, run, RunState::PendingReview).await;
    let err = w
        .engine
        .steer_run(run, "   ", &Actor::cli())
        .expect_err("empty");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    // In review the agent's work is done: an instruction would reach nobody,
    // so it is refused, as the row (which offers no steering) says.
    let row = w.engine.run(run).expect("run");
    assert!(
        !row.actions.steer && row.actions.approve,
        "{:?}",
        row.actions
    );
    let err = w
        .engine
        .steer_run(run, "also say goodbye in French", &Actor::cli())
        .expect_err("a run in review takes no instruction");
    assert_eq!(err.code, ErrorCode::InvalidTransition, "{}", err.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_muted_kind_is_not_notified_and_blocking_asks_cannot_be_muted() {
    let notes = Arc::new(Captured::default());
    let w = world_with(WorkspaceSettings::default(), notes.clone(), "").await;
    let err = w
        .engine
        .set_notifications(
            overseer_engine::NotificationSettings {
                muted: vec![NotificationKind::AgentQuestionBlocking],
                ..Default::default()
            },
            &Actor::app(),
        )
        .expect_err("blocking asks always notify");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    w.engine
        .set_notifications(
            overseer_engine::NotificationSettings {
                muted: vec![NotificationKind::RunPendingReview],
                ..Default::default()
            },
            &Actor::app(),
        )
        .expect("mute reviews");
    w.engine.seed_demo(&Actor::cli(), true).expect("seed");
    let run = start(&w, "happy");
    pending_gate(&w, run, GateKind::Plan).await;
    assert!(
        notes
            .wait_for(NotificationKind::AgentQuestionBlocking)
            .await
    );
    assert!(
        !notes.kinds().contains(&NotificationKind::RunPendingReview),
        "{:?}",
        notes.kinds()
    );
    assert_eq!(
        w.engine.notifications().muted,
        vec![NotificationKind::RunPendingReview]
    );
}

/// The supervisor's vote arriving after the user decided is kept, signed,
/// and shown in "Why?" as overruled: a disagreement leaves a trace. The
/// evaluator (a real child process) answers only once the user decided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_vote_after_the_user_decided_is_shown_overruled_in_why() {
    // The evaluator is contained like the run's checks: it waits for a
    // file in the run's worktree (its working directory).
    let slow = sh_evaluator(&format!(
        "cat >/dev/null; while [ ! -e {GO} ]; do sleep 0.05; done; \
         echo '{{\"verdict\":\"reject\",\"rationale\":\"too risky\"}}'"
    ));
    let mut p = policy(Autonomy::Autonomous, slow);
    p.timeout_seconds = 120;
    let w = world_with(supervised(p), Arc::new(LogNotifier), "").await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("the user decides first");
    let_the_supervisor_answer(&w, run);
    let late = until(&w, "the supervisor's late vote in Why?", |e| {
        e.gate_story(plan.id)
            .ok()?
            .decisions
            .into_iter()
            .find(|d| matches!(d.actor, Actor::Supervisor(_)))
    })
    .await;
    assert_eq!(late.overruled_by, Some(Actor::cli()), "{late:?}");
    assert_eq!(late.rationale.as_deref(), Some("too risky"));
    let story = w.engine.gate_story(plan.id).expect("story");
    assert!(story.verified, "the late vote is signed and chained");
    let decided = story.gate.decision.expect("decided");
    assert_eq!(
        (decided.option.as_str(), decided.actor),
        ("approve", Actor::cli())
    );
}

/// Notifications follow the supervisor's autonomy: a gate an autonomous
/// supervisor decides tells the user (a notification they may mute), while
/// the same gate under an advisory supervisor asks them (blocking).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_the_supervisor_decides_informs_and_one_a_human_must_decide_asks() {
    // The evaluator holds its answer: the gate stays open while we look.
    let hold = || sh_evaluator(HOLD);
    for (autonomy, want, not) in [
        (
            Autonomy::Autonomous,
            NotificationKind::AgentQuestionPending,
            NotificationKind::AgentQuestionBlocking,
        ),
        (
            Autonomy::Advisory,
            NotificationKind::AgentQuestionBlocking,
            NotificationKind::AgentQuestionPending,
        ),
    ] {
        let notes = Arc::new(Captured::default());
        let mut p = policy(autonomy, hold());
        p.timeout_seconds = 600;
        let w = world_with(supervised(p), notes.clone(), "").await;
        let run = start(&w, "happy");
        pending_gate(&w, run, GateKind::Plan).await;
        assert!(
            notes.wait_for(want).await,
            "{autonomy:?}: {:?}",
            notes.kinds()
        );
        assert!(
            !notes.kinds().contains(&not),
            "{autonomy:?}: {:?}",
            notes.kinds()
        );
        if autonomy == Autonomy::Autonomous {
            let told = notes.0.lock().expect("lock").clone();
            assert!(
                told.iter()
                    .any(|n| n.title.contains("the supervisor will decide")),
                "{told:?}"
            );
        }
    }
}

/// Every tool call the engine asks a human about says how much it can harm,
/// and batch approval never offers one that can harm much: a real agent's
/// `rm -rf build/` (always gated) is critical, its `.env` edit high, and
/// neither is batch-approvable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_gate_says_its_risk_and_a_risky_one_is_never_batch_approved() {
    use overseer_core::rules::RiskLevel;
    let w = world(vec![]).await;
    let run = start(&w, "destructive");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let rm = pending_gate(&w, run, GateKind::ToolCall).await;
    let overseer_core::GateBody::ToolCall(call) = &rm.body else {
        panic!("a tool call: {:?}", rm.body)
    };
    let risk = call.risk.clone().expect("the gate says its risk");
    assert_eq!(risk.level, RiskLevel::Critical, "{risk:?}");
    assert!(!risk.why.is_empty());
    assert_eq!(rm.batch_option, None, "never batch-approved");
    w.engine
        .decide_gate(rm.id, "yes", None, &Actor::cli())
        .expect("yes");
    let env = until(&w, "the .env edit's gate", |e| {
        let pending = e.gates(true).ok()?;
        // The first step's review between the two: go on.
        for g in &pending {
            if g.run_id == run && g.kind() == GateKind::StepReview {
                let _ = e.decide_gate(g.id, "proceed", None, &Actor::cli());
            }
        }
        pending
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::ToolCall && g.id != rm.id)
    })
    .await;
    let overseer_core::GateBody::ToolCall(call) = &env.body else {
        panic!("a tool call: {:?}", env.body)
    };
    assert_eq!(call.risk.as_ref().map(|r| r.level), Some(RiskLevel::High));
    assert_eq!(env.batch_option, None);
}

/// A merge review the supervisor decides on its own authority tells the
/// user (its authority is written with the review, so its notification
/// knows), instead of asking them to review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_review_the_supervisor_decides_informs_instead_of_asking_for_a_review() {
    let notes = Arc::new(Captured::default());
    let mut p = policy(Autonomy::Advisory, sh_evaluator(HOLD));
    p.gate_authority = [(GateKind::MergeReview, Autonomy::Autonomous)]
        .into_iter()
        .collect();
    p.timeout_seconds = 600;
    let w = world_with(supervised(p), notes.clone(), "").await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let review = yes_until(&w, run.into(), "the merge review", |e| {
        let g = e
            .gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::MergeReview)?;
        Some(g)
    })
    .await;
    assert_eq!(review.authority, Some(Autonomy::Autonomous));
    // Told after the commit that opened the review.
    assert!(notes.wait_for(NotificationKind::AgentQuestionPending).await);
    let told = notes.0.lock().expect("lock").clone();
    assert!(
        told.iter()
            .any(|n| n.kind == NotificationKind::AgentQuestionPending
                && n.title.contains("the supervisor will decide")),
        "{told:?}"
    );
    assert!(
        !told
            .iter()
            .any(|n| n.kind == NotificationKind::RunPendingReview),
        "no review asked of the user: {told:?}"
    );
}

/// The wall clock in ms since the epoch, as the engine's clock reads it.
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// An autonomous rules supervisor with a grace of `seconds`.
fn graced(seconds: u64) -> SupervisorPolicy {
    let mut p = policy(Autonomy::Autonomous, EvaluatorConfig::Rules);
    p.grace_seconds = seconds;
    p
}

/// The pending gate of `kind` on `run` once the supervisor's decision on it
/// waits for its grace.
async fn pending_effect_on(w: &World, run: overseer_core::RunId, kind: GateKind) -> GateView {
    until(
        w,
        &format!("the supervisor's pending decision on a {kind:?}"),
        |e| {
            e.gates(true)
                .ok()?
                .into_iter()
                .find(|g| g.run_id == run && g.kind() == kind && g.pending_effect.is_some())
        },
    )
    .await
}

/// The actors of the gate's signed `gate_decided` records.
fn decided_records(w: &World, gate: GateId) -> Vec<String> {
    w.engine
        .gate_story(gate)
        .expect("story")
        .records
        .into_iter()
        .filter(|r| r.record.payload.contains("\"type\":\"gate_decided\""))
        .map(|r| r.record.actor)
        .collect()
}

/// An autonomous supervisor's decision waits for its grace: the gate stays
/// pending (open to humans) and says what the supervisor decided and when
/// it takes effect, the user is told so (informational); at the deadline
/// it takes effect, decided by the supervisor with its signed record. Plan
/// and tool call alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autonomous_decision_waits_its_grace_open_to_humans_then_takes_effect() {
    let notes = Arc::new(Captured::default());
    let w = world_with(supervised(graced(2)), notes.clone(), "").await;
    let run = start(&w, "happy");
    for kind in [GateKind::Plan, GateKind::ToolCall] {
        let gate = pending_effect_on(&w, run, kind).await;
        let seen = wall_ms();
        let effect = gate.pending_effect.clone().expect("pending");
        assert_eq!(effect.verdict, Verdict::Approve, "{kind:?}");
        assert_eq!(effect.by, Actor::Supervisor("rules".into()));
        assert_eq!(effect.option, kind.approve_option());
        assert!(
            effect.at > seen && effect.at <= seen + 2_000,
            "{kind:?}: the deadline is the vote's time + 2 s: {} vs {seen}",
            effect.at
        );
        assert!(gate.decision.is_none(), "not decided during the grace");
        assert!(decided_records(&w, gate.id).is_empty());
        let decided = until(&w, "the decision to take effect", |e| {
            let g = e.gate(gate.id).ok()?;
            g.decision.clone().map(|d| (g, d))
        })
        .await;
        let (g, d) = decided;
        assert_eq!(d.actor, Actor::Supervisor("rules".into()));
        assert_eq!(d.option, kind.approve_option());
        assert!(
            d.at >= effect.at,
            "{kind:?}: took effect at {} before {}",
            d.at,
            effect.at
        );
        assert!(g.pending_effect.is_none());
        let story = w.engine.gate_story(gate.id).expect("story");
        assert!(story.verified, "{kind:?}: signed and backed");
        assert_eq!(decided_records(&w, gate.id), ["supervisor:rules"]);
    }
    let told = notes.0.lock().expect("lock").clone();
    let graced: Vec<_> = told
        .iter()
        .filter(|n| n.title.contains("the supervisor will approve in 2 s"))
        .collect();
    assert!(graced.len() >= 2, "{told:?}");
    assert!(
        graced.iter().all(
            |n| n.kind == NotificationKind::AgentQuestionPending && n.body.contains("Override")
        ),
        "informational, and says how to override: {graced:?}"
    );
}

/// A human deciding within the grace wins: their decision takes effect,
/// the supervisor's never does, and "Why?" shows its vote overruled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_deciding_within_the_grace_wins_and_the_supervisor_is_overruled() {
    let w = world_with(supervised(graced(600)), Arc::new(LogNotifier), "").await;
    let run = start(&w, "happy");
    let plan = pending_effect_on(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "reject", Some("not this plan"), &Actor::cli())
        .expect("the human decides within the grace");
    state(
        &w,
        run,
        RunState::Released {
            reason: overseer_core::ReleaseReason::PlanRejected,
        },
    )
    .await;
    let story = w.engine.gate_story(plan.id).expect("story");
    let d = story.gate.decision.clone().expect("decided");
    assert_eq!((d.option.as_str(), &d.actor), ("reject", &Actor::cli()));
    assert!(story.gate.pending_effect.is_none());
    let vote = story
        .decisions
        .iter()
        .find(|d| matches!(d.actor, Actor::Supervisor(_)))
        .expect("the supervisor's vote is kept");
    assert_eq!(vote.verdict, Verdict::Approve);
    assert_eq!(vote.overruled_by, Some(Actor::cli()), "{vote:?}");
    assert!(story.verified);
    assert_eq!(
        decided_records(&w, plan.id),
        [Actor::cli().to_string()],
        "only the human's"
    );
}

/// A pending decision outlives the engine: stopped mid-grace and started
/// again after its deadline, the engine makes it take effect at once, once,
/// and the run goes on from the approved plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_decision_outlives_a_restart_and_takes_effect_once() {
    let mut w = world_with(supervised(graced(3)), Arc::new(LogNotifier), "").await;
    let run = start(&w, "happy");
    let plan = pending_effect_on(&w, run, GateKind::Plan).await;
    let at = plan.pending_effect.clone().expect("pending").at;
    w.engine.stop_agents().await;
    // The deadline passes while no engine runs.
    let left = at - wall_ms();
    tokio::time::sleep(std::time::Duration::from_millis(
        u64::try_from(left.max(0)).unwrap_or(0) + 300,
    ))
    .await;
    let stored = rusqlite::Connection::open(w.engine.paths().db())
        .expect("db")
        .query_row(
            "SELECT status, pending_effect IS NOT NULL FROM gates WHERE id = ?1",
            [plan.id],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?)),
        )
        .expect("the gate");
    assert_eq!(stored, ("pending".to_owned(), true), "kept in the store");
    common::reopen(&mut w);
    let d = until(&w, "the decision to take effect after the restart", |e| {
        e.gate(plan.id).ok()?.decision
    })
    .await;
    assert_eq!(d.actor, Actor::Supervisor("rules".into()));
    assert_eq!(d.option, "approve");
    assert!(d.at >= at);
    // The run goes on from the approved plan: its first edit is asked.
    pending_effect_on(&w, run, GateKind::ToolCall).await;
    assert_eq!(
        decided_records(&w, plan.id),
        ["supervisor:rules"],
        "never twice"
    );
    let votes = w
        .engine
        .gate_story(plan.id)
        .expect("story")
        .decisions
        .iter()
        .filter(|d| matches!(d.actor, Actor::Supervisor(_)))
        .count();
    assert_eq!(votes, 1, "the supervisor voted once");
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

/// A merge review the supervisor approves on its own merges only when the
/// grace ends; a grace of 0 is today's "at once", explicit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autonomous_merge_waits_its_grace_and_a_grace_of_zero_is_immediate() {
    let approve =
        sh_evaluator("cat >/dev/null; echo '{\"verdict\":\"approve\",\"rationale\":\"fine\"}'");
    for grace in [1, 0] {
        let mut p = policy(Autonomy::Advisory, approve.clone());
        p.gate_authority = [(GateKind::MergeReview, Autonomy::Autonomous)]
            .into_iter()
            .collect();
        p.grace_seconds = grace;
        let w = world_with(supervised(p), Arc::new(LogNotifier), "").await;
        let base = common::git(&w.repo, &["rev-parse", "main"]);
        let run = start(&w, "happy");
        let plan = pending_gate(&w, run, GateKind::Plan).await;
        w.engine
            .decide_gate(plan.id, "approve", None, &Actor::cli())
            .expect("approve");
        let review = yes_until(&w, run.into(), "the merge review decided", |e| {
            e.gates(false).ok()?.into_iter().find(|g| {
                g.run_id == run && g.kind() == GateKind::MergeReview && g.decision.is_some()
            })
        })
        .await;
        let d = review.decision.clone().expect("decided");
        assert!(matches!(d.actor, Actor::Supervisor(_)), "{d:?}");
        let voted = w
            .engine
            .gate_story(review.id)
            .expect("story")
            .decisions
            .iter()
            .find(|d| matches!(d.actor, Actor::Supervisor(_)))
            .map(|d| d.at)
            .expect("the vote");
        let waited = d.at - voted;
        if grace == 0 {
            assert!(waited < 1_000, "at once: {waited} ms");
        } else {
            assert!(waited >= 1_000, "after the grace: {waited} ms");
        }
        state(
            &w,
            run,
            RunState::Released {
                reason: overseer_core::ReleaseReason::Merged,
            },
        )
        .await;
        assert_ne!(common::git(&w.repo, &["rev-parse", "main"]), base, "merged");
    }
}

/// A vote cast for the supervisor by hand (`overseer supervisor approve`)
/// is an autonomous decision like the evaluator's: it waits for its grace,
/// and the user can still override it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_vote_cast_by_hand_waits_its_grace_too() {
    let mut p = policy(Autonomy::Autonomous, sh_evaluator(HOLD));
    p.timeout_seconds = 600;
    p.grace_seconds = 600;
    let w = world_with(supervised(p), Arc::new(LogNotifier), "").await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let voted = w
        .engine
        .vote_as_supervisor(plan.id, true, "reviewed by hand".into(), &Actor::cli())
        .expect("the vote");
    assert!(voted.decision.is_none(), "{voted:?}");
    let effect = voted.pending_effect.expect("waits for its grace");
    assert_eq!(
        (effect.option.as_str(), effect.verdict),
        ("approve", Verdict::Approve)
    );
    assert!(matches!(effect.by, Actor::Supervisor(_)));
    w.engine
        .decide_gate(plan.id, "reject", Some("no"), &Actor::cli())
        .expect("the user overrides within the grace");
    let d = w
        .engine
        .gate(plan.id)
        .expect("gate")
        .decision
        .expect("decided");
    assert_eq!((d.option.as_str(), d.actor), ("reject", Actor::cli()));
}

/// "Hold" on a gate whose supervisor decision waits for its grace drops
/// that decision: the gate waits for a human, past the deadline too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holding_a_gate_within_the_grace_keeps_it_for_the_human() {
    let w = world_with(supervised(graced(1)), Arc::new(LogNotifier), "").await;
    let run = start(&w, "happy");
    let plan = pending_effect_on(&w, run, GateKind::Plan).await;
    let at = plan.pending_effect.clone().expect("pending").at;
    let held = w.engine.hold_gate(plan.id, &Actor::cli()).expect("hold");
    assert!(held.pending_effect.is_none(), "{held:?}");
    // Well past the deadline: still the human's.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let g = w.engine.gate(plan.id).expect("gate");
    assert!(g.decision.is_none(), "{g:?}");
    assert!(g.pending_effect.is_none());
    assert!(wall_ms() > at);
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("the human decides");
}

/// An advisory supervisor's vote is on the gate the human decides: its
/// verdict, the option it would choose and why, read back with the gate (as
/// the inbox card shows it), once the evaluator answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_advisory_supervisors_advice_is_on_the_gate_the_human_decides() {
    let w = world_with(
        supervised(policy(
            Autonomy::Advisory,
            sh_evaluator(
                r#"cat >/dev/null; echo '{"verdict":"approve","rationale":"two small steps, declared files"}'"#,
            ),
        )),
        Arc::new(LogNotifier),
        "",
    )
    .await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let advice = until(&w, "the supervisor's advice on the plan", |e| {
        e.gate(plan.id).ok()?.advice
    })
    .await;
    assert_eq!(
        advice.verdict,
        Verdict::Advise,
        "advisory: it advises, never decides"
    );
    assert_eq!(advice.option.as_deref(), Some("approve"));
    assert_eq!(
        advice.rationale.as_deref(),
        Some("two small steps, declared files")
    );
    assert_eq!(advice.by, "supervisor:command:sh");
    let gate = w.engine.gate(plan.id).expect("gate");
    assert!(gate.decision.is_none(), "the human still decides");
    // In the inbox's list too, not only when the gate is read alone.
    let listed = w
        .engine
        .gates(true)
        .expect("gates")
        .into_iter()
        .find(|g| g.id == plan.id)
        .expect("listed");
    assert_eq!(listed.advice, Some(advice));
}

/// The supervisor in the notification: a gate's notification goes out when
/// it opens, before the supervisor answered (the evaluator, a real child
/// process, waits for the test's word); when its advice arrives the gate is
/// told again with it, in one line, under the same tag (the desktop
/// replaces the first), at the same urgency. Co-signed, it says that the
/// supervisor approved and the gate passes once the user approves too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_supervisors_advice_and_cosign_reach_the_gates_notification() {
    for (autonomy, says) in [
        (Autonomy::Advisory, "The supervisor advises “Approve”"),
        (Autonomy::Cosign, "It passes once you approve too"),
    ] {
        let slow = sh_evaluator(&format!(
            "cat >/dev/null; while [ ! -e {GO} ]; do sleep 0.05; done; \
             printf '%s' '{{\"verdict\":\"approve\",\"rationale\":\"two small steps\\nand more prose\"}}'"
        ));
        let mut p = policy(autonomy, slow);
        p.timeout_seconds = 120;
        let notes = Arc::new(Captured::default());
        let w = world_with(supervised(p), notes.clone(), "").await;
        let run = start(&w, "happy");
        let plan = pending_gate(&w, run, GateKind::Plan).await;
        let tag = format!("gate:{}", plan.id);
        let of_plan = |notes: &Captured| -> Vec<overseer_engine::Notification> {
            notes
                .0
                .lock()
                .expect("lock")
                .iter()
                .filter(|n| n.tag.as_deref() == Some(tag.as_str()))
                .cloned()
                .collect()
        };
        let first = until(&w, "the plan's notification", |_| {
            of_plan(&notes).into_iter().next()
        })
        .await;
        assert!(
            !first.body.contains("supervisor"),
            "{autonomy:?}: {first:?}"
        );
        assert_eq!(
            first.kind,
            NotificationKind::AgentQuestionBlocking,
            "{autonomy:?}: a human must decide, so it asks"
        );
        let_the_supervisor_answer(&w, run);
        let again = until(&w, "the plan told again with the advice", |_| {
            of_plan(&notes).into_iter().nth(1)
        })
        .await;
        assert_eq!(
            (again.kind, &again.title, again.urgency),
            (first.kind, &first.title, first.urgency),
            "{autonomy:?}: the same notification, replaced"
        );
        assert!(
            again.body.contains(says) && again.body.contains(": two small steps"),
            "{autonomy:?}: {again:?}"
        );
        assert!(!again.body.contains("more prose"), "one line: {again:?}");
        assert!(
            w.engine.gate(plan.id).expect("gate").decision.is_none(),
            "{autonomy:?}: the human still decides"
        );
    }
}

/// Issue 37, item 2: a command evaluator runs contained like a run's
/// checks, never with the engine's environment: it gets only PATH, HOME,
/// LANG and what the owner named (here: nothing more), the engine's other
/// variables (this test process's) are not in its environment, and it can
/// neither read a file of the user's outside the run nor write one there.
/// It says what it saw in its rationale, which the gate's story records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_evaluator_runs_contained_without_the_engines_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "the user's").expect("secret");
    let planted = dir.path().join("planted");
    let probe = sh_evaluator(&format!(
        "cat >/dev/null; names=$(env | cut -d= -f1 | tr '\\n' ' '); \
         if cat '{secret}' >/dev/null 2>&1; then seen=read; else seen=hidden; fi; \
         if echo x > '{planted}' 2>/dev/null; then wrote=yes; else wrote=no; fi; \
         printf '{{\"verdict\": \"escalate\", \"rationale\": \"env: %s; secret: %s; wrote: %s\"}}' \
         \"$names\" \"$seen\" \"$wrote\"",
        secret = secret.display(),
        planted = planted.display()
    ));
    let w = world_with(
        supervised(policy(Autonomy::Advisory, probe)),
        Arc::new(LogNotifier),
        "",
    )
    .await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let rationale = until(&w, "the evaluator's vote", |e| {
        let s = e.gate_story(plan.id).ok()?;
        s.decisions.first().and_then(|d| d.rationale.clone())
    })
    .await;
    let names: Vec<&str> = rationale
        .strip_prefix("env: ")
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("the evaluator did not run as written: {rationale}"))
        .split_whitespace()
        .collect();
    assert!(names.contains(&"PATH"), "{rationale}");
    let unexpected: Vec<&str> = names
        .iter()
        .copied()
        .filter(|k| {
            // The sandbox's own (its TMPDIR and TERM, the marker that
            // finds its processes) and what every shell sets.
            ![
                "PATH",
                "HOME",
                "LANG",
                "PWD",
                "SHLVL",
                "_",
                "OLDPWD",
                "TMPDIR",
                "TERM",
                "OVERSEER_AGENT_MARKER",
            ]
            .contains(k)
                && !k.starts_with("OVERSEER_EVAL_")
        })
        .collect();
    assert_eq!(unexpected, Vec::<&str>::new(), "{rationale}");
    assert!(rationale.contains("secret: hidden"), "{rationale}");
    assert!(rationale.contains("wrote: no"), "{rationale}");
    assert!(!planted.exists(), "the evaluator wrote outside the run");
}

/// Issue 37, item 2: an `openai` evaluator whose `api_key_env` names a
/// variable the owner did not name (here HOME) does not run: its gate is
/// escalated to the human as a `secret` failure saying what to do, and no
/// request leaves with the variable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluator_key_from_a_variable_the_owner_did_not_name_is_refused() {
    let notes = Arc::new(Captured::default());
    let evaluator = EvaluatorConfig::Openai {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "llama3.1".into(),
        api_key_env: Some("HOME".into()),
    };
    let w = world_with(
        supervised(policy(Autonomy::Autonomous, evaluator)),
        notes.clone(),
        "",
    )
    .await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let story = until(&w, "the escalation", |e| {
        let s = e.gate_story(plan.id).ok()?;
        (!s.decisions.is_empty()).then_some(s)
    })
    .await;
    let d = &story.decisions[0];
    assert_eq!(d.verdict, Verdict::Escalate);
    assert_eq!(d.rule_ref.as_deref(), Some("evaluator_failed:secret"));
    let why = d.rationale.as_deref().unwrap_or_default();
    assert!(
        why.contains("HOME") && why.contains("overseer.toml"),
        "{why}"
    );
    assert!(story.gate.decision.is_none(), "the human decides");
    assert!(notes.wait_for(NotificationKind::SupervisorFailed).await);
}
