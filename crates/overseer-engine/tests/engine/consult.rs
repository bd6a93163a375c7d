//! Read-only consultation (`consult`), end to end: a launched run's agent
//! asks another agent profile a question through its own run socket (where
//! the `overseer mcp` its agent starts asks), and Overseer answers it with a
//! read-only child run of the demo agent, a real child process over real
//! ACP pipes, on a snapshot of the asking run's worktree.

use crate::common;

use common::*;
use overseer_core::session::{SessionAnswer, SessionAsk, SessionRef};
use overseer_core::{
    Activity, ApiError, ErrorCode, GateBody, GateKind, GateStatus, ReleaseReason, RunCost, RunId,
    RunOrigin, RunState,
};
use overseer_engine::Engine;
use overseer_server::api::Request;
use overseer_server::client::Client;
use overseer_store::WorkspaceSettings;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the asking run's agent has in its worktree and not committed.
const UNCOMMITTED: &str = "# demo, changed by the asking agent (not committed)";

/// A world whose overseer.toml has one profile per consulted behaviour,
/// each the demo agent in its `consult*` scenario.
async fn consult_world() -> World {
    let agent = demo_agent().to_string_lossy().into_owned();
    let profile = |name: &str, scenario: &str| {
        format!(
            "[agents.{name}]\ncommand = {agent:?}\nmode = \"default\"\nenv = {{ OVERSEER_DEMO_SCENARIO = \"{scenario}\" }}\n"
        )
    };
    let extra = [
        profile("expert", "consult"),
        profile("writer", "consult_write"),
        profile("sheller", "consult_shell"),
        "[agents.missing]\ncommand = \"/nonexistent/overseer-test-agent\"\nmode = \"default\"\n"
            .into(),
    ]
    .concat();
    world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        &extra,
    )
    .await
}

/// A running run (its agent waiting on its plan gate) with uncommitted
/// work in its worktree: a changed README.md and a new file.
async fn asking_run(w: &World) -> (RunId, PathBuf) {
    let run = start(w, "happy");
    pending_gate(w, run, GateKind::Plan).await;
    let worktree = w.engine.worktree_path("demo", run);
    std::fs::write(worktree.join("README.md"), format!("{UNCOMMITTED}\n")).expect("edit");
    std::fs::write(worktree.join("NEW.md"), "new\n").expect("new file");
    (run, worktree)
}

/// Asks through `run`'s own socket, as its agent's MCP server does.
async fn ask_as(engine: &Engine, run: RunId, ask: SessionAsk) -> Result<SessionAnswer, ApiError> {
    let socket = engine
        .paths()
        .data_dir
        .join("run-sockets")
        .join(format!("run-{run}.sock"));
    let mut client = Client::connect(&socket)
        .await?
        .expect("the run's socket listens");
    let reply = client
        .call(Request::Session {
            session: SessionRef {
                origin: RunOrigin::Mcp,
                session_id: format!("run-{run}"),
                cwd: PathBuf::from("/"),
                agent: None,
            },
            ask,
        })
        .await?;
    Ok(serde_json::from_value(reply).expect("an answer"))
}

fn consult(profile: &str, question: &str, timeout_seconds: Option<u64>) -> SessionAsk {
    SessionAsk::Consult {
        profile: profile.into(),
        question: question.into(),
        timeout_seconds,
    }
}

fn status(worktree: &Path) -> String {
    git(worktree, &["status", "--porcelain"])
}

