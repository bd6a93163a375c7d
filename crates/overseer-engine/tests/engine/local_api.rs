//! The engine behind its real Unix socket: events after commit, the actor
//! taken from the connection, malformed input answered without harm.

use overseer_core::{
    Actor, EngineEvent, ErrorCode, GateKind, ReleaseReason, RunEvent, RunState, RunView,
};
use overseer_engine::{Engine, EngineError, Notification, Notifier, Paths, SystemClock};
use overseer_server::api::Request;
use overseer_server::client::Client;
use overseer_server::server;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Default)]
struct Recorder(Mutex<Vec<Notification>>);

impl Notifier for Recorder {
    fn notify(&self, n: &Notification) {
        self.0.lock().expect("lock").push(n.clone());
    }
}

struct Running {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    notes: Arc<Recorder>,
    paths: Paths,
    server: tokio::task::JoinHandle<()>,
}

async fn start() -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    let notes = Arc::new(Recorder::default());
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), notes.clone()).expect("engine"),
    );
    engine.seed_demo(&Actor::cli(), false).expect("seed");
    let listener = server::bind(&paths.socket()).expect("bind");
    let server = tokio::spawn(server::serve(engine.clone(), listener));
    Running {
        _dir: dir,
        engine,
        notes,
        paths,
        server,
    }
}

async fn client(r: &Running) -> Client {
    Client::connect(&r.paths.socket())
        .await
        .expect("connect")
        .expect("engine is running")
}

fn first_pending_review(engine: &Engine) -> RunView {
    engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|r| r.state == RunState::PendingReview)
        .expect("a pending review")
}

#[tokio::test]
async fn an_approval_over_the_socket_is_pushed_to_subscribers_and_recorded_as_the_cli() {
    let r = start().await;
    let run = first_pending_review(&r.engine);
    let mut watcher = client(&r).await;
    watcher.subscribe().await.expect("subscribe");
    let mut actor = client(&r).await;
    let v: RunView = serde_json::from_value(
        actor
            .call(Request::ApproveRun { run: run.id })
            .await
            .expect("approve"),
    )
    .expect("run view");
    assert_eq!(
        v.state,
        RunState::Released {
            reason: ReleaseReason::Merged
        }
    );

    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = tokio::time::timeout(Duration::from_secs(5), watcher.next_event())
            .await
            .expect("event in time")
            .expect("event");
        seen.push(e);
    }
    assert!(
        matches!(seen[0], EngineEvent::GateDecided { run_id, kind: GateKind::MergeReview, .. } if run_id == run.id)
    );
    assert!(
        matches!(&seen[1], EngineEvent::RunChanged { run: changed } if changed.id == run.id && !changed.needs_you)
    );

    let gate = r
        .engine
        .gate(run.pending_gate.expect("gate").id)
        .expect("gate");
    assert_eq!(gate.decision.expect("decided").actor, Actor::cli());
    assert!(r.engine.verify_audit().expect("read").is_ok());
    r.server.abort();
}

#[tokio::test]
async fn an_actor_field_smuggled_into_a_request_is_ignored() {
    let r = start().await;
    let run = first_pending_review(&r.engine);
    let stream = tokio::net::UnixStream::connect(r.paths.socket())
        .await
        .expect("connect");
    let (read, mut write) = stream.into_split();
    let line = format!(
        "{{\"id\":1,\"method\":\"reject_run\",\"params\":{{\"run\":{},\"reason\":\"nope\",\"actor\":{{\"kind\":\"supervisor\",\"name\":\"x\"}}}},\"actor\":\"user:app\"}}\n",
        run.id
    );
    write.write_all(line.as_bytes()).await.expect("write");
    let mut reply = String::new();
    BufReader::new(read)
        .read_line(&mut reply)
        .await
        .expect("read");
    assert!(reply.contains("\"result\""), "{reply}");
    let gate = r
        .engine
        .gate(run.pending_gate.expect("gate").id)
        .expect("gate");
    assert_eq!(gate.decision.expect("decided").actor, Actor::cli());
    r.server.abort();
}

