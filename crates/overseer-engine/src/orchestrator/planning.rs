//! A run's plan, approved before anything changes.
//!
//! How the planning turn is held comes from the profile (or task) and the
//! agent's modes (`overseer_core::agent::planning`):
//! - in the agent's own planning mode, its exit-plan permission request IS
//!   the plan gate ([`exit_plan`]): Approve answers with the option that
//!   leaves plan mode without switching off per-edit supervision, Request
//!   changes keeps it planning with the feedback as the next prompt, Reject
//!   ends the run `plan_rejected`;
//! - otherwise with a planning prompt in plain words, the turn read-only
//!   (writes denied by the rules and by the driver, shell asks);
//! - or not at all (`skip`): the task is one step.
//!
//! When a turn ends without an exit-plan request, the plan is the block the
//! prompt asked for, else the ACP progress list, else the agent's prose: the
//! user decides on what the agent said. A missing plan is never a deviation.

use super::steps::{deviation, deviation_of, Deviation};
use super::turn::{
    err, prompt_turn, still_active, stop, take_feedback, wait_progress_gate, Decided, Phase,
    Supervision, Turn,
};
use super::{modes, resume};
use crate::Engine;
use overseer_acp::{AgentSession, PermissionChoice, PermissionReply, StopReason, ToolCallInfo};
use overseer_core::agent::{exit_plan_approve_option, exit_plan_reject_option, Planning};
use overseer_core::plan::{parse_plan, planning_prompt, PlanProposal, PlanSource, PlanStep};
use overseer_core::progress::Progress;
use overseer_core::Activity;
use overseer_core::{
    Actor, ApiError, GateBody, GateDecision, GateOption, GateView, PlanChoice, RunEvent,
};
use overseer_store::GateSpec;
use overseer_store::RunWork;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The largest plan file read for the plan gate.
const MAX_PLAN_FILE: u64 = 256 * 1024;
/// How many times (50 ms apart) an exit-plan request without its plan waits
/// for the agent's update that carries it.
const PLAN_WAIT_TRIES: u32 = 40;

/// How planning ended.
pub(super) enum Planned {
    /// With the user's words that came with the approval.
    Approved(PlanProposal, String),
    /// The run ended (plan rejected, stopped, aborted).
    Ended,
}

/// Plans until a plan is approved or the run ends. `guidance` carries the
/// user's words into the next prompt (and out, with the approval). `adopt`:
/// a plan or deviation gate a restarted engine found waiting: its decision
/// comes first.
pub(super) async fn plan(
    engine: &Arc<Engine>,
    work: &RunWork,
    conn: &dyn AgentSession,
    turn: &Mutex<Turn>,
    supervision: &Supervision,
    mut guidance: String,
    mut adopt: Option<GateView>,
) -> Result<Planned, ApiError> {
    let guidance = &mut guidance;
    let run = work.run_id;
    let how =
        overseer_core::agent::planning(supervision.plan, &supervision.plan_mode, &conn.mode_ids())
            .map_err(|why| err(format!("the agent `{}` cannot plan: {why}", work.agent)))?;
    let mode = match how {
        Planning::Skip => {
            let plan = PlanProposal::skipped(&work.task_title);
            engine.record_activity_or_warn(
                run,
                Activity::PlanSkipped {
                    text: "no plan gate: this run's profile or task says plan = \"skip\""
                        .to_owned(),
                },
            );
            return Ok(Planned::Approved(plan, std::mem::take(guidance)));
        }
        Planning::InMode(m) => Some(m),
        Planning::Prompt => None,
    };
    loop {
        let next = match adopt.take() {
            Some(gate) => adopted(engine, run, turn, &gate, guidance).await?,
            None => {
                planning_turn(
                    engine,
                    work,
                    conn,
                    turn,
                    supervision,
                    mode.as_deref(),
                    guidance,
                )
                .await?
            }
        };
        if let Some(planned) = next {
            return Ok(planned);
        }
    }
}

