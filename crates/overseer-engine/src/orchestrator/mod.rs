//! Drives runs: claims queued runs, launches their agent in a worktree over
//! ACP, puts it in its supervised mode, gets a plan approved, executes each
//! step as its own turn, turns every failure into a deviation gate, runs the
//! sensors after each step, and hands the finished work to review (or merges
//! it when the user's auto-advance rule says so).
//!
//! A run's life is a phase machine over core's
//! [`Progress`](overseer_core::progress::Progress): planning, then executing
//! the approved plan step by step, then finishing; the phase is kept at every
//! turn so that a restarted engine carries the run on (`resume`).
//!
//! - this module: starting the driver of each run (`start`, recovery after
//!   a restart), `drive`'s loop over the phases, finishing.
//! - `agent`: the agent's worktree, its contained process and session, the
//!   signals it sends while it works (`pump`), its log, stopping its tree.
//!   Everything past the launch speaks to the agent through
//!   [`AgentSession`] (ACP's connection in the app, a scripted one in tests).
//! - `modes`: the agent's session mode, set and watched.
//! - `planning`: the plan, approved before anything changes.
//! - `steps`: each step's turn, weighed (supervisor, confidence), retries
//!   and deviations.
//! - `permissions`: a tool call's permission (rules, then a gate) and the
//!   agent's questions.
//! - `sensors`: the workspace's checks after a step, and drift from the plan.
//! - `resume`: checkpoints, and carrying a run on after a restart.
//!
//! Every decision point is a gate written to the database before anyone waits
//! on it; waiting is done by watching the engine's events, so a decision from
//! the window, the CLI or a restart's re-notification all wake the same code.
//! Agent output is recorded in the run's timeline as untrusted text.

mod agent;
mod budget;
mod consult;
mod cost;
pub(crate) mod live;
mod modes;
mod permissions;
mod planning;
mod repo_grants;
mod resume;
mod sensors;
mod steps;
mod turn;
mod unasked;

use agent::{launch_agent, prepare_worktree};
pub(crate) use agent::{stop_agent, stop_all};
pub(crate) use consult::consult;
use live::terminate_tree;
use overseer_core::Activity;
use steps::{execute, Executed, Steps};

