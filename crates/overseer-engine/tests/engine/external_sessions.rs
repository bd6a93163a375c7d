//! Agents outside Overseer (hooks, `overseer mcp`) asking through the real
//! socket: a fleet row per session, each ask a gate in the same inbox under
//! the same rules, the answer back on the asker's connection, a reconnect
//! that finds its gate again, a gate withdrawn when its asker leaves, and
//! no decision from a process the session's agent started.
//!
//! (The real Claude Code CLI, the Codex CLI and the MCP TypeScript SDK
//! drive the same paths in the CLI crate's `hooks` and `mcp` tests.)

use crate::common;

use overseer_core::session::{
    AskOption, AskQuestion, NoticeKind, PlanVerdict, QuestionsAction, ToolDecision, ToolStage,
};
use overseer_core::{
    Actor, ErrorCode, GateChoice, GateKind, GateView, ReleaseReason, RunOrigin, RunState,
    SessionAnswer, SessionAsk, SessionRef, ToolCallChoice,
};
use overseer_engine::{Engine, LogNotifier, Paths, Scope, SystemClock};
use overseer_server::api::Request;
use overseer_server::client::Client;
use overseer_server::server;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct World {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    paths: Paths,
    /// A git repository registered as workspace `proj`: where the sessions work.
    repo: PathBuf,
    _server: tokio::task::JoinHandle<()>,
}

async fn world() -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, paths, server) = common::served(dir.path());
    let repo = dir.path().join("proj");
    std::fs::create_dir_all(&repo).expect("repo dir");
    overseer_test_support::git(&repo, &["init", "-q"]);
    engine
        .add_workspace(&repo, Some("proj"), Default::default(), &Actor::cli())
        .expect("workspace");
    World {
        _dir: dir,
        engine,
        paths,
        repo,
        _server: server,
    }
}

fn session(id: &str, cwd: &Path) -> SessionRef {
    SessionRef {
        origin: RunOrigin::ClaudeCode,
        session_id: id.into(),
        cwd: cwd.to_owned(),
        agent: None,
    }
}

fn bash(key: &str, command: &str) -> SessionAsk {
    SessionAsk::ToolCall {
        key: Some(key.into()),
        tool: "Bash".into(),
        input: json!({ "command": command }),
        stage: ToolStage::PreToolUse,
    }
}

/// The engine goes away and a new one opens the same data dir (with its
/// orchestrator when `orchestrate`), serving the same socket.
async fn reopen(w: World, orchestrate: bool) -> World {
    w._server.abort();
    let paths = w.paths.clone();
    drop(w.engine);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier)).expect("reopen"),
    );
    if orchestrate {
        engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    }
    let listener = server::bind(&paths.socket()).expect("bind again");
    let _server = tokio::spawn(server::serve(engine.clone(), listener));
    World {
        _dir: w._dir,
        engine,
        paths,
        repo: w.repo,
        _server,
    }
}

async fn connect(w: &World) -> Client {
    Client::connect(&w.paths.socket())
        .await
        .expect("connect")
        .expect("engine running")
}

/// Asks on a connection of its own, in the background.
fn ask(
    w: &World,
    s: SessionRef,
    a: SessionAsk,
) -> tokio::task::JoinHandle<Result<SessionAnswer, overseer_core::ApiError>> {
    let socket = w.paths.socket();
    tokio::spawn(async move {
        let mut c = Client::connect(&socket).await?.expect("engine running");
        let v = c.call(Request::Session { session: s, ask: a }).await?;
        Ok(serde_json::from_value(v).expect("a session answer"))
    })
}

async fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn pending(w: &World, kind: GateKind) -> GateView {
    until(&format!("a pending {kind:?} gate"), || {
        w.engine
            .gates(true)
            .expect("gates")
            .into_iter()
            .find(|g| g.kind() == kind)
    })
    .await
}

