//! What a write tells others, and when: a waiter on a gate wakes when that
//! gate changed, not when anything else did; a timeline entry that could not
//! be written is logged with what was lost, never dropped in silence.

use crate::common;

use overseer_core::message::MessageTo;
use overseer_core::session::ToolStage;
use overseer_core::{Actor, GateView, RunId, RunOrigin, SessionAnswer, SessionAsk, SessionRef};
use overseer_server::api::Request;
use overseer_server::client::Client;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Everything the engine logged while a closure ran (on this thread).
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<u8>>>);

impl Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logged {
    fn during<T>(&self, f: impl FnOnce() -> T) -> T {
        let me = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || me.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

#[tokio::test]
async fn a_timeline_entry_that_cannot_be_written_is_logged_with_what_was_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, _paths, _server) = common::served(dir.path());
    let runs = engine.seed_demo(&Actor::cli(), false).expect("seed");
    let live = runs
        .iter()
        .copied()
        .find(|r| !engine.run(*r).expect("run").state.is_released())
        .expect("the demo fleet has a live run");
    // The timeline refuses every entry from now on (a full disk, a broken
    // file would do the same); messages themselves are still stored.
    overseer_store::Store::open(
        &engine.paths().db(),
        overseer_store::Keyring::load_or_create(&engine.paths().config_dir).expect("key"),
    )
    .expect("store")
    .raw_connection()
    .execute_batch(
        "CREATE TRIGGER no_timeline BEFORE INSERT ON run_events
         BEGIN SELECT RAISE(ABORT, 'the timeline is full'); END;",
    )
    .expect("trigger");

    let logged = Logged::default();
    let sent = logged.during(|| {
        engine.send_message(
            MessageTo::Run { run: live },
            "please rebase onto main",
            None,
            &Actor::cli(),
        )
    });

    sent.expect("the message itself is stored");
    let text = logged.text();
    assert!(
        text.contains("WARN")
            && text.contains("a timeline entry was not recorded")
            && text.contains("message_received")
            && text.contains("please rebase onto main")
            && text.contains("the timeline is full"),
        "the lost entry is logged with its kind, its text and why: {text}"
    );
}

fn session(id: &str, cwd: &Path) -> SessionRef {
    SessionRef {
        origin: RunOrigin::ClaudeCode,
        session_id: id.into(),
        cwd: cwd.to_owned(),
        agent: None,
    }
}

/// A session asks to run `command`, on a connection of its own, in the
/// background; it waits on its gate for the answer.
fn ask_bash(
    socket: &Path,
    s: SessionRef,
    key: &str,
    command: &str,
) -> tokio::task::JoinHandle<Result<SessionAnswer, overseer_core::ApiError>> {
    let socket = socket.to_owned();
    let ask = SessionAsk::ToolCall {
        key: Some(key.into()),
        tool: "Bash".into(),
        input: serde_json::json!({ "command": command }),
        stage: ToolStage::PreToolUse,
    };
    tokio::spawn(async move {
        let mut c = Client::connect(&socket).await?.expect("engine running");
        let v = c.call(Request::Session { session: s, ask }).await?;
        Ok(serde_json::from_value(v).expect("a session answer"))
    })
}

