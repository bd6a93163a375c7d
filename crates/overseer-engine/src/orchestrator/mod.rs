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
mod modes;
mod permissions;
mod planning;
mod repo_grants;
mod resume;
mod sensors;
mod steps;
mod unasked;

use agent::{launch_agent, prepare_worktree, terminate_tree};
pub(crate) use agent::{stop_agent, stop_all};
use overseer_core::Activity;
use steps::{execute, Executed, Steps};

use crate::acp::{AcpSessions, AgentSession, StartSession, StopReason};
use crate::process::{self, AgentProcess};
use crate::Engine;
use overseer_core::progress::Progress;
use overseer_core::rules::RuleSet;
use overseer_core::{
    Actor, ApiError, EngineEvent, ErrorCode, GateDecision, GateId, GateKind, GateView, RunEvent,
    RunId, RunState,
};
use overseer_store::RunWork;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast::error::RecvError;
/// After this many retries of the same step, Retry is no longer offered.
pub const MAX_RETRIES: u32 = 10;
/// A run whose agent is alive.
pub(crate) struct Live {
    pub(crate) conn: Arc<dyn AgentSession>,
    pub(crate) process: tokio::sync::Mutex<AgentProcess>,
    /// The run's own socket for its MCP server; closed with the agent.
    pub(crate) _asks: Option<crate::server::RunSocket>,
}

/// The runs the orchestrator is driving, by id.
#[derive(Default)]
pub(crate) struct LiveRuns {
    pub(crate) agents: Mutex<HashMap<RunId, Arc<Live>>>,
    driving: Mutex<HashSet<RunId>>,
    /// Questions whose asker stopped with the engine, by gate, with their
    /// run and what they asked: the first of an answer or the carried-on
    /// agent asking the same again takes one.
    orphans: Mutex<HashMap<GateId, (RunId, String)>>,
    /// How agent sessions start; None: over ACP ([`AcpSessions`]).
    sessions: Mutex<Option<Arc<dyn StartSession>>>,
}

impl LiveRuns {
    pub(crate) fn get(&self, run: RunId) -> Option<Arc<Live>> {
        self.agents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&run)
            .cloned()
    }

    fn set(&self, run: RunId, live: Option<Arc<Live>>) {
        let mut agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        match live {
            Some(l) => agents.insert(run, l),
            None => agents.remove(&run),
        };
    }

    /// True when this call took the run (no other task drives it).
    fn take(&self, run: RunId) -> bool {
        self.driving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(run)
    }

    fn keep_orphan(&self, gate: GateId, run: RunId, asked: &str) {
        self.orphans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(gate, (run, asked.to_owned()));
    }

    /// True when this call took the orphan (nobody else will).
    fn take_orphan(&self, gate: GateId) -> bool {
        self.orphans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&gate)
            .is_some()
    }

    /// The orphaned question of `run` that asked exactly `asked`, taken.
    fn adopt_orphan(&self, run: RunId, asked: &str) -> Option<GateId> {
        let mut orphans = self.orphans.lock().unwrap_or_else(|p| p.into_inner());
        let gate = orphans
            .iter()
            .filter(|(_, (r, a))| *r == run && a == asked)
            .map(|(g, _)| *g)
            .min()?;
        orphans.remove(&gate);
        Some(gate)
    }

    /// How the next agent session starts.
    fn sessions(&self) -> Arc<dyn StartSession> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| Arc::new(AcpSessions))
    }

    fn release(&self, run: RunId) {
        self.driving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&run);
    }
}

/// The marker every agent process of this database carries in its environment.
pub(crate) fn marker_prefix(engine: &Engine) -> String {
    format!("overseer-{}-", engine.db_id)
}