#[tokio::test]
async fn malformed_lines_get_a_typed_error_and_the_connection_stays_usable() {
    let r = start().await;
    let (mut lines, mut write) = connect_lines(&r).await;
    write
        .write_all(b"{not json\n\xff\xfe\n{\"id\":2,\"method\":\"explode\"}\n{\"id\":3,\"method\":\"ping\"}\n")
        .await
        .expect("write");
    let mut ids = Vec::new();
    for _ in 0..3 {
        let l = lines.next_line().await.expect("read").expect("line");
        let v: serde_json::Value = serde_json::from_str(&l).expect("json");
        assert_eq!(v["error"]["code"], "invalid_input", "{l}");
        ids.push(v["id"].clone());
    }
    // An unknown method names its id: the client waiting on call 2 hears
    // why; only lines with no readable id are answered without one.
    assert_eq!(
        ids,
        [serde_json::Value::Null, serde_json::Value::Null, 2.into()]
    );
    let l = lines.next_line().await.expect("read").expect("line");
    assert_eq!(l, r#"{"id":3,"result":"pong"}"#);
    r.server.abort();
}

#[tokio::test]
async fn typed_errors_cross_the_socket_with_their_code() {
    let r = start().await;
    let mut c = client(&r).await;
    let err = c
        .call(Request::ApproveRun {
            run: overseer_core::RunId(999),
        })
        .await
        .expect_err("missing");
    assert_eq!(err.code, ErrorCode::NotFound);
    let run = first_pending_review(&r.engine);
    let err = c
        .call(Request::RejectRun {
            run: run.id,
            reason: " ".into(),
        })
        .await
        .expect_err("no reason");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    c.call(Request::ApproveRun { run: run.id })
        .await
        .expect("approve");
    let err = c
        .call(Request::ApproveRun { run: run.id })
        .await
        .expect_err("twice");
    assert_eq!(err.code, ErrorCode::InvalidTransition);
    assert!(err.message.contains("released:merged"), "{}", err.message);
    r.server.abort();
}

#[tokio::test]
async fn the_socket_is_owner_only_and_a_second_engine_is_refused() {
    let r = start().await;
    let mode = std::fs::metadata(r.paths.socket())
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let err = server::bind(&r.paths.socket())
        .err()
        .expect("second engine refused");
    assert!(matches!(err, EngineError::AlreadyRunning(_)), "{err}");
    r.server.abort();
    let _ = r.server.await;
    // The listener was dropped with the task: the socket file is gone.
    assert!(!r.paths.socket().exists());
}

#[tokio::test]
async fn a_stale_socket_from_a_crashed_engine_is_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("overseer.sock");
    {
        // Bind with std and leak the file, as a killed process would.
        let l = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        drop(l);
    }
    assert!(path.exists());
    let listener = server::bind(&path).expect("stale socket replaced");
    assert!(path.exists());
    drop(listener);
}

#[tokio::test]
async fn entering_pending_review_notifies_once_and_other_changes_do_not() {
    let r = start().await;
    let seeded: Vec<_> = r.notes.0.lock().expect("lock").drain(..).collect();
    // The demo fleet passes through review (runs left waiting, merged,
    // rejected), has one run waiting on a tool call and one failed run: the
    // runs still waiting and the failure notify, each once.
    let kinds: std::collections::BTreeSet<&str> = seeded.iter().map(|n| n.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "agent_question_blocking",
            "run_failed",
            "run_pending_review"
        ]
        .into(),
        "{seeded:?}"
    );
    assert_eq!(
        seeded
            .iter()
            .filter(|n| n.kind.as_str() == "agent_question_blocking")
            .count(),
        1,
        "one run waits on a tool call: {seeded:?}"
    );
    let mut runs: Vec<_> = seeded.iter().map(|n| n.run_id).collect();
    runs.dedup();
    assert_eq!(
        runs.len(),
        seeded.len(),
        "one notification per run: {seeded:?}"
    );
    let running = r
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|v| v.state == RunState::Running && v.pending_gate.is_none())
        .expect("a running run");
    r.engine
        .advance_run(
            running.id,
            RunEvent::Finish {
                auto_advance: false,
            },
        )
        .expect("finish");
    let run = first_pending_review(&r.engine);
    r.engine
        .approve_run(run.id, &Actor::app())
        .expect("approve");
    let notes = r.notes.0.lock().expect("lock").clone();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].run_id, running.id);
    assert_eq!(notes[0].body, running.task_title);
    r.server.abort();
}

