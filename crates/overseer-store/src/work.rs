//! What runs work on: workspaces (registered git repositories and their
//! settings), each run's repository (where, on which branch, from which base
//! commit, and the commit its review showed) and options, each merge's record
//! (its intent written before git runs), and the run's activity timeline
//! (agent messages, plans, tool calls, sensor results).
//!
//! Timeline entries are not audit records: they are what the agent reported,
//! kept for the run detail view. Decisions and state changes stay in the audit
//! log.

use crate::{Store, StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::confidence::ApprovalMode;
use overseer_core::rules::{RuleSet, SessionMode};
use overseer_core::supervision::SupervisorPolicy;
use overseer_core::{Actor, Millis, RunId, TaskId};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

/// Per-workspace settings, stored as JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct WorkspaceSettings {
    /// Check commands run in the worktree after the agent ends its work.
    #[serde(default)]
    pub sensors: Vec<String>,
    /// Merge without review when every sensor passes. `None`: the global default.
    #[serde(default)]
    pub auto_advance: Option<bool>,
    /// Permission rules for every task of the workspace.
    #[serde(default, skip_serializing_if = "RuleSet::is_empty")]
    pub permissions: RuleSet,
    /// The delegated supervisor for the workspace (off when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<SupervisorPolicy>,
    /// Unattended retries of a failed step (off when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub retry: Option<overseer_core::RetryPolicy>,
    /// The most each run of the workspace may cost (in the currency its
    /// agent reports), unless its task sets its own: reaching it pauses the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub max_cost: Option<f64>,
    /// Two-person merges: a run merges into the base branch only on the
    /// approval of a person who neither started it nor is the supervisor.
    #[serde(default)]
    pub two_person_merge: bool,
}

/// Per-task settings, which override the workspace's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct TaskSettings {
    /// Rules checked before the workspace's.
    #[serde(default, skip_serializing_if = "RuleSet::is_empty")]
    pub permissions: RuleSet,
    /// When a finished step may proceed without a human.
    #[serde(default)]
    pub approval: ApprovalMode,
    /// Seconds a medium-confidence step waits before it proceeds on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_proceed_seconds: Option<u64>,
    /// A read-only consultation: writes denied, shell asks, known-safe allowed.
    #[serde(default)]
    pub session: SessionMode,
    /// Replaces the workspace's supervisor policy for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<SupervisorPolicy>,
    /// Replaces the agent profile's planning strategy for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub plan: Option<overseer_core::agent::PlanStrategy>,
    /// Replaces the agent profile's supervised mode for this task (checked
    /// like the profile's: a mode that acts unasked is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub mode: Option<String>,
    /// An agent's question waits this long, then takes its defaults (or is
    /// declined when it has none), so an unattended run does not stall.
    /// None: questions wait for the user (they are blocking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub question_timeout_seconds: Option<u64>,
    /// Replaces the workspace's retry policy for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub retry: Option<overseer_core::RetryPolicy>,
    /// The most this task's runs may cost each (in the currency their agent
    /// reports): reaching it pauses the run. Replaces the workspace's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub max_cost: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Workspace {
    pub id: i64,
    pub name: String,
    pub path: String,
    pub settings: WorkspaceSettings,
}

/// Where and how a run works.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunWork {
    pub run_id: RunId,
    pub task_id: TaskId,
    pub task_title: String,
    /// The task's stage: which `[stages.NAME]` auto-advance rule applies.
    pub stage: String,
    pub prompt: String,
    pub agent: String,
    pub workspace: Workspace,
    /// The run's own repository (a clone of the workspace's), or for a run
    /// created before runs had repositories of their own, a linked worktree.
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The branch of the user's repository the run started from and merges into.
    pub base_ref: Option<String>,
    /// The commit the run started from (None: a run from before this was kept).
    pub base_commit: Option<String>,
    /// The commit of the run's branch its review showed: what a merge merges.
    pub reviewed_tip: Option<String>,
    /// Run options, e.g. `{"scenario": "flaky"}` for the demo agent.
    pub options: serde_json::Value,
    pub resumed_from: Option<RunId>,
    pub task_settings: TaskSettings,
}