use crate::engine::marker_prefix;
use crate::ops;
use crate::waiting::wait_gate;
use crate::{Engine, Runs};
pub(crate) use live::Live;
use overseer_acp::{AgentSession, StartSession};
use overseer_contain::process;
use overseer_core::progress::Progress;
use overseer_core::{
    Actor, ApiError, EngineEvent, ErrorCode, GateId, GateKind, GateView, RunEvent, RunId, RunState,
    RunView,
};
use overseer_store::RunWork;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast::error::RecvError;
pub use turn::MAX_RETRIES;
use turn::{end_run, still_active, Supervision, Turn};
impl Runs {
    /// Abort. While the run's agent lives, its whole process tree is stopped FIRST
    /// (SIGTERM, abort_timeout, SIGKILL; a frozen run at once), and the
    /// abort recorded after: a full disk never keeps the user from stopping
    /// a run. A record that cannot be written yet (the disk is full even
    /// after the reserve was freed) is retried once there is room, and the
    /// next start records it if this engine could not (a marker in the data
    /// dir that needs no room); meanwhile nothing relaunches the run, and the
    /// answer says the run is aborted. Called on a current-thread runtime
    /// (which cannot wait here), the record comes first and the stop
    /// follows on its own task, also when the record fails.
    pub fn abort_run(self: &Arc<Self>, id: RunId, actor: &Actor) -> Result<RunView, ApiError> {
        let now = self.clock.now();
        // Only a current-thread runtime cannot wait here for the stop.
        let flavor = tokio::runtime::Handle::try_current()
            .ok()
            .map(|h| h.runtime_flavor());
        let blocking = flavor != Some(tokio::runtime::RuntimeFlavor::CurrentThread);
        let (Some(handle), Some(_)) = (self.runtime.get().cloned(), self.live.get(id)) else {
            let out = ops::abort_run(&mut self.store(), id, actor, now)?;
            self.publish(out.events);
            return Ok(out.run);
        };
        if !blocking {
            let recorded = ops::abort_run(&mut self.store(), id, actor, now);
            let failed_for_room = matches!(&recorded, Err(e) if e.code() == ErrorCode::Storage);
            if recorded.is_err() && !failed_for_room {
                return recorded.map(|o| o.run).map_err(ApiError::from);
            }
            if failed_for_room {
                self.live.set_aborting(id, true);
                let _ = self.abort_marker(id, actor);
            }
            let engine = self.clone();
            let actor = actor.clone();
            let run_now = self.run(id);
            self.tasks.spawn_on(
                async move {
                    stop_agent(engine.clone(), id).await;
                    if failed_for_room {
                        engine.record_abort_until_written(id, actor, now).await;
                    }
                },
                &handle,
            );
            return match recorded {
                Ok(out) => {
                    self.publish(out.events);
                    Ok(out.run)
                }
                Err(_) => run_now.map(|r| aborted_view(r, now)),
            };
        }
        // Refused before anything is killed: a run that cannot be aborted.
        let before = self.run(id)?;
        if let Err(source) = overseer_core::apply(before.state, RunEvent::Abort, now) {
            return Err(
                overseer_store::StoreError::InvalidTransition { run_id: id, source }.into(),
            );
        }
        self.live.set_aborting(id, true);
        let marker = self.abort_marker(id, actor);
        let stop = || handle.block_on(stop_agent(self.clone(), id));
        if flavor.is_some() {
            // On a runtime's thread (a transport's blocking task, an engine
            // task): the runtime carries on without this thread meanwhile.
            tokio::task::block_in_place(stop);
        } else {
            stop();
        }
        match self.record_abort(id, actor, now) {
            Ok(run) => {
                self.live.set_aborting(id, false);
                remove_marker(marker.as_deref());
                Ok(run)
            }
            Err(e) if e.code == ErrorCode::Storage => {
                tracing::warn!(run = %id, "run {id} is stopped; its abort is recorded once the disk has room: {}", e.message);
                let engine = self.clone();
                let actor = actor.clone();
                self.tasks.spawn_on(
                    async move { engine.record_abort_until_written(id, actor, now).await },
                    &handle,
                );
                Ok(aborted_view(before, now))
            }
            Err(e) => {
                self.live.set_aborting(id, false);
                remove_marker(marker.as_deref());
                Err(e)
            }
        }
    }

    /// The abort's record, tried twice: the first failure for a full disk
    /// frees the reserve for the second.
    fn record_abort(
        self: &Arc<Self>,
        id: RunId,
        actor: &Actor,
        now: overseer_core::Millis,
    ) -> Result<RunView, ApiError> {
        // One store lock per attempt (a guard held across both would wait
        // for itself).
        let first = ops::abort_run(&mut self.store(), id, actor, now);
        let out = match first {
            Ok(out) => out,
            Err(_) => ops::abort_run(&mut self.store(), id, actor, now)?,
        };
        self.publish(out.events);
        Ok(out.run)
    }