async fn pending_gate_of(
    engine: &overseer_engine::Engine,
    not: &[overseer_core::GateId],
) -> GateView {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let gate = engine
            .gates(true)
            .expect("gates")
            .into_iter()
            .find(|g| !not.contains(&g.id));
        if let Some(g) = gate {
            return g;
        }
        assert!(Instant::now() < end, "no new pending gate");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How many changes of other gates, of other runs and of the waiter's own
/// run's timeline go by while one asker waits.
const CHURN: usize = 20;

#[tokio::test]
async fn a_waiter_on_a_gate_wakes_when_that_gate_changes_and_for_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, paths, _server) = common::served(dir.path());
    let repo = dir.path().join("proj");
    std::fs::create_dir_all(&repo).expect("repo dir");
    overseer_test_support::git(&repo, &["init", "-q"]);
    engine
        .add_workspace(&repo, Some("proj"), Default::default(), &Actor::cli())
        .expect("workspace");
    let socket = paths.socket();

    // A asks and waits on its gate.
    let waiting = ask_bash(&socket, session("a", &repo), "a-1", "cargo publish");
    let gate_a = pending_gate_of(&engine, &[]).await;
    let run_a: RunId = gate_a.run_id;
    let woken = || engine.gate_wakes(gate_a.id);
    let (all_before, a_before) = woken();
    assert_eq!(a_before, Some(0), "A waits, not woken yet");

    // Meanwhile: A's own timeline grows, and another session's run opens
    // and decides gates of its own, one after the other.
    let mut seen = vec![gate_a.id];
    for i in 0..CHURN {
        engine
            .send_message(
                MessageTo::Run { run: run_a },
                &format!("note {i}"),
                None,
                &Actor::cli(),
            )
            .expect("a message to A");
        let other = ask_bash(&socket, session("b", &repo), &format!("b-{i}"), "ls");
        let g = pending_gate_of(&engine, &seen).await;
        seen.push(g.id);
        engine
            .decide_gate(g.id, "yes", None, &Actor::cli())
            .expect("decide B's ask");
        other.await.expect("task").expect("B's answer");
    }
    let (all_after, a_after) = woken();
    eprintln!(
        "while {CHURN} messages to A's run and {CHURN} asks of another run were opened and \
         decided: A's waiter woke {a_after:?} times, all waiters {} times",
        all_after - all_before
    );
    assert_eq!(
        a_after,
        Some(0),
        "A's waiter slept through every change that was not its gate's"
    );
    assert!(!waiting.is_finished(), "A still waits for its answer");

    // Its own gate decided: it wakes, and answers.
    engine
        .decide_gate(gate_a.id, "no", Some("not from here"), &Actor::cli())
        .expect("decide A's ask");
    let answer = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("A is answered")
        .expect("task")
        .expect("answer");
    assert!(
        matches!(answer, SessionAnswer::Tool { .. }),
        "a tool answer: {answer:?}"
    );
    let (all_end, a_end) = engine.gate_wakes(gate_a.id);
    assert!(all_end > all_after, "woken by its own gate");
    assert_eq!(a_end, None, "a gate nobody waits on is forgotten");
}

/// Asks one session keeps waiting at once (under a run's cap of 20).
const ASKS: usize = 15;

#[tokio::test]
async fn deciding_one_of_a_runs_waiting_asks_wakes_only_its_asker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, paths, _server) = common::served(dir.path());
    let repo = dir.path().join("proj");
    std::fs::create_dir_all(&repo).expect("repo dir");
    overseer_test_support::git(&repo, &["init", "-q"]);
    engine
        .add_workspace(&repo, Some("proj"), Default::default(), &Actor::cli())
        .expect("workspace");
    let socket = paths.socket();

    // One session (one run) with many asks waiting, each on its own gate.
    let mut gates = Vec::new();
    let mut askers = Vec::new();
    for i in 0..ASKS {
        askers.push(ask_bash(
            &socket,
            session("busy", &repo),
            &format!("k-{i}"),
            &format!("make step-{i}"),
        ));
        gates.push(pending_gate_of(&engine, &gates).await.id);
    }
    let (all_before, _) = engine.gate_wakes(gates[0]);

    // Decided one by one: each wakes its own asker, and no other.
    for (i, (gate, asker)) in gates.iter().zip(askers).enumerate() {
        engine
            .decide_gate(*gate, "yes", None, &Actor::cli())
            .expect("decide");
        tokio::time::timeout(Duration::from_secs(20), asker)
            .await
            .expect("answered")
            .expect("task")
            .expect("answer");
        for later in &gates[i + 1..] {
            assert_eq!(
                engine.gate_wakes(*later).1,
                Some(0),
                "the asker on gate {later} was woken by another gate's decision"
            );
        }
    }
    let (all_after, _) = engine.gate_wakes(gates[0]);
    eprintln!(
        "{ASKS} asks of one run decided one by one: waiters woke {} times in all",
        all_after - all_before
    );
}

