//! The one way to change the database: a [`WriteTx`] inside `BEGIN IMMEDIATE`.
//!
//! Every mutation appends its audit record in the same transaction, so either
//! both the change and its record are committed, or neither.

use crate::audit::{self, AuditRecord, Checkpoint};
use crate::{read, Keyring, StoreError};
use overseer_core::audit::AuditPayload;
use overseer_core::{
    apply, check_decision, Actor, GateId, GateKind, GateOption, GateView, Millis, RunEvent, RunId,
    RunState, RunView, TaskId, Transition,
};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// An open write transaction (one writer's savepoint inside a group commit,
/// see [`crate::writer`]). An error returned from the closure rolls back
/// everything done through it.
pub struct WriteTx<'a> {
    tx: &'a Connection,
    keyring: &'a Keyring,
    path: PathBuf,
    head_seq: i64,
    head_hash: String,
    /// What this writer changed, as the events it causes ([`crate::changes`]).
    outbox: crate::changes::Outbox,
}

impl<'a> WriteTx<'a> {
    /// A writer inside an open transaction whose audit log ends at
    /// `(head_seq, head_hash)`, read inside that IMMEDIATE transaction.
    pub(crate) fn new(
        tx: &'a Connection,
        keyring: &'a Keyring,
        path: &Path,
        head_seq: i64,
        head_hash: String,
    ) -> Self {
        WriteTx {
            tx,
            keyring,
            path: path.to_owned(),
            head_seq,
            head_hash,
            outbox: Default::default(),
        }
    }

    /// Where the audit log ends after this writer's records.
    pub(crate) fn into_head(self) -> (i64, String) {
        (self.head_seq, self.head_hash)
    }

    pub(crate) fn outbox(&mut self) -> &mut crate::changes::Outbox {
        &mut self.outbox
    }

    /// The open transaction, for the other write modules of this crate.
    pub(crate) fn conn(&self) -> &'a Connection {
        self.tx
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The key that signs this transaction's records (and checks older ones).
    pub(crate) fn keyring(&self) -> &Keyring {
        self.keyring
    }

    pub(crate) fn sql(&self, e: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(e, &self.path)
    }