#[tokio::test]
async fn a_refused_action_publishes_nothing() {
    let r = start().await;
    let mut rx = r.engine.subscribe();
    let queued = r
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|v| v.state == RunState::Queued)
        .expect("queued");
    let err = r
        .engine
        .approve_run(queued.id, &Actor::app())
        .expect_err("refused");
    assert_eq!(err.code, ErrorCode::InvalidTransition);
    assert!(
        rx.try_recv().is_err(),
        "nothing may be published for a refused action"
    );
    r.server.abort();
}

#[tokio::test]
async fn a_settled_demo_seed_has_no_active_runs_for_an_orchestrator_to_find() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    let engine =
        Engine::open(paths, Arc::new(SystemClock), Arc::new(Recorder::default())).expect("engine");
    let ids = engine.seed_demo(&Actor::cli(), true).expect("seed");
    let runs = engine.runs().expect("runs");
    assert_eq!(ids.len(), runs.len());
    assert!(runs
        .iter()
        .all(|r| r.state == RunState::PendingReview || r.state.is_released()));
    assert_eq!(
        runs.iter()
            .filter(|r| r.state == RunState::PendingReview)
            .count(),
        3
    );
}

/// Once the engine is closing (its agents stopped, its final checkpoint
/// next), a decision that arrives on its socket is refused with a typed
/// error that says what to do, and nothing of it is carried out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_sent_while_the_engine_closes_is_refused_and_not_carried_out() {
    let r = start().await;
    let run = first_pending_review(&r.engine);
    let mut c = client(&r).await;
    r.engine.stop_agents().await;
    let err = c
        .call(Request::ApproveRun { run: run.id })
        .await
        .expect_err("refused while closing");
    assert_eq!(err.code, ErrorCode::EngineUnavailable, "{}", err.message);
    assert!(err.message.contains("run it again"), "{}", err.message);
    assert_eq!(
        r.engine.run(run.id).expect("run").state,
        RunState::PendingReview
    );
}

/// Over the socket a gate's decision is a typed choice, `{"kind", "choice"}`:
/// one that does not exist is refused when the request is read, with a typed
/// error that says the choices; one of another kind than the gate's is
/// refused naming the gate's (the gate is not the one the client meant); an
/// older client's bare option id still decides, as it always did.
#[tokio::test]
async fn a_decision_is_a_typed_choice_and_an_unknown_one_is_refused_saying_the_choices() {
    let r = start().await;
    let gate = r
        .engine
        .gates(true)
        .expect("gates")
        .into_iter()
        .find(|g| g.kind() == GateKind::ToolCall)
        .expect("the demo's tool call gate");
    let (mut lines, mut write) = connect_lines(&r).await;
    let mut call = async |id: u32, option: serde_json::Value| -> serde_json::Value {
        let line = serde_json::json!({
            "id": id,
            "method": "decide_gate",
            "params": {"gate": gate.id, "option": option, "context": null},
        });
        write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
        let reply = lines.next_line().await.expect("read").expect("line");
        serde_json::from_str(&reply).expect("json")
    };
    let unknown = call(
        1,
        serde_json::json!({"kind": "tool_call", "choice": "maybe"}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], "invalid_input", "{unknown}");
    let message = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`maybe`"), "{message}");
    assert!(message.contains("tool_call: yes, always, no"), "{message}");
    let other = call(2, serde_json::json!({"kind": "plan", "choice": "approve"})).await;
    assert_eq!(other["id"], 2, "{other}");
    assert_eq!(other["error"]["code"], "invalid_input", "{other}");
    assert_eq!(
        other["error"]["message"],
        format!(
            "gate {}: 'approve' is a choice of plan gates; this is a tool_call gate: choose one of yes, always, no",
            gate.id
        )
    );
    assert_eq!(
        r.engine.gate(gate.id).expect("gate").status,
        overseer_core::GateStatus::Pending,
        "nothing refused was decided"
    );
    // An older client's bare id: read as the gate's kind's choice.
    let old = call(3, serde_json::json!("yes")).await;
    assert_eq!(old["result"]["decision"]["option"], "yes", "{old}");
    r.server.abort();
}

/// A raw connection to the engine's socket: its lines, and its writer.
async fn connect_lines(
    r: &Running,
) -> (
    tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    tokio::net::unix::OwnedWriteHalf,
) {
    let stream = tokio::net::UnixStream::connect(r.paths.socket())
        .await
        .expect("connect");
    let (read, write) = stream.into_split();
    (BufReader::new(read).lines(), write)
}

