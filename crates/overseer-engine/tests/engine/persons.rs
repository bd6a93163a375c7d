//! Every decision names its person: a decision made through a paired device
//! is recorded as `user:<person>` with the device in its signed record, and
//! shown so in the gate, "Why?", the run's story and timeline; two people
//! deciding one gate: one wins, the other is told who was first and when.
//! The local owner keeps `user:app` / `user:cli`. A real engine on a real
//! SQLite file, with the demo fleet's waiting tool calls.

use crate::common;

use common::*;
use overseer_core::audit::AuditPayload;
use overseer_core::{Activity, Actor, DeviceRef, ErrorCode, GateKind, GateView};
use overseer_engine::Engine;
use std::sync::Arc;

/// An engine with the demo fleet: some of its runs wait on a tool call.
fn fleet(dir: &std::path::Path) -> Arc<Engine> {
    let engine = engine_on(dir, TestClock::new());
    engine.seed_demo(&Actor::cli(), false).expect("demo fleet");
    engine
}

fn waiting_tool_calls(engine: &Engine) -> Vec<GateView> {
    let gates: Vec<GateView> = engine
        .gates(true)
        .expect("gates")
        .into_iter()
        .filter(|g| g.kind() == GateKind::ToolCall)
        .collect();
    assert!(!gates.is_empty(), "the demo fleet has a waiting tool call");
    gates
}

/// The payload of the gate's `gate_decided` record, and its signed actor.
fn decided_record(engine: &Engine, gate: &GateView) -> (AuditPayload, String) {
    let story = engine.gate_story(gate.id).expect("story");
    assert!(story.verified, "{:?}", story.decision_problems);
    story
        .records
        .iter()
        .rev()
        .find_map(|r| {
            let p = AuditPayload::parse(&r.record.payload).ok()?;
            matches!(p, AuditPayload::GateDecided { .. }).then(|| (p, r.record.actor.clone()))
        })
        .expect("a gate_decided record")
}

#[test]
fn a_decision_through_a_device_is_signed_with_its_person_and_device_and_shown_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = fleet(dir.path());
    let ana = pair(&engine, "ana", "Ana's phone");
    let phone = ana.device.reference();
    let gate = waiting_tool_calls(&engine).remove(0);

    let decided = engine
        .decide_gate(gate.id, "yes", None, &ana.device.actor())
        .expect("decided");
    let d = decided.decision.as_ref().expect("a decision");
    assert_eq!(d.actor.to_string(), "user:ana");
    assert_eq!(d.device.as_ref(), Some(&phone));
    // On the wire the actor is the person; the device beside it.
    let wire = serde_json::to_value(d).expect("json");
    assert_eq!(
        wire["actor"],
        serde_json::json!({"kind": "user", "name": "ana"})
    );
    assert_eq!(wire["device"]["name"], "Ana's phone");

    // The signed record: the person as its actor, the device in its payload.
    let (payload, actor) = decided_record(&engine, &gate);
    assert_eq!(actor, "user:ana");
    let AuditPayload::GateDecided { device, .. } = payload else {
        unreachable!()
    };
    assert_eq!(device, Some(phone.clone()));

    // "Why?": the gate's and the run's decisions name the device.
    let story = engine.gate_story(gate.id).expect("story");
    let vote = story
        .decisions
        .iter()
        .find(|d| d.actor.is_user())
        .expect("the human's decision");
    assert_eq!(vote.device.as_ref(), Some(&phone));
    assert_eq!(
        story.gate.decision.as_ref().and_then(|d| d.device.clone()),
        Some(phone.clone())
    );
    let run_story = engine.run_story(gate.run_id).expect("run story");
    assert!(run_story.verified);
    assert!(run_story
        .decisions
        .iter()
        .any(|d| d.device.as_ref() == Some(&phone)));

    // The run's timeline says who decided, through what.
    let timeline = engine.activity(gate.run_id, 0).expect("timeline");
    let entry = timeline
        .iter()
        .find_map(|a| match &a.entry {
            Activity::Decided {
                gate_id,
                by,
                device,
                text,
                ..
            } if *gate_id == gate.id => Some((by.clone(), device.clone(), text.clone())),
            _ => None,
        })
        .expect("a timeline entry for the decision");
    assert_eq!(entry.0, "user:ana");
    assert_eq!(entry.1, phone);
    assert!(entry.2.contains("through Ana's phone"), "{}", entry.2);

    engine
        .verify_audit()
        .expect("read")
        .expect("the log verifies");
}

#[test]
fn a_device_column_changed_outside_overseer_does_not_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = fleet(dir.path());
    let ana = pair(&engine, "ana", "Ana's phone");
    let gate = waiting_tool_calls(&engine).remove(0);
    engine
        .decide_gate(gate.id, "yes", None, &ana.device.actor())
        .expect("decided");

    // Someone with the database file but not the key says it was Bo's.
    let bo = serde_json::to_string(&DeviceRef {
        id: ana.device.id,
        name: "Bo's phone".into(),
    })
    .expect("json");
    let db = rusqlite::Connection::open(engine.paths().db()).expect("db");
    db.execute(
        "UPDATE gates SET decided_device = ?1 WHERE id = ?2",
        rusqlite::params![bo, gate.id],
    )
    .expect("tamper");
    db.execute(
        "UPDATE gate_decisions SET device = ?1 WHERE gate_id = ?2",
        rusqlite::params![bo, gate.id],
    )
    .expect("tamper");
    let failure = engine
        .verify_audit()
        .expect("read")
        .expect_err("the device is signed");
    let problems: Vec<String> = failure.decisions.iter().map(|m| m.to_string()).collect();
    assert!(
        problems.iter().any(|p| p.contains("decided_device")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("device") && p.contains("history")),
        "{problems:?}"
    );
    let story = engine.gate_story(gate.id).expect("story");
    assert!(!story.verified);
}

