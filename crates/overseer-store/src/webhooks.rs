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

/// A row of one of the webhook tables, read by [`select`]: its table, its
/// columns in the order `read` takes them.
trait Stored: Sized {
    const TABLE: &'static str;
    const COLUMNS: &'static [&'static str];
    fn read(r: &Row<'_>) -> rusqlite::Result<Self>;
}

/// A row type read from `table`, each field from the column of its name.
macro_rules! stored {
    ($row:ident in $table:literal { $($field:ident),+ $(,)? }) => {
        impl Stored for $row {
            const TABLE: &'static str = $table;
            const COLUMNS: &'static [&'static str] = &[$(stringify!($field)),+];
            fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
                let mut column = 0;
                Ok($row {
                    $($field: {
                        column += 1;
                        r.get(column - 1)?
                    },)+
                })
            }
        }
    };
}

stored!(WebhookRow in "webhooks" { id, url, secret, events, enabled, created_at });
stored!(DeliveryRow in "webhook_deliveries" {
    id, webhook_id, event, body, status, attempts, next_at, note, created_at,
});
stored!(AttemptRow in "webhook_attempts" { delivery_id, at, status_code, error, duration_ms });

/// The rows of `T`'s table (named `t`) that `tail` (`WHERE ... ORDER BY
/// ...`, a join) picks with `params`.
fn select<T: Stored>(
    store: &Store,
    tail: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<T>, StoreError> {
    let columns: Vec<String> = T::COLUMNS.iter().map(|c| format!("t.{c}")).collect();
    let sql = format!("SELECT {} FROM {} t {tail}", columns.join(", "), T::TABLE);
    store
        .raw_connection()
        .prepare_cached(&sql)
        .and_then(|mut s| s.query_map(params, T::read)?.collect())
        .map_err(|e| StoreError::from_sqlite(e, store.path()))
}

/// The one row of `T` with `id`.
fn by_id<T: Stored>(store: &Store, id: i64, what: &'static str) -> Result<T, StoreError> {
    select(store, "WHERE t.id = ?1", [id])?
        .pop()
        .ok_or(StoreError::NotFound { what, id })
}

impl Store {
    /// Every hook, oldest first.
    pub fn webhooks(&self) -> Result<Vec<WebhookRow>, StoreError> {
        select(self, "ORDER BY t.id", [])
    }

    pub fn webhook(&self, id: i64) -> Result<WebhookRow, StoreError> {
        by_id(self, id, "webhook")
    }

    /// A hook's latest `limit` deliveries, newest first, each with its
    /// attempts in the order they were made.
    pub fn webhook_deliveries(
        &self,
        webhook: i64,
        limit: u32,
    ) -> Result<Vec<(DeliveryRow, Vec<AttemptRow>)>, StoreError> {
        let deliveries: Vec<DeliveryRow> = select(
            self,
            "WHERE t.webhook_id = ?1 ORDER BY t.id DESC LIMIT ?2",
            params![webhook, limit],
        )?;
        deliveries
            .into_iter()
            .map(|d| {
                let attempts = select(self, "WHERE t.delivery_id = ?1 ORDER BY t.id", [d.id])?;
                Ok((d, attempts))
            })
            .collect()
    }

    pub fn delivery(&self, id: i64) -> Result<DeliveryRow, StoreError> {
        by_id(self, id, "webhook delivery")
    }

    /// Pending deliveries of enabled hooks due at `now`, the most overdue
    /// first, at most `limit`.
    pub fn due_deliveries(&self, now: Millis, limit: u32) -> Result<Vec<DeliveryRow>, StoreError> {
        select(
            self,
            "JOIN webhooks w ON w.id = t.webhook_id
             WHERE t.status = 'pending' AND t.next_at <= ?1 AND w.enabled = 1
             ORDER BY t.next_at, t.id LIMIT ?2",
            params![now, limit],
        )
    }

    /// Hook `webhook`'s pending deliveries due at `now`, oldest first, at
    /// most `limit`: what one request to it may carry.
    pub fn due_for_webhook(
        &self,
        webhook: i64,
        now: Millis,
        limit: u32,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        select(
            self,
            "WHERE t.webhook_id = ?1 AND t.status = 'pending' AND t.next_at <= ?2
             ORDER BY t.id LIMIT ?3",
            params![webhook, now, limit],
        )
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
    /// One column of hook `id` (a name this file gives, never input).
    fn webhook_column<T: rusqlite::types::FromSql>(
        &self,
        id: i64,
        column: &str,
    ) -> Result<T, StoreError> {
        self.conn()
            .query_row(
                &format!("SELECT {column} FROM webhooks WHERE id = ?1"),
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or(StoreError::NotFound {
                what: "webhook",
                id,
            })
    }

    /// Audits a change to hook `id` (`value`: what changed, never its
    /// secret).
    fn audit_webhook(
        &mut self,
        id: i64,
        value: String,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.append_audit(
            actor,
            &AuditPayload::Setting {
                key: format!("webhook:{id}"),
                value,
            },
            now,
        )
        .map(|_| ())
    }

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
        self.audit_webhook(id, value, actor, now)?;
        Ok(id)
    }

    /// Removes a hook with its delivery log, audited.
    pub fn remove_webhook(
        &mut self,
        id: i64,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let url: String = self.webhook_column(id, "url")?;
        self.conn()
            .execute("DELETE FROM webhooks WHERE id = ?1", [id])
            .map_err(|e| self.sql(e))?;
        let value = serde_json::json!({"removed": {"url": url}}).to_string();
        self.audit_webhook(id, value, actor, now)?;
        Ok(())
    }

    /// Turns a hook off or on again, audited. Turning it off gives up on
    /// what is pending for it (`failed`, noted as not sent because the hook
    /// was disabled), so that nothing queued before reaches it later; its
    /// secret and its log stay. False when it already was as asked.
    pub fn set_webhook_enabled(
        &mut self,
        id: i64,
        enabled: bool,
        actor: &Actor,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let was: bool = self.webhook_column(id, "enabled")?;
        if was == enabled {
            return Ok(false);
        }
        self.conn()
            .execute(
                "UPDATE webhooks SET enabled = ?2 WHERE id = ?1",
                params![id, enabled],
            )
            .map_err(|e| self.sql(e))?;
        if !enabled {
            self.conn()
                .execute(
                    "UPDATE webhook_deliveries
                     SET status = 'failed', next_at = NULL,
                         note = 'not sent: the hook was disabled'
                     WHERE webhook_id = ?1 AND status = 'pending'",
                    [id],
                )
                .map_err(|e| self.sql(e))?;
        }
        let value = serde_json::json!({ "enabled": enabled }).to_string();
        self.audit_webhook(id, value, actor, now)?;
        Ok(true)
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

    /// Keeps an attempt at `delivery` and what it did to the delivery. A
    /// delivery given up on meanwhile (its hook disabled while the attempt
    /// was in flight) is not made pending again by a failed attempt.
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
                 WHERE id = ?1 AND (status = 'pending' OR ?2 != 'pending')",
            )
            .and_then(|mut s| s.execute(params![attempt.delivery_id, status, next_at, note]))
            .map_err(|e| self.sql(e))?;
        Ok(())
    }
}