#[tokio::test]
async fn a_terminal_sessions_tool_call_waits_in_the_inbox_and_the_agent_gets_the_users_answer() {
    let w = world().await;
    let waiting = ask(&w, session("s1", &w.repo), bash("k1", "touch made"));
    let gate = pending(&w, GateKind::ToolCall).await;
    let row = w.engine.run(gate.run_id).expect("run");
    assert_eq!(row.origin, RunOrigin::ClaudeCode);
    assert_eq!(
        row.workspace, "proj",
        "a session inside a workspace is one of its rows"
    );
    assert_eq!(
        row.session.as_ref().map(|s| s.session_id.as_str()),
        Some("s1")
    );
    assert!(row.needs_you);
    assert_eq!(gate.title, "Bash: touch made");
    w.engine
        .decide_gate(gate.id, "no", Some("not in this repo"), &Actor::cli())
        .expect("decide");
    let answer = waiting.await.expect("task").expect("answer");
    let SessionAnswer::Tool { decision, reason } = answer else {
        panic!("not a tool answer: {answer:?}")
    };
    assert_eq!(decision, ToolDecision::Deny);
    assert!(reason.unwrap_or_default().contains("not in this repo"));

    // The same session's next ask is on the same row.
    let again = ask(&w, session("s1", &w.repo), bash("k2", "ls -la"));
    let second = pending(&w, GateKind::ToolCall).await;
    assert_eq!(second.run_id, gate.run_id);
    w.engine
        .decide_gate(second.id, "yes", None, &Actor::cli())
        .expect("decide");
    assert!(matches!(
        again.await.expect("task").expect("answer"),
        SessionAnswer::Tool {
            decision: ToolDecision::Allow,
            ..
        }
    ));
}

#[tokio::test]
async fn the_workspaces_rules_decide_without_a_gate_and_always_lasts_for_the_session() {
    let w = world().await;
    let mut rules = overseer_core::rules::RuleSet::default();
    rules
        .deny
        .push(overseer_core::rules::Rule::parse("Bash(git push:*)").expect("rule"));
    let mut events = w.engine.subscribe();
    w.engine
        .set_permissions(
            &Scope {
                workspace: "proj".into(),
                task: None,
            },
            rules,
            &Actor::cli(),
        )
        .expect("rules");
    // Every surface hears of it (the window's workspace list follows the CLI).
    assert!(
        std::iter::from_fn(|| events.try_recv().ok()).any(|e| matches!(
            &e,
            overseer_core::EngineEvent::WorkspaceChanged { name } if name == "proj"
        )),
        "a workspace_changed event"
    );
    let s = session("s2", &w.repo);
    let denied = ask(&w, s.clone(), bash("p", "git push origin main"))
        .await
        .expect("task")
        .expect("answer");
    assert!(
        matches!(&denied, SessionAnswer::Tool { decision: ToolDecision::Deny, reason: Some(r) } if r.contains("git push")),
        "{denied:?}"
    );
    let read = SessionAsk::ToolCall {
        key: Some("r".into()),
        tool: "Read".into(),
        input: json!({ "file_path": w.repo.join("README.md") }),
        stage: ToolStage::PreToolUse,
    };
    let passed = ask(&w, s.clone(), read)
        .await
        .expect("task")
        .expect("answer");
    assert!(
        matches!(
            passed,
            SessionAnswer::Tool {
                decision: ToolDecision::Pass,
                ..
            }
        ),
        "a read the rules allow is left to the agent's own permissions: {passed:?}"
    );
    assert!(
        w.engine.gates(true).expect("gates").is_empty(),
        "no gate for what the rules decided"
    );
    // Each rule's decision is in the run's story, signed and verified.
    let run = w
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|r| r.session.as_ref().is_some_and(|s| s.session_id == "s2"))
        .expect("the session's row")
        .id;
    let story = w.engine.run_story(run).expect("story");
    assert!(story.verified, "{:?}", story.decision_problems);
    assert!(
        story
            .decisions
            .iter()
            .any(|d| d.rule_ref.as_deref() == Some("Bash(git push:*)")),
        "{:?}",
        story.decisions
    );

    let first = ask(&w, s.clone(), bash("t1", "cargo test"));
    let gate = pending(&w, GateKind::ToolCall).await;
    w.engine
        .decide_gate(gate.id, "always", None, &Actor::cli())
        .expect("always");
    assert!(matches!(
        first.await.expect("task").expect("answer"),
        SessionAnswer::Tool {
            decision: ToolDecision::Allow,
            ..
        }
    ));
    let later = SessionAsk::ToolCall {
        key: Some("t2".into()),
        tool: "Bash".into(),
        input: json!({ "command": "cargo test" }),
        stage: ToolStage::PermissionRequest,
    };
    let again = ask(&w, s, later).await.expect("task").expect("answer");
    assert!(
        matches!(
            again,
            SessionAnswer::Tool {
                decision: ToolDecision::Allow,
                ..
            }
        ),
        "\"always\" answered it for the rest of the session: {again:?}"
    );
}

