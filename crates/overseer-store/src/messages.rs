//! Agent-to-agent messages through the hub: stored with their audit record
//! in the same transaction, read back per run or all together.

use crate::{Store, StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::message::{MessageStatus, MessageTo, MessageView};
use overseer_core::{Actor, Millis, RunId};
use rusqlite::{params, Row};

/// A message as sent, before it is stored.
#[derive(Debug, Clone)]
pub struct NewMessage<'a> {
    pub from_run: Option<RunId>,
    pub to: MessageTo,
    pub body: &'a str,
    pub correlation_id: Option<&'a str>,
    /// Why the policy held it back (None: delivered).
    pub blocked: Option<&'a str>,
}

const SELECT: &str = "SELECT id, from_run, sender, recipient, to_run, body, correlation_id, status,
                             blocked_reason, at
                      FROM messages";

fn row(r: &Row<'_>) -> rusqlite::Result<MessageView> {
    let recipient: String = r.get(3)?;
    let to_run: Option<RunId> = r.get(4)?;
    let to = match (recipient.as_str(), to_run) {
        ("run", Some(run)) => MessageTo::Run { run },
        ("supervisor", _) => MessageTo::Supervisor,
        ("user", _) => MessageTo::User,
        // 'broadcast', and what the CHECK constraint keeps out anyway.
        _ => MessageTo::Broadcast,
    };
    let status: String = r.get(7)?;
    Ok(MessageView {
        id: r.get(0)?,
        from_run: r.get(1)?,
        from: r.get(2)?,
        to,
        body: r.get(5)?,
        correlation_id: r.get(6)?,
        status: if status == "blocked" {
            MessageStatus::Blocked
        } else {
            MessageStatus::Delivered
        },
        blocked_reason: r.get(8)?,
        at: r.get(9)?,
    })
}

fn recipient(to: MessageTo) -> (&'static str, Option<RunId>) {
    match to {
        MessageTo::Supervisor => ("supervisor", None),
        MessageTo::User => ("user", None),
        MessageTo::Broadcast => ("broadcast", None),
        MessageTo::Run { run } => ("run", Some(run)),
    }
}

impl WriteTx<'_> {
    /// Stores a message with its audit record.
    pub fn insert_message(
        &mut self,
        m: &NewMessage<'_>,
        actor: &Actor,
        now: Millis,
    ) -> Result<MessageView, StoreError> {
        let (to, to_run) = recipient(m.to);
        let status = if m.blocked.is_some() {
            "blocked"
        } else {
            "delivered"
        };
        let seq = self.append_audit(
            actor,
            &AuditPayload::Message {
                from_run: m.from_run,
                to: to.to_owned(),
                to_run,
                body: m.body.to_owned(),
                correlation_id: m.correlation_id.map(str::to_owned),
                status: status.to_owned(),
                blocked_reason: m.blocked.map(str::to_owned),
            },
            now,
        )?;
        self.conn()
            .execute(
                "INSERT INTO messages(from_run, sender, recipient, to_run, body, correlation_id, status,
                                      blocked_reason, at, audit_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    m.from_run,
                    actor.to_string(),
                    to,
                    to_run,
                    m.body,
                    m.correlation_id,
                    status,
                    m.blocked,
                    now,
                    seq
                ],
            )
            .map_err(|e| self.sql(e))?;
        let id = self.conn().last_insert_rowid();
        let message: MessageView = self
            .conn()
            .query_row(&format!("{SELECT} WHERE id = ?1"), [id], row)
            .map_err(|e| self.sql(e))?;
        self.happened(overseer_core::EngineEvent::MessagePosted {
            message: message.clone(),
        });
        Ok(message)
    }
}

impl Store {
    /// Messages after `after`, oldest first: all of them, or those `run`
    /// sent, those addressed to it and the delivered broadcasts.
    pub fn messages(
        &self,
        run: Option<RunId>,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<MessageView>, StoreError> {
        let after = after.unwrap_or(0);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let conn = self.raw_connection();
        let result = match run {
            Some(run) => conn
                .prepare_cached(&format!(
                    "{SELECT} WHERE id > ?1 AND (from_run = ?2 OR to_run = ?2
                        OR (recipient = 'broadcast' AND status = 'delivered'))
                     ORDER BY id LIMIT ?3"
                ))
                .and_then(|mut s| s.query_map(params![after, run, limit], row)?.collect()),
            None => conn
                .prepare_cached(&format!("{SELECT} WHERE id > ?1 ORDER BY id LIMIT ?2"))
                .and_then(|mut s| s.query_map(params![after, limit], row)?.collect()),
        };
        result.map_err(|e| StoreError::from_sqlite(e, self.path()))
    }
}
