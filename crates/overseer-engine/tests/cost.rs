//! What runs cost: the demo agent reports its usage over real ACP pipes
//! (`usage_update`, the `costly` scenario), the engine keeps it on the run's
//! row and pushes it, the fleet's total adds up, and a budget pauses a run
//! at its next turn.

mod common;

use common::{pending_gate, start, state, until, world};
use overseer_core::{Actor, EngineEvent, GateKind, RunCost, RunId, RunState, RunUsage};

/// Approves the run's plan, then says yes to every tool call until the
/// run waits for its review.
async fn approve_all(w: &common::World, run: RunId) {
    let plan = pending_gate(w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve plan");
    loop {
        let gate = until(w, "a tool call gate or the review", |e| {
            e.gates(true).ok()?.into_iter().find(|g| {
                g.run_id == run && matches!(g.kind(), GateKind::ToolCall | GateKind::MergeReview)
            })
        })
        .await;
        if gate.kind() == GateKind::MergeReview {
            return;
        }
        w.engine
            .decide_gate(gate.id, "yes", None, &Actor::app())
            .expect("yes");
    }
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
}
