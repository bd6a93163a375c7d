//! The user's gates list is a page (issue 25, item 7): a run that floods the
//! engine with asks cannot make `gates list` or the inbox's load cost more.
//! The asks are real (external sessions asking as `overseer mcp` does, 20
//! pending each: a run's cap), read through the engine's socket as the CLI
//! reads them. (`make bench`, `pending`, prints what listing costs with 10
//! and 2,000 pending.)

use crate::common;

use overseer_core::session::{AskQuestion, SessionAsk};
use overseer_core::{Actor, EngineEvent, GateId, RunOrigin, SessionRef};
use overseer_engine::{Engine, GatePage, GATE_PAGE, GATE_PAGE_MAX};
use overseer_server::api::op::ListGates;
use overseer_server::client::Client;
use std::path::Path;
use std::sync::Arc;

/// Leaves `n` questions pending, 20 per external session, each asker a task
/// waiting for its answer.
async fn asks_pending(engine: &Arc<Engine>, cwd: &Path, n: usize) {
    let mut rx = engine.subscribe();
    for i in 0..n {
        let session = SessionRef {
            origin: RunOrigin::Mcp,
            session_id: format!("flood-{}", i / 20),
            cwd: cwd.to_owned(),
            agent: Some("flood".to_owned()),
        };
        let ask = SessionAsk::Questions {
            key: Some(format!("q{i}")),
            expires_in_seconds: None,
            questions: vec![AskQuestion {
                header: "flood".to_owned(),
                question: format!("Question {i}?"),
                options: Vec::new(),
                multiple: false,
                custom: true,
                default: None,
            }],
        };
        let engine = engine.clone();
        tokio::spawn(async move {
            let _ = engine.session_ask(session, ask, None).await;
        });
        loop {
            match rx.recv().await {
                Ok(EngineEvent::GateOpened { .. }) => break,
                Ok(_) => {}
                Err(e) => panic!("events: {e}"),
            }
        }
    }
}

async fn page(c: &mut Client, limit: Option<u32>, after: Option<GateId>) -> GatePage {
    c.perform(ListGates {
        pending_only: true,
        limit,
        after,
    })
    .await
    .expect("gates list")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_gates_list_is_a_page_that_says_how_many_more_are_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, paths, server) = common::served(dir.path());
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let n = GATE_PAGE as usize + 50;
    asks_pending(&engine, &cwd, n).await;
    let mut c = Client::connect(&paths.socket())
        .await
        .expect("connect")
        .expect("the engine answers");

    // The first page: the oldest 200, with the count of the rest.
    let first = page(&mut c, None, None).await;
    assert_eq!(first.gates.len(), GATE_PAGE as usize);
    assert_eq!(first.total as usize, n);
    assert_eq!(first.remaining, 50);
    let ids: Vec<GateId> = first.gates.iter().map(|g| g.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");
    assert_eq!(first.next_after, ids.last().copied());

    // The rest, after it: every pending gate exactly once.
    let second = page(&mut c, None, first.next_after).await;
    assert_eq!(second.gates.len(), 50);
    assert_eq!((second.total as usize, second.remaining), (n, 0));
    assert_eq!(second.next_after, None, "nothing left to list");
    let mut listed: Vec<GateId> = ids;
    listed.extend(second.gates.iter().map(|g| g.id));
    let every: Vec<GateId> = engine
        .gates(true)
        .expect("every pending gate")
        .iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(listed, every);

    // A caller's own limit, within bounds: never more than a page's most,
    // never an empty page while gates wait.
    let small = page(&mut c, Some(7), None).await;
    assert_eq!((small.gates.len(), small.remaining as usize), (7, n - 7));
    let none = page(&mut c, Some(0), None).await;
    assert_eq!(none.gates.len(), 1);
    let big = page(&mut c, Some(u32::MAX), None).await;
    assert_eq!(big.gates.len(), n.min(GATE_PAGE_MAX as usize));

    // The counts follow the decisions: one answered, one fewer.
    let oldest = first.gates[0].id;
    engine
        .decide_gate(oldest, "answer", Some("this one"), &Actor::cli())
        .expect("answer");
    let after = page(&mut c, None, None).await;
    assert_eq!((after.total as usize, after.remaining), (n - 1, 49));
    assert!(after.gates.iter().all(|g| g.id != oldest));
    let all = c
        .perform(ListGates {
            pending_only: false,
            limit: None,
            after: None,
        })
        .await
        .expect("every gate");
    assert_eq!(all.total as usize, n, "decided ones too");
    server.abort();
    engine.stop_agents().await;
}