impl Engine {
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
    engine.spawn_cancellable(engine.clone().watch_disk());
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
    if engine.is_stopping() || !engine.live.take(run) {
        return;
    }
    let engine = engine.clone();
    engine.clone().spawn_cancellable(async move {
        // A queued run waits for room on the disk before it takes any.
        if start == Start::Fresh {
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
        let killed = crate::contain::cgroup::sweep(&root);
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
    let carry_on = engine
        .runs()?
        .into_iter()
        .filter(takes_work)
        .map(|r| r.id)
        .collect();
    engine.renotify_pending()?;
    crate::agents::external::withdraw_unclaimed_after_restart(engine);
    Ok(carry_on)
}

/// How long a run's end that could not be written waits before it is
/// written again (when the disk is not what stops it).
const FAIL_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Marks the run failed, with why on its timeline (see [`end_run`]).
async fn fail_run(engine: &Engine, run: RunId, why: &str) {
    end_run(engine, run, RunEvent::Fail, why, why).await;
}

/// Ends a run whose driver stopped: `why` on its timeline, then `event`
/// (a failure, an interruption) with `note`. An end that cannot be written
/// (a full disk, a locked database) is retried until it is, once the disk
/// has room again: a run whose driver ended is never left `running` with
/// nothing driving it until a restart.
pub(super) async fn end_run(engine: &Engine, run: RunId, event: RunEvent, why: &str, note: &str) {
    let mut noted = false;
    let mut attempt = 0u32;
    loop {
        // Agents stopped at exit did not fail: the next start finds their
        // runs interrupted (resumable).
        if engine.is_stopping() {
            return;
        }
        if !noted {
            noted = engine
                .record_activity(
                    run,
                    Activity::Error {
                        text: why.to_owned(),
                    },
                )
                .is_ok();
        }
        let ended = match engine.run(run) {
            Ok(v) if !v.state.is_released() && v.state != RunState::PendingReview => {
                engine.transition(run, event.clone(), Some(note), &Actor::Engine)
            }
            Ok(_) => return,
            Err(e) => Err(e),
        };
        let Err(e) = ended else { return };
        if e.code != ErrorCode::Storage {
            tracing::warn!(run = %run, ?event, "cannot end the run: {}", e.message);
            return;
        }
        attempt += 1;
        tracing::warn!(
            run = %run,
            ?event,
            attempt,
            "cannot end the run yet, retrying once there is room: {}",
            e.message
        );
        engine.disk.wait_for_room().await;
        tokio::time::sleep(FAIL_RETRY).await;
    }
}

/// Why a run cannot go on.
fn err(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Internal, message)
}

/// Waits for a gate's decision. The gate is already in the database. Woken
/// only when that gate's row changed (the store's writer says which gates
/// each commit changed), so a waiter costs nothing while other gates, its
/// own run's timeline and other runs change.
pub(crate) async fn wait_gate(engine: &Engine, gate: GateId) -> Result<GateDecision, ApiError> {
    let mut wait = engine.gate_watch.watch(gate);
    loop {
        // Seen: a change from here on wakes the wait below.
        wait.seen();
        if engine.gate(gate)?.decision.is_some() {
            // Acting on it now: from here on nobody can override it, and a
            // human's override made before this point is what we act on. A
            // decision its signed record does not back is not acted on.
            if let Some(d) = engine.effect_signed(gate)? {
                return Ok(d);
            }
        }
        if !wait.changed().await {
            return Err(err("the engine is stopping"));
        }
    }
}

/// When the run is paused for flooding Overseer ([`crate::flood`]): waits
/// for the user's decision on its pause gate. Some(true): resumed, go on;
/// Some(false): stopped; None: not paused.
pub(super) async fn flood_hold(
    engine: &Arc<Engine>,
    run: RunId,
    turn: &Mutex<Turn>,
) -> Result<Option<bool>, ApiError> {
    let Some(gate) = engine.floods.paused_gate(run) else {
        return Ok(None);
    };
    let d = wait_progress_gate(engine, turn, gate).await?;
    let resumed =
        d.choice::<overseer_core::DeviationChoice>() == Ok(overseer_core::DeviationChoice::Retry);
    if resumed {
        engine.flood_resumed(run, gate, &d.actor);
    }
    Ok(Some(resumed))
}

fn still_active(engine: &Engine, run: RunId) -> bool {
    matches!(
        engine.run(run).map(|r| r.state),
        Ok(RunState::Running | RunState::Claimed | RunState::RetryQueued)
    )
}

/// Shared between the prompt loop and the signal pump.
#[derive(Default)]
pub(super) struct Turn {
    /// Agent message text of the current turn.
    transcript: String,
    /// Rejection reasons to tell the agent in its next prompt.
    rejections: Vec<String>,
    /// Rules the user's "always" answers added for this run.
    run_rules: RuleSet,
    /// Always-gated operations the agent asked for during the current step.
    destructive: u32,
    /// Tool calls of the current step by id, and whether each succeeded.
    tool_calls: HashMap<String, bool>,
    /// The agent's latest ACP plan (progress list) of the current turn.
    entries: Vec<crate::acp::PlanEntry>,
    /// Where the run is: planning (in the agent's mode or not) or executing.
    phase: Phase,
    /// The plan gate's outcome when it was the agent's own exit-plan request.
    plan_decision: Option<planning::Decided>,
    /// A mode the agent switched to that nobody chose: (mode, why).
    breach: Option<(String, String)>,
    /// A human said no during the turn: the agent hears why at once, in a
    /// follow-up turn on the same step (a rule's denial waits for the next
    /// prompt, so an agent that keeps asking cannot loop).
    owes_reason: bool,
    /// The last of the driver's gates (plan, step review, pause, deviation)
    /// whose decision it acted on: the checkpoint's `after_gate`.
    acted_gate: Option<GateId>,
    /// The agent carried out a change without asking and the run was
    /// stopped for it (`unasked`): said once.
    stopped_unasked: bool,
}

/// Waits for one of the driver's own gates (plan, step review, supervisor
/// pause, deviation) and notes it acted on it: a restart after this point
/// does not wait on it again.
pub(super) async fn wait_progress_gate(
    engine: &Engine,
    turn: &Mutex<Turn>,
    gate: GateId,
) -> Result<GateDecision, ApiError> {
    let d = wait_gate(engine, gate).await?;
    turn.lock().unwrap_or_else(|p| p.into_inner()).acted_gate = Some(gate);
    Ok(d)
}

/// What the run is doing, for the permission handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Phase {
    #[default]
    Executing,
    /// A planning turn: writes are denied, shell asks.
    Planning { in_mode: bool },
}

/// How a run's agent is supervised, from its profile and its task.
pub(super) struct Supervision {
    /// The mode the agent works in (None: it offers none).
    pub(super) mode: Option<String>,
    pub(super) plan: overseer_core::agent::PlanStrategy,
    pub(super) plan_mode: String,
}

impl Supervision {
    fn of(profile: &crate::config::AgentProfile, work: &RunWork) -> Supervision {
        Supervision {
            mode: work
                .task_settings
                .mode
                .clone()
                .or_else(|| profile.mode.clone()),
            plan: work.task_settings.plan.unwrap_or(profile.plan),
            plan_mode: profile.plan_mode.clone(),
        }
    }
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
    crate::blocking::off_worker(|| engine.record_review_tip(run))?;
    // Files of the diff that other tools run on their own: the review names
    // them, and no one but a human merges them.
    let auto_run = crate::blocking::off_worker(|| engine.auto_run_of_run(run));
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
        let merged = crate::blocking::off_worker(|| engine.merge_run(run, &Actor::Engine));
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
    let view = engine.transition_reviewing(
        run,
        RunEvent::Finish {
            auto_advance: false,
        },
        None,
        &Actor::Engine,
        &review,
    )?;
    if let Some(gate) = view
        .pending_gate
        .filter(|g| g.kind == GateKind::MergeReview)
    {
        engine.supervise_gate(work, gate.id)?;
    }
    Ok(())
}

fn stop(engine: &Engine, run: RunId, why: &str) -> Result<(), ApiError> {
    if still_active(engine, run) {
        engine.transition(run, RunEvent::Fail, Some(why), &Actor::Engine)?;
    }
    Ok(())
}

/// True (once) when a human refused a tool call during the turn and the
/// agent has not yet been told why.
fn take_owed_reason(turn: &Mutex<Turn>) -> bool {
    let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::take(&mut t.owes_reason) && !t.rejections.is_empty()
}

fn take_feedback(engine: &Engine, run: RunId, turn: &Mutex<Turn>, guidance: &str) -> String {
    let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = String::new();
    for instruction in engine.take_steering(run) {
        out.push_str(&format!("USER INSTRUCTION: {instruction}\n"));
    }
    for r in t.rejections.drain(..) {
        out.push_str(&format!("The user rejected a tool call: {r}\n"));
    }
    if !guidance.trim().is_empty() {
        out.push_str(guidance.trim());
        out.push('\n');
    }
    out
}

/// Sends one prompt and returns how it ended with the turn's message text,
/// once every message the agent sent during the turn has been handled.
/// While the disk is nearly full no prompt is sent: it waits for room.
pub(super) async fn prompt_turn(
    engine: &Engine,
    conn: &dyn AgentSession,
    turn: &Mutex<Turn>,
    text: &str,
) -> Result<(StopReason, String), ApiError> {
    engine.disk.wait_for_room().await;
    {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        t.transcript.clear();
        t.entries.clear();
    }
    let stop = conn.prompt(text).await;
    // The prompt's answer follows the turn's updates on the wire; the pump
    // handles signals on its own task, so wait until it has seen them all.
    conn.settle().await;
    let stop = stop.map_err(|e| err(format!("the agent failed: {e}")))?;
    let transcript = std::mem::take(&mut turn.lock().unwrap_or_else(|p| p.into_inner()).transcript);
    Ok((stop, transcript))
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    line.chars().take(120).collect()
}

fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    s.chars().skip(n - max).collect()
}

/// A run this engine drives (not an external session's) that is taking
/// work: claimed, running, or queued for a retry.
pub(crate) fn takes_work(r: &overseer_core::RunView) -> bool {
    !r.origin.is_external()
        && matches!(
            r.state,
            RunState::Claimed | RunState::Running | RunState::RetryQueued
        )
}
