//! Where each launched run is (`overseer_core::progress`), kept so that a
//! restarted engine carries the run on, and the gates it finds waiting.

use crate::{read, Store, StoreError, WriteTx};
use overseer_core::progress::Checkpoint;
use overseer_core::{GateId, GateView, Millis, RunId};
use rusqlite::{params, OptionalExtension};

impl Store {
    /// The run's progress as its driver last wrote it (None: it never did).
    pub fn run_checkpoint(&self, run: RunId) -> Result<Option<Checkpoint>, StoreError> {
        let text: Option<String> = self
            .raw_connection()
            .prepare_cached("SELECT checkpoint FROM run_progress WHERE run_id = ?1")
            .and_then(|mut s| s.query_row([run], |r| r.get(0)).optional())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| {
                StoreError::InvalidInput(format!(
                    "run {run}'s progress in {} cannot be read ({e}); resume the run with `overseer runs resume {run}`",
                    self.path().display()
                ))
            })
        })
        .transpose()
    }

    /// The run's gates a restarted driver must look at, in the order they
    /// were opened: the pending ones, decided ones nothing acted on yet, and
    /// the driver's own (plan, step review, pause, deviation) opened after
    /// `after_gate` even if acted on (the engine may have stopped between
    /// acting on one and writing where the run went). With each, whether it
    /// was opened for an ask of the agent's own MCP tools (it has a key).
    pub fn gates_to_resume(
        &self,
        run: RunId,
        after_gate: Option<GateId>,
    ) -> Result<Vec<(GateView, bool)>, StoreError> {
        let ids: Vec<(i64, bool)> = self
            .raw_connection()
            .prepare_cached(
                "SELECT id, ask_key IS NOT NULL FROM gates
                 WHERE run_id = ?1 AND (status = 'pending' OR effected_at IS NULL
                     OR (id > ?2 AND ask_key IS NULL
                         AND kind IN ('plan', 'step_review', 'supervisor_pause', 'deviation')))
                 ORDER BY id",
            )
            .and_then(|mut s| {
                s.query_map(
                    params![run, after_gate.unwrap_or(overseer_core::GateId(0))],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?
                .collect()
            })
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?;
        ids.into_iter()
            .map(|(id, keyed)| {
                Ok((
                    read::gate(
                        self.raw_connection(),
                        self.path(),
                        overseer_core::GateId(id),
                    )?,
                    keyed,
                ))
            })
            .collect()
    }
}

impl WriteTx<'_> {
    /// Keeps the rules the user's "always" answers added for the rest of
    /// `run`, at once (not at the next turn): a restart keeps them.
    pub fn set_run_always(
        &mut self,
        run: RunId,
        always: &[overseer_core::rules::Rule],
        now: Millis,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(always)
            .map_err(|e| StoreError::InvalidInput(format!("run {run}'s rules: {e}")))?;
        self.conn()
            .execute(
                "UPDATE run_progress SET checkpoint = json_set(checkpoint, '$.always', json(?2)), at = ?3
                 WHERE run_id = ?1",
                params![run, text, now],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Keeps where `run` is. Not an audit record: it says where the driver
    /// is, and every decision it acted on has its own.
    pub fn set_run_checkpoint(
        &mut self,
        run: RunId,
        checkpoint: &Checkpoint,
        now: Millis,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(checkpoint)
            .map_err(|e| StoreError::InvalidInput(format!("run {run}'s progress: {e}")))?;
        self.conn()
            .execute(
                "INSERT INTO run_progress (run_id, checkpoint, at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(run_id) DO UPDATE SET checkpoint = excluded.checkpoint, at = excluded.at",
                params![run, text, now],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }
}