/// A tool call's notification shows the command and its risk, and can be
/// answered Yes or No from the notification itself only when its risk is
/// low or medium (the demo's `npm install` is high: it opens the window); a
/// review's notification can Approve; every other notification only opens
/// its run (the desktop shell makes the buttons from this).
#[test]
fn a_tool_calls_notification_shows_what_would_run_and_a_reviews_carries_its_gate() {
    use overseer_engine::{Engine, NotificationKind, Paths, QuickAnswer, SystemClock};
    let dir = tempfile::tempdir().expect("tempdir");
    let told = Arc::new(common::Captured::default());
    let engine = Engine::open(
        Paths {
            data_dir: dir.path().join("data"),
            config_dir: dir.path().join("config"),
        },
        Arc::new(SystemClock),
        told.clone(),
    )
    .expect("engine");
    engine.seed_demo(&Actor::cli(), false).expect("seed");
    let gates = engine.gates(true).expect("gates");
    let notes = told.0.lock().expect("lock").clone();
    let tool = gates
        .iter()
        .find(|g| g.kind() == overseer_core::GateKind::ToolCall)
        .expect("the demo's tool call");
    let review = gates
        .iter()
        .find(|g| g.kind() == overseer_core::GateKind::MergeReview)
        .expect("the demo's review");
    let of = |run: RunId| {
        notes
            .iter()
            .find(|n| n.run_id == run)
            .unwrap_or_else(|| panic!("run {run} was notified: {notes:?}"))
    };
    let asked = of(tool.run_id);
    assert_eq!(asked.quick, None, "a high-risk call has no one-tap answer");
    assert!(
        asked.body.contains("$ npm install pg-migrate") && asked.body.contains("Risk: high"),
        "{}",
        asked.body
    );
    assert!(
        asked.body.contains("Decide it in the window"),
        "{}",
        asked.body
    );
    assert_eq!(
        of(review.run_id).quick,
        Some(QuickAnswer::Review {
            run: review.run_id,
            gate: review.id
        })
    );
    for n in &notes {
        if n.run_id != tool.run_id && n.run_id != review.run_id {
            let answerable = n.kind == NotificationKind::RunPendingReview;
            assert_eq!(n.quick.is_some(), answerable, "{n:?}");
        }
    }
}

