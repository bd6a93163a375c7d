//! The tray icon: how many runs need the user, at a glance, even with the
//! window hidden; its menu (and a click, where the platform reports one)
//! brings the window back.
//!
//! The count follows the engine's events (no timer polling): every event
//! that can change who needs the user starts a short quiet period, after
//! which the runs are counted once, so a burst of fifty events recounts
//! once. A desktop without a tray (Xvfb, a session without a status
//! notifier) must never stop the app: building the icon may fail or even
//! panic inside the indicator library, and both are logged and ignored.

use overseer_core::EngineEvent;
use overseer_engine::Engine;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::broadcast::{self, error::RecvError};

/// How long the count waits for a burst of events to settle.
const SETTLE: Duration = Duration::from_millis(250);

const OPEN_ID: &str = "open";
const COUNT_ID: &str = "count";

/// What the tray says about `count`.
pub fn label(count: usize) -> String {
    match count {
        0 => "Overseer: nothing needs you".to_owned(),
        1 => "Overseer: 1 item needs you".to_owned(),
        n => format!("Overseer: {n} items need you"),
    }
}

/// The short title shown beside the icon where the tray supports one.
fn title(count: usize) -> String {
    match count {
        0 => String::new(),
        n => n.to_string(),
    }
}

/// Whether an event can change which runs need the user. Activity lines and
/// abort notices never do by themselves (the run change that follows does).
pub fn affects_count(event: &EngineEvent) -> bool {
    match event {
        EngineEvent::RunChanged { .. }
        | EngineEvent::GateOpened { .. }
        | EngineEvent::GateDecided { .. } => true,
        EngineEvent::RunActivity { .. }
        | EngineEvent::OrchestrationAborted { .. }
        | EngineEvent::MessagePosted { .. }
        | EngineEvent::WorkspaceChanged { .. }
        | EngineEvent::TaskChanged { .. }
        | EngineEvent::DeviceChanged { .. }
        | EngineEvent::PairingCodesBurned { .. }
        | EngineEvent::WebServingChanged { .. } => false,
    }
}

/// Shows, unminimizes and focuses the main window.
fn show_main<R: Runtime>(app: &AppHandle<R>) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
}

/// Adds the tray icon and keeps its count in step with the engine. Never
/// fails: without a tray the app simply has none.
pub fn install<R: Runtime>(app: &AppHandle<R>, engine: Arc<Engine>) {
    // Subscribe before the first count, so no change falls between the two.
    let rx = engine.subscribe();
    let initial = engine.needs_you_count().unwrap_or_else(|e| {
        tracing::warn!("tray: cannot count the runs that need you: {e}");
        0
    });
    let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| build(app, initial)));
    let (tray, count_item) = match built {
        Ok(Ok(parts)) => parts,
        Ok(Err(e)) => {
            tracing::warn!("no tray icon on this desktop ({e}); going on without it");
            return;
        }
        Err(_) => {
            tracing::warn!(
                "no tray icon on this desktop (the indicator library failed); going on without it"
            );
            return;
        }
    };
    let count = move || {
        let engine = engine.clone();
        async move {
            match tauri::async_runtime::spawn_blocking(move || engine.needs_you_count()).await {
                Ok(Ok(n)) => Some(n),
                Ok(Err(e)) => {
                    tracing::warn!("tray: cannot count the runs that need you: {e}");
                    None
                }
                Err(e) => {
                    tracing::warn!("tray: the count failed: {e}");
                    None
                }
            }
        }
    };
    let show = move |n: usize| {
        if let Err(e) = show_count(&tray, &count_item, n) {
            tracing::warn!("tray: cannot update the count: {e}");
        }
    };
    tauri::async_runtime::spawn(follow(rx, SETTLE, initial, count, show));
}

