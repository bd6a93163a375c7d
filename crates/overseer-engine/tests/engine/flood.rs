//! A run cannot flood the user or the engine: a real child process
//! (`tests/security/flood.py`) floods a live run's own socket, as a runaway
//! script inside the run would, with questions, messages or connections.
//! Past the run's cap the run is paused: one security event on its
//! timeline, one signed audit record, one notification; what it asks next
//! is refused with an error that says so, and the user's inbox still lists.

use crate::common;

use common::*;
use overseer_core::activity::SecurityEvent;
use overseer_core::{Activity, Actor, DeviationCause, GateBody, GateKind, GateView, RunId};
use overseer_engine::flood::FloodLimits;
use overseer_engine::NotificationKind;
use overseer_store::WorkspaceSettings;
use std::path::PathBuf;
use std::sync::Arc;

/// A world whose run is alive (its agent waits at the plan gate), so its
/// socket is bound; the notifications the user got.
async fn live_run() -> (World, RunId, Arc<Captured>) {
    let notes = Arc::new(Captured::default());
    let w = world_with(WorkspaceSettings::default(), notes.clone(), "").await;
    let run = start(&w, "happy");
    pending_gate(&w, run, GateKind::Plan).await;
    (w, run, notes)
}

/// Runs the flood script against `run`'s socket in a child process; what it
/// got back.
async fn flood(w: &World, run: RunId, mode: &str, n: usize) -> serde_json::Value {
    let socket = w
        .engine
        .paths()
        .data_dir
        .join("run-sockets")
        .join(format!("run-{run}.sock"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/security/flood.py");
    let out = tokio::process::Command::new("python3")
        .arg(&script)
        .arg(&socket)
        .arg(mode)
        .arg(n.to_string())
        .output()
        .await
        .expect("python3 runs the flood");
    assert!(
        out.status.success(),
        "flood.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "flood.py printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn flood_gates(w: &World, run: RunId) -> Vec<GateView> {
    w.engine
        .gates(false)
        .expect("the user's gates list")
        .into_iter()
        .filter(|g| {
            g.run_id == run
                && matches!(&g.body, GateBody::Deviation(d) if d.cause == DeviationCause::Flood)
        })
        .collect()
}

fn flood_events(w: &World, run: RunId) -> usize {
    w.engine
        .activity(run, 0)
        .expect("activity")
        .iter()
        .filter(
            |a| matches!(&a.entry, Activity::Security(s) if s.event == Some(SecurityEvent::Flood)),
        )
        .count()
}

fn audited_floods(w: &World, run: RunId) -> usize {
    let paths = w.engine.paths();
    let keyring = overseer_store::Keyring::load_or_create(&paths.config_dir).expect("keys");
    let store = overseer_store::Store::open(&paths.db(), keyring).expect("store");
    store
        .audit_records(0, 100_000)
        .expect("records")
        .into_iter()
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.payload).ok())
        .filter(|p| p["type"] == "security_event" && p["event"] == "flood" && p["run_id"] == run.0)
        .count()
}

/// Paused once: one flood gate pending, one security event, one signed
/// record, one security notification.
async fn paused_once(w: &World, run: RunId, notes: &Captured) {
    until(w, "the run's flood gate", |_| {
        (!flood_gates(w, run).is_empty()).then_some(())
    })
    .await;
    let gates = flood_gates(w, run);
    assert_eq!(gates.len(), 1, "one pause, not one per refusal: {gates:?}");
    assert!(gates[0].decision.is_none(), "it waits for the user");
    assert_eq!(
        flood_events(w, run),
        1,
        "one security event on the timeline"
    );
    assert_eq!(
        audited_floods(w, run),
        1,
        "one signed security_event record"
    );
    assert_eq!(
        notes.of(NotificationKind::SecurityEvent).len(),
        1,
        "one notification for the flood: {:?}",
        notes.0.lock().expect("lock")
    );
}

fn refusals_say_paused(got: &serde_json::Value) {
    let refusals = got["refusals"].as_array().expect("refusals");
    assert!(!refusals.is_empty(), "{got}");
    for r in refusals {
        assert_eq!(r["code"], "forbidden", "{got}");
        assert!(
            r["message"].as_str().unwrap_or_default().contains("paused"),
            "the agent hears why: {got}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_pending_asks_a_run_is_paused_once_and_the_inbox_still_lists() {
    let (w, run, notes) = live_run().await;
    let cap = FloodLimits::default().pending_asks;
    // The cap counts every pending gate of the run: its plan gate too.
    let before = w
        .engine
        .gates(true)
        .expect("gates")
        .iter()
        .filter(|g| g.run_id == run)
        .count();
    // The user's `gates list` goes through the engine's own socket.
    let socket = w.engine.paths().socket();
    let listener = overseer_server::server::bind(&socket).expect("bind");
    let server = tokio::spawn(overseer_server::server::serve(w.engine.clone(), listener));
    let got = flood(&w, run, "asks", cap + 10).await;
    paused_once(&w, run, &notes).await;
    let mut user = overseer_server::client::Client::connect(&socket)
        .await
        .expect("connect")
        .expect("the engine answers");
    let listed: Vec<GateView> = user
        .perform(overseer_server::api::op::ListGates {
            pending_only: true,
            limit: None,
            after: None,
        })
        .await
        .expect("the user's gates list answers during the flood")
        .gates;
    assert!(
        listed
            .iter()
            .any(|g| g.run_id == run && g.kind() == GateKind::Deviation),
        "the pause is in the user's list: {listed:?}"
    );
    // The asks up to the cap became gates; every one after is refused.
    assert_eq!(got["refused"], 10 + before, "{got}");
    refusals_say_paused(&got);
    let questions: Vec<GateView> = w
        .engine
        .gates(false)
        .expect("the user's gates list still works")
        .into_iter()
        .filter(|g| g.run_id == run && g.kind() == GateKind::Question)
        .collect();
    assert_eq!(
        questions.len(),
        cap - before,
        "no ask past the cap became a gate"
    );
    // Withdrawn with the pause: the inbox holds the pause, not the flood.
    until(&w, "the flood's questions withdrawn", |e| {
        let pending = e.gates(true).ok()?;
        (!pending
            .iter()
            .any(|g| g.run_id == run && g.kind() == GateKind::Question))
        .then_some(())
    })
    .await;
    let blocking = notes.of(NotificationKind::AgentQuestionBlocking).len();
    assert!(
        blocking <= cap + 1,
        "at most one notification per admitted ask (and the plan): {blocking}"
    );

    // Resumed by the user: the run is heard again.
    let gate = flood_gates(&w, run)[0].id;
    w.engine
        .decide_gate(gate, "retry", None, &Actor::cli())
        .expect("resume");
    until(&w, "the pause lifted", |e| {
        e.activity(run, 0)
            .ok()?
            .iter()
            .any(
                |a| matches!(&a.entry, Activity::Security(s) if s.text.contains("resumed the run")),
            )
            .then_some(())
    })
    .await;
    let again = flood(&w, run, "connections", 1).await;
    assert_eq!(again["answered"], 1, "answered once resumed: {again}");
    // The run goes on from where it was: its one plan gate still waits
    // (the turn waiting on it was left alone), nothing failed.
    let plans: Vec<GateView> = w
        .engine
        .gates(true)
        .expect("gates")
        .into_iter()
        .filter(|g| g.run_id == run && g.kind() != GateKind::Question)
        .collect();
    assert!(
        matches!(plans.as_slice(), [p] if p.kind() == GateKind::Plan),
        "{plans:?}"
    );
    assert_eq!(
        w.engine.run(run).expect("run").state,
        overseer_core::RunState::Running
    );
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_messages_a_minute_a_run_is_paused_and_the_rest_refused() {
    let (w, run, notes) = live_run().await;
    let cap = FloodLimits::default().messages_per_minute as usize;
    let got = flood(&w, run, "messages", 200).await;
    paused_once(&w, run, &notes).await;
    assert_eq!(got["answered"], cap, "{got}");
    assert_eq!(got["refused"], 200 - cap, "{got}");
    refusals_say_paused(&got);
    let posted = w.engine.messages(Some(run), None).expect("messages").len();
    assert_eq!(posted, cap, "only the messages within the cap were posted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_connections_a_run_is_paused_and_new_ones_refused() {
    let (w, run, notes) = live_run().await;
    let cap = FloodLimits::default().connections;
    let got = flood(&w, run, "connections", cap + 20).await;
    paused_once(&w, run, &notes).await;
    let refused = got["refused"].as_u64().expect("refused") as usize;
    assert!(
        refused >= 20,
        "every connection past the cap refused: {got}"
    );
    refusals_say_paused(&got);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_mid_step_is_held_then_resumed_on_the_same_step() {
    let (w, run, notes) = live_run().await;
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let first = pending_gate(&w, run, GateKind::ToolCall).await;
    let cap = FloodLimits::default().messages_per_minute as usize;
    flood(&w, run, "messages", cap + 5).await;
    paused_once(&w, run, &notes).await;
    // The step's waiting tool call was withdrawn and its turn cancelled;
    // the cancel is the pause's, not a failure of the turn.
    until(&w, "the step's tool call withdrawn", |e| {
        e.gate(first.id).ok()?.decision.map(|_| ())
    })
    .await;
    let failures = |w: &World| {
        w.engine
            .gates(false)
            .expect("gates")
            .into_iter()
            .filter(|g| {
                g.run_id == run
                    && matches!(&g.body, GateBody::Deviation(d) if d.cause == DeviationCause::TurnFailed)
            })
            .count()
    };
    assert_eq!(failures(&w), 0, "no turn failure for the pause's cancel");
    let gate = flood_gates(&w, run)[0].id;
    w.engine
        .decide_gate(gate, "retry", None, &Actor::cli())
        .expect("resume");
    // The same step again: its tool call is asked again.
    let again = until(&w, "the step's tool call asked again", |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::ToolCall && g.id != first.id)
    })
    .await;
    assert_eq!(again.title, first.title);
    assert_eq!(failures(&w), 0);
    assert_eq!(notes.of(NotificationKind::SecurityEvent).len(), 1);
}