#[tokio::test]
async fn an_asker_that_reconnects_finds_its_gate_and_one_that_leaves_has_it_withdrawn() {
    let w = world().await;
    let s = session("s3", &w.repo);
    let first = ask(&w, s.clone(), bash("same-key", "make deploy"));
    let gate = pending(&w, GateKind::ToolCall).await;
    first.abort();
    // Back within the grace: the same gate, not a second one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let back = ask(&w, s.clone(), bash("same-key", "make deploy"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let open: Vec<GateView> = w.engine.gates(true).expect("gates");
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].id, gate.id);
    w.engine
        .decide_gate(gate.id, "yes", None, &Actor::cli())
        .expect("decide");
    assert!(matches!(
        back.await.expect("task").expect("answer"),
        SessionAnswer::Tool {
            decision: ToolDecision::Allow,
            ..
        }
    ));

    // An asker that leaves for good: withdrawn (a "no" by the engine), so
    // the inbox does not keep a question nobody waits for.
    let gone = ask(&w, s, bash("other", "make clean"));
    let gate = pending(&w, GateKind::ToolCall).await;
    gone.abort();
    let decided = until("the gate withdrawn", || {
        w.engine.gate(gate.id).ok().and_then(|g| g.decision)
    })
    .await;
    assert_eq!(decided.option, "no");
    assert_eq!(decided.actor.to_string(), "engine");
}

#[tokio::test]
async fn a_process_the_sessions_agent_started_cannot_decide() {
    let w = world().await;
    // This test process asks like a hook does, so its parent (the test
    // runner) counts as the session's agent; this process is its child.
    let waiting = ask(&w, session("s4", &w.repo), bash("k", "rm -rf build"));
    let gate = pending(&w, GateKind::ToolCall).await;
    let mut c = connect(&w).await;
    let err = c
        .call(Request::DecideGate {
            gate: gate.id,
            option: GateChoice::ToolCall(ToolCallChoice::Yes).into(),
            context: None,
        })
        .await
        .expect_err("refused");
    assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
    assert!(err.message.contains("never decide"), "{}", err.message);
    assert!(w.engine.gate(gate.id).expect("gate").decision.is_none());
    // Nor send what the user is told elsewhere: adding a webhook is a write.
    let err = c
        .call(Request::AddWebhook {
            url: "https://example.com/hook".into(),
            events: vec![],
        })
        .await
        .expect_err("refused");
    assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
    assert!(w.engine.webhooks().expect("list").is_empty());
    // Reading is still allowed.
    c.call(Request::ListGates {
        pending_only: true,
        limit: None,
        after: None,
    })
    .await
    .expect("read");
    w.engine
        .decide_gate(gate.id, "no", None, &Actor::cli())
        .expect("the user decides");
    assert!(matches!(
        waiting.await.expect("task").expect("answer"),
        SessionAnswer::Tool {
            decision: ToolDecision::Deny,
            ..
        }
    ));
}

