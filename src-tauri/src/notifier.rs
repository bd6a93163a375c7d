//! OS notifications through notify-rust (the freedesktop Notify call on Linux).
//! Sending happens on its own thread: a slow or missing notification daemon
//! must never stall the engine. The first notification after a quiet spell
//! goes out at once; what follows within a short window is coalesced per
//! kind, so fifty agents finishing at once make two popups, not fifty.

use overseer_core::RunId;
use overseer_engine::{coalesce, Notification, Notifier};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// After a notification is shown, how long the next ones are gathered
/// before they are shown together.
const COALESCE_WINDOW: Duration = Duration::from_millis(600);

/// How long a notification arriving `now` waits: not at all after a quiet
/// spell (a blocking ask must reach the user at once), else until the
/// window that the last one opened closes.
fn hold_for(last_shown: Option<Instant>, now: Instant) -> Duration {
    match last_shown {
        Some(t) => (t + COALESCE_WINDOW).saturating_duration_since(now),
        None => Duration::ZERO,
    }
}

/// What clicking a notification does (focus the window, open the run); set
/// once the window exists.
pub type OnOpen = Arc<OnceLock<Box<dyn Fn(RunId) + Send + Sync>>>;

pub struct DesktopNotifier {
    tx: Mutex<mpsc::Sender<Notification>>,
    pub on_open: OnOpen,
}

impl DesktopNotifier {
    pub fn start() -> Self {
        let (tx, rx) = mpsc::channel::<Notification>();
        let on_open: OnOpen = Arc::new(OnceLock::new());
        let opener = on_open.clone();
        std::thread::Builder::new()
            .name("notifier".into())
            .spawn(move || {
                let mut last_shown: Option<Instant> = None;
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    let until = Instant::now() + hold_for(last_shown, Instant::now());
                    while let Some(left) = until.checked_duration_since(Instant::now()) {
                        match rx.recv_timeout(left) {
                            Ok(n) => batch.push(n),
                            Err(_) => break,
                        }
                    }
                    // What arrived together goes together.
                    batch.extend(rx.try_iter());
                    last_shown = Some(Instant::now());
                    for n in coalesce(batch) {
                        let shown = notify_rust::Notification::new()
                            .appname("Overseer")
                            .summary(&inert(&n.title))
                            .body(&inert(&n.body))
                            .action("default", "Open")
                            .hint(notify_rust::Hint::Category(
                                "overseer.".to_owned() + n.kind.as_str(),
                            ))
                            .show();
                        match shown {
                            Ok(handle) => {
                                // Where the platform supports actions, a click
                                // opens the item; waiting happens off this thread.
                                let opener = opener.clone();
                                let run = n.run_id;
                                let _ = std::thread::Builder::new()
                                    .name("notification-click".into())
                                    .spawn(move || {
                                        handle.wait_for_action(|action| {
                                            if action == "default" {
                                                if let Some(open) = opener.get() {
                                                    open(run);
                                                }
                                            }
                                        })
                                    });
                            }
                            Err(e) => tracing::warn!(
                                "cannot show a notification ({}): {e}",
                                n.kind.as_str()
                            ),
                        }
                    }
                }
            })
            .map_err(|e| tracing::warn!("no notifier thread: {e}"))
            .ok();
        DesktopNotifier {
            tx: Mutex::new(tx),
            on_open,
        }
    }
}

impl Notifier for DesktopNotifier {
    fn notify(&self, n: &Notification) {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if tx.send(n.clone()).is_err() {
            tracing::warn!("notifier thread is gone; dropped {}", n.kind.as_str());
        }
    }
}

/// Notification servers read the body (and some the summary) as markup:
/// agent-controlled text (task titles, reasons) must arrive as text.
fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{hold_for, inert, COALESCE_WINDOW};
    use std::time::{Duration, Instant};

    #[test]
    fn the_first_of_a_burst_goes_at_once_and_what_follows_waits_for_the_window() {
        let now = Instant::now();
        assert_eq!(hold_for(None, now), Duration::ZERO, "nothing shown yet");
        assert_eq!(
            hold_for(Some(now - COALESCE_WINDOW * 2), now),
            Duration::ZERO,
            "after a quiet spell"
        );
        let held = hold_for(Some(now - Duration::from_millis(100)), now);
        assert_eq!(held, COALESCE_WINDOW - Duration::from_millis(100));
    }

    #[test]
    fn agent_text_reaches_the_notification_server_as_text() {
        assert_eq!(
            inert("<img src=x onerror=alert(1)> & <b>bold</b>"),
            "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
        );
        assert_eq!(inert("Fix the build"), "Fix the build");
    }
}
