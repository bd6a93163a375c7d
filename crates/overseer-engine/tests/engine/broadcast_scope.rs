//! A broadcast scoped to a workspace or a task, through the engine (real
//! SQLite, two real git repositories, the demo agent as real processes):
//! only the runs there read it, a plain broadcast still reaches every run,
//! and a scope naming nothing is refused.

use crate::common;

use common::*;
use overseer_core::message::MessageTo;
use overseer_core::{Actor, ErrorCode, RunId};
use overseer_engine::TaskStart;
use overseer_store::{TaskSettings, WorkspaceSettings};

/// The bodies `run` reads (what its agent's `read_messages` returns is
/// this list, less its own).
fn read_by(w: &World, run: RunId) -> Vec<String> {
    w.engine
        .messages(Some(run), None)
        .expect("messages")
        .into_iter()
        .map(|m| m.body)
        .collect()
}

fn send(w: &World, to: MessageTo, body: &str) -> Result<(), overseer_core::ApiError> {
    w.engine
        .send_message(to, body, None, &Actor::cli())
        .map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_scoped_to_a_workspace_or_a_task_reaches_only_the_runs_there() {
    let w = world(vec![]).await;
    let other = repo_with(
        &w._dir.path().join("other-repo"),
        &[("README.md", "# other\n")],
    );
    w.engine
        .add_workspace(
            &other,
            Some("other"),
            WorkspaceSettings::default(),
            &Actor::cli(),
        )
        .expect("second workspace");
    let first = start(&w, "happy");
    let second = start(&w, "happy");
    let elsewhere = w
        .engine
        .start_task(
            &TaskStart {
                workspace: "other".into(),
                agent: "demo".into(),
                prompt: "Update the readme".into(),
                title: None,
                scenario: Some("happy".into()),
                stage: None,
                settings: TaskSettings::default(),
            },
            &Actor::cli(),
        )
        .expect("start elsewhere")
        .run_id;
    let task_of_first = w.engine.run(first).expect("run").task_id;

    send(
        &w,
        MessageTo::Workspace {
            workspace: "demo".into(),
        },
        "to demo",
    )
    .expect("to a workspace");
    send(
        &w,
        MessageTo::Task {
            task: task_of_first,
        },
        "to the first task",
    )
    .expect("to a task");
    send(&w, MessageTo::Broadcast, "to everyone").expect("to everyone");

    assert_eq!(
        read_by(&w, first),
        ["to demo", "to the first task", "to everyone"]
    );
    assert_eq!(read_by(&w, second), ["to demo", "to everyone"]);
    assert_eq!(read_by(&w, elsewhere), ["to everyone"]);

    // The scope is kept as sent, by name.
    let all = w.engine.messages(None, None).expect("all");
    assert_eq!(
        all[0].to,
        MessageTo::Workspace {
            workspace: "demo".into()
        }
    );
    assert_eq!(
        all[1].to,
        MessageTo::Task {
            task: task_of_first
        }
    );

    // A scope that names nothing is refused, and nothing is stored.
    let err = send(
        &w,
        MessageTo::Workspace {
            workspace: "nowhere".into(),
        },
        "lost",
    )
    .expect_err("no such workspace");
    assert_eq!(err.code, ErrorCode::InvalidInput, "{}", err.message);
    assert!(err.message.contains("nowhere"), "{}", err.message);
    let err = send(
        &w,
        MessageTo::Task {
            task: overseer_core::TaskId(999),
        },
        "lost",
    )
    .expect_err("no such task");
    assert_eq!(err.code, ErrorCode::NotFound, "{}", err.message);
    assert_eq!(w.engine.messages(None, None).expect("all").len(), 3);
}