    /// A foreign-key failure on insert means the parent row does not exist.
    fn missing_parent(&self, e: rusqlite::Error, what: &'static str, id: i64) -> StoreError {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ConstraintViolation) => StoreError::NotFound { what, id },
            _ => self.sql(e),
        }
    }

    /// Appends a signed record chained to the previous one; returns its seq.
    pub fn append_audit(
        &mut self,
        actor: &Actor,
        payload: &AuditPayload,
        now: Millis,
    ) -> Result<i64, StoreError> {
        self.append_untyped_audit(actor, &payload.to_value(), now)
    }

    /// Appends a record whose payload is of no kind Overseer writes (for
    /// tests of the log itself); everything else goes through
    /// [`Self::append_audit`].
    #[doc(hidden)]
    pub fn append_untyped_audit(
        &mut self,
        actor: &Actor,
        payload: &serde_json::Value,
        now: Millis,
    ) -> Result<i64, StoreError> {
        let record: AuditRecord = audit::seal(
            self.keyring,
            self.head_seq,
            &self.head_hash,
            payload,
            &actor.to_string(),
            now,
        );
        audit::insert(self.tx, &record).map_err(|e| self.sql(e))?;
        self.head_seq = record.seq;
        self.head_hash = record.record_hash;
        Ok(record.seq)
    }

    pub(crate) fn write_checkpoint(&mut self, now: Millis) -> Result<Checkpoint, StoreError> {
        let msg = audit::checkpoint_message(self.head_seq, &self.head_hash, now);
        let cp = Checkpoint {
            count: self.head_seq,
            head_hash: self.head_hash.clone(),
            at: now,
            signature: self.keyring.sign(&msg),
        };
        self.tx
            .execute(
                "INSERT INTO audit_checkpoints(count, head_hash, at, signature) VALUES (?1, ?2, ?3, ?4)",
                params![cp.count, cp.head_hash, cp.at, cp.signature],
            )
            .map_err(|e| self.sql(e))?;
        Ok(cp)
    }

    /// Registers a workspace (or returns the existing one of that name).
    pub fn ensure_workspace(
        &mut self,
        name: &str,
        path: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<i64, StoreError> {
        let existing: Option<i64> = self
            .tx
            .query_row("SELECT id FROM workspaces WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        if let Some(id) = existing {
            return Ok(id);
        }
        self.tx
            .execute(
                "INSERT INTO workspaces(name, path, created_at) VALUES (?1, ?2, ?3)",
                params![name, path, now],
            )
            .map_err(|e| self.sql(e))?;
        let id = self.tx.last_insert_rowid();
        self.append_audit(
            actor,
            &AuditPayload::WorkspaceAdded {
                workspace_id: id,
                name: name.to_owned(),
                path: path.to_owned(),
            },
            now,
        )?;
        self.workspace_changed(name.to_owned());
        Ok(id)
    }

    pub fn create_task(
        &mut self,
        workspace_id: i64,
        title: &str,
        prompt: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<TaskId, StoreError> {
        if title.trim().is_empty() {
            return Err(StoreError::InvalidInput("a task needs a title".to_owned()));
        }
        self.tx
            .execute(
                "INSERT INTO tasks(workspace_id, title, prompt, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![workspace_id, title, prompt, now],
            )
            .map_err(|e| self.missing_parent(e, "workspace", workspace_id))?;
        let id = self.tx.last_insert_rowid();
        self.append_audit(
            actor,
            &AuditPayload::TaskCreated {
                task_id: TaskId(id),
                workspace_id,
                title: title.to_owned(),
            },
            now,
        )?;
        self.task_created(overseer_core::TaskId(id));
        Ok(overseer_core::TaskId(id))
    }

    /// Puts `task` in `stage` (which `[stages.NAME]` auto-advance applies).
    pub fn set_task_stage(
        &mut self,
        task: TaskId,
        stage: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let stage = stage.trim();
        if stage.is_empty() || stage.len() > 64 || stage.chars().any(char::is_control) {
            return Err(StoreError::InvalidInput(
                "a stage is a short name, e.g. docs or release".to_owned(),
            ));
        }
        self.tx
            .execute(
                "UPDATE tasks SET stage = ?1 WHERE id = ?2",
                params![stage, task],
            )
            .map_err(|e| self.sql(e))?;
        self.append_audit(
            actor,
            &AuditPayload::TaskStage {
                task_id: task,
                stage: stage.to_owned(),
            },
            now,
        )?;
        self.task_changed(task);
        Ok(())
    }

    /// Creates a queued run of `task` for `agent`.
    pub fn create_run(
        &mut self,
        task_id: TaskId,
        agent: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<RunId, StoreError> {
        let state = RunState::Queued.to_db();
        self.tx
            .execute(
                "INSERT INTO runs(task_id, agent, state, state_since, created_at) VALUES (?1, ?2, ?3, ?4, ?4)",
                params![task_id, agent, state, now],
            )
            .map_err(|e| self.missing_parent(e, "task", task_id.into()))?;
        let id = self.tx.last_insert_rowid();
        self.append_audit(
            actor,
            &AuditPayload::RunCreated {
                run_id: RunId(id),
                task_id,
                agent: agent.to_owned(),
                state: state.to_owned(),
            },
            now,
        )?;
        self.run_changed(overseer_core::RunId(id), true);
        Ok(overseer_core::RunId(id))
    }

    /// Applies `event` to the run as a compare-and-set on its current state,
    /// with its audit record. Entering pending_review opens the run's
    /// merge-review gate; being released closes any gate still pending.
    pub fn transition(
        &mut self,
        run_id: RunId,
        event: RunEvent,
        note: Option<&str>,
        actor: &Actor,
        now: Millis,
    ) -> Result<Transition, StoreError> {
        let review = overseer_core::MergeReviewGate::default();
        self.transition_reviewing(run_id, event, note, actor, now, &review)
    }

    /// [`WriteTx::transition`], with what the merge review it opens (when
    /// the run enters pending_review) says about the run's diff.
    pub fn transition_reviewing(
        &mut self,
        run_id: RunId,
        event: RunEvent,
        note: Option<&str>,
        actor: &Actor,
        now: Millis,
        review: &overseer_core::MergeReviewGate,
    ) -> Result<Transition, StoreError> {
        let current: String = self
            .tx
            .query_row("SELECT state FROM runs WHERE id = ?1", [run_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or(StoreError::NotFound {
                what: "run",
                id: run_id.into(),
            })?;
        let from = RunState::from_db(&current).ok_or_else(|| StoreError::Corrupt {
            path: self.path.clone(),
            detail: format!("run {run_id} has unknown state '{current}'"),
        })?;
        let t = apply(from, event, now)
            .map_err(|source| StoreError::InvalidTransition { run_id, source })?;
        let changed = self
            .tx
            .execute(
                "UPDATE runs SET state = ?1, state_since = ?2, release_note = coalesce(?3, release_note)
                 WHERE id = ?4 AND state = ?5",
                params![t.to.to_db(), now, note, run_id, t.from.to_db()],
            )
            .map_err(|e| self.sql(e))?;
        if changed != 1 {
            return Err(StoreError::Conflict { run_id });
        }
        self.run_changed(run_id, true);
        let seq = self.append_audit(
            actor,
            &AuditPayload::RunTransition {
                run_id,
                from: t.from.to_db().to_owned(),
                to: t.to.to_db().to_owned(),
                event: t.event.name().to_owned(),
                note: note.map(str::to_owned),
                device: actor.device().cloned(),
            },
            now,
        )?;
        self.tx
            .execute(
                "INSERT INTO run_transitions(run_id, from_state, to_state, event, actor, at, audit_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![run_id, t.from.to_db(), t.to.to_db(), t.event.name(), actor.to_string(), now, seq],
            )
            .map_err(|e| self.sql(e))?;
        if t.to == RunState::PendingReview {
            self.open_gate(
                run_id,
                "Review and merge the run's changes",
                &overseer_core::merge_review_options(),
                &overseer_core::GateBody::MergeReview(review.clone()),
                &Actor::Engine,
                now,
            )?;
        }
        if t.to.is_released() {
            self.close_pending_gates(run_id, now)?;
        }
        Ok(t)
    }

    /// Writes a pending gate. It exists in the database before anyone waits.
    #[allow(clippy::too_many_arguments)]
    pub fn open_gate(
        &mut self,
        run_id: RunId,
        title: &str,
        options: &[GateOption],
        body: &overseer_core::GateBody,
        actor: &Actor,
        now: Millis,
    ) -> Result<GateId, StoreError> {
        let kind = body.kind();
        let payload = body.payload_json();
        // Every gate source (ACP, the demo, hooks and MCP to come) offers
        // only its kind's typed choices, so the engine's exhaustive matches
        // cover whatever a human picks.
        for o in options {
            overseer_core::GateChoice::parse(kind, &o.id).map_err(|e| {
                StoreError::InvalidInput(format!(
                    "a {} gate cannot offer `{}`: {e}",
                    kind.as_str(),
                    o.id
                ))
            })?;
        }
        let options_json = serde_json::to_string(options)
            .map_err(|e| StoreError::InvalidInput(format!("gate options: {e}")))?;
        self.tx
            .execute(
                "INSERT INTO gates(run_id, kind, status, title, options, payload, opened_at)
                 VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6)",
                params![
                    run_id,
                    kind.as_str(),
                    title,
                    options_json,
                    payload.to_string(),
                    now
                ],
            )
            .map_err(|e| self.missing_parent(e, "run", run_id.into()))?;
        let id = self.tx.last_insert_rowid();
        self.append_audit(
            actor,
            &AuditPayload::GateOpened {
                gate_id: GateId(id),
                run_id,
                kind: kind.as_str().to_owned(),
                title: title.to_owned(),
                options: serde_json::to_value(options)
                    .map_err(|e| StoreError::InvalidInput(format!("gate options: {e}")))?,
                payload: payload.clone(),
            },
            now,
        )?;
        self.gate_opened(overseer_core::GateId(id), run_id, kind);
        Ok(overseer_core::GateId(id))
    }

    /// Decides a pending gate: compare-and-set `pending -> decided`, with the
    /// decision in its history and the audit log. Deciding a decided gate
    /// returns [`StoreError::AlreadyDecided`] and changes nothing.
    ///
    /// Humans and the supervisor vote ([`WriteTx::vote`]): their decision is
    /// resolved against the gate's co-signing and override rules; a gate that
    /// waits for a co-signature stays pending.
    pub fn decide_gate(
        &mut self,
        gate_id: GateId,
        option: &str,
        context: Option<&str>,
        actor: &Actor,
        now: Millis,
    ) -> Result<GateView, StoreError> {
        if matches!(
            actor,
            Actor::User(_) | Actor::Person { .. } | Actor::Supervisor(_)
        ) {
            let input = crate::decision::DecisionInput {
                option: Some(option.to_owned()),
                context: context.map(str::to_owned),
                ..Default::default()
            };
            let out = self.vote(gate_id, actor, &input, now)?;
            if out.late {
                // A decision is not a vote: refused (and nothing kept) once
                // a human decided; the supervisor's late vote goes through
                // `vote`, which records it.
                let by = out.gate.decision.as_ref();
                return Err(StoreError::AlreadyDecided {
                    gate_id,
                    option: by.map_or_else(String::new, |d| d.option.clone()),
                    by: by.map_or_else(String::new, |d| d.who_and_when()),
                });
            }
            return Ok(out.gate);
        }
        self.reconcile_gate(gate_id, now)?;
        let gate = read::gate(self.tx, &self.path, gate_id)?;
        if let Some(d) = &gate.decision {
            return Err(StoreError::AlreadyDecided {
                gate_id,
                option: d.option.clone(),
                by: d.who_and_when(),
            });
        }
        check_decision(&gate.options, option, context)
            .map_err(|source| StoreError::InvalidDecision { gate_id, source })?;
        self.settle_gate(&gate, option, context, actor, now)?;
        read::gate(self.tx, &self.path, gate_id)
    }

    pub(crate) fn settle_gate(
        &mut self,
        gate: &GateView,
        option: &str,
        context: Option<&str>,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let changed = self
            .tx
            .execute(
                "UPDATE gates SET status = 'decided', decided_option = ?1, decided_context = ?2,
                        decided_by = ?3, decided_at = ?4, decided_device = ?6
                 WHERE id = ?5 AND status = 'pending'",
                params![
                    option,
                    context,
                    actor.to_string(),
                    now,
                    gate.id,
                    crate::decision::device_text(actor.device())
                ],
            )
            .map_err(|e| self.sql(e))?;
        if changed != 1 {
            // Someone decided first: say who and what, from the row itself.
            let current = crate::read::gate(self.conn(), self.path(), gate.id)?;
            let (option, by) = current
                .decision
                .map(|d| (d.option.clone(), d.who_and_when()))
                .unwrap_or_else(|| ("(being decided)".to_owned(), "another writer".to_owned()));
            return Err(StoreError::AlreadyDecided {
                gate_id: gate.id,
                option,
                by,
            });
        }
        self.record_gate_decision(gate, option, context, actor, None, now)
    }

    /// A gate's decision (its row already written): its signed
    /// `gate_decided` record, naming the device a person decided through,
    /// and its history row saying the same; told once committed.
    pub(crate) fn record_gate_decision(
        &mut self,
        gate: &GateView,
        option: &str,
        context: Option<&str>,
        actor: &Actor,
        overrides: Option<overseer_core::audit::Overrides>,
        now: Millis,
    ) -> Result<(), StoreError> {
        let seq = self.append_audit(
            actor,
            &AuditPayload::GateDecided {
                gate_id: gate.id,
                run_id: gate.run_id,
                kind: gate.kind().as_str().to_owned(),
                option: option.to_owned(),
                context: context.map(str::to_owned),
                overrides,
                device: actor.device().cloned(),
            },
            now,
        )?;
        self.tx
            .execute(
                "INSERT INTO gate_decisions(gate_id, option, context, actor, at, audit_seq, device)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    gate.id,
                    option,
                    context,
                    actor.to_string(),
                    now,
                    seq,
                    crate::decision::device_text(actor.device())
                ],
            )
            .map_err(|e| self.sql(e))?;
        self.gate_decided(gate.id, gate.run_id, gate.kind());
        Ok(())
    }

    /// A released run waits on nothing: its still-pending gates are closed by
    /// the engine as `cancelled`, each with its audit record.
    fn close_pending_gates(&mut self, run_id: RunId, now: Millis) -> Result<(), StoreError> {
        let pending: Vec<GateView> = read::pending_gates_of_run(self.tx, &self.path, run_id)?;
        for g in pending {
            self.settle_gate(&g, "cancelled", Some("run released"), &Actor::Engine, now)?;
        }
        Ok(())
    }

    /// The pending gate of `kind` on `run_id`, if any.
    pub fn pending_gate(
        &self,
        run_id: RunId,
        kind: GateKind,
    ) -> Result<Option<GateId>, StoreError> {
        read::pending_gate_of(self.tx, &self.path, run_id, kind)
    }

    pub fn run(&self, id: RunId) -> Result<RunView, StoreError> {
        read::run(self.tx, &self.path, id)
    }

    pub fn gate(&self, id: GateId) -> Result<GateView, StoreError> {
        read::gate(self.tx, &self.path, id)
    }
}