#[tokio::test]
async fn questions_plans_notices_and_steering_reach_the_agent() {
    let w = world().await;
    let outside = w._dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).expect("dir");
    let s = SessionRef {
        origin: RunOrigin::Mcp,
        session_id: "m1".into(),
        cwd: outside.clone(),
        agent: Some("cursor".into()),
    };
    let questions = vec![AskQuestion {
        header: "Tone".into(),
        question: "Which tone?".into(),
        options: vec![
            AskOption {
                label: "Formal".into(),
                description: None,
            },
            AskOption {
                label: "Friendly".into(),
                description: Some("warm".into()),
            },
        ],
        multiple: false,
        custom: true,
        default: None,
    }];
    let asked = ask(
        &w,
        s.clone(),
        SessionAsk::Questions {
            key: Some("q".into()),
            questions,
            expires_in_seconds: None,
        },
    );
    let gate = pending(&w, GateKind::Question).await;
    let row = w.engine.run(gate.run_id).expect("run");
    assert_eq!(
        row.workspace, "external",
        "outside every workspace: the external one"
    );
    assert_eq!(row.agent, "cursor");
    assert_eq!(
        gate.body.payload_json()["schema"]["properties"]["question_0"]["oneOf"][1]["const"],
        "Friendly"
    );
    w.engine
        .decide_gate(
            gate.id,
            "answer",
            Some(r#"{"question_0":"Friendly","question_0_custom":"and short"}"#),
            &Actor::cli(),
        )
        .expect("answer");
    let SessionAnswer::Questions { action, answers } = asked.await.expect("task").expect("answer")
    else {
        panic!("not questions")
    };
    assert_eq!(action, QuestionsAction::Answered);
    assert_eq!(answers[0].selected, vec!["Friendly"]);
    assert_eq!(answers[0].custom.as_deref(), Some("and short"));

    let plan = ask(
        &w,
        s.clone(),
        SessionAsk::Plan {
            key: Some("p".into()),
            goal: "Rename the module".into(),
            steps: vec![],
            files: vec!["src/lib.rs".into()],
            risks: vec![],
        },
    );
    let gate = pending(&w, GateKind::Plan).await;
    w.engine
        .decide_gate(
            gate.id,
            "request_changes",
            Some("keep the old name as an alias"),
            &Actor::cli(),
        )
        .expect("decide");
    assert_eq!(
        plan.await.expect("task").expect("answer"),
        SessionAnswer::Plan {
            verdict: PlanVerdict::ChangesRequested {
                feedback: "keep the old name as an alias".into()
            }
        }
    );

    // Steering left for the session comes back at its next stop, once.
    w.engine
        .steer_run(row.id, "use tabs", &Actor::cli())
        .expect("steer");
    let stop = || SessionAsk::Notice {
        kind: NoticeKind::Stop,
        title: None,
        message: "Done.".into(),
    };
    let first = ask(&w, s.clone(), stop())
        .await
        .expect("task")
        .expect("answer");
    assert_eq!(
        first,
        SessionAnswer::Noted {
            run: row.id,
            steering: Some("use tabs".into())
        }
    );
    let second = ask(&w, s.clone(), stop())
        .await
        .expect("task")
        .expect("answer");
    assert_eq!(
        second,
        SessionAnswer::Noted {
            run: row.id,
            steering: None
        }
    );
    // Without steering, the stop is an info item in the inbox.
    let info = pending(&w, GateKind::Question).await;
    assert_eq!(info.body.payload_json()["ask_kind"], "info");
    assert_eq!(info.ask_kind, overseer_core::AskKind::Info);
    let row = w.engine.run(row.id).expect("run");
    assert!(
        !row.needs_you,
        "an info item tells; it does not make the run need you"
    );
    assert_eq!(w.engine.needs_you_count().expect("count"), 0);

    let ended = ask(&w, s, SessionAsk::End)
        .await
        .expect("task")
        .expect("answer");
    assert!(matches!(ended, SessionAnswer::Noted { .. }));
    let row = w.engine.run(row.id).expect("run");
    assert_eq!(
        row.state,
        RunState::Released {
            reason: ReleaseReason::Ended
        }
    );
    assert!(
        w.engine.gates(true).expect("gates").is_empty(),
        "an ended session leaves nothing pending"
    );
}

#[tokio::test]
async fn a_session_the_user_stopped_has_its_tool_calls_refused() {
    let w = world().await;
    let s = session("s5", &w.repo);
    let waiting = ask(&w, s.clone(), bash("k", "npm publish"));
    let gate = pending(&w, GateKind::ToolCall).await;
    w.engine
        .abort_run(gate.run_id, &Actor::cli())
        .expect("abort");
    let answer = waiting.await.expect("task").expect("answer");
    assert!(
        matches!(
            answer,
            SessionAnswer::Tool {
                decision: ToolDecision::Deny,
                ..
            }
        ),
        "{answer:?}"
    );
    let next = ask(&w, s, bash("k2", "ls"))
        .await
        .expect("task")
        .expect("answer");
    let SessionAnswer::Tool { decision, reason } = next else {
        panic!("tool answer")
    };
    assert_eq!(decision, ToolDecision::Deny);
    assert!(reason.unwrap_or_default().contains("stopped this session"));
}

