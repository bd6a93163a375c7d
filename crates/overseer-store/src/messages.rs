//! Agent-to-agent messages through the hub: stored with their audit record
//! in the same transaction, read back per run or all together.

use crate::{Store, StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::message::{MessageStatus, MessageTo, MessageView};
use overseer_core::{Actor, Millis, RunId, TaskId};
use rusqlite::{params, OptionalExtension, Row};

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
                             blocked_reason, at,
                             (SELECT name FROM workspaces WHERE workspaces.id = messages.to_workspace),
                             to_task
                      FROM messages";

fn row(r: &Row<'_>) -> rusqlite::Result<MessageView> {
    let recipient: String = r.get(3)?;
    let to_run: Option<RunId> = r.get(4)?;
    let to_workspace: Option<String> = r.get(10)?;
    let to_task: Option<TaskId> = r.get(11)?;
    let to = match (recipient.as_str(), to_run, to_workspace, to_task) {
        ("run", Some(run), _, _) => MessageTo::Run { run },
        ("supervisor", ..) => MessageTo::Supervisor,
        ("user", ..) => MessageTo::User,
        ("workspace", _, Some(workspace), _) => MessageTo::Workspace { workspace },
        ("task", _, _, Some(task)) => MessageTo::Task { task },
        // 'broadcast', and what the CHECK constraints keep out anyway.
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

fn recipient(to: &MessageTo) -> (&'static str, Option<RunId>) {
    match to {
        MessageTo::Supervisor => ("supervisor", None),
        MessageTo::User => ("user", None),
        MessageTo::Broadcast => ("broadcast", None),
        MessageTo::Workspace { .. } => ("workspace", None),
        MessageTo::Task { .. } => ("task", None),
        MessageTo::Run { run } => ("run", Some(*run)),
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
        let (to, to_run) = recipient(&m.to);
        let (to_workspace, to_task) = match &m.to {
            MessageTo::Workspace { workspace } => {
                let id: Option<i64> = self
                    .conn()
                    .query_row(
                        "SELECT id FROM workspaces WHERE name = ?1",
                        [workspace],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(|e| self.sql(e))?;
                let id = id.ok_or_else(|| {
                    StoreError::InvalidInput(format!(
                        "no workspace named {workspace:?}: see `overseer workspace list`"
                    ))
                })?;
                (Some((id, workspace.clone())), None)
            }
            MessageTo::Task { task } => (None, Some(*task)),
            _ => (None, None),
        };
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
                to_workspace: to_workspace.as_ref().map(|(_, name)| name.clone()),
                to_task,
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
                                      blocked_reason, at, audit_seq, to_workspace, to_task)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
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
                    seq,
                    to_workspace.as_ref().map(|(id, _)| *id),
                    to_task
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
    /// sent, those addressed to it and the delivered broadcasts (to every
    /// run, or to its workspace or its task; an agent's broadcast to every
    /// run, stored before agents' broadcasts were scoped, only when it came
    /// from a run of the same workspace).
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
                        OR (status = 'delivered' AND ((recipient = 'broadcast'
                                -- An agent's broadcast stored before agents' were
                                -- scoped reaches its own workspace only.
                                AND (from_run IS NULL
                                     OR (SELECT t.workspace_id FROM runs r
                                         JOIN tasks t ON t.id = r.task_id
                                         WHERE r.id = messages.from_run)
                                      = (SELECT t.workspace_id FROM runs r
                                         JOIN tasks t ON t.id = r.task_id
                                         WHERE r.id = ?2)))
                            OR (recipient = 'task'
                                AND to_task = (SELECT task_id FROM runs WHERE id = ?2))
                            OR (recipient = 'workspace'
                                AND to_workspace = (SELECT t.workspace_id FROM runs r
                                                    JOIN tasks t ON t.id = r.task_id
                                                    WHERE r.id = ?2)))))
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
