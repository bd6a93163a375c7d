//! The engine's side of real work: workspaces, starting tasks, deciding any
//! gate, merging on approval, cleaning and resuming runs. Each action commits
//! first and publishes after, like the review actions in `engine.rs`.

use crate::notify::{Notification, NotificationKind};
use crate::{ops, Records};
use overseer_core::{
    Activity, ActivityView, Actor, ApiError, DeviationCause, DeviationChoice, DeviationGate,
    ErrorCode, FieldError, GateBody, GateId, GateKind, GateOption, RunId, RunState, RunView,
    TaskId,
};
use overseer_git as git;
use overseer_store::{RunWork, StoreError, Workspace, WorkspaceSettings};
use serde_json::json;
use std::path::{Path, PathBuf};

/// What `overseer task start` asks for.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct TaskStart {
    pub workspace: String,
    pub agent: String,
    pub prompt: String,
    #[serde(default)]
    pub title: Option<String>,
    /// For the demo agent: which scripted scenario to play.
    #[serde(default)]
    pub scenario: Option<String>,
    /// Permission rules, approval mode, read-only session, supervisor override.
    #[serde(default)]
    pub settings: overseer_store::TaskSettings,
    /// The task's stage (`[stages.NAME]` in overseer.toml says whether it
    /// merges without review); None: `default`.
    #[serde(default)]
    pub stage: Option<String>,
}

/// The run a task start created.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct Started {
    pub task_id: TaskId,
    pub run_id: RunId,
}

/// The branch a run works on.
pub fn run_branch(run: RunId) -> String {
    format!("overseer/run-{run}")
}

impl Records {
    /// Notifies the user directly (supervisor escalations and failures).
    pub(crate) fn notify_user(
        &self,
        kind: NotificationKind,
        run: RunId,
        title: String,
        body: String,
    ) {
        self.tell(
            &Notification {
                kind,
                run_id: run,
                title,
                body,
                quick: None,
                urgency: kind.default_urgency(),
                tag: None,
            },
            crate::webhooks::About {
                run: None,
                gate: None,
                key: None,
            },
        );
    }

    /// Records an approval (after the merge, see `work.rs`).
    pub(crate) fn approve_recorded(&self, id: RunId, actor: &Actor) -> Result<RunView, ApiError> {
        let now = self.clock.now();
        let out = ops::approve_run(&mut self.store(), id, actor, now)?;
        self.publish(out.events);
        Ok(out.run)
    }

    pub fn reject_run(&self, id: RunId, reason: &str, actor: &Actor) -> Result<RunView, ApiError> {
        let now = self.clock.now();
        let out = ops::reject_run(&mut self.store(), id, reason, actor, now)?;
        self.publish(out.events);
        Ok(out.run)
    }

    /// Moves a run along its lifecycle on the engine's own authority.
    pub fn advance_run(
        &self,
        id: RunId,
        event: overseer_core::RunEvent,
    ) -> Result<RunView, ApiError> {
        let now = self.clock.now();
        let out = ops::advance_run(&mut self.store(), id, event, &Actor::Engine, now)?;
        self.publish(out.events);
        Ok(out.run)
    }

    /// Where a run's repository lives: under the data dir, never in the
    /// user's checkout (a clone of its own; see [`overseer_git`]).
    pub fn worktree_path(&self, workspace: &str, run: RunId) -> PathBuf {
        let safe = crate::paths::file_safe(workspace);
        self.paths()
            .data_dir
            .join("worktrees")
            .join(format!("{safe}-run-{run}"))
    }