#[tokio::test]
async fn messages_go_through_the_hub_and_a_message_to_a_peer_is_held_back() {
    use overseer_core::message::{MessageStatus, MessageTo};
    let w = world().await;
    let mut events = w.engine.subscribe();
    let a = session("agent-a", &w.repo);
    let b = session("agent-b", &w.repo);
    let send = |to: MessageTo, body: &str| SessionAsk::SendMessage {
        to,
        body: body.into(),
        correlation_id: Some("c-1".into()),
    };
    let SessionAnswer::Message { message: to_user } = ask(
        &w,
        a.clone(),
        send(MessageTo::User, "tests pass on my side"),
    )
    .await
    .expect("task")
    .expect("answer") else {
        panic!("a message answer")
    };
    assert_eq!(to_user.status, MessageStatus::Delivered);
    let run_a = to_user.from_run.expect("from a run");
    // B's first ask opens its row; then A tries to talk to B directly.
    let SessionAnswer::Messages { messages } =
        ask(&w, b.clone(), SessionAsk::ReadMessages { after: None })
            .await
            .expect("task")
            .expect("answer")
    else {
        panic!("messages")
    };
    assert!(
        messages.is_empty(),
        "a message to the user is not B's: {messages:?}"
    );
    let run_b = w
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|r| {
            r.session
                .as_ref()
                .is_some_and(|s| s.session_id == "agent-b")
        })
        .expect("B's row")
        .id;
    let SessionAnswer::Message { message: direct } =
        ask(&w, a.clone(), send(MessageTo::Run { run: run_b }, "psst"))
            .await
            .expect("task")
            .expect("answer")
    else {
        panic!("a message answer")
    };
    assert_eq!(direct.status, MessageStatus::Blocked);
    assert!(direct
        .blocked_reason
        .unwrap_or_default()
        .contains("never to a peer"));
    ask(&w, a.clone(), send(MessageTo::Broadcast, "I own src/api"))
        .await
        .expect("task")
        .expect("answer");
    // The user replies to A with the correlation id.
    let reply = w
        .engine
        .send_message(
            MessageTo::Run { run: run_a },
            "fine, go on",
            Some("c-1".into()),
            &Actor::cli(),
        )
        .expect("reply");
    assert_eq!(reply.correlation_id.as_deref(), Some("c-1"));

    let read = || SessionAsk::ReadMessages { after: None };
    let SessionAnswer::Messages { messages } = ask(&w, b.clone(), read())
        .await
        .expect("task")
        .expect("answer")
    else {
        panic!("messages")
    };
    let bodies: Vec<&str> = messages.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(
        bodies,
        vec!["I own src/api"],
        "B reads the broadcast, never the held-back message"
    );
    let SessionAnswer::Messages { messages } = ask(&w, a.clone(), read())
        .await
        .expect("task")
        .expect("answer")
    else {
        panic!("messages")
    };
    let bodies: Vec<&str> = messages.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(
        bodies,
        vec!["fine, go on"],
        "A reads the reply, not its own messages"
    );

    // Stored, in both timelines, and pushed.
    assert_eq!(w.engine.messages(None, None).expect("all").len(), 4);
    assert!(w
        .engine
        .activity(run_a, 0)
        .expect("timeline")
        .iter()
        .any(|e| e.kind() == "message_sent"));
    assert!(w
        .engine
        .activity(run_a, 0)
        .expect("timeline")
        .iter()
        .any(|e| e.kind() == "message_received"));
    let mut posted = 0;
    while let Ok(e) = events.try_recv() {
        if matches!(e, overseer_core::EngineEvent::MessagePosted { .. }) {
            posted += 1;
        }
    }
    assert_eq!(posted, 4);
}

