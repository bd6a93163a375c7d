//! Webhooks as stored: each hook, the deliveries queued for it and each
//! attempt at one. The engine decides what to send and when; this keeps it.
//!
//! Adding and removing a hook is audited (it sends what happens outside the
//! machine), without its secret. Deliveries and attempts are a log, not
//! decisions: they are not audited.

use crate::{Store, StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::{Actor, Millis};
use rusqlite::{params, OptionalExtension, Row};

/// How many finished deliveries of a hook are kept (the oldest go first);
/// pending ones are always kept.
pub const KEPT_DELIVERIES: i64 = 200;

/// A hook as stored. `events` is its event kinds as JSON (the engine reads
/// them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRow {
    pub id: i64,
    pub url: String,
    pub secret: String,
    pub events: String,
    pub enabled: bool,
    pub created_at: Millis,
}

/// One event queued for one hook, with the body that is sent each attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRow {
    pub id: i64,
    pub webhook_id: i64,
    pub event: String,
    pub body: String,
    /// `pending`, `delivered` or `failed` (every attempt failed).
    pub status: String,
    pub attempts: u32,
    /// When the next attempt is due (pending only).
    pub next_at: Option<Millis>,
    /// Why it was given up on, when it was.
    pub note: Option<String>,
    pub created_at: Millis,
}

/// One attempt at a delivery: the receiver's HTTP status, or the error
/// that kept it from answering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub delivery_id: i64,
    pub at: Millis,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// What an attempt did to its delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    Delivered,
    /// Failed; tried again at `next_at`.
    Retry {
        next_at: Millis,
    },
    /// Failed, and no attempts are left.
    GaveUp {
        note: String,
    },
}

const DELIVERY_COLUMNS: &str =
    "id, webhook_id, event, body, status, attempts, next_at, note, created_at";

fn delivery_row(r: &Row<'_>) -> rusqlite::Result<DeliveryRow> {
    Ok(DeliveryRow {
        id: r.get(0)?,
        webhook_id: r.get(1)?,
        event: r.get(2)?,
        body: r.get(3)?,
        status: r.get(4)?,
        attempts: r.get(5)?,
        next_at: r.get(6)?,
        note: r.get(7)?,
        created_at: r.get(8)?,
    })
}

fn webhook_row(r: &Row<'_>) -> rusqlite::Result<WebhookRow> {
    Ok(WebhookRow {
        id: r.get(0)?,
        url: r.get(1)?,
        secret: r.get(2)?,
        events: r.get(3)?,
        enabled: r.get(4)?,
        created_at: r.get(5)?,
    })
}

impl Store {
    /// Every hook, oldest first.
    pub fn webhooks(&self) -> Result<Vec<WebhookRow>, StoreError> {
        self.raw_connection()
            .prepare_cached(
                "SELECT id, url, secret, events, enabled, created_at FROM webhooks ORDER BY id",
            )
            .and_then(|mut s| s.query_map([], webhook_row)?.collect())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }

    pub fn webhook(&self, id: i64) -> Result<WebhookRow, StoreError> {
        self.raw_connection()
            .prepare_cached(
                "SELECT id, url, secret, events, enabled, created_at FROM webhooks WHERE id = ?1",
            )
            .and_then(|mut s| s.query_row([id], webhook_row).optional())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?
            .ok_or(StoreError::NotFound {
                what: "webhook",
                id,
            })
    }

    /// A hook's latest `limit` deliveries, newest first, each with its
    /// attempts in the order they were made.
    pub fn webhook_deliveries(
        &self,
        webhook: i64,
        limit: u32,
    ) -> Result<Vec<(DeliveryRow, Vec<AttemptRow>)>, StoreError> {
        let conn = self.raw_connection();
        let sql_err = |e| StoreError::from_sqlite(e, self.path());
        let deliveries: Vec<DeliveryRow> = conn
            .prepare_cached(&format!(
                "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries
                 WHERE webhook_id = ?1 ORDER BY id DESC LIMIT ?2"
            ))
            .and_then(|mut s| {
                s.query_map(params![webhook, limit], delivery_row)?
                    .collect()
            })
            .map_err(sql_err)?;
        deliveries
            .into_iter()
            .map(|d| {
                let attempts = conn
                    .prepare_cached(
                        "SELECT delivery_id, at, status_code, error, duration_ms
                         FROM webhook_attempts WHERE delivery_id = ?1 ORDER BY id",
                    )
                    .and_then(|mut s| {
                        s.query_map([d.id], |r| {
                            Ok(AttemptRow {
                                delivery_id: r.get(0)?,
                                at: r.get(1)?,
                                status_code: r.get(2)?,
                                error: r.get(3)?,
                                duration_ms: r.get(4)?,
                            })
                        })?
                        .collect()
                    })
                    .map_err(sql_err)?;
                Ok((d, attempts))
            })
            .collect()
    }

    pub fn delivery(&self, id: i64) -> Result<DeliveryRow, StoreError> {
        self.raw_connection()
            .prepare_cached(&format!(
                "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ?1"
            ))
            .and_then(|mut s| s.query_row([id], delivery_row).optional())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?
            .ok_or(StoreError::NotFound {
                what: "webhook delivery",
                id,
            })
    }

