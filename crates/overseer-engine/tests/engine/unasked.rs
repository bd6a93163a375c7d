//! Fail closed on modes, and watch what agents do (issue 25, item 1), with
//! the demo agent as a real child process over real ACP pipes, a real git
//! repository and the engine's real database:
//!
//! - an agent that starts in a mode Overseer does not know (OpenCode's
//!   `build`) and offers no asking mode to work in is never run; one that
//!   starts in Qwen Code's `auto-edit` is put in its `default`, and asks;
//! - an agent that edits or runs a command without asking, whatever mode it
//!   reports, gets its run stopped at once with a signed security event, a
//!   timeline entry and a notification, and nothing merges, even with
//!   auto-advance on; what the rules allow is not an event;
//! - agent configuration in the repository that grants permissions is shown
//!   at the run's setup.

use crate::common;

use common::*;
use overseer_core::activity::{Activity, SecurityEvent};
use overseer_core::rules::RuleSet;
use overseer_core::{Actor, GateKind, ReleaseReason, RunId, RunState};
use overseer_engine::NotificationKind;
use overseer_store::{TaskSettings, WorkspaceSettings};
use std::sync::Arc;

/// A profile running the demo agent with no `mode`, offering `modes` and
/// starting in `start`.
fn profile(name: &str, modes: &str, start: &str) -> String {
    format!(
        "[agents.{name}]\ncommand = {:?}\nenv = {{ OVERSEER_DEMO_MODES = {modes:?}, OVERSEER_DEMO_START_MODE = {start:?} }}\n",
        demo_agent().to_string_lossy()
    )
}

fn failed() -> RunState {
    RunState::Released {
        reason: ReleaseReason::Failed,
    }
}

async fn release_note(w: &World, run: RunId) -> String {
    until(w, "the run to be released", |e| {
        let r = e.run(run).ok()?;
        matches!(r.state, RunState::Released { .. }).then_some(r.release_note)
    })
    .await
    .unwrap_or_default()
}

/// The signed audit records of type `security_event` about `run`.
fn security_records(w: &World, run: RunId) -> Vec<serde_json::Value> {
    let paths = w.engine.paths();
    let keyring = overseer_store::Keyring::load_or_create(&paths.config_dir).expect("keys");
    let store = overseer_store::Store::open(&paths.db(), keyring).expect("store");
    store
        .audit_records(0, 100_000)
        .expect("records")
        .into_iter()
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.payload).ok())
        .filter(|p| p["type"] == "security_event" && p["run_id"] == run.0)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_starting_in_a_mode_overseer_does_not_know_is_not_run_in_it() {
    // Like OpenCode: `build` (its own permissions, by default allow all) and
    // `plan`; no mode in the profile.
    let w = world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        &profile("opencodeish", "build,plan", "build"),
    )
    .await;
    let run = start_as(&w, "opencodeish", "happy", TaskSettings::default());
    let note = release_note(&w, run).await;
    assert!(note.contains("not started"), "{note}");
    assert!(note.contains("starts in mode `build`"), "{note}");
    assert!(
        note.contains("`build` (") && note.contains("`plan` (plans only"),
        "names every mode it offers, with what it does: {note}"
    );
    assert!(note.contains("allow_unsupervised"), "{note}");
    assert!(note.contains("[agents.opencodeish]"), "{note}");
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        !activity
            .iter()
            .any(|a| matches!(a.kind().as_str(), "message" | "plan" | "tool_call")),
        "the agent was never prompted: {activity:?}"
    );
    assert_eq!(
        git(&w.repo, &["show", "main:README.md"]),
        "# demo",
        "nothing changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_unsupervised_the_user_may_run_it_in_that_mode_knowingly() {
    let extra = format!(
        "{}allow_unsupervised = true\n",
        profile("knowing", "build,plan", "build")
    );
    let w = world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        &extra,
    )
    .await;
    let run = start_as(&w, "knowing", "happy", TaskSettings::default());
    pending_gate(&w, run, GateKind::Plan).await;
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity.iter().any(|a| a.kind() == "security"
            && a.payload()["text"]
                .as_str()
                .is_some_and(|t| t.contains("allow_unsupervised"))),
        "the timeline says it runs unsupervised by choice: {activity:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_starting_in_qwens_auto_edit_is_put_in_its_asking_mode() {
    let w = world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        &profile("qwenish", "plan,default,auto-edit,yolo", "auto-edit"),
    )
    .await;
    let run = start_as(&w, "qwenish", "happy", TaskSettings::default());
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity.iter().any(|a| a.kind() == "mode"
            && a.payload()["mode"] == "default"
            && a.payload()["text"]
                .as_str()
                .is_some_and(|t| t.contains("started in mode `auto-edit`"))),
        "{activity:?}"
    );
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // In `default` the agent asks before its edit: supervised.
    let ask = pending_gate(&w, run, GateKind::ToolCall).await;
    assert!(ask.title.contains("greeting"), "{}", ask.title);
    w.engine.abort_run(run, &Actor::cli()).expect("abort");
}