    /// [`Engine::add_workspace`] asked for through the contract (the window,
    /// the socket, a browser): the local owner only, and `path` absolute
    /// (the caller's working directory is not the engine's).
    pub fn add_workspace_for(
        &self,
        actor: &Actor,
        path: &Path,
        name: Option<&str>,
        settings: WorkspaceSettings,
    ) -> Result<Workspace, ApiError> {
        crate::devices::owner_only(actor, "add a workspace")?;
        if !path.is_absolute() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "{}: give the repository's absolute path on the engine's machine",
                    path.display()
                ),
            ));
        }
        self.add_workspace(path, name, settings, actor)
    }

    /// Registers the git repository at `path` (clear error when it is not one).
    pub fn add_workspace(
        &self,
        path: &Path,
        name: Option<&str>,
        settings: WorkspaceSettings,
        actor: &Actor,
    ) -> Result<Workspace, ApiError> {
        if let Some(p) = &settings.supervisor {
            crate::settings::check_policy(p).map_err(ApiError::invalid_fields)?;
        }
        let root = git::repo_root(path)?;
        let name = match name {
            Some(n) if !n.trim().is_empty() => n.trim().to_owned(),
            Some(_) => {
                return Err(ApiError::new(
                    ErrorCode::InvalidInput,
                    "a workspace name cannot be blank",
                ))
            }
            None => root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "workspace".to_owned()),
        };
        let now = self.clock.now();
        let root_text = root.to_string_lossy().into_owned();
        self.write(|tx| tx.add_workspace(&name, &root_text, &settings, actor, now))?;
        Ok(self.store().workspace(&name)?)
    }

    pub fn workspaces(&self) -> Result<Vec<Workspace>, ApiError> {
        Ok(self.store().workspaces()?)
    }

    /// Replaces a workspace's sensors (check commands) and its auto-advance
    /// override (`None`: the global default). Rules and the supervisor have
    /// their own calls. Only a human may change them.
    pub fn set_workspace_checks(
        &self,
        workspace: &str,
        sensors: Vec<String>,
        auto_advance: Option<bool>,
        actor: &Actor,
    ) -> Result<Workspace, ApiError> {
        if !actor.is_user() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "only a human can change a workspace's sensors and auto-advance",
            ));
        }
        let sensors = crate::settings::check_sensors(&sensors).map_err(ApiError::invalid_fields)?;
        let now = self.clock.now();
        let ws = self.store().workspace(workspace)?;
        let mut settings = ws.settings.clone();
        settings.sensors = sensors;
        settings.auto_advance = auto_advance;
        self.write(|tx| tx.set_workspace_settings(ws.id, &settings, actor, now))?;
        Ok(self.store().workspace(workspace)?)
    }

    /// Creates a task and its first run (queued); the orchestrator takes it from there.
    pub fn start_task(&self, req: &TaskStart, actor: &Actor) -> Result<Started, ApiError> {
        if req.prompt.trim().is_empty() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "a task needs a prompt: say what the agent should do (--prompt TEXT)",
            ));
        }
        let profile = self
            .config
            .profile(&req.agent)
            .map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
        // Every task setting in error at once, by its path (`settings.retry.max_attempts`).
        let mut errors = Vec::new();
        if let Some(mode) = &req.settings.mode {
            if let Err(m) =
                overseer_core::agent::check_supervised_mode(mode, profile.allow_unsupervised)
            {
                errors.push(FieldError::new("settings.mode", m));
            }
        }
        if let Err(e) = req.settings.approval.validate() {
            errors.push(e.under("settings.approval"));
        }
        if let Some(Err(e)) = req.settings.supervisor.as_ref().map(|p| p.validate()) {
            errors.extend(overseer_core::error::under("settings.supervisor", e));
        }
        if let Some(Err(e)) = req.settings.retry.as_ref().map(|r| r.validate()) {
            errors.push(e.under("settings.retry"));
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid_fields(errors));
        }
        let now = self.clock.now();
        let title = req
            .title
            .clone()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| first_line(&req.prompt, 80));
        let options = match &req.scenario {
            Some(s) => json!({"scenario": s}),
            None => json!({}),
        };
        let ws = self.store().workspace(&req.workspace)?;
        self.write(|tx| {
            let task = tx.create_task(ws.id, &title, &req.prompt, actor, now)?;
            if let Some(stage) = req.stage.as_deref().filter(|s| *s != "default") {
                tx.set_task_stage(task, stage, actor, now)?;
            }
            if req.settings != overseer_store::TaskSettings::default() {
                tx.set_task_settings(task, &req.settings, actor, now)?;
            }
            let run = tx.create_run(task, &req.agent, actor, now)?;
            tx.set_run_options(run, &options, None)?;
            Ok(Started {
                task_id: task,
                run_id: run,
            })
        })
        .map_err(ApiError::from)
    }

    pub(crate) fn open_merge_failed(&self, run_id: RunId, err: &ApiError) -> Result<(), ApiError> {
        let now = self.clock.now();
        let already = self
            .store()
            .pending_gates_of_run(run_id)?
            .into_iter()
            .any(|g| g.kind() == GateKind::Deviation);
        if already {
            return Ok(());
        }
        self.write(|tx| {
            tx.open_gate(
                run_id,
                "The approved work could not be merged",
                &[
                    GateOption::choice(DeviationChoice::Retry, "Retry the merge"),
                    GateOption::choice(DeviationChoice::Stop, "Stop: reject the run")
                        .with_required_context(),
                ],
                &GateBody::Deviation(DeviationGate {
                    cause: DeviationCause::MergeFailed,
                    error: err.message.clone(),
                    mode: None,
                    attempts: None,
                    max_attempts: None,
                }),
                &Actor::Engine,
                now,
            )
        })?;
        Ok(())
    }

    /// Removes a released run's repository (its branch with it); a run from
    /// before runs had repositories of their own is a linked worktree of the
    /// user's repository, removed as before with its branch.
    pub fn clean_run(&self, id: RunId) -> Result<RunView, ApiError> {
        let (run, work) = {
            let store = self.store();
            (store.run(id)?, store.run_work(id)?)
        };
        if !run.state.is_released() {
            return Err(ApiError::new(
                ErrorCode::InvalidTransition,
                format!(
                    "run {id} is {}; abort or finish it before removing its worktree",
                    run.state
                ),
            ));
        }
        if let (Some(wt), Some(branch)) = (&work.worktree, &work.branch) {
            let still_used = self
                .store()
                .runs()?
                .into_iter()
                .filter(|r| r.id != id && !r.state.is_released())
                .any(|r| {
                    self.store()
                        .run_work(r.id)
                        .ok()
                        .and_then(|w| w.worktree)
                        .as_deref()
                        == Some(wt.as_str())
                });
            if still_used {
                return Err(ApiError::new(
                    ErrorCode::InvalidTransition,
                    format!("the worktree {wt} is in use by a resumed run"),
                ));
            }
            let user = Path::new(&work.workspace.path);
            git::remove_run_repo(user, Path::new(wt), branch)?;
            // A merge that failed may have left its fetched commit behind.
            if let Err(e) = git::delete_ref(user, &crate::merge::hidden_ref(id)) {
                tracing::warn!(run = %id, "cannot delete the run's hidden ref: {e}");
            }
        }
        Ok(run)
    }

    /// A new attempt in the same worktree, for an interrupted (or failed) run.
    pub fn resume_run(&self, id: RunId, actor: &Actor) -> Result<Started, ApiError> {
        let (run, work) = {
            let store = self.store();
            (store.run(id)?, store.run_work(id)?)
        };
        let resumable = matches!(
            run.state,
            RunState::Released {
                reason: overseer_core::ReleaseReason::Interrupted
                    | overseer_core::ReleaseReason::Failed,
            }
        );
        if !resumable {
            return Err(ApiError::new(
                ErrorCode::InvalidTransition,
                format!(
                    "run {id} is {}; only interrupted or failed runs can be resumed",
                    run.state
                ),
            ));
        }
        let now = self.clock.now();
        Ok(self.write(|tx| {
            let run_id = tx.create_run(work.task_id, &work.agent, actor, now)?;
            tx.set_run_options(run_id, &work.options, Some(id))?;
            if let (Some(wt), Some(branch), Some(base)) =
                (&work.worktree, &work.branch, &work.base_ref)
            {
                tx.set_run_work(
                    run_id,
                    wt,
                    branch,
                    base,
                    work.base_commit.as_deref(),
                    actor,
                    now,
                )?;
            }
            Ok(Started {
                task_id: work.task_id,
                run_id,
            })
        })?)
    }

    /// The run's timeline after `after_id`.
    pub fn activity(&self, run: RunId, after_id: i64) -> Result<Vec<ActivityView>, ApiError> {
        self.run(run)?;
        Ok(self
            .store()
            .run_events(run, after_id, 10_000)?
            .into_iter()
            .map(|e| ActivityView {
                id: e.id,
                run_id: e.run_id,
                at: e.at,
                entry: e.entry,
            })
            .collect())
    }

    /// Applies a lifecycle event with an optional note, then publishes.
    pub(crate) fn transition(
        &self,
        run: RunId,
        event: overseer_core::RunEvent,
        note: Option<&str>,
        actor: &Actor,
    ) -> Result<RunView, ApiError> {
        let review = overseer_core::MergeReviewGate::default();
        self.transition_reviewing(run, event, note, actor, &review, None)
    }

    /// [`Engine::transition`], with what the merge review it opens (when the
    /// run enters pending_review) says about the run's diff.
    pub(crate) fn transition_reviewing(
        &self,
        run: RunId,
        event: overseer_core::RunEvent,
        note: Option<&str>,
        actor: &Actor,
        review: &overseer_core::MergeReviewGate,
        authority: Option<overseer_core::supervision::Autonomy>,
    ) -> Result<RunView, ApiError> {
        let now = self.clock.now();
        Ok(self.write(|tx| {
            tx.transition_reviewing(run, event, note, actor, now, review)?;
            let view = tx.run(run)?;
            // The supervisor's authority on the review it opened, in the
            // same commit: its notification knows who decides.
            let opened = view
                .pending_gate
                .as_ref()
                .filter(|g| g.kind == overseer_core::GateKind::MergeReview);
            if let (Some(gate), Some(authority)) = (opened, authority) {
                let approve = overseer_core::GateKind::MergeReview.approve_option();
                tx.set_gate_authority(gate.id, Some(authority), Some(approve), now)?;
            }
            Ok(view)
        })?)
    }

    /// Writes a pending gate, then publishes it: it exists before anyone waits.
    pub(crate) fn open_gate(
        &self,
        run: RunId,
        title: &str,
        options: &[GateOption],
        body: GateBody,
        actor: &Actor,
    ) -> Result<GateId, ApiError> {
        let now = self.clock.now();
        Ok(self.write(|tx| tx.open_gate(run, title, options, &body, actor, now))?)
    }

    /// Appends an audit record for something the engine did on its own
    /// authority (a read allowed by default, a refused file access).
    pub(crate) fn audit(&self, actor: &Actor, payload: overseer_core::audit::AuditPayload) {
        let now = self.clock.now();
        if let Err(e) = self.write(|tx| tx.append_audit(actor, &payload, now)) {
            tracing::error!("cannot append to the audit log: {e}");
        }
    }

    /// Notifies again about every gate still waiting for the user (after a
    /// restart), and has every waiter on a gate look at it again (a
    /// decision written into the database outside Overseer is found then,
    /// and refused: no commit of ours told of it).
    pub fn renotify_pending(&self) -> Result<usize, ApiError> {
        let (gates, events) = self.store().pending_gates_again()?;
        self.publish(events);
        self.gate_watch.look_again();
        Ok(gates.len())
    }

    /// Stores a timeline entry and pushes it (with the run's row when the
    /// entry changes it: a new plan, a sensor's result).
    pub(crate) fn record_activity(&self, run: RunId, entry: Activity) -> Result<(), ApiError> {
        let now = self.clock.now();
        self.write(|tx| tx.record_run_event(run, &entry, now))?;
        Ok(())
    }

    /// [`Engine::record_activity`] where the caller goes on either way: a
    /// failed timeline write is logged with the entry it lost (its kind and
    /// text), never dropped silently: the timeline is the run's "Why?".
    /// A write that found the disk full is tried once more: that failure
    /// freed the engine's reserve for it (see `disk`).
    pub(crate) fn record_activity_or_warn(&self, run: RunId, entry: Activity) {
        let now = self.clock.now();
        let write = || self.write(|tx| tx.record_run_event(run, &entry, now));
        let written = match write() {
            Err(StoreError::DiskFull { .. }) => write(),
            other => other,
        };
        if let Err(e) = written {
            tracing::warn!(
                run = %run,
                kind = entry.kind(),
                lost = %first_line(&entry.text(), 200),
                "a timeline entry was not recorded: {e}"
            );
        }
    }

    /// The files changed by a run and its unified diff, read from the run's
    /// own repository: from the commit it started at to the commit its review
    /// shows (the branch's latest while it works).
    /// Someone is looking at it: git runs at the engine's priority, not the
    /// fleet's (see [`Engine::diff_of_run`] for the engine's own reads).
    pub fn run_diff(&self, id: RunId) -> Result<(Vec<git::FileChange>, String), ApiError> {
        git::foreground(|| self.diff_of_run(id))
    }

    /// [`Engine::run_diff`] as background work of the fleet (sensors).
    pub(crate) fn diff_of_run(
        &self,
        id: RunId,
    ) -> Result<(Vec<git::FileChange>, String), ApiError> {
        let work = self.store().run_work(id)?;
        let Some(DiffRange { repo, from, to }) = diff_range(&work) else {
            return Ok((Vec::new(), String::new()));
        };
        Ok((
            git::diff_stat(&repo, &from, &to)?,
            git::diff(&repo, &from, &to)?,
        ))
    }
}

/// Where a run's diff is read: its repository, the commit it started at and
/// the commit its review shows (the branch's latest while it works).
pub(crate) struct DiffRange {
    pub repo: PathBuf,
    pub from: String,
    pub to: String,
}

/// The run's [`DiffRange`], or None for a run without a repository.
pub(crate) fn diff_range(work: &RunWork) -> Option<DiffRange> {
    let (Some(branch), Some(base), Some(dir)) = (&work.branch, &work.base_ref, &work.worktree)
    else {
        return None;
    };
    let repo = PathBuf::from(dir);
    let from = match &work.base_commit {
        Some(c) => c.clone(),
        None => git::branch_start(&repo, base, branch),
    };
    let to = match &work.reviewed_tip {
        Some(t) => t.clone(),
        None => format!("refs/heads/{branch}"),
    };
    Some(DiffRange { repo, from, to })
}

/// The first non-blank line of `text`, trimmed, at most `max` characters
/// (cut with an ellipsis).
pub(crate) fn first_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max - 1).collect();
    format!("{cut}…")
}