/// One planning turn, in the agent's planning mode or with a read-only
/// planning prompt: the plan it ends with, or None to plan again (with
/// `guidance` set).
async fn planning_turn(
    engine: &Arc<Engine>,
    work: &RunWork,
    conn: &dyn AgentSession,
    turn: &Mutex<Turn>,
    supervision: &Supervision,
    mode: Option<&str>,
    guidance: &mut String,
) -> Result<Option<Planned>, ApiError> {
    let run = work.run_id;
    if !start_planning(engine, work, conn, turn, supervision, mode, guidance).await? {
        return Ok(Some(Planned::Ended));
    }
    let text = planning_prompt(&work.prompt, &take_feedback(engine, run, turn, guidance));
    guidance.clear();
    let result = prompt_turn(engine, conn, turn, &text).await;
    conn.set_read_only(false);
    let (decided, entries) = {
        let mut t = turn.lock().unwrap_or_else(|p| p.into_inner());
        t.phase = Phase::Executing;
        (t.plan_decision.take(), std::mem::take(&mut t.entries))
    };
    if let Some(next) = modes::after_breach(engine, work, conn, turn, supervision).await? {
        return Ok(match next {
            modes::Next::Again => None,
            modes::Next::Stopped => Some(Planned::Ended),
        });
    }
    // Paused for flooding during the turn: the user resumes (planning goes
    // on, or again when no plan was decided) or stops the run.
    match super::turn::flood_hold(engine, run, turn).await? {
        Some(false) => return Ok(Some(Planned::Ended)),
        Some(true) if decided.is_none() => return Ok(None),
        Some(true) | None => {}
    }
    if !still_active(engine, run) {
        return Ok(Some(Planned::Ended));
    }
    if mode.is_some() && result.is_ok() {
        // Out of the planning mode, whatever the agent chose.
        modes::supervise(engine, work, conn, supervision).await?;
    }
    if let Some(decided) = decided {
        return decided_in_turn(engine, run, decided, guidance);
    }
    turn_without_decision(engine, work, turn, result, &entries, guidance).await
}

/// Planning begins: its progress saved (to resume from), the planning mode
/// entered if any, the session read-only. False if the run was stopped while
/// paused for flooding.
async fn start_planning(
    engine: &Arc<Engine>,
    work: &RunWork,
    conn: &dyn AgentSession,
    turn: &Mutex<Turn>,
    supervision: &Supervision,
    mode: Option<&str>,
    guidance: &str,
) -> Result<bool, ApiError> {
    let run = work.run_id;
    resume::save(
        engine,
        run,
        turn,
        &Progress::Planning {
            guidance: guidance.to_owned(),
        },
    );
    if let Some(m) = mode {
        modes::enter(engine, work, conn, supervision, m).await?;
    }
    conn.set_read_only(true);
    turn.lock().unwrap_or_else(|p| p.into_inner()).phase = Phase::Planning {
        in_mode: mode.is_some(),
    };
    if super::turn::flood_hold(engine, run, turn).await? == Some(false) {
        conn.set_read_only(false);
        return Ok(false);
    }
    Ok(true)
}

/// The plan decided during the turn (the agent's own plan mode): approved,
/// changes asked for (None: plan again, with `guidance` set), or the run
/// ended.
fn decided_in_turn(
    engine: &Engine,
    run: overseer_core::RunId,
    decided: Decided,
    guidance: &mut String,
) -> Result<Option<Planned>, ApiError> {
    match decided {
        Decided::Approved(plan, context) => {
            Ok(Some(Planned::Approved(plan, context.unwrap_or_default())))
        }
        Decided::Changes(feedback) => {
            *guidance = revise(&feedback);
            Ok(None)
        }
        Decided::Rejected(d) => {
            reject(engine, run, d)?;
            Ok(Some(Planned::Ended))
        }
        Decided::Gone => Ok(Some(Planned::Ended)),
    }
}

