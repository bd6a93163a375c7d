//! What one request to a hook carries: one delivery's body as it was
//! queued (the common case, unchanged), or, when several deliveries of a
//! hook are due at once (a burst inside its batch window, a batch being
//! retried), one [`WebhookBatch`] listing them all.

use super::WebhookBody;
use overseer_core::Millis;
use overseer_store::webhooks::DeliveryRow;
use serde::{Deserialize, Serialize};

/// The most events one request carries; the rest go in the next.
pub(crate) const MAX_BATCH: u32 = 100;

/// How many events a batch's `text` lists, one a line.
const LISTED: usize = 20;

/// The longest line of a batch's `text`, in characters.
const LINE: usize = 200;

/// The body of a request carrying several events to one hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebhookBatch {
    /// Always `batch`: what tells this body from one event's.
    pub kind: WebhookBatchKind,
    /// How many events it carries (`events`' length).
    pub count: usize,
    /// A title for the lot ("12 events: Run 3 is ready for review and 11
    /// more"), also sent as `X-Title`.
    pub title: String,
    /// Plain text, one line per event (`<title>: <text>`), the first 20,
    /// then how many more: what an ntfy template shows with `{{.text}}`.
    pub text: String,
    /// Each event as its own request's body would be, with its delivery id.
    pub events: Vec<WebhookBatchItem>,
    /// When the batch was sent (milliseconds since the Unix epoch).
    pub at: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum WebhookBatchKind {
    Batch,
}

/// One event of a batch: its delivery's id (as `X-Overseer-Delivery`
/// would say of it alone) and the body it would have had alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebhookBatchItem {
    pub delivery: i64,
    #[serde(flatten)]
    pub body: WebhookBody,
}

/// One request's body and the headers that speak of it.
pub(crate) struct Request {
    pub(crate) body: String,
    /// `X-Overseer-Event`: the event's kind, or `batch`.
    pub(crate) event: String,
    /// `X-Overseer-Delivery`: the delivery's id, or the batch's ids
    /// comma-separated.
    pub(crate) delivery: String,
    /// `X-Title` (empty: none).
    pub(crate) title: String,
    /// `X-Priority`: the highest of its events' ([`priority`]).
    pub(crate) priority: u8,
}

/// The request carrying `members` (at least one), sent at `now`, and how
/// many of them it carries (all, unless a body could not be read, which
/// then goes alone).
pub(crate) fn request(members: &[DeliveryRow], now: Millis) -> (Request, usize) {
    let parsed: Option<Vec<WebhookBody>> = members
        .iter()
        .map(|d| serde_json::from_str(&d.body).ok())
        .collect();
    match (members, parsed) {
        ([first, _, ..], Some(bodies)) => match batch(members, bodies, now) {
            Some(r) => (r, members.len()),
            None => (single(first), 1),
        },
        ([first, ..], _) => (single(first), 1),
        ([], _) => (
            Request {
                body: String::new(),
                event: String::new(),
                delivery: String::new(),
                title: String::new(),
                priority: 3,
            },
            0,
        ),
    }
}

/// An event's `X-Priority`: its urgency's, else (a body queued before
/// bodies said their urgency, `run_finished`) 4 for what stops an agent or
/// the runs and 3 for the rest.
fn priority(b: &WebhookBody) -> u8 {
    if let Some(p) = b.urgency.and_then(|u| u.webhook_priority()) {
        return p;
    }
    let urgent = b
        .event
        .notification()
        .is_some_and(|k| !k.can_mute() || k.is_blocking());
    if urgent {
        4
    } else {
        3
    }
}

/// One delivery's body, exactly as queued.
fn single(d: &DeliveryRow) -> Request {
    let body: Option<WebhookBody> = serde_json::from_str(&d.body).ok();
    Request {
        body: d.body.clone(),
        event: d.event.clone(),
        delivery: d.id.to_string(),
        title: body.as_ref().map(|b| b.title.clone()).unwrap_or_default(),
        priority: body.as_ref().map_or(3, priority),
    }
}

fn batch(members: &[DeliveryRow], bodies: Vec<WebhookBody>, now: Millis) -> Option<Request> {
    let count = bodies.len();
    let first = bodies.first()?.title.clone();
    let mut lines: Vec<String> = bodies
        .iter()
        .take(LISTED)
        .map(|b| {
            let line = format!("{}: {}", b.title, b.text).replace(['\n', '\r'], " ");
            match line.char_indices().nth(LINE) {
                Some((cut, _)) => format!("{}…", &line[..cut]),
                None => line,
            }
        })
        .collect();
    if count > LISTED {
        lines.push(format!("… and {} more", count - LISTED));
    }
    let top = bodies.iter().map(priority).max().unwrap_or(3);
    let events = members
        .iter()
        .zip(bodies)
        .map(|(d, body)| WebhookBatchItem {
            delivery: d.id,
            body,
        })
        .collect();
    let batch = WebhookBatch {
        kind: WebhookBatchKind::Batch,
        count,
        title: format!("{count} events: {first} and {} more", count - 1),
        text: lines.join("\n"),
        events,
        at: now,
    };
    let ids: Vec<String> = members.iter().map(|d| d.id.to_string()).collect();
    Some(Request {
        body: serde_json::to_string(&batch).ok()?,
        event: "batch".to_owned(),
        delivery: ids.join(","),
        title: batch.title,
        priority: top,
    })
}