    /// Retries the record of an abort whose run is already stopped, each
    /// time the disk has room, until it is written (or the run ended
    /// otherwise, or the engine stops: the next start records it).
    pub(crate) async fn record_abort_until_written(
        self: Arc<Self>,
        id: RunId,
        actor: Actor,
        at: overseer_core::Millis,
    ) {
        loop {
            if self.is_stopping() {
                return;
            }
            match self.record_abort(id, &actor, at) {
                Ok(_) => break,
                Err(e) if e.code == ErrorCode::Storage => {
                    self.disk.wait_for_room().await;
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
                Err(e) => {
                    tracing::warn!(run = %id, "the abort of run {id} cannot be recorded: {}", e.message);
                    break;
                }
            }
        }
        self.live.set_aborting(id, false);
        remove_marker(Some(&self.abort_marker_path(id)));
    }

    /// `<data dir>/aborting/run-<id>`: says a run was stopped whose abort
    /// may not be recorded yet.
    fn abort_marker_path(&self, id: RunId) -> PathBuf {
        self.paths()
            .data_dir
            .join(ABORTING_DIR)
            .join(format!("run-{id}"))
    }

    /// Leaves the marker of an abort about to be made: an empty file (an
    /// inode, no data block: it can be made on a full disk), then who asked
    /// in it when there is room for that.
    fn abort_marker(&self, id: RunId, actor: &Actor) -> Option<PathBuf> {
        let path = self.abort_marker_path(id);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        match std::fs::File::create(&path) {
            Ok(mut f) => {
                use std::io::Write;
                if let Ok(text) = serde_json::to_vec(actor) {
                    let _ = f.write_all(&text);
                }
                Some(path)
            }
            Err(e) => {
                tracing::warn!(run = %id, "cannot leave the abort's marker {}: {e}", path.display());
                None
            }
        }
    }
}

/// Where the markers of aborts not yet recorded are kept in the data dir.
pub(crate) const ABORTING_DIR: &str = "aborting";

fn remove_marker(path: Option<&std::path::Path>) {
    if let Some(p) = path {
        let _ = std::fs::remove_file(p);
    }
}

/// What a stopped run will be once its abort is recorded.
fn aborted_view(mut run: RunView, now: overseer_core::Millis) -> RunView {
    if let Ok(t) = overseer_core::apply(run.state, RunEvent::Abort, now) {
        run.state = t.to;
        run.state_since = now;
    }
    run
}

/// The aborts a stopped engine could not record (their runs were stopped
/// first): recorded now, or once there is room. Returns their runs, which
/// are not carried on.
fn finish_aborts(engine: &Arc<Engine>) -> Vec<RunId> {
    let dir = engine.paths().data_dir.join(ABORTING_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let Some(id) = e
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("run-"))
            .and_then(|n| n.parse::<RunId>().ok())
        else {
            continue;
        };
        let actor = std::fs::read(e.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<Actor>(&b).ok())
            .unwrap_or(Actor::Engine);
        let active = engine.run(id).is_ok_and(|r| {
            overseer_core::apply(r.state, RunEvent::Abort, engine.clock.now()).is_ok()
        });
        if !active {
            let _ = std::fs::remove_file(e.path());
            continue;
        }
        out.push(id);
        engine.live.set_aborting(id, true);
        let runs = engine.runs_layer();
        let now = engine.clock.now();
        engine.spawn_task(async move { runs.record_abort_until_written(id, actor, now).await });
    }
    out
}

impl Engine {
    /// When `gate` is answered (a question's Answer with words), `then`
    /// gets the words and who answered, on a task of its own.
    pub(crate) fn when_answered(
        self: &Arc<Self>,
        gate: GateId,
        then: impl FnOnce(&Arc<Engine>, String, Actor) + Send + 'static,
    ) {
        let engine = self.clone();
        self.spawn_task(async move {
            let Ok(d) = wait_gate(&engine, gate).await else {
                return;
            };
            if let (Ok(overseer_core::QuestionChoice::Answer), Some(text)) = (
                d.choice::<overseer_core::QuestionChoice>(),
                d.context.filter(|c| !c.trim().is_empty()),
            ) {
                then(&engine, text, d.actor);
            }
        });
    }

    /// Starts driving runs: recovery after a crash, then every queued run.
    /// Call once, inside a tokio runtime.
    /// `voices` serves each run's own socket, where its agent asks
    /// ([`crate::RunVoices`]; `overseer_server::RunSockets`).
    pub fn start_orchestrator(
        self: &Arc<Self>,
        voices: Arc<dyn crate::RunVoices>,
    ) -> tokio::task::JoinHandle<()> {
        let _ = self.me.set(Arc::downgrade(self));
        let _ = self.voices.set(voices);
        self.shared_layer().start_webhooks();
        start(self.clone())
    }

    /// Before a clean exit: stops every live agent's whole process tree
    /// (their runs are marked interrupted by the next start), then the
    /// orchestrator's tasks, and waits for them (up to 10 s): once
    /// it returns nothing of the engine's own still runs or writes, so the
    /// final checkpoint ([`Engine::shutdown`]) is the last record. Returns
    /// how many agents were stopped.
    pub async fn stop_agents(&self) -> usize {
        // Webhook deliveries still pending wait in the database for the
        // next start.
        self.webhooks.stop();
        // Browsers too: the port is free once the app has closed.
        self.stop_serving_browsers().await;
        stop_all(self).await
    }
}