/// The next line a connection is sent, as JSON.
async fn next(
    lines: &mut tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
) -> serde_json::Value {
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("a line in time")
        .expect("read")
        .expect("not closed");
    serde_json::from_str(&line).expect("JSON")
}

/// A connection that subscribed still calls (what a host's one link
/// needs): its calls are answered on their ids, several at once, with the
/// events they cause on the same connection.
#[tokio::test]
async fn a_subscribed_connection_still_calls_and_gets_the_events_they_cause() {
    let r = start().await;
    let run = first_pending_review(&r.engine);
    let (mut lines, mut write) = connect_lines(&r).await;
    write
        .write_all(b"{\"id\":1,\"method\":\"subscribe\"}\n")
        .await
        .expect("write");
    assert_eq!(next(&mut lines).await["id"], 1);
    // Three calls written at once, before any answer is read.
    let calls = format!(
        "{{\"id\":7,\"method\":\"approve_run\",\"params\":{{\"run\":{}}}}}\n\
         {{\"id\":8,\"method\":\"ping\"}}\n",
        run.id
    );
    write.write_all(calls.as_bytes()).await.expect("write");
    let mut answers = std::collections::HashMap::new();
    let mut changed = false;
    while answers.len() < 2 || !changed {
        let line = next(&mut lines).await;
        if let Some(id) = line["id"].as_u64() {
            answers.insert(id, line);
        } else if line["event"]["type"] == "run_changed"
            && line["event"]["run"]["id"] == serde_json::json!(run.id)
        {
            changed = true;
        }
    }
    assert_eq!(
        answers[&7]["result"]["id"],
        serde_json::json!(run.id),
        "{:?}",
        answers[&7]
    );
    assert_eq!(answers[&8]["result"], "pong");
    assert_ne!(
        r.engine.run(run.id).expect("run").state,
        RunState::PendingReview
    );
    // A subscription that names no surface is a terminal's.
    let gate = r
        .engine
        .gate(run.pending_gate.expect("gate").id)
        .expect("gate");
    assert_eq!(gate.decision.expect("decided").actor, Actor::cli());
}

/// A window's link to this host subscribes as the app: its decisions are
/// the owner's window's (`user:app`), as the host's "Why?" and audit log
/// say. A surface that is not the owner's is refused, and nothing changes.
#[tokio::test]
async fn a_subscription_as_the_window_decides_as_the_app_and_no_other_surface_is_taken() {
    let r = start().await;
    let run = first_pending_review(&r.engine);
    let gate = run.pending_gate.expect("gate").id;
    let (mut lines, mut write) = connect_lines(&r).await;
    write
        .write_all(
            b"{\"id\":1,\"method\":\"subscribe_as\",\"params\":{\"surface\":\"supervisor\"}}\n",
        )
        .await
        .expect("write");
    let refused = next(&mut lines).await;
    assert_eq!(refused["error"]["code"], "invalid_input", "{refused}");
    assert!(r.engine.gate(gate).expect("gate").decision.is_none());

    let (mut lines, mut write) = connect_lines(&r).await;
    let subscribe = format!(
        "{{\"id\":1,\"method\":\"subscribe_as\",\"params\":{{\"surface\":\"app\"}}}}\n\
         {{\"id\":2,\"method\":\"reject_run\",\"params\":{{\"run\":{},\"reason\":\"not this\"}}}}\n",
        run.id
    );
    write.write_all(subscribe.as_bytes()).await.expect("write");
    loop {
        let line = next(&mut lines).await;
        if line["id"] == 2 {
            assert!(line.get("result").is_some(), "{line}");
            break;
        }
    }
    let gate = r.engine.gate(gate).expect("gate");
    assert_eq!(gate.decision.expect("decided").actor, Actor::app());
    r.server.abort();
}