fn notices(w: &World, run: RunId) -> Vec<String> {
    w.engine
        .activity(run, 0)
        .expect("activity")
        .into_iter()
        .filter_map(|a| match a.entry {
            Activity::Notice { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

/// Waits until no process of `run`'s agent is left.
async fn agent_gone(w: &World, run: RunId) {
    let marker = w.engine.agent_marker(run);
    until(w, &format!("run {run}'s agent to stop"), |_| {
        marked_pids(&marker).is_empty().then_some(())
    })
    .await;
}

fn still_running(w: &World, run: RunId) {
    assert_eq!(w.engine.run(run).expect("run").state, RunState::Running);
}

fn answered(answer: SessionAnswer) -> (String, RunId, bool) {
    match answer {
        SessionAnswer::Consult {
            text,
            run,
            timed_out,
            ..
        } => (text, run, timed_out),
        other => panic!("a consultation's answer: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consultation_answers_from_a_snapshot_of_the_asking_worktree_as_a_child_run() {
    let w = consult_world().await;
    let (parent, worktree) = asking_run(&w).await;
    let before = status(&worktree);
    let head = git(&worktree, &["rev-parse", "HEAD"]);
    let answer = ask_as(
        &w.engine,
        parent,
        consult("expert", "What does the README say?", None),
    )
    .await
    .expect("answered");
    let SessionAnswer::Consult { cost, .. } = &answer else {
        panic!("a consultation's answer: {answer:?}")
    };
    // What it cost, as its agent reported it, with the answer and on its row.
    let reported = Some(RunCost {
        amount: 0.05,
        currency: "USD".into(),
    });
    assert_eq!(cost, &reported);
    let (text, child, timed_out) = answered(answer);
    assert!(!timed_out);
    assert_eq!(
        w.engine
            .run(child)
            .expect("child")
            .usage
            .and_then(|u| u.cost),
        reported
    );
    // The consulted agent's final message is the tool result, and it read
    // the asking run's uncommitted README (the snapshot's, not the base's).
    assert!(text.starts_with("ANSWER"), "{text}");
    assert!(text.contains("What does the README say?"), "{text}");
    assert!(text.contains(UNCOMMITTED), "{text}");
    // A child row: linked to the asking run, ended, with its own timeline.
    let view = w.engine.run(child).expect("child");
    assert_eq!(view.parent, Some(parent));
    assert_eq!(
        view.state,
        RunState::Released {
            reason: ReleaseReason::Ended
        }
    );
    assert_eq!(view.agent, "expert");
    assert!(
        view.task_title
            .starts_with(&format!("Consultation for run {parent}")),
        "{}",
        view.task_title
    );
    assert_eq!(w.engine.run(parent).expect("parent").parent, None);
    let child_log = w.engine.activity(child, 0).expect("child timeline");
    assert!(
        child_log
            .iter()
            .any(|a| matches!(&a.entry, Activity::Message { text } if text.contains("ANSWER"))),
        "{child_log:?}"
    );
    assert!(
        notices(&w, child)
            .iter()
            .any(|n| n.contains(&format!("consulted by run {parent}"))),
        "{:?}",
        notices(&w, child)
    );
    assert!(
        notices(&w, parent)
            .iter()
            .any(|n| n.contains(&format!("asked expert (run {child})"))),
        "{:?}",
        notices(&w, parent)
    );
    // The snapshot held the new file too; the asking worktree, its index
    // and its branch are as they were.
    let child_tree = w.engine.worktree_path("demo", child);
    assert_eq!(
        std::fs::read_to_string(child_tree.join("NEW.md")).expect("new file in the snapshot"),
        "new\n"
    );
    assert_eq!(status(&worktree), before);
    assert_eq!(git(&worktree, &["rev-parse", "HEAD"]), head);
    // The child's agent is gone.
    agent_gone(&w, child).await;
    // The asking run goes on, its plan gate still waiting.
    still_running(&w, parent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consulted_agent_cannot_write() {
    let w = consult_world().await;
    let (parent, worktree) = asking_run(&w).await;
    let before = status(&worktree);
    let (text, child, _) = answered(
        ask_as(&w.engine, parent, consult("writer", "Fix the README", None))
            .await
            .expect("answered"),
    );
    // Its edit was refused by the read-only session's rule without asking
    // anyone, and its write through the client was refused too.
    assert!(text.contains("the edit was refused"), "{text}");
    assert!(text.contains("the write was refused"), "{text}");
    let child_tree = w.engine.worktree_path("demo", child);
    assert_eq!(
        std::fs::read_to_string(child_tree.join("README.md")).expect("readme"),
        format!("{UNCOMMITTED}\n")
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join("README.md")).expect("readme"),
        format!("{UNCOMMITTED}\n")
    );
    assert_eq!(status(&worktree), before);
    let refused = w
        .engine
        .activity(child, 0)
        .expect("timeline")
        .into_iter()
        .any(|a| matches!(a.entry, Activity::FileRefused { .. }));
    assert!(refused, "the refused write is on the child's timeline");
    // Nothing was asked of the user.
    let asked = w
        .engine
        .gates(false)
        .expect("gates")
        .into_iter()
        .any(|g| g.run_id == child);
    assert!(!asked, "a denied write asks nobody");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consultation_asks_in_the_inbox_cannot_consult_and_is_stopped_at_its_timeout() {
    let w = consult_world().await;
    let (parent, _) = asking_run(&w).await;
    let started = std::time::Instant::now();
    let (asking, child) = consultation_waiting(&w, parent, Some(5)).await;
    // Its shell command asks the user, in the inbox, on the child's row.
    let gate = pending_gate(&w, child, GateKind::ToolCall).await;
    let GateBody::ToolCall(call) = &gate.body else {
        panic!("a tool call: {:?}", gate.body)
    };
    assert!(call.reason.contains("shell"), "{}", call.reason);
    assert!(w.engine.run(child).expect("child").needs_you);
    // One at a time: the asking run's second consultation is refused.
    let second = ask_as(&w.engine, parent, consult("expert", "Also?", None)).await;
    let err = second.expect_err("one at a time");
    assert!(err.message.contains("one at a time"), "{}", err.message);
    let children = w
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .filter(|r| r.parent == Some(parent))
        .count();
    assert_eq!(children, 1, "the refused one left no row");
    // A consultation cannot consult: its own socket refuses.
    let nested = ask_as(&w.engine, child, consult("expert", "And you?", None)).await;
    let err = nested.expect_err("refused");
    assert_eq!(err.code, ErrorCode::Forbidden);
    assert!(err.message.contains("cannot consult"), "{}", err.message);
    // Nobody answers: the asker hears that it timed out, and the child is
    // stopped, its question withdrawn.
    let (text, answered_by, timed_out) = answered(asking.await.expect("task").expect("an answer"));
    assert!(timed_out, "{text}");
    assert_eq!(answered_by, child);
    assert!(text.contains("timed out after 5 s"), "{text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let view = w.engine.run(child).expect("child");
    assert_eq!(
        view.state,
        RunState::Released {
            reason: ReleaseReason::Failed
        }
    );
    assert!(
        view.release_note
            .as_deref()
            .is_some_and(|n| n.contains("timed out")),
        "{:?}",
        view.release_note
    );
    assert_eq!(
        w.engine.gate(gate.id).expect("gate").status,
        GateStatus::Decided,
        "the child's question is closed with it"
    );
    assert!(!view.needs_you);
    agent_gone(&w, child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consult_is_refused_to_a_session_not_tied_to_a_run() {
    let w = consult_world().await;
    let err = w
        .engine
        .session_ask(
            SessionRef {
                origin: RunOrigin::Mcp,
                session_id: "outside".into(),
                cwd: w.repo.clone(),
                agent: None,
            },
            consult("expert", "Hello?", None),
            None,
        )
        .await
        .expect_err("refused");
    assert_eq!(err.code, ErrorCode::Forbidden);
    assert!(err.message.contains("not tied to a run"), "{}", err.message);
    assert!(
        w.engine.runs().expect("runs").is_empty(),
        "no row for the refused session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consultation_of_an_unknown_profile_says_which_exist() {
    let w = consult_world().await;
    let (parent, _) = asking_run(&w).await;
    let err = ask_as(&w.engine, parent, consult("nobody", "Hello?", None))
        .await
        .expect_err("unknown profile");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.contains("expert"), "{}", err.message);
    let err = ask_as(&w.engine, parent, consult("expert", "Hello?", Some(1)))
        .await
        .expect_err("too short a wait");
    assert!(err.message.contains("timeout_seconds"), "{}", err.message);
}

/// Starts `sheller`'s consultation for `parent` on a task of its own, and
/// returns it with the child run once its shell command waits in the inbox.
async fn consultation_waiting(
    w: &World,
    parent: RunId,
    timeout_seconds: Option<u64>,
) -> (
    tokio::task::JoinHandle<Result<SessionAnswer, ApiError>>,
    RunId,
) {
    let engine = w.engine.clone();
    let asking = tokio::spawn(async move {
        ask_as(
            &engine,
            parent,
            consult("sheller", "Do the tests pass?", timeout_seconds),
        )
        .await
    });
    let child = until(w, "the consultation's run", |e| {
        e.runs()
            .ok()?
            .into_iter()
            .find(|r| r.parent == Some(parent))
            .map(|r| r.id)
    })
    .await;
    pending_gate(w, child, GateKind::ToolCall).await;
    (asking, child)
}

async fn failed_with(w: &World, child: RunId, note: &str) {
    until(w, &format!("run {child} failed: {note}"), |e| {
        let v = e.run(child).ok()?;
        (v.state
            == RunState::Released {
                reason: ReleaseReason::Failed,
            }
            && v.release_note.as_deref().is_some_and(|n| n.contains(note)))
        .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consultation_whose_asker_stops_waiting_is_stopped() {
    let w = consult_world().await;
    let (parent, _) = asking_run(&w).await;
    let (asking, child) = consultation_waiting(&w, parent, None).await;
    // The asking agent's call goes away (its MCP call cancelled): the
    // connection to the run's socket closes.
    asking.abort();
    failed_with(&w, child, "stopped waiting").await;
    agent_gone(&w, child).await;
    still_running(&w, parent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consultation_is_not_carried_on_after_a_restart() {
    let mut w = consult_world().await;
    let (parent, _) = asking_run(&w).await;
    let (_asking, child) = consultation_waiting(&w, parent, None).await;
    restart(&mut w).await;
    failed_with(&w, child, "engine stopped during this consultation").await;
    // The asking run is carried on as any run is.
    until(&w, "the asking run carried on", |e| {
        (e.run(parent).ok()?.state == RunState::Running).then_some(())
    })
    .await;
    let marker = w.engine.agent_marker(child);
    assert!(marked_pids(&marker).is_empty(), "no consulted agent left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consultation_whose_agent_does_not_start_fails_with_why() {
    let w = consult_world().await;
    let (parent, _) = asking_run(&w).await;
    let err = ask_as(&w.engine, parent, consult("missing", "Hello?", None))
        .await
        .expect_err("failed");
    assert!(
        err.message.contains("the consultation (run") && err.message.contains("failed"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("/nonexistent/overseer-test-agent"),
        "{}",
        err.message
    );
    let child = w
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|r| r.parent == Some(parent))
        .expect("the child row");
    assert_eq!(
        child.state,
        RunState::Released {
            reason: ReleaseReason::Failed
        }
    );
    still_running(&w, parent);
}
