//! How runs plan, with the demo agent over real pipes: in the agent's plan
//! mode (its exit-plan request is the plan gate), by the plain-words prompt
//! (the block it answers with), or not at all.

use crate::common;

use common::*;
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, GateKind, RunState};
use overseer_engine::LogNotifier;
use overseer_store::TaskSettings;
use overseer_store::WorkspaceSettings;
use std::sync::Arc;

fn with_plan(plan: PlanStrategy) -> TaskSettings {
    TaskSettings {
        plan: Some(plan),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_plan_mode_request_changes_keeps_it_planning_and_approve_leaves_supervised() {
    let w = world(Vec::new()).await;
    let run = start(&w, "happy");
    let first = pending_gate(&w, run, GateKind::Plan).await;
    assert_eq!(
        first.body.payload_json()["source"],
        "agent_mode",
        "{}",
        first.body.payload_json()
    );
    assert!(first.body.payload_json()["markdown"]
        .as_str()
        .is_some_and(|m| m.contains("1. Write the greeting")));
    w.engine
        .decide_gate(
            first.id,
            "request_changes",
            Some("mention the README too"),
            &Actor::cli(),
        )
        .expect("request changes");
    let second = until(&w, "the revised plan", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::Plan && g.id != first.id)
    })
    .await;
    let activity = w.engine.activity(run, 0).expect("activity");
    let answers: Vec<String> = activity
        .iter()
        .filter(|a| a.kind() == "plan_answer")
        .filter_map(|a| a.payload()["text"].as_str().map(str::to_owned))
        .collect();
    assert!(
        answers[0].contains("\"reject\""),
        "changes keep it planning: {answers:?}"
    );
    assert!(
        !answers.iter().any(|a| a.contains("exit-plan-auto")),
        "never the auto-accepting option: {answers:?}"
    );
    w.engine
        .decide_gate(second.id, "approve", None, &Actor::cli())
        .expect("approve");
    yes_to_tool_calls_until_review(&w, run.into()).await;
    let activity = w.engine.activity(run, 0).expect("activity");
    let answers: Vec<&str> = activity
        .iter()
        .filter_map(|a| match &a.entry {
            overseer_core::Activity::PlanAnswer { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(answers[1].contains("exit-plan-default"), "{answers:?}");
    let steps: Vec<i64> = activity
        .iter()
        .filter(|a| a.kind() == "step_started")
        .filter_map(|a| a.payload()["step"].as_i64())
        .collect();
    assert_eq!(steps, [1, 2], "each step its own turn");
    assert!(
        !activity.iter().any(|a| a.kind() == "security"),
        "leaving plan mode through the gate is no breach"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_prompt_the_planning_turn_changes_nothing_and_the_block_is_the_plan() {
    let w = world(Vec::new()).await;
    let run = start_with(&w, "happy", with_plan(PlanStrategy::Prompt));
    let gate = pending_gate(&w, run, GateKind::Plan).await;
    assert_eq!(
        gate.body.payload_json()["source"],
        "block",
        "{}",
        gate.body.payload_json()
    );
    assert_eq!(gate.body.payload_json()["files"][0], "src/greeting.txt");
    assert!(
        !w.engine
            .activity(run, 0)
            .expect("activity")
            .iter()
            .any(|a| a.kind() == "file_written"),
        "nothing written before approval"
    );
    w.engine
        .decide_gate(gate.id, "approve", None, &Actor::cli())
        .expect("approve");
    yes_to_tool_calls_until_review(&w, run.into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_plan_skip_there_is_no_plan_gate_and_the_task_still_asks() {
    let w = world(Vec::new()).await;
    let run = start_with(&w, "happy", with_plan(PlanStrategy::Skip));
    yes_to_tool_calls_until_review(&w, run.into()).await;
    let gates = w.engine.gates(false).expect("gates");
    assert!(!gates
        .iter()
        .any(|g| g.run_id == run && g.kind() == GateKind::Plan));
    assert!(
        gates
            .iter()
            .filter(|g| g.run_id == run && g.kind() == GateKind::ToolCall)
            .count()
            >= 2,
        "each edit was still asked"
    );
    let greeting =
        std::fs::read_to_string(w.engine.worktree_path("demo", run).join("src/greeting.txt"))
            .expect("greeting");
    assert!(greeting.contains("Hello from the Overseer demo agent"));
}

/// Says yes to every tool call (and proceeds past every step review) of
/// `run` until it waits in review.
async fn yes_to_tool_calls_until_review(w: &World, run: i64) {
    until(w, "the run in review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id != run {
                continue;
            }
            let option = match g.kind() {
                GateKind::ToolCall => "yes",
                GateKind::StepReview => "proceed",
                _ => continue,
            };
            let _ = e.decide_gate(g.id, option, None, &Actor::cli());
        }
        (e.run(overseer_core::RunId(run)).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_with_a_timeout_is_declined_when_nobody_answers_and_the_run_goes_on() {
    let w = world(Vec::new()).await;
    let run = start_with(
        &w,
        "questions",
        TaskSettings {
            question_timeout_seconds: Some(1),
            ..Default::default()
        },
    );
    let q = pending_gate(&w, run, GateKind::Question).await;
    assert_eq!(
        q.body.payload_json()["ask_kind"],
        "question",
        "{}",
        q.body.payload_json()
    );
    assert!(q.auto_at.is_some(), "the countdown is persisted");
    assert!(
        !q.options.iter().any(|o| o.id == "default"),
        "the demo's form has no defaults to take"
    );
    // Nobody answers: the timer declines, and the agent plans without answers.
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    assert_eq!(
        plan.body.payload_json()["goal"],
        "Add a svelte greeting, without tests (no answers given; using defaults)",
        "{}",
        plan.body.payload_json()
    );
    let decided = w
        .engine
        .gate(q.id)
        .expect("gate")
        .decision
        .expect("decided");
    assert_eq!(decided.option, "decline");
    assert_eq!(decided.actor, Actor::Engine);

    // Without a timeout (the task's, or `[questions] expiry_seconds` set
    // by the owner) a question waits for the user: it is blocking.
    let run = start(&w, "questions");
    let q = until(&w, "the second question", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::Question)
    })
    .await;
    assert_eq!(q.body.payload_json()["ask_kind"], "blocking");
    assert!(q.auto_at.is_none());
}

/// `[questions] expiry_seconds` set by the owner applies to a launched
/// run's question without a task expiry, as to an external session's; `0`
/// waits for the user (blocking, no countdown).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_question_expiry_applies_to_launched_runs_and_zero_waits() {
    for (config, kind, secs) in [
        ("[questions]\nexpiry_seconds = 0\n", "blocking", None),
        ("[questions]\nexpiry_seconds = 90\n", "question", Some(90)),
    ] {
        let w = world_with(WorkspaceSettings::default(), Arc::new(LogNotifier), config).await;
        let run = start(&w, "questions");
        let q = pending_gate(&w, run, GateKind::Question).await;
        assert_eq!(q.body.payload_json()["ask_kind"], kind, "{config}");
        let created = q.opened_at;
        assert_eq!(
            q.auto_at.map(|at| (at - created + 500) / 1000),
            secs,
            "{config}"
        );
    }
}