/// A planning turn that decided nothing: the plan it ended with goes to the
/// plan gate; a refusal, cancellation or failure is a deviation.
async fn turn_without_decision(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    result: Result<(StopReason, String), ApiError>,
    entries: &[overseer_acp::PlanEntry],
    guidance: &mut String,
) -> Result<Option<Planned>, ApiError> {
    let run = work.run_id;
    let failure = match result {
        Ok((StopReason::Refusal, transcript)) => {
            format!(
                "the agent refused to plan: {}",
                super::turn::tail(&transcript, 2000)
            )
        }
        Ok((StopReason::Cancelled, _)) => "the agent cancelled its planning turn".to_owned(),
        Ok((
            StopReason::EndTurn | StopReason::MaxTokens | StopReason::MaxTurnRequests,
            transcript,
        )) => {
            let plan = plan_from_turn(&work.task_title, &transcript, entries);
            // Already back in the supervised mode (above).
            let d = plan_gate(engine, work, turn, &plan).await?;
            return plan_decided(engine, run, d, plan, guidance);
        }
        Err(e) => e.message,
    };
    let decided = deviation(
        engine,
        turn,
        run,
        overseer_core::DeviationCause::TurnFailed,
        &failure,
        0,
        false,
    )
    .await?;
    planning_deviation(engine, run, decided, &failure, guidance)
}

/// A plan gate's decision: approved (with the user's words), changes asked
/// for (None: plan again, with `guidance` set), or the run ended.
fn plan_decided(
    engine: &Engine,
    run: overseer_core::RunId,
    d: GateDecision,
    plan: PlanProposal,
    guidance: &mut String,
) -> Result<Option<Planned>, ApiError> {
    match d.choice::<PlanChoice>() {
        Ok(PlanChoice::Approve) => Ok(Some(Planned::Approved(plan, d.context.unwrap_or_default()))),
        Ok(PlanChoice::RequestChanges) => {
            *guidance = revise(d.context.as_deref().unwrap_or_default());
            Ok(None)
        }
        Ok(PlanChoice::Reject) => {
            reject(engine, run, d)?;
            Ok(Some(Planned::Ended))
        }
        Err(_) => {
            tracing::warn!(
                run = %run,
                option = d.option.as_str(),
                "plan gate closed without a plan decision"
            );
            Ok(Some(Planned::Ended))
        }
    }
}

/// A deviation while planning: plan again (None, with `guidance` set) or stop.
fn planning_deviation(
    engine: &Engine,
    run: overseer_core::RunId,
    decided: Deviation,
    failure: &str,
    guidance: &mut String,
) -> Result<Option<Planned>, ApiError> {
    match decided {
        Deviation::Retry(g) | Deviation::Replan(g) => {
            *guidance = g;
            Ok(None)
        }
        Deviation::Stop => {
            stop(engine, run, &format!("stopped while planning: {failure}"))?;
            Ok(Some(Planned::Ended))
        }
    }
}

/// A gate of the planning phase a restarted engine found waiting: the plan
/// (its proposal is the gate's payload) or a deviation.
async fn adopted(
    engine: &Arc<Engine>,
    run: overseer_core::RunId,
    turn: &Mutex<Turn>,
    gate: &GateView,
    guidance: &mut String,
) -> Result<Option<Planned>, ApiError> {
    let d = wait_progress_gate(engine, turn, gate.id).await?;
    match &gate.body {
        GateBody::Plan(plan) => {
            if gate.unreadable_payload.is_some() {
                return Err(err(format!("plan gate {} holds no readable plan", gate.id)));
            }
            plan_decided(engine, run, d, plan.clone(), guidance)
        }
        GateBody::Deviation(_)
        | GateBody::ToolCall(_)
        | GateBody::StepReview(_)
        | GateBody::SupervisorPause(_)
        | GateBody::MergeReview(_)
        | GateBody::Question(_) => {
            let failure = gate.body.deviation_error().unwrap_or_default().to_owned();
            planning_deviation(engine, run, deviation_of(d), &failure, guidance)
        }
    }
}

fn revise(feedback: &str) -> String {
    format!("The user asked for changes to the plan: {feedback}\nRevise the plan.")
}

fn reject(engine: &Engine, run: overseer_core::RunId, d: GateDecision) -> Result<(), ApiError> {
    let why = d.context.unwrap_or_else(|| "plan rejected".to_owned());
    engine.transition(run, RunEvent::RejectPlan, Some(&why), &d.actor)?;
    Ok(())
}

