//! Session modes with the demo agent over real pipes: a run is never
//! prompted before its agent confirmed the supervised mode, and a switch
//! nobody chose stops the turn, is audited and is put to the user.

use crate::common;

use common::*;
use overseer_core::{Actor, DeviationCause, DeviationGate, GateBody, GateKind, GateView, RunState};
use overseer_store::{TaskSettings, WorkspaceSettings};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_will_not_enter_its_supervised_mode_is_never_prompted() {
    let extra = format!(
        "[agents.strict]\ncommand = {:?}\nmode = \"read-only\"\n",
        demo_agent().to_string_lossy()
    );
    let w = world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        &extra,
    )
    .await;
    let run = start_as(&w, "strict", "happy", TaskSettings::default());
    let note = until(&w, "the run to fail", |e| {
        let r = e.run(run).ok()?;
        matches!(r.state, RunState::Released { .. }).then_some(r.release_note)
    })
    .await
    .unwrap_or_default();
    assert!(note.contains("`strict`"), "names the agent: {note}");
    assert!(note.contains("`read-only`"), "names the mode: {note}");
    assert!(
        note.contains("`default`, `plan`, `auto`"),
        "names its modes: {note}"
    );
    assert!(
        note.contains("[agents.strict]"),
        "says where to fix it: {note}"
    );
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        !activity
            .iter()
            .any(|a| a.kind() == "message" || a.kind() == "plan"),
        "the agent was never prompted: {activity:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_switches_itself_to_auto_is_stopped_and_the_gate_says_why() {
    // It switches, then still asks: a breach, and nothing done unasked.
    let w = world(Vec::new()).await;
    let run = start(&w, "switch");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let gate = pending_gate(&w, run, GateKind::Deviation).await;
    let dev = mode_breach(&gate);
    assert!(gate.title.contains("`auto`"), "{}", gate.title);
    assert!(
        dev.error.contains("without asking") && dev.error.contains("nobody chose"),
        "{dev:?}"
    );
    let ids: Vec<&str> = gate.options.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["retry", "stop"]);
    // Nothing the agent wrote unasked landed.
    let greeting = w.engine.worktree_path("demo", run).join("src/greeting.txt");
    assert_eq!(
        std::fs::read_to_string(&greeting).expect("greeting"),
        "hello\n"
    );
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity.iter().any(|a| a.kind() == "security"),
        "{activity:?}"
    );
    // Its ask after the switch was cancelled: no tool call gate.
    assert!(
        !w.engine
            .gates(true)
            .expect("gates")
            .iter()
            .any(|g| g.run_id == run && g.kind() == GateKind::ToolCall),
        "no ask reached the user"
    );
    assert!(w.engine.verify_audit().expect("audit").is_ok());
    let paths = w.engine.paths();
    let keyring = overseer_store::Keyring::load_or_create(&paths.config_dir).expect("keys");
    let store = overseer_store::Store::open(&paths.db(), keyring).expect("store");
    let security = store
        .audit_records(0, 100_000)
        .expect("records")
        .into_iter()
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.payload).ok())
        .any(|p| p["type"] == "security_event" && p["mode"] == "auto" && p["run_id"] == run);
    assert!(security, "the breach is in the signed audit log");
    w.engine
        .decide_gate(gate.id, "stop", None, &Actor::cli())
        .expect("stop");
    state(
        &w,
        run,
        RunState::Released {
            reason: overseer_core::ReleaseReason::Failed,
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_without_a_mode_keeps_the_agent_in_the_asking_mode_it_starts_in() {
    // A profile written before modes mattered: no `mode`. The agent starts
    // in `default` (as older adapters do), so that is the run's mode, and a
    // later switch to `auto` is still caught.
    let extra = format!(
        "[agents.legacy]\ncommand = {:?}\nenv = {{ OVERSEER_DEMO_START_MODE = \"default\" }}\n",
        demo_agent().to_string_lossy()
    );
    let w = world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        &extra,
    )
    .await;
    let run = start_as(&w, "legacy", "switch", TaskSettings::default());
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let gate = pending_gate(&w, run, GateKind::Deviation).await;
    mode_breach(&gate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_switches_itself_to_auto_and_then_edits_unasked_is_stopped_at_once() {
    // The switch is a breach; the edit it then carries out without asking is
    // a security event of its own: no gate to carry on, the run is stopped.
    let w = world(Vec::new()).await;
    let run = start(&w, "hijack");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    state(
        &w,
        run,
        RunState::Released {
            reason: overseer_core::ReleaseReason::Failed,
        },
    )
    .await;
    let note = w
        .engine
        .run(run)
        .expect("run")
        .release_note
        .unwrap_or_default();
    assert!(note.contains("security event"), "{note}");
    assert!(
        !w.engine
            .gates(true)
            .expect("gates")
            .iter()
            .any(|g| g.run_id == run),
        "nothing left to decide"
    );
    let greeting = w.engine.worktree_path("demo", run).join("src/greeting.txt");
    assert_eq!(
        std::fs::read_to_string(&greeting).expect("greeting"),
        "hello\n"
    );
    let events: Vec<String> = w
        .engine
        .activity(run, 0)
        .expect("activity")
        .iter()
        .filter(|a| a.kind() == "security")
        .map(|a| a.payload()["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(events.iter().any(|t| t.contains("`auto`")), "{events:?}");
    assert!(
        events.iter().any(|t| t.contains("edited src/greeting.txt")),
        "{events:?}"
    );
}

/// The deviation of a breach into mode `auto`, read from its typed payload.
fn mode_breach(gate: &GateView) -> &DeviationGate {
    let GateBody::Deviation(dev) = &gate.body else {
        panic!("a deviation's payload: {:?}", gate.body);
    };
    assert_eq!(dev.cause, DeviationCause::ModeBreach, "{dev:?}");
    assert_eq!(dev.mode.as_deref(), Some("auto"));
    dev
}