/// A merge of a run into the user's repository: its intent, recorded before
/// git runs, then its commit, then that it is done. A merge found done is
/// never made again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRecord {
    pub run_id: RunId,
    /// The branch merged into.
    pub base_ref: String,
    /// The branch's commit before the merge.
    pub base_before: String,
    /// The reviewed commit of the run's branch.
    pub tip: String,
    /// The merge commit, once git made it (before it is on the branch).
    pub merge_commit: Option<String>,
    pub done: bool,
    /// How it ended: `merged`, `nothing_to_merge`, `merged_outside` (the
    /// work was already on the branch without a record of Overseer's).
    pub outcome: Option<String>,
    pub actor: String,
    pub started_at: Millis,
    pub done_at: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunEventRecord {
    pub id: i64,
    pub run_id: RunId,
    pub at: Millis,
    pub entry: overseer_core::Activity,
}

fn parse_settings(text: &str, path: &std::path::Path) -> Result<WorkspaceSettings, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        path: path.to_owned(),
        detail: format!("workspace settings: {e}"),
    })
}

fn parse_task_settings(text: &str, path: &std::path::Path) -> Result<TaskSettings, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        path: path.to_owned(),
        detail: format!("task settings: {e}"),
    })
}

const MERGE_SELECT: &str = "SELECT m.run_id, m.base_ref, m.base_before, m.tip, m.merge_commit,
        m.status, m.outcome, m.actor, m.started_at, m.done_at FROM merges m";

fn merge_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MergeRecord> {
    Ok(MergeRecord {
        run_id: r.get(0)?,
        base_ref: r.get(1)?,
        base_before: r.get(2)?,
        tip: r.get(3)?,
        merge_commit: r.get(4)?,
        done: r.get::<_, String>(5)? == "done",
        outcome: r.get(6)?,
        actor: r.get(7)?,
        started_at: r.get(8)?,
        done_at: r.get(9)?,
    })
}

fn workspace_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, String, String, String)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

impl Store {
    pub fn workspaces(&self) -> Result<Vec<Workspace>, StoreError> {
        let rows = self
            .conn
            .prepare_cached("SELECT id, name, path, settings FROM workspaces ORDER BY name")
            .and_then(|mut s| {
                s.query_map([], workspace_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| StoreError::from_sqlite(e, &self.path))?;
        rows.into_iter()
            .map(|(id, name, path, settings)| {
                Ok(Workspace {
                    id,
                    name,
                    path,
                    settings: parse_settings(&settings, &self.path)?,
                })
            })
            .collect()
    }

    /// A workspace by name, or by id written as a number.
    pub fn workspace(&self, name_or_id: &str) -> Result<Workspace, StoreError> {
        self.workspaces()?
            .into_iter()
            .find(|w| w.name == name_or_id || w.id.to_string() == name_or_id)
            .ok_or_else(|| {
                StoreError::InvalidInput(format!(
                    "no workspace named '{name_or_id}': add it with `overseer workspace add PATH --name {name_or_id}`"
                ))
            })
    }

    /// Everything the engine needs to work on a run.
    pub fn run_work(&self, run_id: RunId) -> Result<RunWork, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT r.id, r.task_id, t.title, t.prompt, r.agent, w.id, w.name, w.path, w.settings,
                        r.worktree, r.branch, r.base_ref, r.options, r.resumed_from, t.settings,
                        r.base_commit, r.reviewed_tip, t.stage
                 FROM runs r JOIN tasks t ON t.id = r.task_id JOIN workspaces w ON w.id = t.workspace_id
                 WHERE r.id = ?1",
                [run_id],
                |r| {
                    Ok((
                        (r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?),
                        (r.get::<_, i64>(5)?, r.get::<_, String>(6)?, r.get::<_, String>(7)?, r.get::<_, String>(8)?),
                        (r.get::<_, Option<String>>(9)?, r.get::<_, Option<String>>(10)?, r.get::<_, Option<String>>(11)?, r.get::<_, String>(12)?, r.get::<_, Option<overseer_core::RunId>>(13)?),
                        r.get::<_, String>(14)?,
                        (r.get::<_, Option<String>>(15)?, r.get::<_, Option<String>>(16)?, r.get::<_, String>(17)?),
                    ))
                },
            )
            .optional()
            .map_err(|e| StoreError::from_sqlite(e, &self.path))?
            .ok_or(StoreError::NotFound { what: "run", id: run_id.into() })?;
        let (
            (run_id, task_id, task_title, prompt, agent),
            (wid, wname, wpath, wsettings),
            (worktree, branch, base_ref, options, resumed_from),
            tsettings,
            (base_commit, reviewed_tip, stage),
        ) = row;
        Ok(RunWork {
            run_id: overseer_core::RunId(run_id),
            task_id: overseer_core::TaskId(task_id),
            task_title,
            stage,
            prompt,
            agent,
            workspace: Workspace {
                id: wid,
                name: wname,
                path: wpath,
                settings: parse_settings(&wsettings, &self.path)?,
            },
            worktree,
            branch,
            base_ref,
            base_commit,
            reviewed_tip,
            options: serde_json::from_str(&options).unwrap_or(serde_json::Value::Null),
            resumed_from,
            task_settings: parse_task_settings(&tsettings, &self.path)?,
        })
    }

