//! Webhooks as the contract reaches them (list, add, remove, test, the
//! delivery log) and queueing what the engine tells the user.

use super::{
    check_events, check_url, deliver, delivery_view, internal, view, About, Webhook, WebhookAdded,
    WebhookBody, WebhookDelivery,
};
use crate::engine::Shared;
use crate::notify::{Notification, WebhookEvent};
use crate::Records;
use overseer_core::{Actor, ApiError, ErrorCode, RunId};

impl Records {
    /// Every hook, oldest first.
    pub fn webhooks(&self) -> Result<Vec<Webhook>, ApiError> {
        Ok(self.store().webhooks()?.into_iter().map(view).collect())
    }

    /// Every hook as `actor` may see it: whole for the local owner; for a
    /// person through a paired device, each URL cut to its scheme and host
    /// (a URL's path often is the secret: an ntfy topic, a Slack hook).
    pub fn webhooks_seen_by(&self, actor: &Actor) -> Result<Vec<Webhook>, ApiError> {
        let mut hooks = self.webhooks()?;
        if !actor.is_local_owner() {
            for hook in &mut hooks {
                hook.url = where_it_goes(&hook.url);
            }
        }
        Ok(hooks)
    }

    /// Adds a hook for `url` that gets `events` (none: every kind), with a
    /// new secret, returned this once. Only the local owner may.
    pub fn add_webhook(
        &self,
        url: &str,
        events: &[WebhookEvent],
        actor: &Actor,
    ) -> Result<WebhookAdded, ApiError> {
        // A hook sends what the engine tells the user to any URL: only the
        // owner chooses where that goes.
        crate::devices::owner_only(actor, "add a webhook")?;
        let url = check_url(url)?;
        let events = check_events(events)?;
        let secret = deliver::new_secret();
        let names: Vec<&str> = events.iter().map(|e| e.as_str()).collect();
        let names = serde_json::to_string(&names).map_err(internal)?;
        let now = self.clock.now();
        let id = self.write(|tx| tx.add_webhook(&url, &secret, &names, actor, now))?;
        self.webhooks.forget_hooks();
        let webhook = view(self.store().webhook(id)?);
        Ok(WebhookAdded { webhook, secret })
    }

    /// Removes a hook and its delivery log; what was pending for it is
    /// not sent. Only the local owner may.
    pub fn remove_webhook(&self, id: i64, actor: &Actor) -> Result<Webhook, ApiError> {
        crate::devices::owner_only(actor, "remove a webhook")?;
        let hook = view(self.store().webhook(id).map_err(not_found(id))?);
        let now = self.clock.now();
        self.write(|tx| tx.remove_webhook(id, actor, now))?;
        self.webhooks.forget_hooks();
        Ok(hook)
    }

    /// Turns hook `id` off (`enabled` false) or on again, keeping its
    /// secret and its log. Off, it gets nothing: no event is queued for it
    /// and what was pending for it is given up on (`failed`, "not sent: the
    /// hook was disabled"). On again, it gets the events from then on;
    /// nothing given up on is sent. Only the local owner may.
    pub fn set_webhook_enabled(
        &self,
        id: i64,
        enabled: bool,
        actor: &Actor,
    ) -> Result<Webhook, ApiError> {
        crate::devices::owner_only(
            actor,
            if enabled {
                "enable a webhook"
            } else {
                "disable a webhook"
            },
        )?;
        self.store().webhook(id).map_err(not_found(id))?;
        let now = self.clock.now();
        if self.write(|tx| tx.set_webhook_enabled(id, enabled, actor, now))? {
            self.webhooks.forget_hooks();
            self.webhooks.wake();
        }
        Ok(view(self.store().webhook(id)?))
    }

    /// A hook's latest deliveries (at most `limit`, default 50), newest
    /// first, each with its attempts.
    pub fn webhook_deliveries(
        &self,
        id: i64,
        limit: Option<u32>,
    ) -> Result<Vec<WebhookDelivery>, ApiError> {
        let store = self.store();
        store.webhook(id).map_err(not_found(id))?;
        let limit = limit.unwrap_or(50).clamp(1, 200);
        Ok(store
            .webhook_deliveries(id, limit)?
            .into_iter()
            .map(delivery_view)
            .collect())
    }