#[tokio::test]
async fn steering_waits_in_the_database_and_survives_a_restart() {
    let w = world().await;
    let s = session("s-restart", &w.repo);
    let stop = || SessionAsk::Notice {
        kind: NoticeKind::Stop,
        title: None,
        message: "Done.".into(),
    };
    let first = ask(&w, s.clone(), stop())
        .await
        .expect("task")
        .expect("answer");
    let SessionAnswer::Noted { run, .. } = first else {
        panic!("noted")
    };
    w.engine
        .steer_run(run, "now write the changelog", &Actor::cli())
        .expect("steer");
    // The engine goes away and a new one opens the same data dir.
    let again = reopen(w, false).await;
    let answer = ask(&again, s.clone(), stop())
        .await
        .expect("task")
        .expect("answer");
    assert_eq!(
        answer,
        SessionAnswer::Noted {
            run,
            steering: Some("now write the changelog".into())
        }
    );
    let next = ask(&again, s, stop()).await.expect("task").expect("answer");
    assert_eq!(
        next,
        SessionAnswer::Noted {
            run,
            steering: None
        },
        "given once"
    );
}

#[tokio::test]
async fn a_reply_to_a_notice_left_pending_across_a_restart_still_steers_the_session() {
    let w = world().await;
    let s = session("s-notice", &w.repo);
    let stop = || SessionAsk::Notice {
        kind: NoticeKind::Stop,
        title: None,
        message: "Done: tell me what next.".into(),
    };
    let first = ask(&w, s.clone(), stop())
        .await
        .expect("task")
        .expect("answer");
    let SessionAnswer::Noted { run, .. } = first else {
        panic!("noted")
    };
    let info = pending(&w, GateKind::Question).await;
    assert_eq!(info.ask_kind, overseer_core::AskKind::Info);
    // The engine goes away with the notice pending; a new one starts (its
    // orchestrator too, which looks at what external sessions left).
    let again = reopen(w, true).await;
    // Still there after the grace an asker gets to come back: a notice has
    // no asker to wait for.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let still = again.engine.gate(info.id).expect("gate");
    assert!(still.decision.is_none(), "{still:?}");
    again
        .engine
        .decide_gate(
            info.id,
            "answer",
            Some("write the changelog"),
            &Actor::cli(),
        )
        .expect("reply");
    let answer = until("the reply kept as steering", || {
        again.engine.run(run).ok().filter(|_| {
            // The reply is queued once the watcher saw the decision.
            again
                .engine
                .activity(run, 0)
                .is_ok_and(|a| a.iter().any(|e| e.kind() == "user_instruction"))
        })
    })
    .await;
    assert_eq!(answer.id, run);
    let next = ask(&again, s, stop()).await.expect("task").expect("answer");
    assert_eq!(
        next,
        SessionAnswer::Noted {
            run,
            steering: Some("write the changelog".into())
        }
    );
}

#[tokio::test]
async fn a_notice_that_reaches_the_engine_while_it_starts_steers_the_session_once() {
    // The socket answers before the orchestrator's start looks at what
    // external sessions left: a notice can reach the engine in between.
    let w = world().await;
    let s = session("s-starting", &w.repo);
    let stop = || SessionAsk::Notice {
        kind: NoticeKind::Stop,
        title: None,
        message: "Done: what next?".into(),
    };
    let SessionAnswer::Noted { run, .. } = ask(&w, s.clone(), stop())
        .await
        .expect("task")
        .expect("answer")
    else {
        panic!("noted")
    };
    let info = pending(&w, GateKind::Question).await;
    w.engine
        .start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    w.engine
        .decide_gate(info.id, "answer", Some("bump the version"), &Actor::cli())
        .expect("reply");
    until("the reply kept as steering", || {
        w.engine
            .activity(run, 0)
            .is_ok_and(|a| a.iter().any(|e| e.kind() == "user_instruction"))
            .then_some(())
    })
    .await;
    // A second watcher of the notice would queue the reply again about now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let next = ask(&w, s, stop()).await.expect("task").expect("answer");
    assert_eq!(
        next,
        SessionAnswer::Noted {
            run,
            steering: Some("bump the version".into())
        },
        "the reply, once"
    );
}
