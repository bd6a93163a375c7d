//! OS notifications through notify-rust (the freedesktop Notify call on Linux).
//! Sending happens on its own thread: a slow or missing notification daemon
//! must never stall the engine.

use overseer_engine::{Notification, Notifier};
use std::sync::mpsc;
use std::sync::Mutex;

pub struct DesktopNotifier {
    tx: Mutex<mpsc::Sender<Notification>>,
}

impl DesktopNotifier {
    pub fn start() -> Self {
        let (tx, rx) = mpsc::channel::<Notification>();
        std::thread::Builder::new()
            .name("notifier".into())
            .spawn(move || {
                for n in rx {
                    let shown = notify_rust::Notification::new()
                        .appname("Overseer")
                        .summary(&n.title)
                        .body(&n.body)
                        .hint(notify_rust::Hint::Category(
                            "overseer.".to_owned() + n.kind.as_str(),
                        ))
                        .show();
                    if let Err(e) = shown {
                        tracing::warn!("cannot show a notification ({}): {e}", n.kind.as_str());
                    }
                }
            })
            .map_err(|e| tracing::warn!("no notifier thread: {e}"))
            .ok();
        DesktopNotifier { tx: Mutex::new(tx) }
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
