//! What runs cost: the demo agent reports its usage over real ACP pipes
//! (`usage_update`, the `costly` scenario), the engine keeps it on the run's
//! row and pushes it, the fleet's total adds up, and a budget pauses a run
//! at its next turn.

use crate::common;

use common::{pending_gate, start, start_with, state, until, world, world_with, Captured};
use overseer_core::{
    Actor, DeviationCause, EngineEvent, GateBody, GateKind, GateView, RunCost, RunId, RunState,
    RunUsage,
};
use overseer_engine::{NotificationKind, Scope};
use overseer_store::{TaskSettings, WorkspaceSettings};
use std::sync::Arc;

/// Says yes to every tool call until the run waits for its review or on
/// another gate (returned).
async fn yes_until_other(w: &common::World, run: RunId) -> GateView {
    loop {
        let gate = until(w, "a tool call gate or another", |e| {
            e.gates(true)
                .ok()?
                .into_iter()
                .find(|g| g.run_id == run && g.kind() != GateKind::Plan)
        })
        .await;
        if gate.kind() != GateKind::ToolCall {
            return gate;
        }
        w.engine
            .decide_gate(gate.id, "yes", None, &Actor::app())
            .expect("yes");
    }
}

/// Approves the run's plan, then says yes to every tool call until the
/// run waits on another gate (returned).
async fn approve_until_other(w: &common::World, run: RunId) -> GateView {
    let plan = pending_gate(w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve plan");
    yes_until_other(w, run).await
}

/// Approves the run's plan, then says yes to every tool call until the
/// run waits for its review.
async fn approve_all(w: &common::World, run: RunId) {
    let gate = approve_until_other(w, run).await;
    assert_eq!(gate.kind(), GateKind::MergeReview, "{gate:?}");
}

/// The run's budget gate, checked to be one.
fn is_budget(gate: &GateView) -> bool {
    matches!(&gate.body, GateBody::Deviation(d) if d.cause == DeviationCause::Budget)
}

fn cost_of(w: &common::World, run: RunId) -> Option<f64> {
    Some(w.engine.run(run).ok()?.usage?.cost?.amount)
}

fn usd(amount: f64) -> Option<RunCost> {
    Some(RunCost {
        amount,
        currency: "USD".into(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_carries_its_reported_cost_and_the_fleet_total_adds_up() {
    let w = world(vec![]).await;
    let mut events = w.engine.subscribe();
    let first = start(&w, "costly");
    let second = start(&w, "costly");
    approve_all(&w, first).await;
    approve_all(&w, second).await;
    state(&w, first, RunState::PendingReview).await;
    state(&w, second, RunState::PendingReview).await;
    // Two tool calls each, 0.25 USD a call, 10,000 tokens more each time.
    let want = RunUsage {
        used: 20_000,
        size: 200_000,
        cost: usd(0.5),
    };
    for run in [first, second] {
        assert_eq!(
            w.engine.run(run).expect("run").usage.as_deref(),
            Some(&want)
        );
    }
    let runs = w.engine.runs().expect("runs");
    assert_eq!(
        overseer_core::cost_totals(&runs),
        usd(1.0).into_iter().collect::<Vec<_>>()
    );
    // Pushed as it changed, through the run's row: every cost a client saw
    // is one the agent could report; the negative one and the one that went
    // down were ignored.
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let EngineEvent::RunChanged { run } = e {
            if run.id == first {
                if let Some(c) = run.usage.and_then(|u| u.cost) {
                    if seen.last() != Some(&c.amount) {
                        seen.push(c.amount);
                    }
                }
            }
        }
    }
    assert_eq!(seen, vec![0.25, 0.5]);
    // Each step's record on the timeline says what that step cost.
    let steps: Vec<(u32, Option<RunCost>)> = w
        .engine
        .activity(first, 0)
        .expect("activity")
        .iter()
        .filter(|a| a.kind() == "step_finished")
        .map(|a| {
            let p = a.payload();
            (
                p["step"]
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0),
                serde_json::from_value(p["cost"].clone()).ok(),
            )
        })
        .collect();
    assert_eq!(steps, [(1, usd(0.25)), (2, usd(0.25))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_at_its_task_budget_pauses_before_its_next_turn_and_goes_on_once_raised() {
    let notes = Arc::new(Captured::default());
    let w = world_with(WorkspaceSettings::default(), notes.clone(), "").await;
    let run = start_with(
        &w,
        "costly",
        TaskSettings {
            max_cost: Some(0.25),
            ..Default::default()
        },
    );
    // Step 1's tool call costs 0.25 USD: the budget is reached, and the
    // run is held before step 2's turn, its agent alive (not killed).
    let gate = approve_until_other(&w, run).await;
    assert!(is_budget(&gate), "{gate:?}");
    let view = w.engine.run(run).expect("run");
    assert_eq!(view.state, RunState::Running);
    assert_eq!(view.max_cost, Some(0.25));
    // The reports that cannot be true (-1, then 0.01 after 0.25) were
    // ignored: the cost stands at 0.25.
    assert_eq!(cost_of(&w, run), Some(0.25));
    let timeline = w.engine.activity(run, 0).expect("activity");
    assert!(
        timeline.iter().any(|a| a.kind() == "deviation"
            && a.payload()["cause"] == "budget"
            && a.payload()["text"]
                .as_str()
                .is_some_and(|t| t.contains("0.25 USD"))),
        "{timeline:?}"
    );
    until(&w, "the user to be told", |_| {
        let notes = notes.0.lock().expect("lock");
        notes
            .iter()
            .any(|n| {
                n.run_id == run
                    && n.kind == NotificationKind::AgentQuestionBlocking
                    && n.title.contains("reached its budget")
                    && n.body.contains("0.25 USD")
            })
            .then_some(())
    })
    .await;
    // Step 2 was not started: its tool call never came.
    assert!(!w
        .engine
        .gates(true)
        .expect("gates")
        .iter()
        .any(|g| g.run_id == run && g.kind() == GateKind::ToolCall));
    // The user raises the task's budget and goes on: step 2 runs.
    let task = view.task_id;
    let scope = Scope {
        workspace: "demo".into(),
        task: Some(task),
    };
    assert!(w
        .engine
        .set_max_cost(&scope, Some(-1.0), &Actor::cli())
        .is_err());
    let mut events = w.engine.subscribe();
    w.engine
        .set_max_cost(&scope, Some(1.0), &Actor::cli())
        .expect("raise the budget");
    // The run's row is pushed with its new budget.
    let mut pushed = None;
    while let Ok(e) = events.try_recv() {
        if let EngineEvent::RunChanged { run: r } = e {
            if r.id == run {
                pushed = r.max_cost;
            }
        }
    }
    assert_eq!(pushed, Some(1.0));
    w.engine
        .decide_gate(gate.id, "retry", None, &Actor::app())
        .expect("go on");
    let review = yes_until_other(&w, run).await;
    assert_eq!(review.kind(), GateKind::MergeReview, "{review:?}");
    assert_eq!(cost_of(&w, run), Some(0.5));
    assert_eq!(w.engine.run(run).expect("run").max_cost, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_at_its_workspace_budget_ends_without_its_next_turn() {
    let w = world_with(
        WorkspaceSettings {
            max_cost: Some(0.2),
            ..Default::default()
        },
        Arc::new(overseer_engine::LogNotifier),
        "",
    )
    .await;
    let run = start(&w, "costly");
    let gate = approve_until_other(&w, run).await;
    assert!(is_budget(&gate), "{gate:?}");
    assert_eq!(w.engine.run(run).expect("run").max_cost, Some(0.2));
    w.engine
        .decide_gate(gate.id, "stop", None, &Actor::app())
        .expect("stop");
    until(&w, "the run to end", |e| {
        e.run(run).ok()?.state.is_released().then_some(())
    })
    .await;
    // Only step 1's tool call was ever made.
    let mut calls: Vec<String> = w
        .engine
        .activity(run, 0)
        .expect("activity")
        .iter()
        .filter(|a| a.kind() == "tool_call")
        .filter_map(|a| a.payload()["id"].as_str().map(str::to_owned))
        .collect();
    calls.dedup();
    assert_eq!(calls, ["step-1-call-1"]);
    assert_eq!(cost_of(&w, run), Some(0.25));
}
