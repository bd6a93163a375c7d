//! The contract's operation table (crates/overseer-api) is the one list
//! both surfaces derive from: every entry the socket carries is a method a
//! real served engine knows, the window-only ones are not, and an operation
//! on one surface only is one of the reviewed few, each with its reason.
//! (The window's commands, build manifest and capability are generated
//! from the same table; `crates/overseer-server/tests/contract.rs` checks the checked-in files.)

use crate::common;

use overseer_core::{Actor, RunState};
use overseer_engine::{Engine, Paths, TaskStart};
use overseer_server::api::{op, Request, Surfaces, OPERATIONS};
use overseer_server::client::Client;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

struct Running {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    paths: Paths,
}

fn start() -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, paths, _server) = common::served(dir.path());
    engine.seed_demo(&Actor::cli(), true).expect("seed");
    Running {
        _dir: dir,
        engine,
        paths,
    }
}

/// Sends one raw line on a fresh connection and returns the answer line.
async fn raw(r: &Running, line: &str) -> serde_json::Value {
    let stream = UnixStream::connect(r.paths.socket())
        .await
        .expect("connect");
    let (read, mut write) = stream.into_split();
    write
        .write_all(format!("{line}\n").as_bytes())
        .await
        .expect("write");
    let mut answer = String::new();
    BufReader::new(read)
        .read_line(&mut answer)
        .await
        .expect("read");
    serde_json::from_str(&answer).expect("a JSON line")
}

fn unknown_method(answer: &serde_json::Value) -> bool {
    answer["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("unknown variant"))
}

#[tokio::test]
async fn every_socket_entry_of_the_table_is_a_method_the_served_engine_knows() {
    let r = start();
    // The check can fail: a method outside the table is unknown.
    assert!(unknown_method(
        &raw(&r, r#"{"id": 1, "method": "no_such_operation"}"#).await
    ));
    let mut socket = 0;
    for info in OPERATIONS {
        match info.socket_method() {
            Some(method) => {
                socket += 1;
                // No params: an operation without any is answered (the
                // wire of old clients), one with some is refused for its
                // missing params, never as an unknown method.
                let answer = raw(&r, &format!(r#"{{"id": 1, "method": "{method}"}}"#)).await;
                assert!(
                    !unknown_method(&answer),
                    "{} is in the table but the socket does not know {method}: {answer}",
                    info.name
                );
            }
            None => {
                let window = info.window.expect("a window-only entry has a command");
                let answer = raw(&r, &format!(r#"{{"id": 1, "method": "{window}"}}"#)).await;
                assert!(
                    unknown_method(&answer),
                    "{window} is the window's only: {answer}"
                );
            }
        }
    }
    assert!(socket > 20, "the table has the socket's operations");
    let pong = raw(&r, r#"{"id": 5, "method": "ping"}"#).await;
    assert_eq!(pong["result"], "pong", "{pong}");
    assert_eq!(pong["id"], 5);
}

#[test]
fn an_operation_on_one_surface_only_is_a_reviewed_one_and_says_why() {
    let one_sided = |window: bool| -> Vec<&str> {
        OPERATIONS
            .iter()
            .filter_map(|o| match o.surfaces {
                Surfaces::SocketOnly(why) if !window => Some((o.name, why)),
                Surfaces::WindowOnly(why) if window => Some((o.name, why)),
                _ => None,
            })
            .map(|(name, why)| {
                assert!(why.len() > 20, "{name} must say why it is one-sided");
                name
            })
            .collect()
    };
    // Adding an operation to one surface only means adding it here too,
    // after deciding the other surface really does without it.
    let mut socket_only = one_sided(false);
    socket_only.sort_unstable();
    let mut reviewed = [
        "Ping",
        "ShowRun",
        "Subscribe",
        "SubscribeAs",
        "SeedDemo",
        "StartTask",
        "CleanRun",
        "ResumeRun",
        "SupervisorVote",
        "Session",
    ];
    reviewed.sort_unstable();
    assert_eq!(socket_only, reviewed);
    // The streams are the transport's, declared as such: the two that hold
    // their connection.
    let streams: Vec<&str> = OPERATIONS
        .iter()
        .filter(|o| o.streams)
        .map(|o| o.name)
        .collect();
    assert_eq!(streams, ["Subscribe", "SubscribeAs", "Session"]);
    // The head of the fleet is the socket's too: a host's fleet paints it
    // through the host's link.
    assert!(one_sided(true).is_empty());
    for o in OPERATIONS {
        assert_eq!(
            o.window.is_some(),
            !matches!(o.surfaces, Surfaces::SocketOnly(_)),
            "{} has a window command exactly when the window carries it",
            o.name
        );
    }
    let mut names: Vec<String> = OPERATIONS
        .iter()
        .flat_map(|o| [o.socket_method(), o.window.map(str::to_owned)])
        .flatten()
        .collect();
    names.sort();
    let before = names.len();
    names.dedup();
    // A method and a command of the same name are one operation.
    let shared = OPERATIONS
        .iter()
        .filter(|o| o.window.is_some() && o.window.map(str::to_owned) == o.socket_method())
        .count();
    assert_eq!(
        before - names.len(),
        shared,
        "no two operations share a name"
    );
}

#[tokio::test]
async fn typed_answers_on_the_socket_act_as_the_cli_and_the_wire_stays_as_it_was() {
    let r = start();
    let mut c = Client::connect(&r.paths.socket())
        .await
        .expect("connect")
        .expect("running");
    let runs = c.perform(op::ListRuns {}).await.expect("list runs");
    let pending = runs
        .iter()
        .find(|v| v.state == RunState::PendingReview)
        .expect("a pending review");
    let approved = c
        .perform(op::ApproveRun { run: pending.id })
        .await
        .expect("approve");
    assert_eq!(approved.id, pending.id);
    let gates = c
        .perform(op::ListGates {
            pending_only: false,
            limit: None,
            after: None,
        })
        .await
        .expect("gates")
        .gates;
    let decided = gates
        .iter()
        .find(|g| g.run_id == pending.id && g.decision.is_some())
        .expect("the review's gate");
    assert_eq!(
        decided.decision.as_ref().expect("decided").actor,
        Actor::cli(),
        "the connection's actor, whatever the request"
    );
    assert_eq!(r.engine.run(pending.id).expect("run").id, pending.id);
    // A bad rule is a typed invalid_input, not a malformed request.
    let bad = c
        .perform(op::SetPermissions {
            scope: overseer_engine::Scope {
                workspace: "any".to_owned(),
                task: None,
            },
            rules: overseer_engine::RuleTexts {
                deny: vec!["Bash(".to_owned()],
                ..Default::default()
            },
        })
        .await
        .expect_err("not a rule");
    assert_eq!(bad.code, overseer_core::ErrorCode::InvalidInput);
    // A task start's params are the task's own fields, as before the table.
    let task = TaskStart {
        workspace: "w".to_owned(),
        agent: "demo".to_owned(),
        prompt: "p".to_owned(),
        title: None,
        scenario: None,
        settings: Default::default(),
        stage: None,
    };
    let wire = serde_json::to_value(Request::StartTask { task: task.clone() }).expect("json");
    assert_eq!(wire["method"], "start_task");
    assert_eq!(wire["params"], serde_json::to_value(&task).expect("json"));
    let back: Request = serde_json::from_value(wire).expect("parses");
    assert_eq!(back, Request::StartTask { task });
    let unit = serde_json::to_value(Request::ListRuns).expect("json");
    assert_eq!(unit, serde_json::json!({"method": "list_runs"}));
}