    /// Pending deliveries of enabled hooks due at `now`, the most overdue
    /// first, at most `limit`.
    pub fn due_deliveries(&self, now: Millis, limit: u32) -> Result<Vec<DeliveryRow>, StoreError> {
        self.raw_connection()
            .prepare_cached(
                "SELECT d.id, d.webhook_id, d.event, d.body, d.status, d.attempts, d.next_at,
                        d.note, d.created_at
                 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                 WHERE d.status = 'pending' AND d.next_at <= ?1 AND w.enabled = 1
                 ORDER BY d.next_at, d.id LIMIT ?2",
            )
            .and_then(|mut s| s.query_map(params![now, limit], delivery_row)?.collect())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }

    /// When the next pending delivery of an enabled hook is due.
    pub fn next_delivery_at(&self) -> Result<Option<Millis>, StoreError> {
        self.raw_connection()
            .prepare_cached(
                "SELECT MIN(d.next_at) FROM webhook_deliveries d
                 JOIN webhooks w ON w.id = d.webhook_id
                 WHERE d.status = 'pending' AND w.enabled = 1",
            )
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }
}

impl WriteTx<'_> {
    /// Adds a hook (validated by the caller), audited without its secret.
    pub fn add_webhook(
        &mut self,
        url: &str,
        secret: &str,
        events: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<i64, StoreError> {
        self.conn()
            .execute(
                "INSERT INTO webhooks (url, secret, events, enabled, created_at)
                 VALUES (?1, ?2, ?3, 1, ?4)",
                params![url, secret, events, now],
            )
            .map_err(|e| self.sql(e))?;
        let id = self.conn().last_insert_rowid();
        let value = serde_json::json!({"added": {"url": url, "events": events}}).to_string();
        self.append_audit(
            actor,
            &AuditPayload::Setting {
                key: format!("webhook:{id}"),
                value,
            },
            now,
        )?;
        Ok(id)
    }

    /// Removes a hook with its delivery log, audited.
    pub fn remove_webhook(
        &mut self,
        id: i64,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let url: String = self
            .conn()
            .query_row("SELECT url FROM webhooks WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or(StoreError::NotFound {
                what: "webhook",
                id,
            })?;
        self.conn()
            .execute("DELETE FROM webhooks WHERE id = ?1", [id])
            .map_err(|e| self.sql(e))?;
        let value = serde_json::json!({"removed": {"url": url}}).to_string();
        self.append_audit(
            actor,
            &AuditPayload::Setting {
                key: format!("webhook:{id}"),
                value,
            },
            now,
        )?;
        Ok(())
    }

    /// Queues `body` for `webhook` at `now`, its first attempt due at
    /// `due`. None when a delivery with the same `event_key` was queued for
    /// this hook before (whatever became of it). Keeps the hook's
    /// [`KEPT_DELIVERIES`] latest finished ones.
    pub fn queue_delivery(
        &mut self,
        webhook: i64,
        event: &str,
        event_key: Option<&str>,
        body: &str,
        now: Millis,
        due: Millis,
    ) -> Result<Option<i64>, StoreError> {
        let added = self
            .conn()
            .prepare_cached(
                "INSERT INTO webhook_deliveries
                     (webhook_id, event, event_key, body, status, attempts, next_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, 'pending', 0, ?6, ?5)
                 ON CONFLICT (webhook_id, event_key) DO NOTHING",
            )
            .and_then(|mut s| s.execute(params![webhook, event, event_key, body, now, due]))
            .map_err(|e| self.sql(e))?;
        if added == 0 {
            return Ok(None);
        }
        let id = self.conn().last_insert_rowid();
        self.conn()
            .prepare_cached(
                "DELETE FROM webhook_deliveries
                 WHERE webhook_id = ?1 AND status != 'pending' AND id < (
                     SELECT MIN(id) FROM (
                         SELECT id FROM webhook_deliveries WHERE webhook_id = ?1
                         ORDER BY id DESC LIMIT ?2))",
            )
            .and_then(|mut s| s.execute(params![webhook, KEPT_DELIVERIES]))
            .map_err(|e| self.sql(e))?;
        Ok(Some(id))
    }

    /// Keeps an attempt at `delivery` and what it did to the delivery.
    pub fn record_attempt(
        &mut self,
        attempt: &AttemptRow,
        outcome: &AttemptOutcome,
    ) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "INSERT INTO webhook_attempts (delivery_id, at, status_code, error, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    attempt.delivery_id,
                    attempt.at,
                    attempt.status_code,
                    attempt.error,
                    attempt.duration_ms
                ])
            })
            .map_err(|e| self.sql(e))?;
        let (status, next_at, note) = match outcome {
            AttemptOutcome::Delivered => ("delivered", None, None),
            AttemptOutcome::Retry { next_at } => ("pending", Some(*next_at), None),
            AttemptOutcome::GaveUp { note } => ("failed", None, Some(note.as_str())),
        };
        self.conn()
            .prepare_cached(
                "UPDATE webhook_deliveries
                 SET attempts = attempts + 1, status = ?2, next_at = ?3, note = ?4
                 WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![attempt.delivery_id, status, next_at, note]))
            .map_err(|e| self.sql(e))?;
        Ok(())
    }
}
