//! The webhook delivery thread's state, kept by the engine's lowest layer
//! (`Shared`): the enabled hooks and their kinds, the hooks with an
//! attempt in flight and when each was last sent to, and the wake-ups ([`super::deliver`] does the work).

use crate::notify::WebhookEvent;
use overseer_core::Millis;
use overseer_store::webhooks::WebhookRow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The delivery thread's state, shared with the engine.
#[derive(Default)]
pub(crate) struct Deliveries {
    pub(crate) state: Arc<(Mutex<State>, Condvar)>,
    /// The enabled hooks and their kinds (None: read them again).
    hooks: Mutex<Option<Vec<Subscribed>>>,
}

/// An enabled hook's id and the kinds it gets.
type Subscribed = (i64, Vec<WebhookEvent>);

#[derive(Default)]
pub(crate) struct State {
    pub(crate) started: bool,
    pub(crate) stopping: bool,
    /// Hooks with an attempt in flight.
    pub(crate) busy: HashSet<i64>,
    /// When the latest request to each hook started: new events for a hook
    /// wait until the batch window after it has passed.
    pub(crate) last_sent: HashMap<i64, Millis>,
    /// Wakes since the scheduler last looked (so a wake is never lost).
    pub(crate) woken: u64,
}

impl Deliveries {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The enabled hooks subscribed to `event`; `read` reads every hook
    /// when they changed since last time.
    pub(crate) fn subscribed(
        &self,
        event: WebhookEvent,
        read: impl FnOnce() -> Result<Vec<WebhookRow>, overseer_store::StoreError>,
    ) -> Result<Vec<i64>, overseer_store::StoreError> {
        let mut hooks = self.hooks.lock().unwrap_or_else(|p| p.into_inner());
        if hooks.is_none() {
            *hooks = Some(
                read()?
                    .into_iter()
                    .filter(|r| r.enabled)
                    .map(|r| {
                        let names: Vec<String> =
                            serde_json::from_str(&r.events).unwrap_or_default();
                        (
                            r.id,
                            names
                                .iter()
                                .filter_map(|n| WebhookEvent::parse(n))
                                .collect(),
                        )
                    })
                    .collect(),
            );
        }
        Ok(hooks
            .iter()
            .flatten()
            .filter(|(_, events)| events.contains(&event))
            .map(|(id, _)| *id)
            .collect())
    }

    /// Starts from `rows` (read when the engine opens), so that telling
    /// the user never waits for a read of the hooks.
    pub(crate) fn prime(&self, rows: Vec<WebhookRow>) {
        let _ = self.subscribed(WebhookEvent::Test, || Ok(rows));
    }

    /// The hooks changed: read them again next time.
    pub(crate) fn forget_hooks(&self) {
        *self.hooks.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Something to send, or an attempt ended: the scheduler looks again.
    pub(crate) fn wake(&self) {
        self.lock().woken += 1;
        self.state.1.notify_all();
    }

    /// The engine stops: no new attempt starts. What is pending stays in
    /// the database for the next start.
    pub(crate) fn stop(&self) {
        self.lock().stopping = true;
        self.state.1.notify_all();
    }
}