#[test]
fn the_local_owner_keeps_user_app_and_user_cli_and_their_records_name_no_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = fleet(dir.path());
    let gates = waiting_tool_calls(&engine);
    let gate = &gates[0];
    let decided = engine
        .decide_gate(gate.id, "yes", None, &Actor::app())
        .expect("decided");
    let d = decided.decision.as_ref().expect("a decision");
    assert_eq!(d.actor, Actor::app());
    assert_eq!(d.device, None);
    assert!(serde_json::to_value(d)
        .expect("json")
        .get("device")
        .is_none());
    let (payload, actor) = decided_record(&engine, gate);
    assert_eq!(actor, "user:app");
    // Signed in the shape records had before devices: no `device` key.
    assert!(payload.to_value().get("device").is_none());
    assert!(!engine
        .activity(gate.run_id, 0)
        .expect("timeline")
        .iter()
        .any(|a| matches!(a.entry, Activity::Decided { .. })));
    engine
        .verify_audit()
        .expect("read")
        .expect("the log verifies");
}

#[test]
fn two_people_deciding_one_gate_one_wins_and_the_other_is_told_who_was_first_and_when() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = fleet(dir.path());
    let ana = pair(&engine, "ana", "Ana's phone");
    let bo = pair(&engine, "bo", "Bo's laptop");
    let gate = waiting_tool_calls(&engine).remove(0);

    // At the same moment, from two threads.
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let racers: Vec<_> = [(ana.device.actor(), "yes"), (bo.device.actor(), "no")]
        .into_iter()
        .map(|(actor, option)| {
            let engine = engine.clone();
            let barrier = barrier.clone();
            let gate = gate.id;
            std::thread::spawn(move || {
                barrier.wait();
                let context = (option == "no").then_some("not now");
                engine.decide_gate(gate, option, context, &actor)
            })
        })
        .collect();
    let outcomes: Vec<_> = racers
        .into_iter()
        .map(|r| r.join().expect("no panic"))
        .collect();
    let won: Vec<&GateView> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "exactly one wins: {outcomes:?}");
    let lost = outcomes
        .iter()
        .find_map(|o| o.as_ref().err())
        .expect("one is refused");
    assert_eq!(lost.code, ErrorCode::AlreadyDecided);
    let first = won[0].decision.as_ref().expect("decided");
    let device = first.device.as_ref().expect("through a device");
    assert!(
        lost.message.contains(&format!(
            "{} through {device} at {}",
            first.actor,
            overseer_core::device::utc_text(first.at)
        )),
        "{}",
        lost.message
    );
    // One decision on the gate, signed; the log verifies.
    let story = engine.gate_story(gate.id).expect("story");
    let decided_records = story
        .records
        .iter()
        .filter(|r| r.record.payload.contains("\"gate_decided\""))
        .count();
    assert_eq!(decided_records, 1);
    engine
        .verify_audit()
        .expect("read")
        .expect("the log verifies");
}

#[test]
fn one_who_decides_later_is_told_who_was_first_and_when() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = fleet(dir.path());
    let bo = pair(&engine, "bo", "Bo's laptop");
    let next = waiting_tool_calls(&engine).remove(0);
    let option = "yes";
    engine
        .decide_gate(next.id, option, None, &bo.device.actor())
        .expect("bo first");
    let late = engine
        .decide_gate(next.id, option, None, &Actor::cli())
        .expect_err("the owner second");
    assert_eq!(late.code, ErrorCode::AlreadyDecided);
    assert!(
        late.message.contains("user:bo through Bo's laptop"),
        "{}",
        late.message
    );
    assert!(late.message.contains(" UTC"), "{}", late.message);
}

#[test]
fn a_run_rejected_from_a_phone_names_the_person_and_device_in_its_signed_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = fleet(dir.path());
    let ana = pair(&engine, "ana", "Ana's phone");
    let phone = ana.device.reference();
    let review = engine
        .gates(true)
        .expect("gates")
        .into_iter()
        .find(|g| g.kind() == GateKind::MergeReview)
        .expect("a run waiting for review");
    engine
        .reject_run(review.run_id, "not like this", &ana.device.actor())
        .expect("rejected");
    let gate = engine.gate(review.id).expect("gate");
    let d = gate.decision.expect("decided");
    assert_eq!(d.actor.to_string(), "user:ana");
    assert_eq!(d.device, Some(phone.clone()));
    let story = engine.run_story(review.run_id).expect("story");
    assert!(story.verified);
    let transition_device =
        story
            .records
            .iter()
            .find_map(|r| match AuditPayload::parse(&r.record.payload).ok()? {
                AuditPayload::RunTransition { to, device, .. } if to.starts_with("released") => {
                    Some((r.record.actor.clone(), device))
                }
                _ => None,
            });
    assert_eq!(
        transition_device,
        Some(("user:ana".to_owned(), Some(phone)))
    );
    engine
        .verify_audit()
        .expect("read")
        .expect("the log verifies");
}