/// The plan a planning turn ended with: the block, else the progress list,
/// else the prose (which the user then reads in the plan gate).
fn plan_from_turn(
    goal: &str,
    transcript: &str,
    entries: &[overseer_acp::PlanEntry],
) -> PlanProposal {
    if let Some(plan) = parse_plan(transcript) {
        return plan;
    }
    let prose = transcript.trim();
    if !entries.is_empty() {
        return PlanProposal {
            goal: goal.to_owned(),
            steps: steps_of(entries),
            files: Vec::new(),
            risks: Vec::new(),
            markdown: (!prose.is_empty()).then(|| prose.to_owned()),
            source: PlanSource::ProgressList,
        };
    }
    let text = if prose.is_empty() {
        "(The agent ended its planning turn without a word. Approve to let it carry out the task as one step, or request changes.)"
    } else {
        prose
    };
    PlanProposal::from_markdown(goal, text, PlanSource::Prose)
}

fn steps_of(entries: &[overseer_acp::PlanEntry]) -> Vec<PlanStep> {
    entries
        .iter()
        .map(|e| PlanStep {
            title: e.content.clone(),
            agent: None,
        })
        .collect()
}

/// The agent asks to leave its planning mode with a plan: that request is
/// the plan gate. Returns the answer to give the agent; the decision goes to
/// [`plan`] through the turn.
pub(super) async fn exit_plan(
    engine: &Arc<Engine>,
    work: &RunWork,
    worktree: &str,
    tool_call: &ToolCallInfo,
    options: &[PermissionChoice],
    turn: &Mutex<Turn>,
    conn: &dyn AgentSession,
) -> PermissionReply {
    let (transcript, entries) = {
        let t = turn.lock().unwrap_or_else(|p| p.into_inner());
        (t.transcript.clone(), t.entries.clone())
    };
    // claude-agent-acp may ask before its update with the plan is in: give
    // that update a moment to arrive (it is merged by the driver).
    let mut text = plan_text(tool_call, Path::new(worktree));
    for _ in 0..PLAN_WAIT_TRIES {
        if text.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        text = conn
            .tool_call(&tool_call.id)
            .and_then(|c| plan_text(&c, Path::new(worktree)));
    }
    let text = text.unwrap_or(transcript);
    let mut plan = match parse_plan(&text) {
        Some(mut p) => {
            p.markdown = Some(text.clone());
            p
        }
        None => PlanProposal::from_markdown(&work.task_title, &text, PlanSource::AgentMode),
    };
    plan.source = PlanSource::AgentMode;
    if overseer_core::plan::steps_from_markdown(&text).is_empty() && !entries.is_empty() {
        plan.steps = steps_of(&entries);
    }
    let offered: Vec<(&str, &str)> = options
        .iter()
        .map(|o| (o.option_id.as_str(), o.kind.as_str()))
        .collect();
    let selected = |id: Option<&str>| match id {
        Some(id) => PermissionReply::Selected {
            option_id: id.to_owned(),
        },
        None => PermissionReply::Cancelled,
    };
    let (reply, decided) = match plan_gate(engine, work, turn, &plan).await {
        Ok(d) => match d.choice::<PlanChoice>() {
            // No safe option offered: cancelled, and Overseer sets the
            // supervised mode itself.
            Ok(PlanChoice::Approve) => (
                selected(exit_plan_approve_option(&offered)),
                Decided::Approved(plan, d.context),
            ),
            Ok(PlanChoice::RequestChanges) => (
                selected(exit_plan_reject_option(&offered)),
                Decided::Changes(d.context.unwrap_or_default()),
            ),
            Ok(PlanChoice::Reject) => (
                selected(exit_plan_reject_option(&offered)),
                Decided::Rejected(d),
            ),
            Err(_) => (PermissionReply::Cancelled, Decided::Gone),
        },
        Err(e) => {
            tracing::warn!(run = %work.run_id, "plan gate: {}", e.message);
            (PermissionReply::Cancelled, Decided::Gone)
        }
    };
    turn.lock().unwrap_or_else(|p| p.into_inner()).plan_decision = Some(decided);
    engine.record_activity_or_warn(
        work.run_id,
        Activity::PlanAnswer {
            text: format!("answered the agent's exit-plan request: {reply:?}"),
        },
    );
    reply
}