impl Runs {
    /// Runs `task` on the orchestrator's runtime (or the current one);
    /// false when there is none (nothing was started).
    pub(crate) fn spawn_task<F>(&self, task: F) -> bool
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        match self
            .runtime
            .get()
            .cloned()
            .or_else(|| tokio::runtime::Handle::try_current().ok())
        {
            Some(rt) => {
                rt.spawn(task);
                true
            }
            None => false,
        }
    }

    /// Starts the sessions of agents launched from now on with `sessions`
    /// instead of over ACP: a scripted agent in tests. The agent's process
    /// is still launched, contained, in the run's worktree.
    pub fn use_agent_sessions(&self, sessions: Arc<dyn StartSession>) {
        *self.live.sessions.lock().unwrap_or_else(|p| p.into_inner()) = Some(sessions);
    }

    /// The marker in the environment of every process of `run`'s agent.
    pub fn agent_marker(&self, run: RunId) -> String {
        format!("{}run-{run}", marker_prefix(self))
    }
}

/// Recovery after a crash or kill -9, then the loop that launches queued runs.
/// Call once, inside the tokio runtime.
pub fn start(engine: Arc<Engine>) -> tokio::task::JoinHandle<()> {
    let _ = engine.runtime.set(tokio::runtime::Handle::current());
    let carry_on = recover(&engine).unwrap_or_else(|e| {
        tracing::error!("recovery after restart: {}", e.message);
        Vec::new()
    });
    crate::supervise::start_timers(engine.clone());
    crate::snooze::start_wakes(engine.clone());
    engine.spawn_cancellable(crate::waiting::sweep(engine.shared_layer()));
    engine.spawn_cancellable(engine.runs_layer().watch_disk());
    let mut rx = engine.subscribe();
    engine.clone().spawn_cancellable(async move {
        for run in carry_on {
            launch(&engine, run, Start::Resume);
        }
        launch_queued(&engine);
        loop {
            match rx.recv().await {
                Ok(EngineEvent::RunChanged { run }) if run.state == RunState::Queued => {
                    launch(&engine, run.id, Start::Fresh);
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => launch_queued(&engine),
                Err(RecvError::Closed) => break,
            }
        }
    })
}

fn launch_queued(engine: &Arc<Engine>) {
    match engine.runs() {
        Ok(runs) => {
            for r in runs.into_iter().filter(|r| r.state == RunState::Queued) {
                launch(engine, r.id, Start::Fresh);
            }
        }
        Err(e) => tracing::error!("cannot list queued runs: {}", e.message),
    }
}

/// How a run's driver starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// A queued run: claimed, planned, executed.
    Fresh,
    /// A run the engine was driving when it stopped: carried on from where
    /// it was (`resume`).
    Resume,
}

fn launch(engine: &Arc<Engine>, run: RunId, start: Start) {
    if engine.is_stopping() || engine.live.is_aborting(run) || !engine.live.take(run) {
        return;
    }
    // An event says what a run was when it was written, not what it is now
    // (a batch carries a run's creation before its later steps): a fresh
    // launch is for a run queued now, else its claim would fail and fail a
    // run that is already under way.
    if start == Start::Fresh && !engine.run(run).is_ok_and(|r| r.state == RunState::Queued) {
        engine.live.release(run);
        return;
    }
    let engine = engine.clone();
    engine.clone().spawn_cancellable(async move {
        // A queued run waits for room on the disk before it takes any.
        if start == Start::Fresh && !engine.disk_room_now() {
            engine.disk.wait_for_room().await;
        }
        let result = drive(&engine, run, start).await;
        if let Err(e) = result {
            fail_run(&engine, run, &e.message).await;
        }
        if let Some(live) = engine.live.get(run) {
            terminate_tree(run, &live, engine.config.abort_timeout(), "after its run").await;
        }
        engine.live.set(run, None);
        engine.live.release(run);
    });
}

