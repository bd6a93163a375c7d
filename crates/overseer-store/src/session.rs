//! External sessions (agents that reach us through hooks or `overseer mcp`)
//! as runs of their own origin, and the asker's key on their gates.

use crate::{Store, StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::{Actor, GateId, Millis, RunEvent, RunId, RunOrigin, RunState, TaskId};
use rusqlite::{params, OptionalExtension};

/// What a new external session's run is made of.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub workspace_id: i64,
    pub origin: RunOrigin,
    pub session_id: &'a str,
    pub cwd: &'a str,
    /// The agent's name on the row (`claude-code`, an MCP client's name).
    pub agent: &'a str,
    pub title: &'a str,
}

impl WriteTx<'_> {
    /// A task and a running run for an external session (it is already
    /// working when it first reaches us: claimed and started at once).
    pub fn open_session_run(
        &mut self,
        s: &NewSession<'_>,
        actor: &Actor,
        now: Millis,
    ) -> Result<(TaskId, RunId), StoreError> {
        let task = self.create_task(s.workspace_id, s.title, "", actor, now)?;
        let run = self.create_run(task, s.agent, actor, now)?;
        self.conn()
            .execute(
                "UPDATE runs SET origin = ?1, session_id = ?2, cwd = ?3 WHERE id = ?4",
                params![s.origin.as_str(), s.session_id, s.cwd, run],
            )
            .map_err(|e| self.sql(e))?;
        self.append_audit(
            actor,
            &AuditPayload::SessionOpened {
                run_id: run,
                origin: s.origin.as_str().to_owned(),
                session_id: s.session_id.to_owned(),
                cwd: s.cwd.to_owned(),
            },
            now,
        )?;
        self.transition(run, RunEvent::Claim, None, actor, now)?;
        self.transition(run, RunEvent::Start, None, actor, now)?;
        Ok((task, run))
    }
}

impl WriteTx<'_> {
    /// An instruction for `run`'s next turn, with its audit record.
    pub fn add_steering(
        &mut self,
        run: RunId,
        text: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.append_audit(
            actor,
            &AuditPayload::UserInstruction {
                run_id: run,
                text: text.to_owned(),
                device: actor.device().cloned(),
            },
            now,
        )?;
        self.conn()
            .execute(
                "INSERT INTO steering(run_id, text, actor, at) VALUES (?1, ?2, ?3, ?4)",
                params![run, text, actor.to_string(), now],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Takes the instructions waiting for `run`, oldest first: each is
    /// given exactly once.
    pub fn take_steering(&mut self, run: RunId, now: Millis) -> Result<Vec<String>, StoreError> {
        let texts: Vec<String> = self
            .conn()
            .prepare_cached(
                "UPDATE steering SET taken_at = ?2 WHERE run_id = ?1 AND taken_at IS NULL
                 RETURNING id, text",
            )
            .and_then(|mut s| {
                let mut rows: Vec<(i64, String)> = s
                    .query_map(params![run, now], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                rows.sort();
                Ok(rows.into_iter().map(|(_, t)| t).collect())
            })
            .map_err(|e| self.sql(e))?;
        Ok(texts)
    }
}

impl Store {
    /// Whether instructions wait for `run`'s next turn.
    pub fn has_steering(&self, run: RunId) -> Result<bool, StoreError> {
        self.raw_connection()
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM steering WHERE run_id = ?1 AND taken_at IS NULL)",
                [run],
                |r| r.get(0),
            )
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }

    /// The latest run of an external session, with its state.
    pub fn session_run(
        &self,
        origin: RunOrigin,
        session_id: &str,
    ) -> Result<Option<(RunId, RunState)>, StoreError> {
        let rows: Vec<(RunId, String)> = self
            .raw_connection()
            .prepare_cached(
                "SELECT id, state FROM runs WHERE origin = ?1 AND session_id = ?2 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_map(params![origin.as_str(), session_id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .collect()
            })
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?;
        rows.into_iter()
            .next()
            .map(|(id, state)| {
                RunState::from_db(&state)
                    .map(|s| (id, s))
                    .ok_or_else(|| StoreError::Corrupt {
                        path: self.path().to_owned(),
                        detail: format!("run {id} has unknown state '{state}'"),
                    })
            })
            .transpose()
    }

    /// The gate of `run` its asker opened with `key`.
    pub fn gate_by_ask_key(&self, run: RunId, key: &str) -> Result<Option<GateId>, StoreError> {
        self.raw_connection()
            .query_row(
                "SELECT id FROM gates WHERE run_id = ?1 AND ask_key = ?2 ORDER BY id DESC LIMIT 1",
                params![run, key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }

    /// Pending gates of external sessions: after a restart their askers
    /// must come back for them, or they are withdrawn.
    pub fn pending_external_gates(&self) -> Result<Vec<GateId>, StoreError> {
        self.raw_connection()
            .prepare_cached(
                "SELECT g.id FROM gates g JOIN runs r ON r.id = g.run_id
                 WHERE g.status = 'pending' AND r.origin != 'launched' ORDER BY g.id",
            )
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }
}