/// Follows the engine's events until the engine goes away: after each burst
/// that may change who needs the user (quiet for `settle`), counts once, and
/// shows the count when it changed. Nothing happens between events.
async fn follow<C, F, S>(
    mut rx: broadcast::Receiver<EngineEvent>,
    settle: Duration,
    mut shown: usize,
    mut count: C,
    mut show: S,
) where
    C: FnMut() -> F,
    F: Future<Output = Option<usize>>,
    S: FnMut(usize),
{
    loop {
        // Wait for an event that matters (after a lag, recount to be safe)...
        match rx.recv().await {
            Ok(event) if affects_count(&event) => {}
            Ok(_) => continue,
            Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
        // ...then for the burst to settle.
        loop {
            match tokio::time::timeout(settle, rx.recv()).await {
                Err(_quiet) => break,
                Ok(Ok(_)) | Ok(Err(RecvError::Lagged(_))) => continue,
                Ok(Err(RecvError::Closed)) => return,
            }
        }
        let Some(n) = count().await else { continue };
        if n != shown {
            shown = n;
            show(n);
        }
    }
}

fn show_count<R: Runtime>(
    tray: &TrayIcon<R>,
    count_item: &MenuItem<R>,
    count: usize,
) -> tauri::Result<()> {
    tray.set_tooltip(Some(label(count)))?;
    tray.set_title(Some(title(count)))?;
    count_item.set_text(label(count))
}

fn build<R: Runtime>(
    app: &AppHandle<R>,
    count: usize,
) -> tauri::Result<(TrayIcon<R>, MenuItem<R>)> {
    let open = MenuItem::with_id(app, OPEN_ID, "Open Overseer", true, None::<&str>)?;
    let count_item = MenuItem::with_id(app, COUNT_ID, label(count), false, None::<&str>)?;
    let menu = Menu::with_items(app, &[&count_item, &open])?;
    let mut builder = TrayIconBuilder::with_id("overseer")
        .menu(&menu)
        .show_menu_on_left_click(false)
        .tooltip(label(count))
        .title(title(count))
        .on_menu_event(|app, event| {
            if event.id().as_ref() == OPEN_ID {
                show_main(app);
            }
        })
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                show_main(tray.app_handle());
            }
        });
    if let Some(icon) = app.default_window_icon() {
        builder = builder.icon(icon.clone());
    }
    let tray = builder.build(app)?;
    Ok((tray, count_item))
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_core::{GateKind, PendingGate, RunState};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// A run as the engine sends it (JSON, so fields added later with
    /// defaults do not break the test).
    fn run(id: i64, state: RunState, needs_you: bool) -> overseer_core::RunView {
        let gate = needs_you.then(|| PendingGate {
            id: overseer_core::GateId(100 + id),
            kind: GateKind::MergeReview,
            ask_kind: overseer_core::AskKind::Question,
        });
        serde_json::from_value(serde_json::json!({
            "id": id,
            "task_id": id,
            "task_title": format!("task {id}"),
            "workspace": "w",
            "agent": "demo",
            "state": state,
            "state_since": 0,
            "created_at": 0,
            "needs_you": needs_you,
            "release_note": null,
            "pending_gate": gate,
        }))
        .expect("a run view")
    }

    #[test]
    fn the_label_reads_like_a_sentence() {
        assert_eq!(label(0), "Overseer: nothing needs you");
        assert_eq!(label(1), "Overseer: 1 item needs you");
        assert_eq!(label(7), "Overseer: 7 items need you");
        assert_eq!(title(0), "");
        assert_eq!(title(3), "3");
    }

    fn activity(id: i64) -> EngineEvent {
        EngineEvent::RunActivity {
            activity: serde_json::from_value(serde_json::json!({
                "id": id, "run_id": 1, "at": 0, "kind": "message", "payload": "hi"
            }))
            .expect("an activity"),
        }
    }

    /// `follow` running over a channel of our own, counting `answer`.
    struct Follower {
        tx: broadcast::Sender<EngineEvent>,
        counts: Arc<AtomicUsize>,
        shown: Arc<Mutex<Vec<usize>>>,
        task: tokio::task::JoinHandle<()>,
    }

    fn follower(answer: usize) -> Follower {
        let (tx, rx) = broadcast::channel(256);
        let counts = Arc::new(AtomicUsize::new(0));
        let shown = Arc::new(Mutex::new(Vec::new()));
        let (c, s) = (counts.clone(), shown.clone());
        let task = tokio::spawn(follow(
            rx,
            Duration::from_millis(100),
            0,
            move || {
                c.fetch_add(1, Ordering::SeqCst);
                async move { Some(answer) }
            },
            move |n| s.lock().expect("shown").push(n),
        ));
        Follower {
            tx,
            counts,
            shown,
            task,
        }
    }

    #[tokio::test]
    async fn a_burst_of_events_recounts_once_after_it_settles() {
        let Follower {
            tx,
            counts,
            shown,
            task,
        } = follower(4);
        for _ in 0..50 {
            tx.send(EngineEvent::RunChanged {
                run: run(1, RunState::PendingReview, true),
            })
            .expect("a subscriber");
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(counts.load(Ordering::SeqCst), 1, "one count for the burst");
        assert_eq!(*shown.lock().expect("shown"), vec![4]);

        // The same count again is not shown again.
        tx.send(EngineEvent::GateDecided {
            gate_id: overseer_core::GateId(1),
            run_id: overseer_core::RunId(1),
            kind: GateKind::MergeReview,
        })
        .expect("a subscriber");
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(counts.load(Ordering::SeqCst), 2);
        assert_eq!(*shown.lock().expect("shown"), vec![4]);

        // The engine going away ends the follower.
        drop(tx);
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .expect("the follower stops")
            .expect("no panic");
    }

    #[tokio::test]
    async fn activity_alone_never_recounts() {
        let Follower {
            tx, counts, shown, ..
        } = follower(2);
        for i in 0..20 {
            tx.send(activity(i)).expect("a subscriber");
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(counts.load(Ordering::SeqCst), 0);
        assert!(shown.lock().expect("shown").is_empty());
    }

    #[test]
    fn run_and_gate_events_recount_but_activity_does_not() {
        let r = run(1, RunState::Running, false);
        assert!(affects_count(&EngineEvent::RunChanged { run: r }));
        assert!(affects_count(&EngineEvent::GateOpened {
            gate_id: overseer_core::GateId(1),
            run_id: overseer_core::RunId(1),
            kind: GateKind::ToolCall
        }));
        assert!(affects_count(&EngineEvent::GateDecided {
            gate_id: overseer_core::GateId(1),
            run_id: overseer_core::RunId(1),
            kind: GateKind::ToolCall
        }));
        assert!(!affects_count(&activity(1)));
        assert!(!affects_count(&EngineEvent::OrchestrationAborted {
            run_id: overseer_core::RunId(1),
            killed: vec![]
        }));
    }
}
