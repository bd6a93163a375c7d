//! Drives runs: claims queued runs, launches their agent in a worktree over
//! ACP, puts it in its supervised mode (`modes`), gets a plan approved
//! (`planning`: the agent's own plan mode, a plain-words planning prompt, or
//! none), executes each step as its own turn, turns every failure into a
//! deviation gate, runs the sensors after each step, and hands the finished
//! work to review (or merges it when the user's auto-advance rule says so).
//!
//! Every decision point is a gate written to the database before anyone waits
//! on it; waiting is done by watching the engine's events, so a decision from
//! the window, the CLI or a restart's re-notification all wake the same code.
//! Agent output is recorded in the run's timeline as untrusted text.

mod modes;
mod planning;
mod resume;

use crate::acp::{AgentConnection, AgentSignal, PermissionReply, QuestionReply, StopReason};
use crate::git;
use crate::process::{self, AgentProcess, AgentSpec};
use crate::supervise::{
    evaluate_step, permission_for, policy_of, step_review_options, supervisor_pause_options,
    tool_request,
};
use crate::Engine;
use overseer_core::confidence::{self, Band, StepAction, StepEvidence};
use overseer_core::plan::{step_prompt, PlanProposal, PlanSource};
use overseer_core::progress::Progress;
use overseer_core::rules::{self, Permission, RuleSet};
use overseer_core::supervision::{after_reorient_limit, correction_prompt, Verdict};
use overseer_core::{
    Actor, ApiError, DeviationChoice, EngineEvent, ErrorCode, GateDecision, GateId, GateKind,
    GateOption, GateView, PlanChoice, QuestionChoice, RunEvent, RunId, RunState, StepReviewChoice,
    SupervisorPauseChoice, ToolCallChoice,
};
use overseer_store::RunWork;
use overseer_store::{DecisionInput, GateSpec};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// After this many retries of the same step, Retry is no longer offered.
pub const MAX_RETRIES: u32 = 10;
/// How long one sensor may run.
const SENSOR_TIMEOUT: Duration = Duration::from_secs(600);
/// Sensor output kept per command.
const SENSOR_OUTPUT_MAX: usize = 64 * 1024;

/// A run whose agent is alive.
pub(crate) struct Live {
    pub(crate) conn: Arc<AgentConnection>,
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

    fn release(&self, run: RunId) {
        self.driving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&run);
    }
}

/// The marker every agent process of this database carries in its environment.
pub(crate) fn marker_prefix(engine: &Engine) -> String {
    let id = engine
        .store()
        .db_id()
        .unwrap_or_else(|_| "unknown".to_owned());
    format!("overseer-{id}-")
}