/// Starts an `unasked` run (the agent asks nothing, reporting `default`)
/// with auto-advance on, approves its plan, and waits for it to end.
async fn unasked_run(permissions: RuleSet) -> (World, Arc<Captured>, RunId, String) {
    let captured = Arc::new(Captured::default());
    let w = world_with(
        WorkspaceSettings {
            auto_advance: Some(true),
            permissions,
            ..Default::default()
        },
        captured.clone(),
        "",
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w, "unasked");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    state(&w, run, failed()).await;
    (w, captured, run, base)
}

fn security_event_text(w: &World, run: RunId) -> String {
    w.engine
        .activity(run, 0)
        .expect("activity")
        .into_iter()
        .find_map(|a| match a.entry {
            Activity::Security(s) if s.event == Some(SecurityEvent::UnaskedAction) => Some(s.text),
            _ => None,
        })
        .expect("a security event on the timeline")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_without_asking_stops_the_run_and_nothing_merges() {
    let (w, captured, run, base) = unasked_run(RuleSet::default()).await;
    let note = w
        .engine
        .run(run)
        .expect("run")
        .release_note
        .unwrap_or_default();
    assert!(note.contains("security event"), "{note}");
    assert!(note.contains("edited README.md"), "{note}");
    let text = security_event_text(&w, run);
    assert!(
        text.contains("without asking") && text.contains("would have asked"),
        "{text}"
    );
    // Signed, and the user was told (a notification that cannot be muted).
    let records = security_records(&w, run);
    assert!(
        records.iter().any(|r| r["event"] == "unasked_action"),
        "{records:?}"
    );
    assert!(w.engine.verify_audit().expect("audit").is_ok());
    // The notification follows the run's end on the driver's thread: wait
    // for it (a few seconds at most).
    let told_of = |captured: &common::Captured| {
        captured
            .0
            .lock()
            .expect("lock")
            .iter()
            .any(|n| n.kind == NotificationKind::SecurityEvent && n.run_id == run)
    };
    for _ in 0..250 {
        if told_of(&captured) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let told = captured.0.lock().expect("lock").clone();
    assert!(
        told.iter()
            .any(|n| n.kind == NotificationKind::SecurityEvent && n.run_id == run),
        "{told:?}"
    );
    // Auto-advance was on: nothing merged, no review opened by itself.
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base, "main untouched");
    assert_eq!(git(&w.repo, &["show", "main:README.md"]), "# demo");
    assert!(
        !w.engine
            .gates(true)
            .expect("gates")
            .iter()
            .any(|g| g.run_id == run && g.kind() == GateKind::MergeReview),
        "no merge review"
    );
    // The driver refused the edit the agent then sent through it: the
    // run's copy of README.md is as it was.
    let copy = w.engine.worktree_path("demo", run).join("README.md");
    assert_eq!(std::fs::read_to_string(&copy).expect("README"), "# demo\n");
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity.iter().any(|a| a.kind() == "file_refused"
            && a.payload()["text"]
                .as_str()
                .is_some_and(|t| t.contains("without asking"))),
        "{activity:?}"
    );
    assert!(
        !activity.iter().any(|a| a.kind() == "file_written"),
        "{activity:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_rules_allow_is_no_event_but_the_unasked_rm_rf_is() {
    // The user's rule allows the README edit; `rm -rf build/` is always
    // gated: the agent ran it without asking.
    let rules = RuleSet::parse(&["Edit(README.md)".to_owned()], &[], &[]).expect("rules");
    let (w, _captured, run, base) = unasked_run(rules).await;
    let text = security_event_text(&w, run);
    assert!(text.contains("ran `rm -rf build/`"), "{text}");
    assert!(!text.contains("README"), "{text}");
    let records = security_records(&w, run);
    assert_eq!(
        records
            .iter()
            .filter(|r| r["event"] == "unasked_action")
            .count(),
        1,
        "one event, for the rm: {records:?}"
    );
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base, "main untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_configuration_that_grants_permissions_is_shown_at_setup() {
    let w = world(Vec::new()).await;
    std::fs::write(
        w.repo.join("opencode.json"),
        r#"{"permission": {"*": "allow", "bash": {"rm *": "allow"}}}"#,
    )
    .expect("opencode.json");
    std::fs::create_dir_all(w.repo.join(".claude")).expect(".claude");
    std::fs::write(
        w.repo.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(curl:*)"], "defaultMode": "acceptEdits"}}"#,
    )
    .expect("settings");
    git(&w.repo, &["add", "-A"]);
    git(&w.repo, &["commit", "-qm", "agent configs"]);
    let run = start(&w, "happy");
    pending_gate(&w, run, GateKind::Plan).await;
    let entry = w
        .engine
        .activity(run, 0)
        .expect("activity")
        .into_iter()
        .find_map(|a| match a.entry {
            Activity::Security(s) if s.event == Some(SecurityEvent::AgentConfigGrants) => Some(s),
            _ => None,
        })
        .expect("the setup shows them");
    assert_eq!(
        entry.files.as_deref(),
        Some(
            &[
                "opencode.json".to_owned(),
                ".claude/settings.json".to_owned()
            ][..]
        )
    );
    assert!(
        entry.text.contains("allows without asking: *, bash: rm *"),
        "{}",
        entry.text
    );
    assert!(entry.text.contains("Bash(curl:*)"), "{}", entry.text);
    assert!(entry.text.contains("`acceptEdits`"), "{}", entry.text);
    w.engine.abort_run(run, &Actor::cli()).expect("abort");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_after_an_unasked_action_is_never_merged_by_auto_advance() {
    let (w, _captured, run, base) = unasked_run(RuleSet::default()).await;
    // The user resumes it, and this time the agent asks (as if its own
    // settings were fixed): the run's options keep the mark.
    {
        let paths = w.engine.paths();
        let keyring = overseer_store::Keyring::load_or_create(&paths.config_dir).expect("keys");
        let mut store = overseer_store::Store::open(&paths.db(), keyring).expect("store");
        let work = store.run_work(run).expect("work");
        let mut options = work.options.clone();
        assert!(options.get("unasked_action").is_some(), "{options}");
        options["scenario"] = serde_json::json!("happy");
        store
            .write(|tx| tx.set_run_options(run, &options, work.resumed_from))
            .expect("options");
    }
    let again = w
        .engine
        .resume_run(run, &Actor::cli())
        .expect("resume")
        .run_id;
    until(&w, "the resumed run in review", |e| {
        for g in e.gates(true).ok()? {
            if g.run_id == again && matches!(g.kind(), GateKind::ToolCall | GateKind::Plan) {
                let _ = e.decide_gate(
                    g.id,
                    if g.kind() == GateKind::Plan {
                        "approve"
                    } else {
                        "yes"
                    },
                    None,
                    &Actor::cli(),
                );
            }
        }
        (e.run(again).ok()?.state == RunState::PendingReview).then_some(())
    })
    .await;
    // Auto-advance is on, every step passed: still a review, and it says why.
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base, "main untouched");
    pending_gate(&w, again, GateKind::MergeReview).await;
    let text = security_event_text(&w, again);
    assert!(
        text.contains("without asking") && text.contains(&format!("run {run}")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_announced_running_unasked_as_the_turn_ends_stops_the_run_before_any_merge() {
    // `fleeting`: `rm -rf build/` announced in progress, never asked for,
    // then reported failed (as Qwen Code reports a command its shell killed
    // after it ran), and the turn ends at once. It started unasked: the run
    // stops, the step is not weighed and auto-advance never gets to merge.
    let captured = Arc::new(Captured::default());
    let w = world_with(
        WorkspaceSettings {
            auto_advance: Some(true),
            ..Default::default()
        },
        captured.clone(),
        "",
    )
    .await;
    let base = git(&w.repo, &["rev-parse", "main"]);
    let run = start(&w, "fleeting");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    state(&w, run, failed()).await;
    let text = security_event_text(&w, run);
    assert!(text.contains("ran `rm -rf build/`"), "{text}");
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        !activity
            .iter()
            .any(|a| matches!(a.kind().as_str(), "merge" | "step_finished" | "sensor")),
        "the step was never weighed nor merged: {activity:?}"
    );
    assert_eq!(git(&w.repo, &["rev-parse", "main"]), base, "main untouched");
    assert!(
        captured
            .0
            .lock()
            .expect("lock")
            .iter()
            .any(|n| n.kind == NotificationKind::SecurityEvent && n.run_id == run),
        "the user is told"
    );
}
