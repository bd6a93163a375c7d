//! Decisions exist only with their signed record, end to end: the real
//! engine, the demo agent as a real child process, the real SQLite file
//! written from a second connection the way `sqlite3` would.
//!
//! - A decision written straight into the database is not acted on: the gate
//!   waits for a real decision, a signed `security_event` says what was
//!   found, the run's timeline says it, "Why?" and `audit verify` flag it.
//! - The same at start, for a decision written while the engine was down.
//! - A decision whose record cannot be written does not take effect: a
//!   rule's allow is not given, a step that would proceed waits for a human.

use crate::common;

use common::{pending_gate, reopen, start, until, world, world_with, World};
use overseer_core::rules::RuleSet;
use overseer_core::{Actor, GateKind, GateStatus, RunState};
use overseer_engine::LogNotifier;
use overseer_store::{DecisionProblem, DecisionTable, WorkspaceSettings};
use std::sync::Arc;

fn db(w: &World) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(w.engine.paths().db()).expect("open the db file");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    conn
}

fn security_events(w: &World) -> Vec<serde_json::Value> {
    let conn = db(w);
    let mut stmt = conn
        .prepare(
            "SELECT payload FROM audit_log WHERE json_extract(payload, '$.type') = 'security_event'
               AND json_extract(payload, '$.event') = 'decision_without_record' ORDER BY seq",
        )
        .expect("query");
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .expect("rows")
        .map(|p| serde_json::from_str(&p.expect("row")).expect("json"))
        .collect();
    rows
}