impl Engine {
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
    let mut rx = engine.subscribe();
    tokio::spawn(async move {
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
    tokio::spawn(async move {
        let result = drive(&engine, run, start).await;
        if let Err(e) = result {
            fail_run(&engine, run, &e.message);
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
        .filter(|r| {
            !r.origin.is_external()
                && matches!(
                    r.state,
                    RunState::Claimed | RunState::Running | RunState::RetryQueued
                )
        })
        .map(|r| r.id)
        .collect();
    engine.renotify_pending()?;
    crate::agents::external::withdraw_unclaimed_after_restart(engine);
    Ok(carry_on)
}

fn fail_run(engine: &Engine, run: RunId, why: &str) {
    // Agents stopped at exit did not fail: the next start finds their runs
    // interrupted (resumable).
    if engine.is_stopping() {
        return;
    }
    let _ = engine.record_activity(run, "error", json!({ "text": why }));
    match engine.run(run) {
        Ok(v) if !v.state.is_released() && v.state != RunState::PendingReview => {
            if let Err(e) = engine.transition(run, RunEvent::Fail, Some(why), &Actor::Engine) {
                tracing::warn!(run, "cannot mark failed: {}", e.message);
            }
        }
        Ok(_) | Err(_) => {}
    }
}

/// Why a run cannot go on.
fn err(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Internal, message)
}

/// Waits for a gate's decision. The gate is already in the database.
pub(crate) async fn wait_gate(engine: &Engine, gate: GateId) -> Result<GateDecision, ApiError> {
    let mut rx = engine.subscribe();
    loop {
        if engine.gate(gate)?.decision.is_some() {
            // Acting on it now: from here on nobody can override it, and a
            // human's override made before this point is what we act on. A
            // decision its signed record does not back is not acted on.
            if let Some(d) = engine.effect_signed(gate)? {
                return Ok(d);
            }
        }
        match rx.recv().await {
            Ok(EngineEvent::GateDecided { gate_id, .. }) if gate_id == gate => {}
            Ok(EngineEvent::RunChanged { .. }) | Err(RecvError::Lagged(_)) => {}
            Ok(_) => continue,
            Err(RecvError::Closed) => return Err(err("the engine is stopping")),
        }
    }
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
    conn: Arc<AgentConnection>,
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
    let turn = Arc::new(Mutex::new(Turn::default()));
    let conn = launch_agent(engine, &work, &profile, &worktree, &turn).await?;
    if supervision.mode.is_none() {
        // A profile that names no mode (written before modes mattered) keeps
        // the agent in the one it starts in, if that one asks: a later switch
        // is still caught. One that acts unasked is refused in `supervise`.
        supervision.mode = conn
            .current_mode()
            .filter(|m| !overseer_core::agent::acts_unasked(m));
    }
    modes::supervise(engine, &work, &conn, &supervision).await?;
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
            resume::could_not_carry_on(engine, run, &e.message);
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
                    &conn,
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
                    &conn,
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

/// How the steps of a plan went.
enum Executed {
    Done,
    /// A new plan is wanted, with this guidance.
    Replan(String),
    Ended,
}

/// Where execution is: the fields of [`Progress::Executing`].
struct Steps {
    plan: PlanProposal,
    index: usize,
    retries: u32,
    reorients: u32,
    /// The user's (or the last failure's) words for the next turn.
    guidance: String,
}

impl Steps {
    fn progress(&self) -> Progress {
        Progress::Executing {
            plan: self.plan.clone(),
            step: self.index,
            retries: self.retries,
            reorients: self.reorients,
            guidance: self.guidance.clone(),
        }
    }
}

/// What the step loop does next.
enum Flow {
    /// Round again (the next step, or the same one).
    Next,
    Return(Executed),
    /// The step failed: a retry by policy, or a deviation gate.
    Failed(String),
}

fn after_step(
    engine: &Engine,
    run: RunId,
    next: StepNext,
    at: &mut Steps,
    follow_up: &mut Option<String>,
) -> Result<Flow, ApiError> {
    Ok(match next {
        StepNext::Proceed => {
            at.index += 1;
            at.retries = 0;
            Flow::Next
        }
        StepNext::Again(g) => {
            *follow_up = Some(g);
            Flow::Next
        }
        StepNext::Stop(why) => {
            stop(engine, run, &why)?;
            Flow::Return(Executed::Ended)
        }
        StepNext::Ended => Flow::Return(Executed::Ended),
        StepNext::Diagnose(d) => Flow::Failed(d),
    })
}

fn after_deviation(
    engine: &Engine,
    run: RunId,
    decided: Deviation,
    failure: &str,
    at: &mut Steps,
) -> Result<Flow, ApiError> {
    Ok(match decided {
        Deviation::Retry(g) => {
            at.retries += 1;
            at.guidance = format!("The last attempt failed: {failure}\nRetry. {g}");
            Flow::Next
        }
        Deviation::Replan(g) => Flow::Return(Executed::Replan(format!(
            "The last attempt failed: {failure}\nMake a new plan. {g}"
        ))),
        Deviation::Stop => {
            stop(engine, run, failure)?;
            Flow::Return(Executed::Ended)
        }
    })
}

/// Each step of the approved plan is its own prompt turn, weighed when it
/// ends (sensors, supervisor, confidence), with a deviation gate on failure.
/// `adopt`: a gate of the step loop a restarted engine found waiting (a step
/// review, a supervisor's pause, a deviation): its decision comes first.
#[allow(clippy::too_many_arguments)]
async fn execute(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &Path,
    conn: &AgentConnection,
    turn: &Mutex<Turn>,
    supervision: &Supervision,
    mut at: Steps,
    mut adopt: Option<GateView>,
) -> Result<Executed, ApiError> {
    let run = work.run_id;
    // A follow-up turn (a correction, a steering instruction) speaks to the
    // agent directly instead of restating the step.
    let mut follow_up: Option<String> = None;
    while at.index < at.plan.steps.len() {
        if !still_active(engine, run) {
            return Ok(Executed::Ended);
        }
        let flow = match adopt.take() {
            Some(gate) => {
                resume::step_gate(engine, work, turn, &gate, &mut at, &mut follow_up).await?
            }
            None => {
                step_turn(
                    engine,
                    work,
                    worktree,
                    conn,
                    turn,
                    supervision,
                    &mut at,
                    &mut follow_up,
                )
                .await?
            }
        };
        let failure = match flow {
            Flow::Next => continue,
            Flow::Return(e) => return Ok(e),
            Flow::Failed(f) => f,
        };
        let policy = work.task_settings.retry.or(work.workspace.settings.retry);
        if let Some(wait) = policy.and_then(|p| p.wait_before_retry(at.retries)) {
            match unattended_retry(engine, work, &failure, at.retries, wait).await? {
                Retried::Yes => {
                    at.retries += 1;
                    at.guidance = format!("The last attempt failed: {failure}\nRetry.");
                    continue;
                }
                Retried::Ended => return Ok(Executed::Ended),
                // Its record could not be written: the human decides.
                Retried::AskInstead => {}
            }
        }
        let can_retry = at.retries < MAX_RETRIES;
        let decided = deviation(
            engine,
            turn,
            run,
            "turn_failed",
            &failure,
            at.retries,
            can_retry,
        )
        .await?;
        match after_deviation(engine, run, decided, &failure, &mut at)? {
            Flow::Next | Flow::Failed(_) => {}
            Flow::Return(e) => return Ok(e),
        }
    }
    Ok(Executed::Done)
}

/// One turn on the current step, and how it ended.
#[allow(clippy::too_many_arguments)]
async fn step_turn(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &Path,
    conn: &AgentConnection,
    turn: &Mutex<Turn>,
    supervision: &Supervision,
    at: &mut Steps,
    follow_up: &mut Option<String>,
) -> Result<Flow, ApiError> {
    let run = work.run_id;
    resume::save(engine, run, turn, &at.progress());
    let feedback = take_feedback(engine, run, turn, &at.guidance);
    at.guidance.clear();
    let plan = &at.plan;
    let index = at.index;
    let text = match follow_up.take() {
        Some(lead) => format!("{lead}\n{feedback}").trim().to_owned(),
        None if plan.source == PlanSource::Skipped => {
            format!("{}\n{feedback}", work.prompt).trim().to_owned()
        }
        None => {
            let _ = engine.record_activity(
                run,
                "step_started",
                json!({ "step": index + 1, "text": plan.steps[index].title }),
            );
            step_prompt(plan, index, &feedback)
        }
    };
    let result = prompt_turn(conn, turn, &text).await;
    if let Some(next) = modes::after_breach(engine, work, conn, turn, supervision).await? {
        return Ok(match next {
            modes::Next::Again => Flow::Next,
            modes::Next::Stopped => Flow::Return(Executed::Ended),
        });
    }
    Ok(match result {
        Ok((StopReason::EndTurn, transcript)) => {
            if engine.has_steering(run) || take_owed_reason(turn) {
                // The user spoke while the agent worked (an instruction,
                // or a "no" and why): another turn on the same step, so
                // the agent hears it before the step is weighed.
                *follow_up = Some(String::new());
                return Ok(Flow::Next);
            }
            let wt = worktree.to_owned();
            let _ = tokio::task::spawn_blocking(move || {
                git::commit_all(&wt, "Work left uncommitted by the agent")
            })
            .await;
            let drift = check_drift(engine, work, plan);
            let results =
                run_sensors(engine, run, worktree, &work.workspace.settings.sensors).await;
            match results.iter().find(|r| !r.passed) {
                None => {
                    let step = FinishedStep {
                        plan,
                        sensors: &results,
                        drift,
                        retries: at.retries,
                        number: u32::try_from(index + 1).unwrap_or(u32::MAX),
                        transcript,
                    };
                    let mut reorients = at.reorients;
                    let next = weigh_step(engine, work, turn, &step, &mut reorients).await?;
                    at.reorients = reorients;
                    return after_step(engine, run, next, at, follow_up);
                }
                Some(f) => Flow::Failed(format!(
                    "sensor `{}` failed (exit {})\n{}",
                    f.command,
                    f.exit_code.map_or("none".to_owned(), |c| c.to_string()),
                    tail(&f.output, 4000)
                )),
            }
        }
        Ok((StopReason::Cancelled, _)) if !still_active(engine, run) => {
            Flow::Return(Executed::Ended)
        }
        // Some agents end the turn on a refusal (codex-acp's `abort`):
        // that is the user's "no", not a failure; tell the agent why.
        Ok((StopReason::Cancelled, _)) if take_owed_reason(turn) => {
            *follow_up = Some(String::new());
            Flow::Next
        }
        Ok((StopReason::Cancelled, transcript)) => Flow::Failed(format!(
            "the agent cancelled its turn: {}",
            tail(&transcript, 2000)
        )),
        Ok((other, transcript)) => Flow::Failed(format!(
            "the turn ended with {other:?}: {}",
            tail(&transcript, 2000)
        )),
        Err(e) => {
            if !still_active(engine, run) {
                return Ok(Flow::Return(Executed::Ended));
            }
            Flow::Failed(e.message)
        }
    })
}

/// Done: review, or merge when the user's rule says so. The commit the
/// review shows (the branch's latest) is recorded first: it is what a merge
/// merges, whatever happens to the branch afterwards.
async fn finish(engine: &Arc<Engine>, work: &RunWork) -> Result<(), ApiError> {
    let run = work.run_id;
    let e = engine.clone();
    tokio::task::spawn_blocking(move || e.record_review_tip(run))
        .await
        .map_err(|e| err(e.to_string()))??;
    let auto = engine
        .config
        .auto_advance(&work.stage, work.workspace.settings.auto_advance);
    if auto {
        use crate::merge::MergeOutcome;
        let e = engine.clone();
        let merged = tokio::task::spawn_blocking(move || e.merge_run(run, &Actor::Engine))
            .await
            .map_err(|e| err(e.to_string()))?;
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
                let _ = engine.record_activity(
                    run,
                    "merge",
                    json!({ "text": format!("auto-advance did not merge: {}", e.message) }),
                );
            }
        }
    }
    let view = engine.transition(
        run,
        RunEvent::Finish {
            auto_advance: false,
        },
        None,
        &Actor::Engine,
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
pub(super) async fn prompt_turn(
    conn: &AgentConnection,
    turn: &Mutex<Turn>,
    text: &str,
) -> Result<(StopReason, String), ApiError> {
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

/// The run's own repository (see [`crate::git`]): created on the first
/// attempt, at the base branch's commit then, which is recorded; a resumed
/// run keeps the one it had.
async fn prepare_worktree(engine: &Engine, work: &RunWork) -> Result<PathBuf, ApiError> {
    let repo = PathBuf::from(&work.workspace.path);
    let (worktree, branch, base, base_commit) = match (&work.worktree, &work.branch, &work.base_ref)
    {
        (Some(w), Some(b), Some(base)) => (
            PathBuf::from(w),
            b.clone(),
            base.clone(),
            work.base_commit.clone(),
        ),
        _ => {
            let r = repo.clone();
            let (base, commit) = tokio::task::spawn_blocking(move || {
                let base = git::current_branch(&r)?;
                let commit = git::commit_of(&r, &format!("refs/heads/{base}"))?;
                Ok::<_, git::GitError>((base, commit))
            })
            .await
            .map_err(|e| err(e.to_string()))??;
            (
                engine.worktree_path(&work.workspace.name, work.run_id),
                crate::run_branch(work.run_id),
                base,
                Some(commit),
            )
        }
    };
    // A run resumed from one created before base commits were kept starts
    // its repository (if it is gone) from the base branch as it is now.
    let start = base_commit.clone().unwrap_or_else(|| base.clone());
    let (r, w, b) = (repo.clone(), worktree.clone(), branch.clone());
    tokio::task::spawn_blocking(move || git::create_run_repo(&r, &w, &b, &start))
        .await
        .map_err(|e| err(e.to_string()))??;
    let now = engine.clock.now();
    let wt = worktree.to_string_lossy().into_owned();
    engine.store().write(|tx| {
        tx.set_run_work(
            work.run_id,
            &wt,
            &branch,
            &base,
            base_commit.as_deref(),
            &Actor::Engine,
            now,
        )
    })?;
    Ok(worktree)
}

async fn launch_agent(
    engine: &Arc<Engine>,
    work: &RunWork,
    profile: &crate::config::AgentProfile,
    worktree: &Path,
    turn: &Arc<Mutex<Turn>>,
) -> Result<Arc<AgentConnection>, ApiError> {
    let mut env = profile.environment(|k| std::env::var(k).ok());
    if let Some(s) = work.options.get("scenario").and_then(|s| s.as_str()) {
        env.push(("OVERSEER_DEMO_SCENARIO".to_owned(), s.to_owned()));
    }
    if let Ok(ms) = std::env::var("OVERSEER_DEMO_STEP_MS") {
        env.push(("OVERSEER_DEMO_STEP_MS".to_owned(), ms));
    }
    // The run's voice: its own socket, where the `overseer mcp` its agent
    // starts asks (the tools ask_user, request_plan_approval, ...).
    let asks = match crate::server::serve_run(engine, work.run_id) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(run = work.run_id, "no MCP tools for this run: {e}");
            None
        }
    };
    let overseer_bin = crate::agents::overseer_cli();
    let voice = crate::contain::AgentVoice {
        socket: asks.as_ref().map(|s| s.path.clone()),
        overseer_bin: overseer_bin.clone(),
    };
    // Contained (bubblewrap, the run's cgroup), or not started at all
    // unless the profile allows running uncontained.
    let contained = engine
        .contain_agent(work, profile, &env, worktree, &voice)
        .map_err(|note| ApiError::new(ErrorCode::InvalidInput, note))?;
    let mcp_servers = match (&asks, &overseer_bin) {
        (Some(sock), Some(bin)) => {
            let socket = if contained.sandbox.is_some() {
                PathBuf::from(crate::contain::bwrap::AGENT_SOCKET)
            } else {
                sock.path.clone()
            };
            vec![crate::agents::mcp_server(bin, &socket, work, worktree)]
        }
        (None, _) | (Some(_), None) => Vec::new(),
    };
    let spec = AgentSpec {
        program: PathBuf::from(&profile.command),
        args: profile.args.clone(),
        env,
        cwd: worktree.to_owned(),
        marker: engine.agent_marker(work.run_id),
        sandbox: contained.sandbox,
        cgroup: contained.cgroup,
    };
    let (process, stdin, stdout, stderr) =
        process::spawn(&spec).map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    let run = work.run_id;
    // The agent's stderr is its log: into the timeline, in batches.
    tokio::spawn(keep_log(engine.clone(), run, stderr));
    // A resumed run continues its agent's session where the agent can.
    let previous = work
        .options
        .get(SESSION_OPTION)
        .and_then(|s| s.as_str())
        .map(str::to_owned);
    let (conn, signals) = AgentConnection::start_or_resume(
        stdout,
        stdin,
        worktree.to_owned(),
        "overseer",
        previous.as_deref(),
        mcp_servers,
    )
    .await
    .map_err(|e| {
        err(format!(
            "the agent `{}` did not start a session: {e}",
            work.agent
        ))
    })?;
    let conn = Arc::new(conn);
    remember_session(engine, work, &conn);
    engine.live.set(
        run,
        Some(Arc::new(Live {
            conn: conn.clone(),
            process: tokio::sync::Mutex::new(process),
            _asks: asks,
        })),
    );
    tokio::spawn(pump(
        engine.clone(),
        Arc::new(work.clone()),
        worktree.to_string_lossy().into_owned(),
        signals,
        turn.clone(),
        conn.clone(),
    ));
    Ok(conn)
}

/// The run option that keeps the agent's session id, so a resumed run can
/// continue the session (`session/resume`).
const SESSION_OPTION: &str = "agent_session";

fn remember_session(engine: &Engine, work: &RunWork, conn: &AgentConnection) {
    let mut options = work
        .options
        .as_object()
        .map_or_else(|| json!({}), |o| serde_json::Value::Object(o.clone()));
    options[SESSION_OPTION] = json!(conn.session_id());
    if let Err(e) = engine
        .store()
        .write(|tx| tx.set_run_options(work.run_id, &options, work.resumed_from))
    {
        tracing::warn!(run = work.run_id, "cannot keep the agent's session id: {e}");
    }
    let _ = engine.record_activity(
        work.run_id,
        "session",
        json!({
            "text": if conn.resumed() {
                format!("resumed the agent's session {}", conn.session_id())
            } else {
                format!("the agent started session {}", conn.session_id())
            },
            "modes": conn.modes(),
        }),
    );
}

/// Handles everything the agent sends while it works.
async fn pump(
    engine: Arc<Engine>,
    work: Arc<RunWork>,
    worktree: String,
    mut signals: tokio::sync::mpsc::Receiver<AgentSignal>,
    turn: Arc<Mutex<Turn>>,
    conn: Arc<AgentConnection>,
) {
    let run = work.run_id;
    let mut message = String::new();
    loop {
        let next = if message.is_empty() {
            signals.recv().await
        } else {
            match tokio::time::timeout(Duration::from_millis(300), signals.recv()).await {
                Ok(s) => s,
                Err(_) => {
                    flush_message(&engine, run, &mut message);
                    continue;
                }
            }
        };
        let Some(signal) = next else { break };
        if !matches!(signal, AgentSignal::Message { .. }) {
            flush_message(&engine, run, &mut message);
        }
        match signal {
            AgentSignal::Message { text } => {
                turn.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .transcript
                    .push_str(&text);
                message.push_str(&text);
            }
            AgentSignal::Thought { text } => {
                let _ = engine.record_activity(run, "thought", json!({ "text": text }));
            }
            AgentSignal::Plan { entries } => {
                let _ = engine.record_activity(run, "plan", json!({ "entries": entries }));
                turn.lock().unwrap_or_else(|p| p.into_inner()).entries = entries;
            }
            AgentSignal::ModeChanged { mode, breach } => {
                modes::on_mode_changed(&engine, run, &turn, &conn, mode, breach).await;
            }
            AgentSignal::Settled(done) => {
                flush_message(&engine, run, &mut message);
                let _ = done.send(());
            }
            AgentSignal::ToolCall(info) => {
                match info.status.as_deref() {
                    Some("completed") | Some("failed") => {
                        turn.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .tool_calls
                            .insert(info.id.clone(), info.status.as_deref() == Some("completed"));
                    }
                    _ => {}
                }
                let _ = engine.record_activity(run, "tool_call", json!(info));
            }
            AgentSignal::Permission {
                tool_call,
                options,
                reply,
            } => {
                let engine = engine.clone();
                let turn = turn.clone();
                let work = work.clone();
                let worktree = worktree.clone();
                let conn = conn.clone();
                tokio::spawn(async move {
                    let (answer, then_cancel) = permission(
                        &engine, &work, &worktree, &tool_call, &options, &turn, &conn,
                    )
                    .await;
                    let _ = reply.send(answer);
                    if then_cancel {
                        // The agent's exit-plan request was the plan gate: the
                        // turn ends here, and each step gets its own.
                        let _ = conn.cancel().await;
                    }
                });
            }
            AgentSignal::Question {
                message: q,
                schema,
                reply,
            } => {
                let engine = engine.clone();
                let work = work.clone();
                tokio::spawn(async move {
                    let answer = question(&engine, &work, &q, &schema).await;
                    let _ = reply.send(answer);
                });
            }
            AgentSignal::FileRead { path } => {
                let _ = engine.record_activity(run, "file_read", json!({ "path": path }));
            }
            AgentSignal::FileWritten { path, bytes } => {
                let _ = engine.record_activity(
                    run,
                    "file_written",
                    json!({ "path": path, "bytes": bytes }),
                );
            }
            AgentSignal::FileRefused { path, reason } => {
                let _ = engine.record_activity(
                    run,
                    "file_refused",
                    json!({ "path": path, "text": reason }),
                );
                engine.audit(&Actor::Engine, json!({"type": "file_access_refused", "run_id": run, "path": path, "reason": reason}));
            }
            AgentSignal::ProtocolError { detail } => {
                let _ = engine.record_activity(run, "protocol_error", json!({ "text": detail }));
            }
        }
    }
    flush_message(&engine, run, &mut message);
}

fn flush_message(engine: &Engine, run: RunId, message: &mut String) {
    if !message.is_empty() {
        let _ = engine.record_activity(run, "message", json!({ "text": std::mem::take(message) }));
    }
}

/// A permission request, decided by the permission rules (the run's
/// "always" rules, the task's, the workspace's, then the defaults: reads
/// allowed, everything else asks). Always-gated operations ask every time.
///
/// While planning, the session is read-only (writes denied by the rules,
/// shell asks); in the agent's own plan mode, its exit-plan request is the
/// plan gate. The second value says to cancel the turn once answered.
async fn permission(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &str,
    tool_call: &crate::acp::ToolCallInfo,
    options: &[crate::acp::PermissionChoice],
    turn: &Mutex<Turn>,
    conn: &AgentConnection,
) -> (PermissionReply, bool) {
    let phase = turn.lock().unwrap_or_else(|p| p.into_inner()).phase;
    if phase == (Phase::Planning { in_mode: true })
        && overseer_core::agent::is_exit_plan_request(
            tool_call.kind.as_deref(),
            tool_call.title.as_deref(),
            tool_call.raw_input.as_ref(),
        )
    {
        return (
            planning::exit_plan(engine, work, worktree, tool_call, options, turn, conn).await,
            true,
        );
    }
    let planning = matches!(phase, Phase::Planning { .. });
    (
        tool_permission(engine, work, worktree, tool_call, options, turn, planning).await,
        false,
    )
}

/// A tool call's permission: rules first, then a gate for the user.
async fn tool_permission(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &str,
    tool_call: &crate::acp::ToolCallInfo,
    options: &[crate::acp::PermissionChoice],
    turn: &Mutex<Turn>,
    planning: bool,
) -> PermissionReply {
    let run = work.run_id;
    let by_kind = |kinds: &[&str]| {
        kinds
            .iter()
            .find_map(|k| options.iter().find(|o| o.kind == *k))
            .map(|o| PermissionReply::Selected {
                option_id: o.option_id.clone(),
            })
    };
    let allow = || by_kind(&["allow_once", "allow_always"]).unwrap_or(PermissionReply::Cancelled);
    let reject =
        || by_kind(&["reject_once", "reject_always"]).unwrap_or(PermissionReply::Cancelled);
    let req = tool_request(tool_call, worktree);
    let title = tool_call
        .title
        .clone()
        .unwrap_or_else(|| format!("{} tool call", req.kind));
    let run_rules = {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        if rules::always_gated(&req, worktree).is_some() {
            t.destructive += 1;
        }
        t.run_rules.clone()
    };
    let source = Some(format!("tool_call:{}", tool_call.id));
    match permission_for(work, &run_rules, &req, worktree, planning) {
        Permission::Allow { rule } => {
            // No allow without its record: if the decision cannot be
            // written, the agent is not allowed.
            if let Err(e) = engine.record_rule_allow(run, &title, &req, &rule, source) {
                tracing::error!(
                    run,
                    "cannot record a rule's allow, so it is not given: {}",
                    e.message
                );
                return PermissionReply::Cancelled;
            }
            allow()
        }
        Permission::Deny { rule, reason } => {
            engine.record_rule_deny(run, &title, &req, &rule, &reason, source);
            turn.lock()
                .unwrap_or_else(|p| p.into_inner())
                .rejections
                .push(format!("{title}: denied by rule {rule}: {reason}"));
            reject()
        }
        Permission::Ask {
            reason,
            always_gated,
            rule,
        } => {
            let gate_options = crate::supervise::tool_call_options(
                &req,
                always_gated,
                rule.as_deref(),
                "Always for this run",
            );
            let mut spec = GateSpec::new(run, GateKind::ToolCall, &title, gate_options);
            spec.payload = json!({
                "tool_call": tool_call,
                "request": req,
                "reason": reason,
                "rule": rule,
                "always_gated": always_gated.map(|g| g.as_str()),
                "always_gated_why": always_gated.map(|g| g.describe()),
                "agent_options": options,
            });
            let gate =
                match engine.open_gate_supervised(work, spec, &Actor::Agent(work.agent.clone())) {
                    Ok(g) => g,
                    Err(_) => return PermissionReply::Cancelled,
                };
            match wait_gate(engine, gate).await {
                Ok(d) => match d.choice::<ToolCallChoice>() {
                    Ok(ToolCallChoice::Yes) => allow(),
                    Ok(ToolCallChoice::Always) => {
                        let added = rules::always_rule(&req, worktree);
                        let _ = engine.record_activity(
                            run,
                            "rule_added",
                            json!({ "text": format!("allow {added} for the rest of this run") }),
                        );
                        turn.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .run_rules
                            .allow
                            .push(added);
                        by_kind(&["allow_always", "allow_once"])
                            .unwrap_or(PermissionReply::Cancelled)
                    }
                    Ok(ToolCallChoice::No) => {
                        let reason = d
                            .context
                            .filter(|c| !c.trim().is_empty())
                            .unwrap_or_else(|| "no reason given".to_owned());
                        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
                        t.rejections.push(format!("{title}: {reason}"));
                        t.owes_reason = true;
                        drop(t);
                        reject()
                    }
                    Err(_) => PermissionReply::Cancelled,
                },
                Err(_) => PermissionReply::Cancelled,
            }
        }
    }
}

/// An elicitation: a question gate in the inbox; the answer's context is the
/// form content (JSON), or plain text put under `answer`. With the task's
/// question timeout it is a `question` (not `blocking`) ask: its timer takes
/// the form's defaults, or declines when there are none.
async fn question(
    engine: &Arc<Engine>,
    work: &RunWork,
    message: &str,
    schema: &serde_json::Value,
) -> QuestionReply {
    let defaults = schema_defaults(schema);
    if let Some(gate) = engine.live.adopt_orphan(work.run_id, message) {
        // Asked again after a restart: the same question, still pending.
        let _ = engine.record_activity(
            work.run_id,
            "question_again",
            json!({ "text": format!("asked again after the restart: gate {gate}, still pending") }),
        );
        return question_answer(engine, gate, defaults).await;
    }
    let mut options =
        vec![GateOption::choice(QuestionChoice::Answer, "Answer").with_required_context()];
    if !defaults.is_empty() {
        options.push(GateOption::choice(
            QuestionChoice::Default,
            "Use the defaults",
        ));
    }
    options.push(GateOption::choice(QuestionChoice::Decline, "Decline"));
    let mut spec = GateSpec::new(work.run_id, GateKind::Question, message, options);
    let timeout = work.task_settings.question_timeout_seconds;
    spec.payload = json!({
        "message": message,
        "schema": schema,
        "ask_kind": if timeout.is_some() { "question" } else { "blocking" },
    });
    if let Some(secs) = timeout {
        let at =
            engine.clock.now() + i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX / 2);
        let fallback = if defaults.is_empty() {
            QuestionChoice::Decline
        } else {
            QuestionChoice::Default
        };
        spec.auto = Some((at, fallback.into()));
    }
    let gate = match engine.open_gate_supervised(work, spec, &Actor::Agent(work.agent.clone())) {
        Ok(g) => g,
        Err(_) => return QuestionReply::Cancel,
    };
    question_answer(engine, gate, defaults).await
}

/// The agent's answer from its question gate's decision.
async fn question_answer(
    engine: &Engine,
    gate: GateId,
    defaults: serde_json::Map<String, serde_json::Value>,
) -> QuestionReply {
    let Ok(d) = wait_gate(engine, gate).await else {
        return QuestionReply::Cancel;
    };
    match d.choice::<QuestionChoice>() {
        Ok(QuestionChoice::Answer) => {
            let text = d.context.unwrap_or_default();
            let content = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .filter(|v| v.is_object())
                .unwrap_or_else(|| json!({ "answer": text }));
            QuestionReply::Accept { content }
        }
        Ok(QuestionChoice::Default) => QuestionReply::Accept {
            content: serde_json::Value::Object(defaults),
        },
        Ok(QuestionChoice::Decline) => QuestionReply::Decline,
        Err(_) => QuestionReply::Cancel,
    }
}

/// The `default` of each field of a form schema that has one.
fn schema_defaults(schema: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|props| {
            props
                .iter()
                .filter_map(|(k, p)| {
                    p.get("default")
                        .filter(|d| !d.is_null())
                        .map(|d| (k.clone(), d.clone()))
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn plan_gate(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    plan: &PlanProposal,
) -> Result<GateDecision, ApiError> {
    let run = work.run_id;
    let _ = engine.record_activity(run, "plan_proposed", json!(plan));
    let mut spec = GateSpec::new(
        run,
        GateKind::Plan,
        &format!("Approve the plan: {}", plan.goal),
        vec![
            GateOption::choice(PlanChoice::Approve, "Approve"),
            GateOption::choice(PlanChoice::RequestChanges, "Request changes")
                .with_required_context(),
            GateOption::choice(PlanChoice::Reject, "Reject"),
        ],
    );
    spec.payload = json!(plan);
    let gate = engine.open_gate_supervised(work, spec, &Actor::Agent(work.agent.clone()))?;
    wait_progress_gate(engine, turn, gate).await
}

enum Retried {
    Yes,
    /// The run ended while it waited (aborted).
    Ended,
    AskInstead,
}

/// A failed step retried without a human, as the run's retry policy says:
/// recorded (the "Why?" of the retry), the run `retry_queued` for `wait_ms`,
/// then running again. An abort while it waits ends it.
async fn unattended_retry(
    engine: &Arc<Engine>,
    work: &RunWork,
    failure: &str,
    done: u32,
    wait_ms: u64,
) -> Result<Retried, ApiError> {
    let run = work.run_id;
    let attempt = done + 1;
    let why = format!(
        "retry {attempt} of the step, by the retry policy, after {}s: {}",
        wait_ms / 1000,
        first_line(failure)
    );
    if let Err(e) = engine.note_decision(
        run,
        None,
        &Actor::Engine,
        &DecisionInput {
            verdict: Some(Verdict::Continue),
            rationale: Some(why.clone()),
            rule_ref: Some("retry_policy".to_owned()),
            source_event: Some(format!("turn_failed:{run}:{attempt}")),
            ..DecisionInput::default()
        },
    ) {
        tracing::error!(
            run,
            "cannot record an unattended retry, so the user decides: {}",
            e.message
        );
        return Ok(Retried::AskInstead);
    }
    let _ = engine.record_activity(
        run,
        "retry_queued",
        json!({ "text": why, "attempt": attempt, "wait_ms": wait_ms, "error": tail(failure, 2000) }),
    );
    engine.transition(run, RunEvent::QueueRetry, None, &Actor::Engine)?;
    let until = tokio::time::Instant::now() + Duration::from_millis(wait_ms);
    while tokio::time::Instant::now() < until {
        if !still_active(engine, run) || engine.is_stopping() {
            return Ok(Retried::Ended);
        }
        tokio::time::sleep_until(
            until.min(tokio::time::Instant::now() + Duration::from_millis(250)),
        )
        .await;
    }
    if !still_active(engine, run) {
        return Ok(Retried::Ended);
    }
    engine.transition(run, RunEvent::Start, None, &Actor::Engine)?;
    Ok(Retried::Yes)
}

enum Deviation {
    Retry(String),
    Replan(String),
    Stop,
}

/// A failed turn: Retry (hidden after MAX_RETRIES) / Replan / Stop, with guidance.
async fn deviation(
    engine: &Engine,
    turn: &Mutex<Turn>,
    run: RunId,
    cause: &str,
    error: &str,
    attempts: u32,
    can_retry: bool,
) -> Result<Deviation, ApiError> {
    if engine.is_stopping() {
        // The turn failed because the app is closing: nothing to ask.
        return Err(ApiError::new(
            ErrorCode::EngineUnavailable,
            "the engine is stopping",
        ));
    }
    let _ = engine.record_activity(run, "deviation", json!({ "text": error, "cause": cause }));
    let mut options = Vec::new();
    if can_retry || attempts == 0 {
        options.push(GateOption::choice(DeviationChoice::Retry, "Retry"));
    }
    options.push(GateOption::choice(DeviationChoice::Replan, "Replan"));
    options.push(GateOption::choice(DeviationChoice::Stop, "Stop"));
    let gate = engine.open_gate(
        run,
        GateKind::Deviation,
        &format!("The agent hit a problem: {}", first_line(error)),
        &options,
        json!({"cause": cause, "error": error, "attempts": attempts, "max_attempts": MAX_RETRIES}),
        &Actor::Engine,
    )?;
    Ok(deviation_of(wait_progress_gate(engine, turn, gate).await?))
}

/// What a deviation gate's decision asks for.
fn deviation_of(d: GateDecision) -> Deviation {
    let guidance = d.context.clone().unwrap_or_default();
    match d.choice::<DeviationChoice>() {
        Ok(DeviationChoice::Retry) => Deviation::Retry(guidance),
        Ok(DeviationChoice::Replan) => Deviation::Replan(guidance),
        Ok(DeviationChoice::Stop) | Err(_) => Deviation::Stop,
    }
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

/// Files the agent changed that its plan did not declare. A plan that
/// declares no files (one from a plan mode or prose) cannot drift.
fn check_drift(engine: &Engine, work: &RunWork, plan: &PlanProposal) -> Vec<String> {
    if plan.files.is_empty() {
        return Vec::new();
    }
    let Ok((files, _)) = engine.run_diff(work.run_id) else {
        return Vec::new();
    };
    let outside: Vec<String> = files
        .into_iter()
        .map(|f| f.path)
        .filter(|p| !plan.files.iter().any(|d| d == p))
        .collect();
    if !outside.is_empty() {
        let _ = engine.record_activity(
            work.run_id,
            "drift",
            json!({ "text": format!("changed files outside the plan: {}", outside.join(", ")), "files": outside }),
        );
    }
    outside
}

#[derive(Debug, Clone, serde::Serialize)]
struct SensorResult {
    command: String,
    exit_code: Option<i32>,
    passed: bool,
    output: String,
}

async fn run_sensors(
    engine: &Engine,
    run: RunId,
    worktree: &Path,
    commands: &[String],
) -> Vec<SensorResult> {
    let mut results = Vec::new();
    for command in commands {
        // Each command contained like the agent (its own fresh home, a
        // cleared environment), in a cgroup of its own: what it leaves
        // behind (a daemon) is stopped when it ends.
        let out = match engine.contain_sensor(run, worktree) {
            Ok(contained) => {
                let spec = AgentSpec {
                    program: PathBuf::from("sh"),
                    args: vec!["-c".to_owned(), command.clone()],
                    env: Vec::new(),
                    cwd: worktree.to_owned(),
                    marker: format!("{}-sensors", engine.agent_marker(run)),
                    sandbox: contained.sandbox,
                    cgroup: contained.cgroup,
                };
                process::run_captured(
                    &spec,
                    SENSOR_TIMEOUT,
                    engine.config.abort_timeout(),
                    SENSOR_OUTPUT_MAX,
                )
                .await
                .map_err(|e| format!("cannot run: {e}"))
            }
            Err(note) => Err(format!("cannot run: {note}")),
        };
        let _ = std::fs::remove_dir_all(engine.sensor_home(run));
        let result = match out {
            Ok(o) if o.timed_out => SensorResult {
                command: command.clone(),
                exit_code: None,
                passed: false,
                output: format!("timed out after {} s", SENSOR_TIMEOUT.as_secs()),
            },
            Ok(o) => {
                let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&o.stderr));
                let status = o.status;
                SensorResult {
                    command: command.clone(),
                    exit_code: status.and_then(|s| s.code()),
                    passed: status.is_some_and(|s| s.success()),
                    output: tail(&text, SENSOR_OUTPUT_MAX),
                }
            }
            Err(output) => SensorResult {
                command: command.clone(),
                exit_code: None,
                passed: false,
                output,
            },
        };
        let _ = engine.record_activity(run, "sensor", json!(result));
        results.push(result);
    }
    results
}

/// A step the agent finished, with its sensors passing.
struct FinishedStep<'a> {
    plan: &'a PlanProposal,
    sensors: &'a [SensorResult],
    drift: Vec<String>,
    retries: u32,
    number: u32,
    transcript: String,
}

/// What happens after a step is weighed.
enum StepNext {
    Proceed,
    /// Another turn with this guidance (a supervisor's or human's correction).
    Again(String),
    /// The human stopped the run.
    Stop(String),
    /// The run was released (aborted, terminated).
    Ended,
    /// Confidence too low to go on: a deviation with these diagnostics.
    Diagnose(String),
}

/// The supervisor's verdict on a finished step (when a policy enables it),
/// then the confidence bands of the task's approval mode.
async fn weigh_step(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    step: &FinishedStep<'_>,
    reorients: &mut u32,
) -> Result<StepNext, ApiError> {
    let run = work.run_id;
    let (destructive, ok, total) = {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        let ok = t.tool_calls.values().filter(|v| **v).count();
        let total = t.tool_calls.len();
        let d = t.destructive;
        t.destructive = 0;
        t.tool_calls.clear();
        (d, ok, total)
    };
    let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let mut evidence = StepEvidence {
        checks_passed: to_u32(step.sensors.iter().filter(|r| r.passed).count()),
        checks_total: to_u32(step.sensors.len()),
        evaluator_confidence: None,
        retries: step.retries,
        max_retries: MAX_RETRIES,
        destructive: destructive > 0,
        tool_calls_ok: to_u32(ok),
        tool_calls_total: to_u32(total),
    };
    let record = json!({
        "step": step.number,
        "plan": step.plan,
        "drift": step.drift,
        "destructive": destructive > 0,
        "checks_passed": evidence.checks_passed,
        "checks_total": evidence.checks_total,
        "sensors": step.sensors.iter().map(|r| json!({"command": r.command, "passed": r.passed, "exit_code": r.exit_code})).collect::<Vec<_>>(),
        "retries": step.retries,
        "tool_calls_ok": ok,
        "tool_calls_total": total,
        "summary": tail(&step.transcript, 2000),
    });
    let mut score = confidence::score(&evidence);
    let policy = policy_of(work);
    if policy.enabled
        && (policy.always_supervise
            || confidence::band(score) != Band::High
            || !step.drift.is_empty()
            || destructive > 0)
    {
        let judged = evaluate_step(engine, work, &policy, record.clone(), step.number).await;
        if let Some(c) = judged.confidence {
            evidence.evaluator_confidence = Some(c);
            score = confidence::score(&evidence);
        }
        let verdict = if judged.failed {
            Verdict::Pause
        } else {
            after_reorient_limit(judged.verdict, *reorients, policy.max_reorient_attempts)
        };
        let _ = engine.record_activity(
            run,
            "verdict",
            json!({ "verdict": verdict.as_str(), "text": judged.rationale, "correction": judged.correction }),
        );
        match verdict {
            Verdict::Reorient => {
                *reorients += 1;
                let correction = judged
                    .correction
                    .unwrap_or_else(|| judged.rationale.clone());
                return Ok(StepNext::Again(correction_prompt(&correction)));
            }
            Verdict::Pause => {
                let mut spec = GateSpec::new(
                    run,
                    GateKind::SupervisorPause,
                    &format!(
                        "The supervisor paused the run: {}",
                        first_line(&judged.rationale)
                    ),
                    supervisor_pause_options(),
                );
                spec.payload = json!({"rationale": judged.rationale, "step": record, "timeout_seconds": policy.pause_timeout_seconds});
                let secs = i64::try_from(policy.pause_timeout_seconds).unwrap_or(i64::MAX / 2000);
                spec.auto = Some((
                    engine.clock.now() + secs * 1000,
                    SupervisorPauseChoice::Abort.into(),
                ));
                let gate = engine.open_gate_spec(&spec, &Actor::Engine)?;
                let d = wait_progress_gate(engine, turn, gate).await?;
                if let Some(next) = after_pause(engine, run, policy.pause_timeout_seconds, d)? {
                    return Ok(next);
                }
            }
            Verdict::Continue
            | Verdict::Approve
            | Verdict::Reject
            | Verdict::Escalate
            | Verdict::Advise => {}
        }
    }
    let explained = confidence::explain(&evidence, score);
    let mut record = record;
    record["confidence"] = json!(score);
    record["explain"] = json!(explained);
    let _ = engine.record_activity(run, "step_finished", record.clone());
    let auto_ms = work
        .task_settings
        .auto_proceed_seconds
        .and_then(|s| i64::try_from(s).ok())
        .map_or(confidence::DEFAULT_AUTO_PROCEED_MS, |s| s * 1000);
    let action = confidence::step_action(
        &work.task_settings.approval,
        score,
        destructive > 0,
        auto_ms,
    );
    let (verdict, rule) = match action {
        StepAction::Proceed => (Verdict::Continue, "confidence:proceed"),
        StepAction::ReviewWithTimeout { .. } => (Verdict::Pause, "confidence:review_with_timeout"),
        StepAction::HardStop => (Verdict::Pause, "confidence:hard_stop"),
        StepAction::AbortStep => (Verdict::Pause, "confidence:abort_step"),
    };
    // No decision without its record: a step that would proceed on its own
    // but whose decision cannot be written waits for the human instead.
    let action = match engine.note_decision(
        run,
        None,
        &Actor::Engine,
        &DecisionInput {
            verdict: Some(verdict),
            rationale: Some(explained.clone()),
            rule_ref: Some(rule.to_owned()),
            confidence: Some(score),
            source_event: Some(format!("step_finished:{run}:{}", step.number)),
            ..DecisionInput::default()
        },
    ) {
        Ok(_) => action,
        Err(e) => {
            tracing::error!(
                run,
                "cannot record the step's decision ({rule}), so the step waits for a human: {}",
                e.message
            );
            match action {
                StepAction::AbortStep => StepAction::AbortStep,
                StepAction::Proceed
                | StepAction::ReviewWithTimeout { .. }
                | StepAction::HardStop => StepAction::HardStop,
            }
        }
    };
    let auto = match action {
        StepAction::Proceed => return Ok(StepNext::Proceed),
        StepAction::AbortStep => {
            return Ok(StepNext::Diagnose(format!(
                "confidence in this step is too low to go on: {explained}"
            )))
        }
        StepAction::ReviewWithTimeout {
            auto_proceed_after_ms,
        } => Some((
            engine.clock.now() + auto_proceed_after_ms,
            StepReviewChoice::Proceed.into(),
        )),
        StepAction::HardStop => None,
    };
    let mut spec = GateSpec::new(
        run,
        GateKind::StepReview,
        &format!("Review step {}: confidence {score:.2}", step.number),
        step_review_options(),
    );
    record["confidence"] = json!(score);
    spec.payload = record;
    spec.auto = auto;
    let gate = engine.open_gate_supervised(work, spec, &Actor::Engine)?;
    Ok(after_step_review(
        wait_progress_gate(engine, turn, gate).await?,
    ))
}

/// What a step review's decision asks for.
fn after_step_review(d: GateDecision) -> StepNext {
    match d.choice::<StepReviewChoice>() {
        Ok(StepReviewChoice::Proceed) => StepNext::Proceed,
        Ok(StepReviewChoice::Stop) | Err(_) => StepNext::Stop(format!(
            "stopped at step review: {}",
            d.context.unwrap_or_default()
        )),
    }
}

/// What a supervisor's pause decided: None to go on (the step is weighed
/// on); an abort by its timer terminates the run, a human's aborts it.
fn after_pause(
    engine: &Engine,
    run: RunId,
    timeout_seconds: u64,
    d: GateDecision,
) -> Result<Option<StepNext>, ApiError> {
    match d.choice::<SupervisorPauseChoice>() {
        Ok(SupervisorPauseChoice::Proceed) => Ok(None),
        Ok(SupervisorPauseChoice::Modify) => Ok(Some(StepNext::Again(correction_prompt(
            d.context.as_deref().unwrap_or_default(),
        )))),
        Ok(SupervisorPauseChoice::Abort) | Err(_) if d.actor == Actor::Engine => {
            let note = format!(
                "terminated: nobody answered the supervisor's pause within {timeout_seconds} s"
            );
            engine.transition(run, RunEvent::SupervisorReject, Some(&note), &Actor::Engine)?;
            Ok(Some(StepNext::Ended))
        }
        Ok(SupervisorPauseChoice::Abort) | Err(_) => {
            engine.abort_run(run, &d.actor)?;
            Ok(Some(StepNext::Ended))
        }
    }
}

/// At a clean exit: every live agent's whole tree is stopped at once
/// (SIGTERM, abort_timeout, SIGKILL), so no agent, nor a descendant that left
/// its process group, outlives the app. Their runs stay as they are; the
/// next start finds them agentless and marks them interrupted (resumable).
pub(crate) async fn stop_all(engine: &Engine) -> usize {
    engine
        .stopping
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let lives: Vec<(RunId, Arc<Live>)> = engine
        .live
        .agents
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .collect();
    let grace = engine.config.abort_timeout();
    let stopped = lives.len();
    futures::future::join_all(
        lives
            .iter()
            .map(|(run, live)| terminate_tree(*run, live, grace, "at exit")),
    )
    .await;
    stopped
}

/// Stops an agent's whole process tree (SIGTERM, `grace`, SIGKILL) and
/// returns the pids killed; survivors and failures are logged loudly.
async fn terminate_tree(run: RunId, live: &Live, grace: Duration, when: &str) -> Vec<u32> {
    match live.process.lock().await.terminate(grace).await {
        Ok(r) => {
            if !r.survivors.is_empty() {
                tracing::error!(run, survivors = ?r.survivors, "processes survived the stop {when}");
            }
            r.killed
        }
        Err(e) => {
            tracing::error!(run, "stopping the agent {when}: {e}");
            Vec::new()
        }
    }
}

/// Abort's effect, after the abort is committed: cancel the turn, stop the
/// whole process tree, then tell everyone.
pub(crate) async fn stop_agent(engine: Arc<Engine>, run: RunId) {
    let Some(live) = engine.live.get(run) else {
        return;
    };
    let _ = live.conn.cancel().await;
    let killed = terminate_tree(run, &live, engine.config.abort_timeout(), "on abort").await;
    engine.live.set(run, None);
    engine.publish(vec![EngineEvent::OrchestrationAborted {
        run_id: run,
        killed,
    }]);
}

/// Lines of an agent's log gathered into one timeline entry.
const LOG_BATCH_LINES: usize = 50;
/// How long the first line of a batch waits for company.
const LOG_BATCH_WAIT: Duration = Duration::from_millis(300);
/// Longest log line kept (the rest is cut, marked with an ellipsis).
const LOG_LINE_MAX: usize = 2_000;
/// Log lines kept per agent process; after that, one note and the rest only
/// in the engine's own log (an agent printing without end must not fill the
/// database).
const LOG_LINES_MAX: usize = 5_000;

/// Reads an agent's stderr to its end and keeps it in the run's timeline as
/// `log` entries of up to [`LOG_BATCH_LINES`] lines. The text is untrusted:
/// invalid UTF-8 is replaced, long lines are cut.
async fn keep_log(engine: Arc<Engine>, run: RunId, stderr: impl tokio::io::AsyncRead + Unpin) {
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut batch: Vec<String> = Vec::new();
    let mut kept = 0usize;
    let mut buf = Vec::new();
    let flush = |batch: &mut Vec<String>| {
        if batch.is_empty() {
            return;
        }
        let lines = std::mem::take(batch);
        let _ = engine.record_activity(
            run,
            "log",
            json!({ "text": lines.join("\n"), "lines": lines.len() }),
        );
    };
    loop {
        // `buf` keeps a line read in part when the wait ran out (read_until
        // appends what it read before being cancelled): cleared per line.
        let read = if batch.is_empty() {
            reader.read_until(b'\n', &mut buf).await.ok()
        } else {
            match tokio::time::timeout(LOG_BATCH_WAIT, reader.read_until(b'\n', &mut buf)).await {
                Ok(r) => r.ok(),
                Err(_) => {
                    flush(&mut batch);
                    continue;
                }
            }
        };
        let ended = read.is_none_or(|n| n == 0);
        if ended && buf.is_empty() {
            break;
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        buf.clear();
        let line = text.trim_end_matches(['\n', '\r']);
        tracing::debug!(run, "agent: {line}");
        if kept >= LOG_LINES_MAX {
            if ended {
                break;
            }
            continue;
        }
        kept += 1;
        let mut line: String = line.chars().take(LOG_LINE_MAX).collect();
        if line.len() < text.trim_end_matches(['\n', '\r']).len() {
            line.push('…');
        }
        batch.push(line);
        if kept == LOG_LINES_MAX {
            batch.push(format!(
                "(the agent wrote more than {LOG_LINES_MAX} log lines; the rest is in the engine's own log)"
            ));
        }
        if batch.len() >= LOG_BATCH_LINES {
            flush(&mut batch);
        }
        if ended {
            break;
        }
    }
    flush(&mut batch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forms_defaults_are_what_its_timer_answers_with() {
        let schema = json!({"type": "object", "properties": {
            "framework": {"type": "string", "enum": ["svelte", "react"], "default": "svelte"},
            "add_tests": {"type": "boolean", "default": false},
            "tags": {"type": "array", "items": {"anyOf": []}, "default": ["a", "b"]},
            "notes": {"type": "string"},
            "odd": {"type": "string", "default": null},
        }});
        let defaults = schema_defaults(&schema);
        assert_eq!(
            serde_json::Value::Object(defaults),
            json!({"framework": "svelte", "add_tests": false, "tags": ["a", "b"]})
        );
        assert!(schema_defaults(&json!({"type": "object"})).is_empty());
        assert!(schema_defaults(&json!("not a schema")).is_empty());
    }
}