/// Kills whatever agents of a stopped engine survived, puts back decisions
/// forged while it was down, notifies again about everything still waiting
/// for the user, and returns the runs it was driving: they are carried on
/// (their pending gates stay pending, with their timers).
fn recover(engine: &Arc<Engine>) -> Result<Vec<RunId>, ApiError> {
    // Every process a killed engine's runs left: their cgroups first (exact,
    // marker or not), then by marker (machines without cgroups).
    if let Some(root) = engine.run_cgroup_root() {
        let killed = overseer_contain::cgroup::sweep(&root);
        if !killed.is_empty() {
            tracing::warn!(
                ?killed,
                "killed processes left in run cgroups by a previous engine"
            );
        }
    }
    let killed = process::kill_marked(&marker_prefix(engine));
    if !killed.is_empty() {
        tracing::warn!(?killed, "killed agent processes left by a previous engine");
    }
    // A decision written into the database while the engine was down, with
    // no signed record, is put back before anything acts on it.
    engine.reconcile_decisions_at_start()?;
    // An external session lives outside us: it was not interrupted, and its
    // askers come back for their gates (or they are withdrawn).
    let aborted = finish_aborts(engine);
    let runs = engine.runs()?;
    consult::fail_orphans(engine, &runs);
    let carry_on = runs
        .into_iter()
        .filter(takes_work)
        .map(|r| r.id)
        .filter(|id| !aborted.contains(id))
        .collect();
    engine.renotify_pending()?;
    crate::agents::external::withdraw_unclaimed_after_restart(engine);
    Ok(carry_on)
}

/// Marks the run failed, with why on its timeline (see [`end_run`]).
async fn fail_run(engine: &Engine, run: RunId, why: &str) {
    end_run(engine, run, RunEvent::Fail, why, why).await;
}

/// A run's driver, set up: its agent running in its worktree.
struct Driver {
    work: RunWork,
    supervision: Supervision,
    worktree: PathBuf,
    turn: Arc<Mutex<Turn>>,
    conn: Arc<dyn AgentSession>,
    progress: Progress,
    /// A gate a restarted engine found the run waiting on.
    adopt: Option<GateView>,
}

/// Claims the run (a fresh one), prepares its worktree, launches its agent
/// in its supervised mode, and says where the run starts.
async fn set_up(engine: &Arc<Engine>, run: RunId, start: Start) -> Result<Driver, ApiError> {
    if start == Start::Fresh {
        engine.transition(run, RunEvent::Claim, None, &Actor::Engine)?;
    }
    let work = engine.store().run_work(run)?;
    let profile = engine
        .config
        .profile(&work.agent)
        .map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    let mut supervision = Supervision::of(&profile, &work);
    let worktree = prepare_worktree(engine, &work).await?;
    repo_grants::show(engine, run, &worktree);
    let turn = Arc::new(Mutex::new(Turn::default()));
    let conn = launch_agent(engine, &work, &profile, &worktree, &turn).await?;
    if supervision.mode.is_none() {
        // A profile that names no mode: the mode the agent starts in if it
        // is known to ask, else one it offers that is; else the run does
        // not start (fail closed: a mode Overseer does not know acts unasked).
        supervision.mode = modes::starting_mode(engine, &work, &*conn, profile.allow_unsupervised)?;
    }
    modes::supervise(engine, &work, &*conn, &supervision).await?;
    let (progress, adopt) = match start {
        Start::Fresh => (Progress::default(), None),
        Start::Resume => {
            let r = resume::prepare(engine, &work, &turn, conn.resumed())?;
            (r.progress, r.adopt)
        }
    };
    if engine.run(run)?.state != RunState::Running {
        engine.transition(run, RunEvent::Start, None, &Actor::Engine)?;
    }
    Ok(Driver {
        work,
        supervision,
        worktree,
        turn,
        conn,
        progress,
        adopt,
    })
}

