//! Webhooks: what the engine tells the user reaches their phone (ntfy,
//! Slack, Matrix, a receiver of their own) as an HTTP POST.
//!
//! A hook is a URL, a secret Overseer generates (shown once, when the hook
//! is added) and the event kinds it gets ([`WebhookEvent`]: the
//! notification kinds and `run_finished`). When the engine tells the user
//! something (`Shared::publish`, `Records::notify_user`), each
//! enabled hook subscribed to its kind gets a delivery queued in the
//! database, unless the user muted that kind, or webhooks, in
//! [`crate::NotificationSettings`]. A delivery thread of the engine's own
//! ([`deliver`]) sends them: never on the engine's threads, one attempt at
//! a time per hook (a hook that hangs holds up only itself, until its
//! timeout), retried with exponential backoff, each attempt kept in the
//! delivery log.
//!
//! The body is JSON ([`WebhookBody`]); a burst to one hook goes as one
//! request carrying a [`WebhookBatch`] (see [`deliver`]). Each request carries
//! `X-Overseer-Signature: t=<unix seconds>,v1=<hex>`, where `<hex>` is
//! HMAC-SHA256 with the hook's secret over `<t>.<body>` (the timestamp, a
//! dot, the body's bytes as sent). A receiver recomputes it, compares in
//! constant time, and refuses an old `t` to stop replays. Also sent:
//! `X-Overseer-Event` (the kind), `X-Overseer-Delivery` (the delivery's
//! id: an attempt may arrive twice, see below), and, for ntfy, `X-Title`
//! (the title; RFC 2047-encoded when it is not ASCII) and `X-Priority`
//! (the notification's urgency: 4 critical, 3 normal, 2 low; without one,
//! 4 for what stops an agent or the runs, else 3).
//!
//! Delivery is at least once: a delivery still pending when the engine
//! stops (waiting for a retry, or in flight) stays pending in the
//! database and is retried when the engine starts again, on the schedule
//! it was on; an attempt cut off by the stop may have reached the receiver
//! and is then sent again, with the same delivery id.

mod batch;
pub(crate) mod deliver;
mod ops;
pub(crate) mod state;

pub use batch::{WebhookBatch, WebhookBatchItem, WebhookBatchKind};

use crate::notify::WebhookEvent;
use overseer_core::{ApiError, ErrorCode, GateId, Millis, RunId, RunView, TaskId};
use serde::{Deserialize, Serialize};

/// The longest URL a hook may have.
const MAX_URL: usize = 2048;

/// A hook as the window and the CLI show it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub events: Vec<WebhookEvent>,
    pub enabled: bool,
    pub created_at: Millis,
}

/// A hook just added, with its secret: shown this once, never again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebhookAdded {
    pub webhook: Webhook,
    /// The key of the hook's signatures (64 hex characters).
    pub secret: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Not yet delivered: its next attempt is due at `next_at`.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed: given up on.
    Failed,
}

/// One attempt at a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebhookAttempt {
    pub at: Millis,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// Why it did not answer (or why its answer is a failure).
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// One event sent (or being sent) to one hook, with every attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebhookDelivery {
    pub id: i64,
    pub webhook_id: i64,
    pub event: WebhookEvent,
    /// The notification's title, as in the body.
    pub title: String,
    pub status: DeliveryStatus,
    pub attempts: Vec<WebhookAttempt>,
    pub next_at: Option<Millis>,
    /// Why it was given up on.
    pub note: Option<String>,
    pub created_at: Millis,
}

/// What a hook receives: the JSON body of each request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebhookBody {
    pub event: WebhookEvent,
    /// As the desktop notification's title ("Run 12 asks permission").
    pub title: String,
    /// As the desktop notification's text (the task's title, a reason).
    pub text: String,
    pub run_id: Option<RunId>,
    /// The gate that waits for the user, when there is one.
    pub gate_id: Option<GateId>,
    pub task_id: Option<TaskId>,
    /// The workspace's name (what `--workspace` takes).
    pub workspace: Option<String>,
    /// When it happened (milliseconds since the Unix epoch).
    pub at: Millis,
    /// How loudly it is told (a notification's; none for `run_finished`
    /// and `test`): `X-Priority` says it as ntfy's 4 (critical), 3 (normal)
    /// or 2 (low). A silent one is not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub urgency: Option<overseer_core::urgency::Urgency>,
}