/// A link's connections are fenced by their number: once a newer one of
/// the link subscribed, a call that arrives on an earlier one (what a cut
/// connection left unread in the engine's socket) is refused and not
/// carried out, so the link, reading the gate on its new connection, tells
/// the user the truth. An earlier connection cannot subscribe after a newer
/// one; other links are not touched.
#[tokio::test]
async fn a_call_left_on_a_links_replaced_connection_is_refused_and_not_carried_out() {
    let r = start().await;
    let run = first_pending_review(&r.engine);
    let gate = run.pending_gate.expect("gate").id;
    let subscribe = |link: &str, number: u64| {
        format!(
            "{{\"id\":1,\"method\":\"subscribe_as\",\"params\":{{\"surface\":\"app\",\
             \"link\":{{\"link\":\"{link}\",\"number\":{number}}}}}}}\n"
        )
    };
    async fn answer(
        lines: &mut tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
        id: u64,
    ) -> serde_json::Value {
        loop {
            let line = next(lines).await;
            if line["id"] == id {
                return line;
            }
        }
    }
    let (mut old, mut old_write) = connect_lines(&r).await;
    old_write
        .write_all(subscribe("lk-a", 0).as_bytes())
        .await
        .expect("write");
    assert!(answer(&mut old, 1).await.get("result").is_some());
    old_write
        .write_all(b"{\"id\":2,\"method\":\"ping\"}\n")
        .await
        .expect("write");
    assert_eq!(
        answer(&mut old, 2).await["result"],
        "pong",
        "the link's only connection calls"
    );

    let (mut new, mut new_write) = connect_lines(&r).await;
    new_write
        .write_all(subscribe("lk-a", 1).as_bytes())
        .await
        .expect("write");
    assert!(answer(&mut new, 1).await.get("result").is_some());
    let left = format!(
        "{{\"id\":3,\"method\":\"reject_run\",\"params\":{{\"run\":{},\"reason\":\"left over\"}}}}\n",
        run.id
    );
    old_write.write_all(left.as_bytes()).await.expect("write");
    let refused = answer(&mut old, 3).await;
    assert_eq!(refused["error"]["code"], "engine_unavailable", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("replaced by a newer one") && m.contains("not carried out")),
        "{refused}"
    );
    assert!(
        r.engine.gate(gate).expect("gate").decision.is_none(),
        "the replaced connection's call changed nothing"
    );

    // The earlier connection cannot come back as the newest.
    let (mut late, mut late_write) = connect_lines(&r).await;
    late_write
        .write_all(subscribe("lk-a", 0).as_bytes())
        .await
        .expect("write");
    let late = answer(&mut late, 1).await;
    assert_eq!(late["error"]["code"], "conflict", "{late}");

    // Another link, and the newest connection, decide as the window.
    let (mut other, mut other_write) = connect_lines(&r).await;
    other_write
        .write_all(subscribe("lk-b", 0).as_bytes())
        .await
        .expect("write");
    assert!(answer(&mut other, 1).await.get("result").is_some());
    let approve = format!(
        "{{\"id\":4,\"method\":\"approve_run\",\"params\":{{\"run\":{}}}}}\n",
        run.id
    );
    new_write
        .write_all(approve.as_bytes())
        .await
        .expect("write");
    let approved = answer(&mut new, 4).await;
    assert!(approved.get("result").is_some(), "{approved}");
    let decided = r
        .engine
        .gate(gate)
        .expect("gate")
        .decision
        .expect("decided");
    assert_eq!(decided.actor, Actor::app());
    assert_eq!(decided.option, "approve");
    r.server.abort();
}

/// A subscribed connection that falls too far behind is told so (a line
/// without id): a client keeping a view (a host's link) reads it again
/// instead of showing what missed events left stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_falls_behind_is_told_it_missed_events() {
    let r = start().await;
    let stream = tokio::net::UnixStream::connect(r.paths.socket())
        .await
        .expect("connect");
    let (read, mut write) = stream.into_split();
    write
        .write_all(b"{\"id\":1,\"method\":\"subscribe\"}\n")
        .await
        .expect("write");
    // Nothing is read while far more events than the bus keeps are made.
    let engine = r.engine.clone();
    tokio::task::spawn_blocking(move || {
        for i in 0..9000 {
            engine
                .send_message(
                    overseer_core::message::MessageTo::Broadcast,
                    &format!("note {i}"),
                    None,
                    &Actor::cli(),
                )
                .expect("send");
        }
    })
    .await
    .expect("messages");
    let mut lines = BufReader::new(read).lines();
    let told = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read") {
            let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
            if v.get("id").is_some_and(|id| id.is_null()) && v.get("error").is_some() {
                return v["error"].clone();
            }
        }
        panic!("the connection closed without saying it fell behind");
    })
    .await
    .expect("told in time");
    assert_eq!(told["code"], "engine_unavailable", "{told}");
    assert!(
        told["message"]
            .as_str()
            .is_some_and(|m| m.contains("events behind")),
        "{told}"
    );
}