fn forge(w: &World, gate: i64, option: &str) {
    let n = db(w)
        .execute(
            "UPDATE gates SET status = 'decided', decided_option = ?1, decided_by = 'user:cli',
                    decided_at = 1 WHERE id = ?2",
            rusqlite::params![option, gate],
        )
        .expect("forge");
    assert_eq!(n, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_approved_in_sqlite_is_not_acted_on_until_a_human_approves() {
    let w = world(vec![]).await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    forge(&w, plan.id.into(), "approve");
    // Before the engine looks again, "Why?" and `audit verify` already say so.
    let story = w.engine.gate_story(plan.id).expect("story");
    assert!(!story.verified, "a forged decision is not verified");
    assert!(
        matches!(
            story.decision_problems.as_slice(),
            [m] if m.table == DecisionTable::Gates && m.problem == DecisionProblem::NoRecord
        ),
        "{:?}",
        story.decision_problems
    );
    let failure = w
        .engine
        .verify_audit()
        .expect("read")
        .expect_err("verify fails");
    assert!(
        failure.to_string().contains("no signed audit record"),
        "{failure}"
    );

    // Any event wakes the run's wait; it must not go on.
    w.engine.renotify_pending().expect("renotify");
    let text = until(&w, "the security note in the timeline", |e| {
        e.activity(run, 0)
            .ok()?
            .into_iter()
            .find(|a| a.kind() == "security")
            .and_then(|a| a.payload()["text"].as_str().map(str::to_owned))
    })
    .await;
    assert!(text.contains("not acted on"), "{text}");
    let gate = w.engine.gate(plan.id).expect("gate");
    assert_eq!(gate.status, GateStatus::Pending, "the gate waits again");
    let events = security_events(&w);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["gate_id"], plan.id);
    assert_eq!(events[0]["found"]["by"], "user:cli");
    // Nothing ran: no tool call was asked, nothing was written.
    assert!(w
        .engine
        .activity(run, 0)
        .expect("activity")
        .iter()
        .all(|a| !matches!(a.kind().as_str(), "file_written" | "tool_allowed")));
    assert!(!w
        .engine
        .gates(true)
        .expect("gates")
        .iter()
        .any(|g| g.run_id == run && g.kind() == GateKind::ToolCall));
    // The story now shows the security event, and the chain verifies.
    let story = w.engine.gate_story(plan.id).expect("story");
    assert!(story
        .records
        .iter()
        .any(|r| r.record.payload.contains("decision_without_record")));
    assert!(w.engine.verify_audit().expect("read").is_ok());

    // A real approval goes through.
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let asked = pending_gate(&w, run, GateKind::ToolCall).await;
    assert_eq!(asked.run_id, run);
    w.engine.abort_run(run, &Actor::cli()).expect("abort");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_forged_while_the_engine_was_down_is_put_back_at_start() {
    let mut w = world(vec![]).await;
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine.stop_agents().await;
    forge(&w, plan.id.into(), "approve");
    reopen(&mut w);
    let events = until(&w, "the security event", |_| {
        let e = security_events(&w);
        (!e.is_empty()).then_some(e)
    })
    .await;
    assert_eq!(events[0]["gate_id"], plan.id);
    // The run is carried on, and its plan gate waits for a real decision:
    // the forged approval is not acted on.
    let gate = pending_gate(&w, run, GateKind::Plan).await;
    assert_eq!(gate.id, plan.id);
    assert_eq!(w.engine.run(run).expect("run").state, RunState::Running);
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("a real approval");
    let asked = pending_gate(&w, run, GateKind::ToolCall).await;
    assert_eq!(asked.run_id, run);
    w.engine.abort_run(run, &Actor::cli()).expect("abort");
    assert!(w.engine.verify_audit().expect("read").is_ok());
}

/// A trigger in the real database makes exactly one kind of decision record
/// fail to be written, as a full disk or a lock would.
fn refuse_decisions(w: &World, rule_ref_like: &str) {
    db(w)
        .execute_batch(&format!(
            "CREATE TRIGGER refuse_decisions BEFORE INSERT ON decisions
             WHEN NEW.rule_ref LIKE '{rule_ref_like}'
             BEGIN SELECT RAISE(ABORT, 'the disk refused the write'); END;"
        ))
        .expect("trigger");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_allow_that_cannot_be_recorded_is_not_given() {
    let settings = WorkspaceSettings {
        permissions: RuleSet::parse(&["Edit".to_owned()], &[], &[]).expect("rules"),
        ..Default::default()
    };
    let w = world_with(settings, Arc::new(LogNotifier), "").await;
    refuse_decisions(&w, "Edit");
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // The rule would allow the edit; its record cannot be written, so the
    // agent is refused (cancelled) and nothing is written.
    let activity = until(&w, "the run to stop or ask", |e| {
        let run_view = e.run(run).ok()?;
        let asked = e
            .gates(true)
            .ok()?
            .into_iter()
            .any(|g| g.run_id == run && g.kind() != GateKind::Plan);
        (asked || run_view.state.is_released() || run_view.state == RunState::PendingReview)
            .then(|| e.activity(run, 0).ok())
            .flatten()
    })
    .await;
    assert!(
        !activity
            .iter()
            .any(|a| matches!(a.kind().as_str(), "tool_allowed" | "file_written")),
        "{activity:#?}"
    );
    // The rule did match (no edit was asked), so the refusal is the
    // missing record's doing.
    let gates = w.engine.gates(false).expect("gates");
    assert!(
        !gates
            .iter()
            .any(|g| g.run_id == run && g.kind() == GateKind::ToolCall),
        "{gates:#?}"
    );
    assert!(
        gates
            .iter()
            .any(|g| g.run_id == run && g.kind() == GateKind::Deviation),
        "the refused agent's turn ends in a deviation: {gates:#?}"
    );
    let _ = w.engine.abort_run(run, &Actor::cli());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_decision_cannot_be_recorded_waits_for_a_human() {
    let w = world(vec![]).await;
    refuse_decisions(&w, "confidence:%");
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // Say yes to the edits; the step would proceed on its own (high
    // confidence), but its decision cannot be recorded: a hard stop.
    let review = until(&w, "a step review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id != run {
                continue;
            }
            match g.kind() {
                GateKind::ToolCall => {
                    let _ = e.decide_gate(g.id, "yes", None, &Actor::cli());
                }
                GateKind::StepReview => return Some(g),
                _ => {}
            }
        }
        None
    })
    .await;
    assert!(
        review.auto_at.is_none(),
        "a hard stop has no timer: {review:?}"
    );
    assert_eq!(w.engine.run(run).expect("run").state, RunState::Running);
    w.engine.abort_run(run, &Actor::cli()).expect("abort");
}