/// What an event is about, to fill a body in and to recognize the same
/// event told again.
pub(crate) struct About<'a> {
    pub run: Option<&'a RunView>,
    pub gate: Option<GateId>,
    /// The same key is queued once per hook (a restart that tells of every
    /// pending gate again sends nothing twice). None: always queued.
    pub key: Option<String>,
}

/// A URL a hook may have: http or https, with a host. Anything else is
/// refused, saying what to give instead.
pub fn check_url(url: &str) -> Result<String, ApiError> {
    let url = url.trim();
    let refuse = |why: &str| {
        Err(ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "{url:?} is not a webhook URL: {why}; give an http:// or https:// URL such as \
                 https://ntfy.sh/<topic>"
            ),
        ))
    };
    if url.len() > MAX_URL {
        return refuse(&format!("it is longer than {MAX_URL} characters"));
    }
    let uri: ureq::http::Uri = match url.parse() {
        Ok(u) => u,
        Err(e) => return refuse(&e.to_string()),
    };
    match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("http") | Some("https") => {}
        Some(other) => return refuse(&format!("{other}: is not http or https")),
        None => return refuse("it has no scheme"),
    }
    if uri.host().is_none_or(str::is_empty) {
        return refuse("it has no host");
    }
    Ok(url.to_owned())
}

/// The event kinds a hook gets: the ones named (none: all), each once.
pub fn check_events(events: &[WebhookEvent]) -> Result<Vec<WebhookEvent>, ApiError> {
    if events.is_empty() {
        return Ok(WebhookEvent::SUBSCRIBABLE.to_vec());
    }
    if events.contains(&WebhookEvent::Test) {
        return Err(ApiError::new(
            ErrorCode::InvalidInput,
            "test is not an event a hook subscribes to: every hook gets the tests you send it \
             (`overseer webhooks test ID`)",
        ));
    }
    let mut out = Vec::new();
    for e in WebhookEvent::SUBSCRIBABLE {
        if events.contains(&e) {
            out.push(e);
        }
    }
    Ok(out)
}

pub(crate) fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::Internal, e.to_string())
}

pub(crate) fn view(row: overseer_store::webhooks::WebhookRow) -> Webhook {
    let events: Vec<String> = serde_json::from_str(&row.events).unwrap_or_default();
    Webhook {
        id: row.id,
        url: row.url,
        events: events
            .iter()
            .filter_map(|e| WebhookEvent::parse(e))
            .collect(),
        enabled: row.enabled,
        created_at: row.created_at,
    }
}

pub(crate) fn delivery_view(
    (d, attempts): (
        overseer_store::webhooks::DeliveryRow,
        Vec<overseer_store::webhooks::AttemptRow>,
    ),
) -> WebhookDelivery {
    let body: Option<WebhookBody> = serde_json::from_str(&d.body).ok();
    WebhookDelivery {
        id: d.id,
        webhook_id: d.webhook_id,
        event: WebhookEvent::parse(&d.event).unwrap_or(WebhookEvent::Test),
        title: body.map(|b| b.title).unwrap_or_default(),
        status: match d.status.as_str() {
            "delivered" => DeliveryStatus::Delivered,
            "failed" => DeliveryStatus::Failed,
            _ => DeliveryStatus::Pending,
        },
        attempts: attempts
            .into_iter()
            .map(|a| WebhookAttempt {
                at: a.at,
                status_code: a.status_code,
                error: a.error,
                duration_ms: a.duration_ms,
            })
            .collect(),
        next_at: d.next_at,
        note: d.note,
        created_at: d.created_at,
    }
}

/// The `run_finished` event a pushed run row calls for: a run released.
pub(crate) fn finished(run: &RunView) -> Option<(String, String)> {
    match run.state {
        overseer_core::RunState::Released { reason } => Some((
            format!("Run {} finished: {}", run.id, reason.as_str()),
            match &run.release_note {
                Some(note) => format!("{}: {note}", run.task_title),
                None => run.task_title.clone(),
            },
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn an_ntfy_topic_and_its_template_url_are_taken_as_given() {
        for url in [
            "https://ntfy.sh/overseer-3f9a",
            "https://ntfy.sh/overseer-3f9a?tpl=1&m=%7B%7B.text%7D%7D",
            "http://127.0.0.1:8080/hook",
        ] {
            assert_eq!(check_url(url).as_deref(), Ok(url), "{url}");
        }
    }
}