/// What a gate's notification offers, judged on the demo's real views with
/// the call or the diff swapped: a critical call (`rm -rf build/`) and a
/// high one have no Yes, and say the command and its risk; a low-risk call
/// (`ls`) and a medium one (an edit) keep Yes and No; a review whose diff
/// adds `.envrc` has no Approve and names the file; a gate already decided
/// offers nothing.
#[test]
fn notifications_answer_from_the_desktop_only_low_and_medium_calls_and_unflagged_merges() {
    use overseer_core::autorun::{AutoRunFile, PathChange};
    use overseer_core::rules::{risk_of_call, RiskLevel, ToolRequest};
    use overseer_core::{EngineEvent, GateBody, GateKind, MergeReviewGate, ToolCallGate, ToolKind};
    use overseer_engine::{
        notification_for, quick_answer, Engine, Paths, QuickAnswer, SystemClock,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(
        Paths {
            data_dir: dir.path().join("data"),
            config_dir: dir.path().join("config"),
        },
        Arc::new(SystemClock),
        Arc::new(overseer_engine::LogNotifier),
    )
    .expect("engine");
    engine.seed_demo(&Actor::cli(), false).expect("seed");
    let gates = engine.gates(true).expect("gates");
    let tool = gates
        .iter()
        .find(|g| g.kind() == GateKind::ToolCall)
        .expect("the demo's tool call")
        .clone();
    let review = gates
        .iter()
        .find(|g| g.kind() == GateKind::MergeReview)
        .expect("the demo's review")
        .clone();
    let told = |gate: &GateView| {
        let run = engine.run(gate.run_id).expect("run");
        let opened = EngineEvent::GateOpened {
            gate_id: gate.id,
            run_id: gate.run_id,
            kind: gate.kind(),
        };
        notification_for(&opened, &run, Some(gate)).expect("a gate that asks is told")
    };
    let asking = |command: Option<&str>, kind: ToolKind, tool_name: &str, paths: &[&str]| {
        let request = ToolRequest {
            tool: tool_name.to_owned(),
            kind,
            command: command.map(str::to_owned),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            resolved: Vec::new(),
        };
        let risk = risk_of_call(&request, "/work");
        let mut gate = tool.clone();
        gate.body = GateBody::ToolCall(ToolCallGate {
            tool_call: Default::default(),
            request,
            reason: "no rule decided it".into(),
            rule: None,
            always_gated: None,
            always_gated_why: None,
            agent_options: Vec::new(),
            ask_kind: None,
            risk: Some(risk),
        });
        gate
    };

    // Critical: the command and its risk are shown; no Yes, no No.
    let rm = asking(Some("rm -rf build/"), ToolKind::Execute, "Bash", &[]);
    let GateBody::ToolCall(call) = &rm.body else {
        unreachable!()
    };
    assert_eq!(
        call.risk.as_ref().map(|r| r.level),
        Some(RiskLevel::Critical)
    );
    let n = told(&rm);
    assert_eq!(n.quick, None, "{n:?}");
    assert!(n.body.contains("$ rm -rf build/"), "{}", n.body);
    assert!(n.body.contains("Risk: critical"), "{}", n.body);
    assert!(n.body.contains("Decide it in the window"), "{}", n.body);
    // A gate opened before risk was assessed is judged from its request.
    let mut unassessed = rm.clone();
    if let GateBody::ToolCall(call) = &mut unassessed.body {
        call.risk = None;
    }
    assert_eq!(quick_answer(&unassessed), None);
    assert!(
        told(&unassessed).body.contains("Risk: critical"),
        "{}",
        told(&unassessed).body
    );

    // Low and medium: Yes and No, with what would run.
    let ls = asking(Some("ls -la"), ToolKind::Execute, "Bash", &[]);
    let n = told(&ls);
    assert_eq!(n.quick, Some(QuickAnswer::ToolCall { gate: ls.id }));
    // Unassessed, even a low one is decided in the window (fail closed).
    let mut ls_unassessed = ls.clone();
    if let GateBody::ToolCall(call) = &mut ls_unassessed.body {
        call.risk = None;
    }
    assert_eq!(quick_answer(&ls_unassessed), None);
    assert!(
        n.body.contains("$ ls -la") && n.body.contains("Risk: low"),
        "{}",
        n.body
    );
    let edit = asking(None, ToolKind::Edit, "Edit", &["src/main.rs"]);
    let n = told(&edit);
    assert_eq!(n.quick, Some(QuickAnswer::ToolCall { gate: edit.id }));
    assert!(
        n.body.contains("Edit src/main.rs") && n.body.contains("Risk: medium"),
        "{}",
        n.body
    );

    // Agent text stays one line, its bidi controls spelled out.
    let sly = asking(
        Some("echo hi\nrm -rf ~ \u{202E}txt.exe"),
        ToolKind::Execute,
        "Bash",
        &[],
    );
    let n = told(&sly);
    assert!(
        n.body.contains("$ echo hi rm -rf ~ \\u{202e}txt.exe"),
        "{}",
        n.body
    );
    assert_eq!(n.quick, None, "rm -rf is critical");

    // A review whose diff adds `.envrc`: no Approve, the file named.
    let mut flagged = review.clone();
    flagged.body = GateBody::MergeReview(MergeReviewGate {
        auto_run: vec![AutoRunFile {
            path: ".envrc".into(),
            change: PathChange::Added,
            runs: "direnv runs it as shell code on entering the directory".into(),
        }],
    });
    let n = told(&flagged);
    assert_eq!(n.quick, None, "{n:?}");
    assert!(n.body.contains("AUTO-RUN .envrc (added)"), "{}", n.body);
    assert!(n.body.contains("review it in the window"), "{}", n.body);
    // Unflagged, the same review keeps its Approve.
    assert_eq!(
        told(&review).quick,
        Some(QuickAnswer::Review {
            run: review.run_id,
            gate: review.id
        })
    );

    // Decided already: nothing to answer from a notification.
    let mut decided = ls.clone();
    decided.status = overseer_core::GateStatus::Decided;
    assert_eq!(quick_answer(&decided), None);
}
