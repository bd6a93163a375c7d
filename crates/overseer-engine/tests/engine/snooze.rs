//! Snoozing an inbox item through the engine (real SQLite, the demo agent
//! as a real process): it leaves the inbox's list and "needs you", only a
//! human may snooze and only for 5 s to 30 days, the snooze is kept across
//! an engine restart (the restart does not tell of it again), and at its
//! time the item comes back and notifies again.

use crate::common;

use common::*;
use overseer_core::{Actor, ErrorCode, GateKind};
use overseer_engine::{NotificationKind, WorkspaceSettings};
use std::sync::Arc;
use std::time::Duration;

fn blocking_notes(notes: &Captured, run: overseer_core::RunId) -> usize {
    notes
        .0
        .lock()
        .expect("lock")
        .iter()
        .filter(|n| n.kind == NotificationKind::AgentQuestionBlocking && n.run_id == run)
        .count()
}

fn listed(w: &World, gate: overseer_core::GateId) -> bool {
    w.engine
        .gates_page(true, None, None)
        .expect("page")
        .gates
        .iter()
        .any(|g| g.id == gate)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snoozed_question_leaves_the_inbox_survives_a_restart_and_comes_back_notified() {
    let notes = Arc::new(Captured::default());
    let mut w = world_with(WorkspaceSettings::default(), notes.clone(), "").await;
    let run = start(&w, "questions");
    let q = pending_gate(&w, run, GateKind::Question).await;
    until(&w, "the question's notification", |_| {
        (blocking_notes(&notes, run) == 1).then_some(())
    })
    .await;
    assert!(listed(&w, q.id));
    assert!(w.engine.run(run).expect("run").needs_you);
    let needing = w.engine.needs_you_count().expect("count");

    // Only a human snoozes, and only for 5 s to 30 days.
    let now = overseer_engine::Clock::now(&overseer_engine::SystemClock);
    let e = w
        .engine
        .snooze_gate(q.id, now + 60_000, &Actor::Agent("demo".into()))
        .expect_err("an agent");
    assert_eq!(e.code, ErrorCode::InvalidInput);
    for bad in [now + 1_000, now + 31 * 24 * 3_600_000] {
        let e = w
            .engine
            .snooze_gate(q.id, bad, &Actor::cli())
            .expect_err("out of range");
        assert!(e.message.contains("5 seconds to 30 days"), "{}", e.message);
    }

    let until_ms = now + 8_000;
    let snoozed = w
        .engine
        .snooze_gate(q.id, until_ms, &Actor::cli())
        .expect("snoozed");
    assert_eq!(snoozed.snoozed_until, Some(until_ms));
    assert!(!listed(&w, q.id), "a snoozed item leaves the inbox");
    assert!(!w.engine.run(run).expect("run").needs_you);
    assert_eq!(w.engine.needs_you_count().expect("count"), needing - 1);
    assert!(
        w.engine.gate(q.id).expect("gate").decision.is_none(),
        "snoozing decides nothing"
    );

    // The engine restarts meanwhile: the snooze is kept, and the restart
    // does not tell of the snoozed item again.
    w.engine.stop_agents().await;
    let after = Arc::new(Captured::default());
    reopen_with(&mut w, after.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let g = w.engine.gate(q.id).expect("gate");
    assert_eq!(g.snoozed_until, Some(until_ms), "kept in the database");
    assert!(!listed(&w, q.id));
    assert!(!w.engine.run(run).expect("run").needs_you);
    assert_eq!(
        blocking_notes(&after, run),
        0,
        "not told again while snoozed"
    );

    // At its time it comes back, in the inbox and "needs you", notified.
    until(&w, "the snoozed question to come back", |e| {
        let back = e.gate(q.id).ok()?.snoozed_until.is_none()
            && e.run(run).ok()?.needs_you
            && blocking_notes(&after, run) == 1;
        back.then_some(())
    })
    .await;
    assert!(listed(&w, q.id));
    assert!(
        overseer_engine::Clock::now(&overseer_engine::SystemClock) >= until_ms,
        "not before its time"
    );
    // Decided now, a later snooze is refused with who decided.
    w.engine
        .decide_gate(q.id, "decline", None, &Actor::cli())
        .expect("decline");
    let now = overseer_engine::Clock::now(&overseer_engine::SystemClock);
    let e = w
        .engine
        .snooze_gate(q.id, now + 60_000, &Actor::cli())
        .expect_err("decided");
    assert!(e.message.contains("already"), "{}", e.message);
}
