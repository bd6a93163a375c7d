//! The approved plan, step by step: each step its own prompt turn, weighed
//! when it ends (sensors, the supervisor, confidence), a failure a deviation
//! gate (or an unattended retry, when the run's policy allows one).

use super::modes;
use super::resume;
use super::sensors::{check_drift, run_sensors, SensorResult};
use super::turn::{
    first_line, prompt_turn, still_active, stop, tail, take_feedback, take_owed_reason,
    wait_progress_gate, Supervision, Turn, MAX_RETRIES,
};
use crate::supervise::{evaluate_step, policy_of, step_review_options, supervisor_pause_options};
use crate::Engine;
use overseer_acp::{AgentSession, StopReason};
use overseer_core::activity::Activity;
use overseer_core::confidence::{self, StepAction, StepEvidence};
use overseer_core::plan::{step_prompt, PlanProposal, PlanSource};
use overseer_core::progress::Progress;
use overseer_core::supervision::{
    after_reorient_limit, correction_prompt, pause_outcome, weighs_step, PauseOutcome,
    SupervisorPolicy, Verdict,
};
use overseer_core::usage::{cost_since, RunCost};
use overseer_core::{
    Actor, ApiError, DeviationCause, DeviationChoice, DeviationGate, ErrorCode, GateBody,
    GateDecision, GateKind, GateOption, GateView, RunEvent, RunId, StepRecord, StepReviewChoice,
    StepSensor, SupervisorPauseChoice, SupervisorPauseGate,
};
use overseer_git as git;
use overseer_store::RunWork;
use overseer_store::{DecisionInput, GateSpec};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the steps of a plan went.
pub(super) enum Executed {
    Done,
    /// A new plan is wanted, with this guidance.
    Replan(String),
    Ended,
}

