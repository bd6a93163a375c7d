//! How loudly an inbox item is told, per item kind, through the engine
//! (real SQLite, the demo agent as a real process): a `question` at the
//! urgency the user chose (Settings over `overseer.toml`), `silent` only in
//! the inbox, and a `blocking` ask always critical, whatever is chosen.

use crate::common;

use common::*;
use overseer_core::gate::AskKind;
use overseer_core::{Actor, ErrorCode, GateKind, RunId};
use overseer_engine::{Notification, NotificationSettings, Urgency, UrgencySettings};
use overseer_store::{TaskSettings, WorkspaceSettings};
use std::sync::Arc;
use std::time::Duration;

fn told(notes: &Captured, run: RunId) -> Vec<Notification> {
    notes
        .0
        .lock()
        .expect("lock")
        .iter()
        .filter(|n| n.run_id == run)
        .cloned()
        .collect()
}

/// A question that waits at most ten minutes: a `question` item.
fn asking(w: &World) -> RunId {
    start_with(
        w,
        "questions",
        TaskSettings {
            question_timeout_seconds: Some(600),
            ..Default::default()
        },
    )
}

fn choose(
    w: &World,
    urgency: UrgencySettings,
) -> Result<NotificationSettings, overseer_core::ApiError> {
    w.engine.set_notifications(
        NotificationSettings {
            urgency,
            ..Default::default()
        },
        &Actor::app(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_told_at_the_urgency_chosen_for_questions() {
    let notes = Arc::new(Captured::default());
    let w = world_with(
        WorkspaceSettings::default(),
        notes.clone(),
        "[notifications.urgency]\nquestion = \"low\"\n",
    )
    .await;

    // overseer.toml's choice, when Settings say nothing.
    let run = asking(&w);
    let q = pending_gate(&w, run, GateKind::Question).await;
    assert_eq!(q.ask_kind, AskKind::Question);
    let n = until(&w, "the question's notification", |_| {
        told(&notes, run).into_iter().next()
    })
    .await;
    assert_eq!(n.urgency, Urgency::Low, "{n:?}");

    // A blocking ask cannot be set lower than critical.
    let err = choose(
        &w,
        UrgencySettings {
            blocking: Some(Urgency::Low),
            ..Default::default()
        },
    )
    .expect_err("blocking stays critical");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(
        err.message.contains("always sent as critical"),
        "{}",
        err.message
    );

    // Silent: in the inbox, told nowhere.
    choose(
        &w,
        UrgencySettings {
            question: Some(Urgency::Silent),
            ..Default::default()
        },
    )
    .expect("silent questions");
    let quiet = asking(&w);
    let q = pending_gate(&w, quiet, GateKind::Question).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(told(&notes, quiet).is_empty(), "{:?}", told(&notes, quiet));
    assert!(
        w.engine
            .gates_page(true, None, None)
            .expect("inbox")
            .gates
            .iter()
            .any(|g| g.id == q.id),
        "a silent item is still in the inbox"
    );

    // The user's choice goes over overseer.toml's.
    choose(
        &w,
        UrgencySettings {
            question: Some(Urgency::Critical),
            ..Default::default()
        },
    )
    .expect("critical questions");
    let loud = asking(&w);
    pending_gate(&w, loud, GateKind::Question).await;
    let n = until(&w, "the loud question's notification", |_| {
        told(&notes, loud).into_iter().next()
    })
    .await;
    assert_eq!(n.urgency, Urgency::Critical, "{n:?}");
    assert_eq!(
        w.engine.notifications().urgency.question,
        Some(Urgency::Critical)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_ask_is_critical_whatever_is_chosen_for_questions() {
    let notes = Arc::new(Captured::default());
    let w = world_with(
        WorkspaceSettings::default(),
        notes.clone(),
        "[notifications.urgency]\nquestion = \"silent\"\ninfo = \"silent\"\n",
    )
    .await;
    choose(
        &w,
        UrgencySettings {
            question: Some(Urgency::Silent),
            ..Default::default()
        },
    )
    .expect("silent questions");
    // No expiry: the agent is stopped until someone answers.
    let run = start(&w, "questions");
    let q = pending_gate(&w, run, GateKind::Question).await;
    assert_eq!(q.ask_kind, AskKind::Blocking);
    let n = until(&w, "the blocking question's notification", |_| {
        told(&notes, run).into_iter().next()
    })
    .await;
    assert_eq!(n.urgency, Urgency::Critical, "{n:?}");
}

#[test]
fn an_urgency_for_blocking_asks_other_than_critical_is_refused_in_overseer_toml() {
    let err = overseer_engine::config::Config::parse(
        "[notifications.urgency]\nblocking = \"normal\"\n",
        "overseer.toml".into(),
    )
    .expect_err("refused");
    assert!(
        err.to_string().contains("notifications.urgency.blocking"),
        "{err}"
    );
}