    /// Sends a test event to hook `id` now, on this thread, and answers
    /// with its delivery after the first attempt (at most the receiver's
    /// timeout). A failed test is retried on the usual schedule. Only the local owner may.
    pub fn test_webhook(&self, id: i64, actor: &Actor) -> Result<WebhookDelivery, ApiError> {
        crate::devices::owner_only(actor, "test a webhook")?;
        let hook = self.store().webhook(id).map_err(not_found(id))?;
        if !hook.enabled {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "webhook {id} is disabled and gets nothing, tests included: \
                     `overseer webhooks enable {id}` first"
                ),
            ));
        }
        let now = self.clock.now();
        let body = WebhookBody {
            event: WebhookEvent::Test,
            title: "Overseer test".to_owned(),
            text: format!(
                "Webhook {id} works: this is what Overseer sends when it tells you something"
            ),
            run_id: None,
            gate_id: None,
            task_id: None,
            workspace: None,
            at: now,
            urgency: None,
        };
        let text = serde_json::to_string(&body).map_err(internal)?;
        // Queued far in the future, so that the delivery thread leaves it
        // to this call; the attempt sets when it is next due.
        let later = now.saturating_add(86_400_000);
        let delivery = self
            .write(|tx| tx.queue_delivery(hook.id, "test", None, &text, now, later))?
            .ok_or_else(|| internal("the test delivery was not queued"))?;
        let row = self.store().delivery(delivery)?;
        deliver::attempt(self, &hook, std::slice::from_ref(&row));
        self.webhooks.wake();
        let store = self.store();
        let found = store
            .webhook_deliveries(id, overseer_store::webhooks::KEPT_DELIVERIES as u32)?
            .into_iter()
            .find(|(d, _)| d.id == delivery)
            .ok_or_else(|| internal("the test delivery is gone"))?;
        Ok(delivery_view(found))
    }
}

fn not_found(id: i64) -> impl Fn(overseer_store::StoreError) -> ApiError {
    move |e| match e {
        overseer_store::StoreError::NotFound { .. } => ApiError::new(
            ErrorCode::NotFound,
            format!("webhook {id} does not exist: `overseer webhooks list` shows the hooks"),
        ),
        other => other.into(),
    }
}

impl Shared {
    /// Queues `n` for every enabled hook subscribed to its kind, unless
    /// muted. Never sends on this thread, and a failure to queue is logged,
    /// never the caller's.
    pub(crate) fn queue_webhooks(&self, n: &Notification, about: About<'_>) {
        self.queue_event(
            WebhookEvent::from(n.kind),
            &n.title,
            &n.body,
            n.run_id,
            about,
            Some(n.urgency),
        );
    }

    pub(crate) fn queue_event(
        &self,
        event: WebhookEvent,
        title: &str,
        text: &str,
        run_id: RunId,
        about: About<'_>,
        urgency: Option<overseer_core::urgency::Urgency>,
    ) {
        let hooks = match self.webhooks.subscribed(event, || self.store().webhooks()) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(event = event.as_str(), "webhooks not read: {e}");
                return;
            }
        };
        if hooks.is_empty() {
            return;
        }
        if self.notifications().is_webhook_muted(event) {
            tracing::debug!(event = event.as_str(), "webhooks muted by the user");
            return;
        }
        let read;
        let run = match about.run {
            Some(r) => Some(r),
            None => {
                read = self.run(run_id).ok();
                read.as_ref()
            }
        };
        let now = self.clock.now();
        let body = WebhookBody {
            event,
            title: title.to_owned(),
            text: text.to_owned(),
            run_id: Some(run_id),
            gate_id: about.gate,
            task_id: run.map(|r| r.task_id),
            workspace: run.map(|r| r.workspace.clone()),
            at: now,
            urgency,
        };
        let text = match serde_json::to_string(&body) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(event = event.as_str(), "webhook body: {e}");
                return;
            }
        };
        let key = about.key.as_deref();
        let queued = self.write(|tx| {
            for hook in &hooks {
                tx.queue_delivery(*hook, event.as_str(), key, &text, now, now)?;
            }
            Ok(())
        });
        match queued {
            Ok(()) => self.webhooks.wake(),
            Err(e) => tracing::warn!(
                event = event.as_str(),
                "a webhook delivery was not queued (not sent): {e}"
            ),
        }
    }
}

/// A hook's URL without what may be secret: its user, path and query
/// (`https://ntfy.sh/…`).
fn where_it_goes(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "…".to_owned();
    };
    let (authority, more) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let hidden = more.trim_start_matches('/').is_empty();
    format!("{scheme}://{host}/{}", if hidden { "" } else { "…" })
}

#[cfg(test)]
mod tests {
    use super::where_it_goes;

    #[test]
    fn a_url_shown_to_a_paired_person_keeps_only_where_it_goes() {
        assert_eq!(
            where_it_goes("https://ntfy.sh/my-secret-topic"),
            "https://ntfy.sh/…"
        );
        assert_eq!(
            where_it_goes("https://user:pw@hooks.example.com:8443/a?b=c"),
            "https://hooks.example.com:8443/…"
        );
        assert_eq!(
            where_it_goes("http://127.0.0.1:9000"),
            "http://127.0.0.1:9000/"
        );
        assert_eq!(
            where_it_goes("http://127.0.0.1:9000/"),
            "http://127.0.0.1:9000/"
        );
        assert_eq!(where_it_goes("no scheme"), "…");
    }
}