/// Where execution is: the fields of [`Progress::Executing`].
pub(super) struct Steps {
    pub(super) plan: PlanProposal,
    pub(super) index: usize,
    pub(super) retries: u32,
    pub(super) reorients: u32,
    /// The user's (or the last failure's) words for the next turn.
    pub(super) guidance: String,
    /// The step whose cost is being counted and the run's cumulative cost
    /// when its first turn began (not kept across a restart: a step under
    /// way then has no cost of its own on record).
    pub(super) cost_from: Option<(usize, Option<RunCost>)>,
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
pub(super) enum Flow {
    /// Round again (the next step, or the same one).
    Next,
    Return(Executed),
    /// The step failed: a retry by policy, or a deviation gate.
    Failed(String),
}

pub(super) fn after_step(
    engine: &Engine,
    run: RunId,
    next: StepNext,
    at: &mut Steps,
    follow_up: &mut Option<String>,
) -> Result<Flow, ApiError> {
    Ok(match next {
        StepNext::Proceed => {
            // Retries and the supervisor's reorients are counted per step.
            at.index += 1;
            at.retries = 0;
            at.reorients = 0;
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

pub(super) fn after_deviation(
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
pub(super) async fn execute(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &Path,
    conn: &dyn AgentSession,
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
            Some(gate) => step_gate(engine, work, turn, &gate, &mut at, &mut follow_up).await?,
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
            DeviationCause::TurnFailed,
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
pub(super) async fn step_turn(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &Path,
    conn: &dyn AgentSession,
    turn: &Mutex<Turn>,
    supervision: &Supervision,
    at: &mut Steps,
    follow_up: &mut Option<String>,
) -> Result<Flow, ApiError> {
    let run = work.run_id;
    resume::save(engine, run, turn, &at.progress());
    let text = turn_prompt(engine, work, turn, at, follow_up);
    if super::turn::flood_hold(engine, run, turn).await? == Some(false)
        || !super::budget::budget_hold(engine, run, turn).await?
    {
        return Ok(Flow::Return(Executed::Ended));
    }
    let result = prompt_turn(engine, conn, turn, &text).await;
    if let Some(next) = modes::after_breach(engine, work, conn, turn, supervision).await? {
        return Ok(match next {
            modes::Next::Again => Flow::Next,
            modes::Next::Stopped => Flow::Return(Executed::Ended),
        });
    }
    if !still_active(engine, run) {
        // Stopped during the turn (aborted, or its agent acted unasked):
        // the step is not weighed, reviewed or committed.
        return Ok(Flow::Return(Executed::Ended));
    }
    // Paused for flooding during the turn (which was cancelled): the same
    // step again once the user resumes, or the end.
    let cancelled_by_pause = engine.floods.take_turn_cancelled(run);
    if let Some(resumed) = super::turn::flood_hold(engine, run, turn).await? {
        return Ok(if resumed {
            Flow::Next
        } else {
            Flow::Return(Executed::Ended)
        });
    }
    // The user resumed before the cancelled turn ended: the same step again,
    // not a failure of the turn.
    if cancelled_by_pause && matches!(result, Ok((StopReason::Cancelled, _))) {
        return Ok(Flow::Next);
    }
    turn_ended(engine, work, worktree, turn, at, follow_up, result).await
}

/// What the agent is told this turn: the follow-up owed to it, the task
/// itself when the plan was skipped, else the step (its start shown in the
/// run's activity); each with the user's feedback.
fn turn_prompt(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    at: &mut Steps,
    follow_up: &mut Option<String>,
) -> String {
    let run = work.run_id;
    let feedback = take_feedback(engine, run, turn, &at.guidance);
    at.guidance.clear();
    let plan = &at.plan;
    let index = at.index;
    match follow_up.take() {
        Some(lead) => format!("{lead}\n{feedback}").trim().to_owned(),
        None if plan.source == PlanSource::Skipped => {
            format!("{}\n{feedback}", work.prompt).trim().to_owned()
        }
        None => {
            if at.cost_from.as_ref().map(|(i, _)| *i) != Some(index) {
                at.cost_from = Some((index, run_cost(engine, run)));
            }
            engine.record_activity_or_warn(
                run,
                Activity::StepStarted {
                    step: u32::try_from(index + 1).unwrap_or(u32::MAX),
                    text: plan.steps[index].title.clone(),
                },
            );
            step_prompt(plan, index, &feedback)
        }
    }
}

/// How the step's turn ended: the step done (or another turn first, when
/// the user spoke meanwhile), the same step again, or a failure.
async fn turn_ended(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &Path,
    turn: &Mutex<Turn>,
    at: &mut Steps,
    follow_up: &mut Option<String>,
    result: Result<(StopReason, String), ApiError>,
) -> Result<Flow, ApiError> {
    let run = work.run_id;
    Ok(match result {
        Ok((StopReason::EndTurn, transcript)) => {
            if engine.has_steering(run) || take_owed_reason(turn) {
                // The user spoke while the agent worked (an instruction,
                // or a "no" and why): another turn on the same step, so
                // the agent hears it before the step is weighed.
                *follow_up = Some(String::new());
                return Ok(Flow::Next);
            }
            return step_done(engine, work, worktree, turn, at, follow_up, transcript).await;
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

pub(super) enum Retried {
    Yes,
    /// The run ended while it waited (aborted).
    Ended,
    AskInstead,
}

/// A failed step retried without a human, as the run's retry policy says:
/// recorded (the "Why?" of the retry), the run `retry_queued` for `wait_ms`,
/// then running again. An abort while it waits ends it.
pub(super) async fn unattended_retry(
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
            run = %run,
            "cannot record an unattended retry, so the user decides: {}",
            e.message
        );
        return Ok(Retried::AskInstead);
    }
    engine.record_activity_or_warn(
        run,
        Activity::RetryQueued {
            text: why.clone(),
            attempt,
            wait_ms,
            error: tail(failure, 2000),
        },
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

pub(super) enum Deviation {
    Retry(String),
    Replan(String),
    Stop,
}

/// A failed turn: Retry (hidden after MAX_RETRIES) / Replan / Stop, with guidance.
pub(super) async fn deviation(
    engine: &Engine,
    turn: &Mutex<Turn>,
    run: RunId,
    cause: DeviationCause,
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
    // The user is asked once there is room on the disk (a paused run asks
    // nothing new), and a gate that could not be written for a full disk
    // is written once there is: the run waits, it is not failed for it.
    engine
        .wait_for_disk_room(run, "the question of how to go on")
        .await;
    engine.record_activity_or_warn(
        run,
        Activity::Deviation {
            text: error.to_owned(),
            cause: cause.as_str().to_owned(),
        },
    );
    let mut options = Vec::new();
    if can_retry || attempts == 0 {
        options.push(GateOption::choice(DeviationChoice::Retry, "Retry"));
    }
    options.push(GateOption::choice(DeviationChoice::Replan, "Replan"));
    options.push(GateOption::choice(DeviationChoice::Stop, "Stop"));
    let title = format!("The agent hit a problem: {}", first_line(error));
    let body = GateBody::Deviation(DeviationGate {
        cause,
        error: error.to_owned(),
        mode: None,
        attempts: Some(attempts),
        max_attempts: Some(MAX_RETRIES),
    });
    let gate = loop {
        match engine.open_gate(run, &title, &options, body.clone(), &Actor::Engine) {
            Ok(gate) => break gate,
            Err(e) if !engine.disk.has_room() && !engine.is_stopping() => {
                tracing::warn!(run = %run, "a deviation gate waits for room: {}", e.message);
                engine.disk.wait_for_room().await;
            }
            Err(e) => return Err(e),
        }
    };
    Ok(deviation_of(wait_progress_gate(engine, turn, gate).await?))
}

/// What a deviation gate's decision asks for.
pub(super) fn deviation_of(d: GateDecision) -> Deviation {
    let guidance = d.context.clone().unwrap_or_default();
    match d.choice::<DeviationChoice>() {
        Ok(DeviationChoice::Retry) => Deviation::Retry(guidance),
        Ok(DeviationChoice::Replan) => Deviation::Replan(guidance),
        Ok(DeviationChoice::Stop) | Err(_) => Deviation::Stop,
    }
}

/// The agent ended its turn on the step: its work committed, the sensors
/// run, and (they passed) the step weighed.
#[allow(clippy::too_many_arguments)]
async fn step_done(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &Path,
    turn: &Mutex<Turn>,
    at: &mut Steps,
    follow_up: &mut Option<String>,
    transcript: String,
) -> Result<Flow, ApiError> {
    let run = work.run_id;
    let plan = &at.plan;
    let index = at.index;
    let wt = worktree.to_owned();
    let _ = tokio::task::spawn_blocking(move || {
        git::commit_all(&wt, "Work left uncommitted by the agent")
    })
    .await;
    let drift = check_drift(engine, work, plan);
    let results = run_sensors(engine, run, worktree, &work.workspace.settings.sensors).await;
    if let Some(f) = results.iter().find(|r| !r.passed) {
        return Ok(Flow::Failed(format!(
            "sensor `{}` failed (exit {})\n{}",
            f.command,
            f.exit_code.map_or("none".to_owned(), |c| c.to_string()),
            tail(&f.output, 4000)
        )));
    }
    let cost = match &at.cost_from {
        Some((i, before)) if *i == index => {
            cost_since(before.as_ref(), run_cost(engine, run).as_ref())
        }
        _ => None,
    };
    let step = FinishedStep {
        plan,
        sensors: &results,
        drift,
        retries: at.retries,
        number: u32::try_from(index + 1).unwrap_or(u32::MAX),
        transcript,
        cost,
    };
    let mut reorients = at.reorients;
    let next = weigh_step(engine, work, turn, &step, &mut reorients).await?;
    at.reorients = reorients;
    after_step(engine, run, next, at, follow_up)
}

/// A step the agent finished, with its sensors passing.
pub(super) struct FinishedStep<'a> {
    plan: &'a PlanProposal,
    sensors: &'a [SensorResult],
    drift: Vec<String>,
    retries: u32,
    number: u32,
    transcript: String,
    cost: Option<RunCost>,
}

/// The run's cumulative cost as its agent last reported it.
fn run_cost(engine: &Engine, run: RunId) -> Option<RunCost> {
    engine.run(run).ok()?.usage?.cost
}

/// What happens after a step is weighed.
pub(super) enum StepNext {
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
pub(super) async fn weigh_step(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    step: &FinishedStep<'_>,
    reorients: &mut u32,
) -> Result<StepNext, ApiError> {
    let (mut evidence, record) = evidence_of(turn, step);
    let mut score = confidence::score(&evidence);
    let policy = policy_of(work);
    let drifted = !step.drift.is_empty();
    if weighs_step(
        &policy,
        confidence::band(score),
        drifted,
        evidence.destructive,
    ) {
        let judged = evaluate_step(
            engine,
            work,
            &policy,
            serde_json::to_value(&record).unwrap_or_default(),
            step.number,
        )
        .await;
        if let Some(c) = judged.confidence {
            evidence.evaluator_confidence = Some(c);
            score = confidence::score(&evidence);
        }
        if let Some(next) =
            supervisor_verdict(engine, work, turn, &policy, judged, &record, reorients).await?
        {
            return Ok(next);
        }
    }
    by_confidence(engine, work, turn, step.number, &evidence, score, record).await
}

/// The step's evidence for the confidence model, and its record (the
/// supervisor's input, the step's timeline entry and review payload).
/// Takes the turn's tool-call tally.
fn evidence_of(turn: &Mutex<Turn>, step: &FinishedStep<'_>) -> (StepEvidence, StepRecord) {
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
    let evidence = StepEvidence {
        checks_passed: to_u32(step.sensors.iter().filter(|r| r.passed).count()),
        checks_total: to_u32(step.sensors.len()),
        evaluator_confidence: None,
        retries: step.retries,
        max_retries: MAX_RETRIES,
        destructive: destructive > 0,
        tool_calls_ok: to_u32(ok),
        tool_calls_total: to_u32(total),
    };
    let record = StepRecord {
        step: step.number,
        plan: Some(step.plan.clone()),
        drift: step.drift.clone(),
        destructive: destructive > 0,
        checks_passed: evidence.checks_passed,
        checks_total: evidence.checks_total,
        sensors: step
            .sensors
            .iter()
            .map(|r| StepSensor {
                command: r.command.clone(),
                passed: r.passed,
                exit_code: r.exit_code,
            })
            .collect(),
        retries: step.retries,
        tool_calls_ok: evidence.tool_calls_ok,
        tool_calls_total: evidence.tool_calls_total,
        summary: tail(&step.transcript, 2000),
        confidence: None,
        explain: None,
        cost: step.cost.clone(),
    };
    (evidence, record)
}

/// The supervisor's verdict, acted on: a correction (another turn), a pause
/// (a gate with its timeout), or nothing (None: on to the confidence bands).
async fn supervisor_verdict(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    policy: &SupervisorPolicy,
    judged: crate::supervise::StepJudgement,
    record: &StepRecord,
    reorients: &mut u32,
) -> Result<Option<StepNext>, ApiError> {
    let run = work.run_id;
    let verdict = if judged.failed {
        Verdict::Pause
    } else {
        after_reorient_limit(judged.verdict, *reorients, policy.max_reorient_attempts)
    };
    engine.record_activity_or_warn(
        run,
        Activity::Verdict {
            verdict,
            text: judged.rationale.clone(),
            correction: judged.correction.clone(),
        },
    );
    match verdict {
        Verdict::Reorient => {
            *reorients += 1;
            let correction = judged
                .correction
                .unwrap_or_else(|| judged.rationale.clone());
            Ok(Some(StepNext::Again(correction_prompt(&correction))))
        }
        Verdict::Pause => {
            let mut spec = GateSpec::new(
                run,
                GateBody::SupervisorPause(SupervisorPauseGate {
                    rationale: judged.rationale.clone(),
                    step: Some(record.clone()),
                    timeout_seconds: Some(policy.pause_timeout_seconds),
                    ask_kind: None,
                }),
                &format!(
                    "The supervisor paused the run: {}",
                    first_line(&judged.rationale)
                ),
                supervisor_pause_options(),
            );
            let secs = i64::try_from(policy.pause_timeout_seconds).unwrap_or(i64::MAX / 2000);
            spec.auto = Some((
                engine.clock.now() + secs * 1000,
                SupervisorPauseChoice::Abort.into(),
            ));
            let gate = engine.open_gate_spec(&spec, &Actor::Engine)?;
            let d = wait_progress_gate(engine, turn, gate).await?;
            after_pause(engine, run, policy.pause_timeout_seconds, d)
        }
        Verdict::Continue
        | Verdict::Approve
        | Verdict::Reject
        | Verdict::Escalate
        | Verdict::Advise => Ok(None),
    }
}

/// The confidence bands of the task's approval mode: proceed (recorded), a
/// step review (with its auto-proceed timer, or a hard stop), or too low
/// to go on (a deviation). No decision without its record: a step that
/// would proceed on its own but whose decision cannot be written waits for
/// the human instead.
async fn by_confidence(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    number: u32,
    evidence: &StepEvidence,
    score: f64,
    mut record: StepRecord,
) -> Result<StepNext, ApiError> {
    let run = work.run_id;
    let explained = confidence::explain(evidence, score);
    record.confidence = Some(score);
    record.explain = Some(explained.clone());
    engine.record_activity_or_warn(run, Activity::StepFinished(Box::new(record.clone())));
    let auto_ms = work
        .task_settings
        .auto_proceed_seconds
        .and_then(|s| i64::try_from(s).ok())
        .map_or(confidence::DEFAULT_AUTO_PROCEED_MS, |s| s * 1000);
    let action = confidence::step_action(
        &work.task_settings.approval,
        score,
        evidence.destructive,
        auto_ms,
    );
    let (verdict, rule) = match action {
        StepAction::Proceed => (Verdict::Continue, "confidence:proceed"),
        StepAction::ReviewWithTimeout { .. } => (Verdict::Pause, "confidence:review_with_timeout"),
        StepAction::HardStop => (Verdict::Pause, "confidence:hard_stop"),
        StepAction::AbortStep => (Verdict::Pause, "confidence:abort_step"),
    };
    let action = match engine.note_decision(
        run,
        None,
        &Actor::Engine,
        &DecisionInput {
            verdict: Some(verdict),
            rationale: Some(explained.clone()),
            rule_ref: Some(rule.to_owned()),
            confidence: Some(score),
            source_event: Some(format!("step_finished:{run}:{number}")),
            ..DecisionInput::default()
        },
    ) {
        Ok(_) => action,
        Err(e) => {
            tracing::error!(
                run = %run,
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
        GateBody::StepReview(record),
        &format!("Review step {number}: confidence {score:.2}"),
        step_review_options(),
    );
    spec.auto = auto;
    let gate = engine.open_gate_supervised(work, spec, &Actor::Engine)?;
    Ok(after_step_review(
        wait_progress_gate(engine, turn, gate).await?,
    ))
}

/// What a step review's decision asks for.
pub(super) fn after_step_review(d: GateDecision) -> StepNext {
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
pub(super) fn after_pause(
    engine: &Engine,
    run: RunId,
    timeout_seconds: u64,
    d: GateDecision,
) -> Result<Option<StepNext>, ApiError> {
    let choice = d.choice::<SupervisorPauseChoice>().ok();
    match pause_outcome(choice, d.actor == Actor::Engine) {
        PauseOutcome::Proceed => Ok(None),
        PauseOutcome::Modify => Ok(Some(StepNext::Again(correction_prompt(
            d.context.as_deref().unwrap_or_default(),
        )))),
        PauseOutcome::Terminate => {
            let note = format!(
                "terminated: nobody answered the supervisor's pause within {timeout_seconds} s"
            );
            engine.transition(run, RunEvent::SupervisorReject, Some(&note), &Actor::Engine)?;
            Ok(Some(StepNext::Ended))
        }
        PauseOutcome::Abort => {
            engine.abort_run(run, &d.actor)?;
            Ok(Some(StepNext::Ended))
        }
    }
}

/// A gate of the step loop a restarted engine found waiting, decided:
/// what the loop does next, as if the engine had never stopped.
pub(super) async fn step_gate(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    gate: &GateView,
    at: &mut Steps,
    follow_up: &mut Option<String>,
) -> Result<Flow, ApiError> {
    let run = work.run_id;
    let d = wait_progress_gate(engine, turn, gate.id).await?;
    match gate.kind() {
        GateKind::StepReview => after_step(engine, run, after_step_review(d), at, follow_up),
        GateKind::SupervisorPause => {
            let timeout = crate::supervise::policy_of(work).pause_timeout_seconds;
            // Proceed: the human let the step through.
            let next = after_pause(engine, run, timeout, d)?.unwrap_or(StepNext::Proceed);
            after_step(engine, run, next, at, follow_up)
        }
        GateKind::Deviation
        | GateKind::Plan
        | GateKind::ToolCall
        | GateKind::MergeReview
        | GateKind::Question => {
            let failure = gate
                .body
                .deviation_error()
                .filter(|e| !e.is_empty())
                .unwrap_or("the step failed")
                .to_owned();
            after_deviation(engine, run, deviation_of(d), &failure, at)
        }
    }
}