/// The plan an exit-plan request carries: `rawInput.plan`, else its text
/// content, else the plan file it names (Claude's `planFilePath`, Gemini's
/// `plan_filename`; a markdown file of at most 256 KiB).
fn plan_text(tool_call: &ToolCallInfo, worktree: &Path) -> Option<String> {
    let raw = tool_call.raw_input.as_ref();
    let field = |k: &str| raw.and_then(|r| r.get(k)).and_then(|v| v.as_str());
    if let Some(plan) = field("plan").filter(|p| !p.trim().is_empty()) {
        return Some(plan.to_owned());
    }
    if let Some(text) = tool_call.text.as_ref().filter(|t| !t.trim().is_empty()) {
        return Some(text.clone());
    }
    let file = field("planFilePath").or_else(|| field("plan_filename"))?;
    let path = worktree.join(file);
    let is_markdown = path.extension().is_some_and(|e| e == "md");
    let small = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_PLAN_FILE);
    if !(is_markdown && small) {
        return None;
    }
    std::fs::read_to_string(&path)
        .ok()
        .filter(|t| !t.trim().is_empty())
}

pub(super) async fn plan_gate(
    engine: &Arc<Engine>,
    work: &RunWork,
    turn: &Mutex<Turn>,
    plan: &PlanProposal,
) -> Result<GateDecision, ApiError> {
    let run = work.run_id;
    engine.record_activity_or_warn(run, Activity::PlanProposed(plan.clone()));
    let spec = GateSpec::new(
        run,
        GateBody::Plan(plan.clone()),
        &format!("Approve the plan: {}", plan.goal),
        vec![
            GateOption::choice(PlanChoice::Approve, "Approve"),
            GateOption::choice(PlanChoice::RequestChanges, "Request changes")
                .with_required_context(),
            GateOption::choice(PlanChoice::Reject, "Reject"),
        ],
    );
    let gate = engine.open_gate_supervised(work, spec, &Actor::Agent(work.agent.clone()))?;
    wait_progress_gate(engine, turn, gate).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use overseer_acp::PlanEntry;
    use serde_json::json;

    #[test]
    fn a_turn_without_a_block_becomes_a_plan_from_its_list_or_its_prose() {
        let entries = vec![PlanEntry {
            content: "Edit README.md".into(),
            priority: "medium".into(),
            status: "pending".into(),
        }];
        let p = plan_from_turn("goal", "I will edit the README.", &entries);
        assert_eq!(p.source, PlanSource::ProgressList);
        assert_eq!(p.steps[0].title, "Edit README.md");
        let p = plan_from_turn("goal", "1. Read\n2. Write", &[]);
        assert_eq!(p.source, PlanSource::Prose);
        assert_eq!(p.steps.len(), 2);
        let p = plan_from_turn("goal", "", &[]);
        assert!(p
            .markdown
            .as_deref()
            .is_some_and(|m| m.contains("without a word")));
    }

    #[test]
    fn the_plan_comes_from_the_input_then_the_content_then_a_markdown_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("plan.md"), "1. From the file").expect("write");
        std::fs::write(dir.path().join("secret.txt"), "not a plan").expect("write");
        let call = |raw: serde_json::Value, text: Option<&str>| ToolCallInfo {
            raw_input: Some(raw),
            text: text.map(str::to_owned),
            ..ToolCallInfo::default()
        };
        let from = |c: ToolCallInfo| plan_text(&c, dir.path());
        assert_eq!(
            from(call(json!({"plan": "# P"}), Some("t"))).as_deref(),
            Some("# P")
        );
        assert_eq!(
            from(call(json!({"plan": ""}), Some("t"))).as_deref(),
            Some("t")
        );
        assert_eq!(
            from(call(json!({"planFilePath": "plan.md"}), None)).as_deref(),
            Some("1. From the file")
        );
        assert_eq!(
            from(call(json!({"plan_filename": "secret.txt"}), None)),
            None
        );
        assert_eq!(from(call(json!({}), None)), None);
    }
}