    /// The record of a run's merge, if one was started.
    pub fn merge_record(&self, run_id: RunId) -> Result<Option<MergeRecord>, StoreError> {
        self.conn
            .prepare_cached(&format!("{MERGE_SELECT} WHERE m.run_id = ?1"))
            .and_then(|mut s| s.query_row([run_id], merge_row).optional())
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// The merge records of every run of a task (a resumed run works on the
    /// same branch as the run it resumed).
    pub fn merges_of_task(&self, task_id: TaskId) -> Result<Vec<MergeRecord>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "{MERGE_SELECT} JOIN runs r ON r.id = m.run_id WHERE r.task_id = ?1 ORDER BY m.run_id"
            ))
            .and_then(|mut s| {
                s.query_map([task_id], merge_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// An app setting (JSON text), if set.
    pub fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                [format!("setting:{key}")],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// A task's settings.
    pub fn task_settings(&self, task_id: TaskId) -> Result<TaskSettings, StoreError> {
        let text: String = self
            .conn
            .query_row("SELECT settings FROM tasks WHERE id = ?1", [task_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| StoreError::from_sqlite(e, &self.path))?
            .ok_or(StoreError::NotFound {
                what: "task",
                id: task_id.into(),
            })?;
        parse_task_settings(&text, &self.path)
    }

    /// Timeline entries of a run after `after_id`, oldest first.
    pub fn run_events(
        &self,
        run_id: RunId,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<RunEventRecord>, StoreError> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT id, run_id, at, kind, payload FROM run_events WHERE run_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
            )
            .and_then(|mut s| {
                s.query_map(params![run_id, after_id, limit], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| StoreError::from_sqlite(e, &self.path))?;
        Ok(rows
            .into_iter()
            .map(|(id, run_id, at, kind, payload)| RunEventRecord {
                id,
                run_id: overseer_core::RunId(run_id),
                at,
                // An entry whose text is not JSON, or whose kind or shape this
                // build does not know, is kept (as unrecognized), never dropped.
                entry: overseer_core::Activity::decode(
                    &kind,
                    serde_json::from_str(&payload).unwrap_or(serde_json::Value::String(payload)),
                ),
            })
            .collect())
    }
}

impl WriteTx<'_> {
    /// Registers a git repository as a workspace. The same name with another
    /// path is refused rather than silently repointed.
    pub fn add_workspace(
        &mut self,
        name: &str,
        path: &str,
        settings: &WorkspaceSettings,
        actor: &Actor,
        now: Millis,
    ) -> Result<i64, StoreError> {
        let existing: Option<(i64, String)> = self
            .conn()
            .query_row(
                "SELECT id, path FROM workspaces WHERE name = ?1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        if let Some((id, existing_path)) = existing {
            if existing_path != path {
                return Err(StoreError::InvalidInput(format!(
                    "a workspace named '{name}' already points at {existing_path}; pick another --name"
                )));
            }
            self.set_workspace_settings(id, settings, actor, now)?;
            return Ok(id);
        }
        let id = self.ensure_workspace(name, path, actor, now)?;
        self.set_workspace_settings(id, settings, actor, now)?;
        Ok(id)
    }

    pub fn set_workspace_settings(
        &mut self,
        id: i64,
        settings: &WorkspaceSettings,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let text =
            serde_json::to_string(settings).map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        self.conn()
            .execute(
                "UPDATE workspaces SET settings = ?1 WHERE id = ?2",
                params![text, id],
            )
            .map_err(|e| self.sql(e))?;
        self.append_audit(
            actor,
            &AuditPayload::WorkspaceSettings {
                workspace_id: id,
                settings: serde_json::to_value(settings)
                    .map_err(|e| StoreError::InvalidInput(e.to_string()))?,
            },
            now,
        )?;
        let name: String = self
            .conn()
            .query_row("SELECT name FROM workspaces WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .map_err(|e| self.sql(e))?;
        self.workspace_changed(name);
        Ok(())
    }

    /// Sets an app setting, audited.
    pub fn set_setting(
        &mut self,
        key: &str,
        value: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO meta(key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![format!("setting:{key}"), value],
            )
            .map_err(|e| self.sql(e))?;
        self.append_audit(
            actor,
            &AuditPayload::Setting {
                key: key.to_owned(),
                value: value.to_owned(),
            },
            now,
        )?;
        Ok(())
    }

    /// Replaces a task's settings (validated by the caller), audited.
    pub fn set_task_settings(
        &mut self,
        task_id: TaskId,
        settings: &TaskSettings,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let text =
            serde_json::to_string(settings).map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        let n = self
            .conn()
            .execute(
                "UPDATE tasks SET settings = ?1 WHERE id = ?2",
                params![text, task_id],
            )
            .map_err(|e| self.sql(e))?;
        if n != 1 {
            return Err(StoreError::NotFound {
                what: "task",
                id: task_id.into(),
            });
        }
        self.append_audit(
            actor,
            &AuditPayload::TaskSettings {
                task_id,
                settings: serde_json::to_value(settings)
                    .map_err(|e| StoreError::InvalidInput(e.to_string()))?,
            },
            now,
        )?;
        self.task_changed(task_id);
        Ok(())
    }

    /// Records the agent's latest usage report for a run (checked by the
    /// caller with core's `accept_usage`); its row is pushed.
    pub fn set_run_usage(
        &mut self,
        run_id: RunId,
        usage: &overseer_core::RunUsage,
    ) -> Result<(), StoreError> {
        let text =
            serde_json::to_string(usage).map_err(|e| StoreError::InvalidInput(e.to_string()))?;
        let n = self
            .conn()
            .execute(
                "UPDATE runs SET usage = ?1 WHERE id = ?2",
                params![text, run_id],
            )
            .map_err(|e| self.sql(e))?;
        if n != 1 {
            return Err(StoreError::NotFound {
                what: "run",
                id: run_id.into(),
            });
        }
        self.run_changed(run_id, false);
        Ok(())
    }

    /// Pushes the rows of the runs a budget change reaches (not released):
    /// the task's when `task` is given, else every run of the workspace
    /// `workspace_id`. Each row carries the budget it is held to.
    pub fn budget_changed(
        &mut self,
        workspace_id: i64,
        task: Option<TaskId>,
    ) -> Result<(), StoreError> {
        let runs: Vec<RunId> = self
            .conn()
            .prepare(
                "SELECT r.id FROM runs r JOIN tasks t ON t.id = r.task_id
                 WHERE t.workspace_id = ?1 AND (?2 IS NULL OR t.id = ?2)
                   AND r.state NOT LIKE 'released%' ORDER BY r.id",
            )
            .and_then(|mut st| {
                st.query_map(params![workspace_id, task], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.sql(e))?;
        for run in runs {
            self.run_changed(run, false);
        }
        Ok(())
    }

    /// Records where a run works (its repository and branch) and what it
    /// started from (the base branch, and its commit when known).
    #[allow(clippy::too_many_arguments)]
    pub fn set_run_work(
        &mut self,
        run_id: RunId,
        worktree: &str,
        branch: &str,
        base_ref: &str,
        base_commit: Option<&str>,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute(
                "UPDATE runs SET worktree = ?1, branch = ?2, base_ref = ?3, base_commit = ?4 WHERE id = ?5",
                params![worktree, branch, base_ref, base_commit, run_id],
            )
            .map_err(|e| self.sql(e))?;
        if n != 1 {
            return Err(StoreError::NotFound {
                what: "run",
                id: run_id.into(),
            });
        }
        self.append_audit(
            actor,
            &AuditPayload::RunWorktree {
                run_id,
                worktree: worktree.to_owned(),
                branch: branch.to_owned(),
                base: base_ref.to_owned(),
                base_commit: base_commit.map(str::to_owned),
            },
            now,
        )?;
        Ok(())
    }

    /// Records the commit of the run's branch that its review shows: the one
    /// a merge merges, whatever the branch does afterwards.
    pub fn set_reviewed_tip(
        &mut self,
        run_id: RunId,
        tip: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute(
                "UPDATE runs SET reviewed_tip = ?1 WHERE id = ?2",
                params![tip, run_id],
            )
            .map_err(|e| self.sql(e))?;
        if n != 1 {
            return Err(StoreError::NotFound {
                what: "run",
                id: run_id.into(),
            });
        }
        self.append_audit(
            &Actor::Engine,
            &AuditPayload::RunReviewedTip {
                run_id,
                tip: tip.to_owned(),
            },
            now,
        )?;
        Ok(())
    }

    /// Records that a merge is about to happen, before git runs. A merge
    /// already recorded as done is never started again.
    pub fn begin_merge(
        &mut self,
        run_id: RunId,
        base_ref: &str,
        base_before: &str,
        tip: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute(
                "INSERT INTO merges(run_id, base_ref, base_before, tip, status, actor, started_at)
                 VALUES (?1, ?2, ?3, ?4, 'started', ?5, ?6)
                 ON CONFLICT(run_id) DO UPDATE SET base_ref = excluded.base_ref,
                    base_before = excluded.base_before, tip = excluded.tip, merge_commit = NULL,
                    actor = excluded.actor, started_at = excluded.started_at
                 WHERE merges.status = 'started'",
                params![run_id, base_ref, base_before, tip, actor.to_string(), now],
            )
            .map_err(|e| self.missing_run(e, run_id))?;
        if n != 1 {
            return Err(StoreError::InvalidInput(format!(
                "run {run_id} is already merged: its merge is recorded as done"
            )));
        }
        self.append_audit(
            actor,
            &AuditPayload::MergeIntent {
                run_id,
                base: base_ref.to_owned(),
                base_before: base_before.to_owned(),
                tip: tip.to_owned(),
            },
            now,
        )?;
        Ok(())
    }

    /// Records the merge commit git made, before it is put on the branch.
    pub fn set_merge_commit(
        &mut self,
        run_id: RunId,
        commit: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute(
                "UPDATE merges SET merge_commit = ?1 WHERE run_id = ?2 AND status = 'started'",
                params![commit, run_id],
            )
            .map_err(|e| self.sql(e))?;
        if n != 1 {
            return Err(StoreError::InvalidInput(format!(
                "run {run_id} has no merge in progress to record commit {commit} for"
            )));
        }
        self.append_audit(
            &Actor::Engine,
            &AuditPayload::MergeCommit {
                run_id,
                merge_commit: commit.to_owned(),
            },
            now,
        )?;
        Ok(())
    }

    /// Records a merge as done (with or without an intent before it: a run
    /// with nothing to merge, or work found merged outside Overseer).
    #[allow(clippy::too_many_arguments)]
    pub fn finish_merge(
        &mut self,
        run_id: RunId,
        base_ref: &str,
        base_before: &str,
        tip: &str,
        merge_commit: Option<&str>,
        outcome: &str,
        actor: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO merges(run_id, base_ref, base_before, tip, merge_commit, status, outcome, actor, started_at, done_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'done', ?6, ?7, ?8, ?8)
                 ON CONFLICT(run_id) DO UPDATE SET merge_commit = coalesce(excluded.merge_commit, merges.merge_commit),
                    status = 'done', outcome = excluded.outcome, done_at = excluded.done_at",
                params![run_id, base_ref, base_before, tip, merge_commit, outcome, actor.to_string(), now],
            )
            .map_err(|e| self.missing_run(e, run_id))?;
        self.append_audit(
            actor,
            &AuditPayload::MergeDone {
                run_id,
                base: base_ref.to_owned(),
                tip: tip.to_owned(),
                merge_commit: merge_commit.map(str::to_owned),
                outcome: outcome.to_owned(),
            },
            now,
        )?;
        Ok(())
    }

    /// A foreign-key failure means the run does not exist.
    fn missing_run(&self, e: rusqlite::Error, run_id: RunId) -> StoreError {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ConstraintViolation) => StoreError::NotFound {
                what: "run",
                id: run_id.into(),
            },
            _ => self.sql(e),
        }
    }

    pub fn set_run_options(
        &mut self,
        run_id: RunId,
        options: &serde_json::Value,
        resumed_from: Option<RunId>,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE runs SET options = ?1, resumed_from = ?2 WHERE id = ?3",
                params![options.to_string(), resumed_from, run_id],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Links a consultation to the run that asked it (`consult`): its
    /// fleet row is that run's child. One at a time: refused while another
    /// consultation of `parent` is under way (in the same transaction, so
    /// two asked at once cannot both pass).
    pub fn set_run_parent(&mut self, run_id: RunId, parent: RunId) -> Result<(), StoreError> {
        let busy: Option<i64> = self
            .conn()
            .query_row(
                "SELECT id FROM runs WHERE parent_run_id = ?1 AND id <> ?2
                   AND state IN ('queued', 'claimed', 'running', 'retry_queued')
                 ORDER BY id LIMIT 1",
                params![parent, run_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        if let Some(other) = busy {
            return Err(StoreError::InvalidInput(format!(
                "run {parent} already waits for a consultation (run {other}); one at a time: wait for its answer, then ask again"
            )));
        }
        self.conn()
            .execute(
                "UPDATE runs SET parent_run_id = ?1 WHERE id = ?2",
                params![parent, run_id],
            )
            .map_err(|e| self.sql(e))?;
        self.run_changed(run_id, false);
        Ok(())
    }

    /// Appends one timeline entry.
    pub fn record_run_event(
        &mut self,
        run_id: RunId,
        entry: &overseer_core::Activity,
        now: Millis,
    ) -> Result<i64, StoreError> {
        let (kind, payload) = entry.encode();
        self.conn()
            .prepare_cached(
                "INSERT INTO run_events(run_id, at, kind, payload) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| s.execute(params![run_id, now, kind, payload.to_string()]))
            .map_err(|e| self.sql(e))?;
        let id = self.conn().last_insert_rowid();
        self.happened(overseer_core::EngineEvent::RunActivity {
            activity: overseer_core::ActivityView {
                id,
                run_id,
                at: now,
                entry: entry.clone(),
            },
        });
        // A new plan or sensor result changes the row's current step or
        // sensors column: the row is pushed too, so the dashboard follows.
        if entry.changes_run_row() {
            self.run_changed(run_id, false);
        }
        Ok(id)
    }
}