/// A run's life: planning until a plan is approved, its steps, then review.
/// The phase is kept at every turn (`resume`), so a restart carries it on.
async fn drive(engine: &Arc<Engine>, run: RunId, start: Start) -> Result<(), ApiError> {
    let Driver {
        work,
        supervision,
        worktree,
        turn,
        conn,
        mut progress,
        mut adopt,
    } = match set_up(engine, run, start).await {
        Ok(d) => d,
        Err(e) if start == Start::Resume && !engine.is_stopping() => {
            resume::could_not_carry_on(engine, run, &e.message).await;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    loop {
        progress = match progress {
            Progress::Planning { guidance } => {
                match planning::plan(
                    engine,
                    &work,
                    &*conn,
                    &turn,
                    &supervision,
                    guidance,
                    adopt.take(),
                )
                .await?
                {
                    planning::Planned::Approved(plan, guidance) => Progress::Executing {
                        plan,
                        step: 0,
                        retries: 0,
                        reorients: 0,
                        guidance,
                    },
                    planning::Planned::Ended => return Ok(()),
                }
            }
            Progress::Executing {
                plan,
                step,
                retries,
                reorients,
                guidance,
            } => {
                let at = Steps {
                    plan,
                    index: step,
                    retries,
                    reorients,
                    guidance,
                    cost_from: None,
                };
                match execute(
                    engine,
                    &work,
                    &worktree,
                    &*conn,
                    &turn,
                    &supervision,
                    at,
                    adopt.take(),
                )
                .await?
                {
                    Executed::Done => break,
                    Executed::Replan(guidance) => Progress::Planning { guidance },
                    Executed::Ended => return Ok(()),
                }
            }
            Progress::Finishing => break,
        };
    }
    resume::save(engine, run, &turn, &Progress::Finishing);
    finish(engine, &work).await
}

/// Done: review, or merge when the user's rule says so. The commit the
/// review shows (the branch's latest) is recorded first: it is what a merge
/// merges, whatever happens to the branch afterwards.
async fn finish(engine: &Arc<Engine>, work: &RunWork) -> Result<(), ApiError> {
    let run = work.run_id;
    if !still_active(engine, run) {
        // Stopped meanwhile (aborted, or a security event): never merged
        // from here.
        return Ok(());
    }
    // Both in this task (not on the blocking pool): stopping the engine
    // cancels a driver at its next await, so a merge it started, and what
    // is recorded of it, finish before the engine's final checkpoint.
    overseer_contain::blocking::off_worker(|| engine.record_review_tip(run))?;
    // Files of the diff that other tools run on their own: the review names
    // them, and no one but a human merges them.
    let auto_run = overseer_contain::blocking::off_worker(|| engine.auto_run_of_run(run));
    let held = crate::autorun::needs_a_human(&auto_run);
    let auto = unasked::may_auto_advance(engine, work)
        && engine
            .config
            .auto_advance(&work.stage, work.workspace.settings.auto_advance);
    if let Some(why) = &held {
        let text = if auto {
            format!("auto-advance did not merge: {why}")
        } else {
            format!("the merge review waits for a human: {why}")
        };
        engine.record_activity_or_warn(
            run,
            Activity::Merge {
                text,
                outcome: None,
            },
        );
    }
    if auto && held.is_none() {
        use crate::merge::MergeOutcome;
        let merged =
            overseer_contain::blocking::off_worker(|| engine.merge_run(run, &Actor::Engine));
        match merged {
            Ok(MergeOutcome::NoRepository) => {}
            Ok(outcome) => {
                engine.note_merge(run, &outcome);
                let note = match outcome {
                    MergeOutcome::Merged { .. } | MergeOutcome::AlreadyMerged { .. } => {
                        "merged: every sensor passed and auto-advance is on"
                    }
                    MergeOutcome::NothingToMerge => {
                        "nothing to merge: every sensor passed and auto-advance is on"
                    }
                    MergeOutcome::MergedOutside | MergeOutcome::NoRepository => {
                        "already on the base branch, merged outside Overseer: nothing merged again"
                    }
                };
                engine.transition(
                    run,
                    RunEvent::Finish { auto_advance: true },
                    Some(note),
                    &Actor::Engine,
                )?;
                return Ok(());
            }
            // Nothing changed: the review waits for the user, and says why.
            Err(e) => {
                engine.record_activity_or_warn(
                    run,
                    Activity::Merge {
                        text: format!("auto-advance did not merge: {}", e.message),
                        outcome: None,
                    },
                );
            }
        }
    }
    let review = overseer_core::MergeReviewGate {
        auto_run: auto_run.unwrap_or_default(),
    };
    let authority = engine.review_authority(work);
    let view = engine.transition_reviewing(
        run,
        RunEvent::Finish {
            auto_advance: false,
        },
        None,
        &Actor::Engine,
        &review,
        authority,
    )?;
    if let (Some(gate), Some(_)) = (
        view.pending_gate
            .filter(|g| g.kind == GateKind::MergeReview),
        authority,
    ) {
        engine.supervise_review(work, gate.id);
    }
    Ok(())
}

/// A run this engine drives (not an external session's) that is taking
/// work: claimed, running, or queued for a retry.
pub(crate) fn takes_work(r: &overseer_core::RunView) -> bool {
    // A consultation is driven by its asker's call only (`consult`).
    !r.origin.is_external()
        && r.parent.is_none()
        && matches!(
            r.state,
            RunState::Claimed | RunState::Running | RunState::RetryQueued
        )
}
