//! One line each: the window's intents go to the engine as `user:app`.
//! Errors reach the web view as `{code, message}`.

use overseer_core::message::{MessageTo, MessageView};
use overseer_core::rules::RuleSet;
use overseer_core::supervision::SupervisorPolicy;
use overseer_core::{ActivityView, Actor, ApiError, ErrorCode, GateId, GateView, RunId, RunView};
use overseer_engine::{
    Engine, GateStory, NotificationSettings, PolicyStatus, RunStory, Scope, TaskInfo,
};
use std::sync::Arc;
use tauri::State;

/// Runs `f` off the async runtime: a store call may wait on SQLite's lock.
async fn blocking<T: Send + 'static>(
    engine: &Arc<Engine>,
    f: impl FnOnce(&Engine) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let engine = engine.clone();
    tauri::async_runtime::spawn_blocking(move || f(&engine))
        .await
        .unwrap_or_else(|e| {
            Err(ApiError::new(
                ErrorCode::Internal,
                format!("command failed: {e}"),
            ))
        })
}

#[tauri::command]
pub async fn list_runs(engine: State<'_, Arc<Engine>>) -> Result<Vec<RunView>, ApiError> {
    blocking(&engine, |e| e.runs()).await
}

/// The first `limit` rows of the dashboard's default order, with the
/// fleet's size and counts: what the window paints before the whole list
/// arrives.
#[tauri::command]
pub async fn list_runs_head(
    engine: State<'_, Arc<Engine>>,
    limit: usize,
) -> Result<overseer_engine::RunsHead, ApiError> {
    blocking(&engine, move |e| e.runs_head(limit)).await
}

#[tauri::command]
pub async fn approve_run(
    engine: State<'_, Arc<Engine>>,
    run_id: RunId,
) -> Result<RunView, ApiError> {
    blocking(&engine, move |e| e.approve_run(run_id, &Actor::app())).await
}

#[tauri::command]
pub async fn reject_run(
    engine: State<'_, Arc<Engine>>,
    run_id: RunId,
    reason: String,
) -> Result<RunView, ApiError> {
    blocking(&engine, move |e| {
        e.reject_run(run_id, &reason, &Actor::app())
    })
    .await
}

#[tauri::command]
pub async fn abort_run(engine: State<'_, Arc<Engine>>, run_id: RunId) -> Result<RunView, ApiError> {
    blocking(&engine, move |e| e.abort_run(run_id, &Actor::app())).await
}

#[tauri::command]
pub async fn list_gates(
    engine: State<'_, Arc<Engine>>,
    pending_only: bool,
) -> Result<Vec<GateView>, ApiError> {
    blocking(&engine, move |e| e.gates(pending_only)).await
}

#[tauri::command]
pub async fn show_gate(
    engine: State<'_, Arc<Engine>>,
    gate_id: GateId,
) -> Result<GateView, ApiError> {
    blocking(&engine, move |e| e.gate(gate_id)).await
}

#[tauri::command]
pub async fn decide_gate(
    engine: State<'_, Arc<Engine>>,
    gate_id: GateId,
    option: String,
    context: Option<String>,
) -> Result<GateView, ApiError> {
    blocking(&engine, move |e| {
        e.decide_gate(gate_id, &option, context.as_deref(), &Actor::app())
    })
    .await
}

#[tauri::command]
pub async fn hold_gate(
    engine: State<'_, Arc<Engine>>,
    gate_id: GateId,
) -> Result<GateView, ApiError> {
    blocking(&engine, move |e| e.hold_gate(gate_id, &Actor::app())).await
}

#[tauri::command]
pub async fn gate_story(
    engine: State<'_, Arc<Engine>>,
    gate_id: GateId,
) -> Result<GateStory, ApiError> {
    blocking(&engine, move |e| e.gate_story(gate_id)).await
}

/// A run's whole story: every signed record that decided anything on it
/// (step verdicts, rules' allows and denials, supervisor votes, timers,
/// humans), each checked.
#[tauri::command]
pub async fn run_story(
    engine: State<'_, Arc<Engine>>,
    run_id: RunId,
) -> Result<RunStory, ApiError> {
    blocking(&engine, move |e| e.run_story(run_id)).await
}

#[tauri::command]
pub async fn run_activity(
    engine: State<'_, Arc<Engine>>,
    run_id: RunId,
    after: i64,
) -> Result<Vec<ActivityView>, ApiError> {
    blocking(&engine, move |e| e.activity(run_id, after)).await
}

/// The run's diff: files with their counts, and the unified diff text.
#[tauri::command]
pub async fn run_diff(
    engine: State<'_, Arc<Engine>>,
    run_id: RunId,
) -> Result<serde_json::Value, ApiError> {
    blocking(&engine, move |e| {
        let (files, diff) = e.run_diff(run_id)?;
        Ok(serde_json::json!({"files": files, "diff": diff}))
    })
    .await
}

#[tauri::command]
pub async fn steer_run(
    engine: State<'_, Arc<Engine>>,
    run_id: RunId,
    text: String,
) -> Result<RunView, ApiError> {
    blocking(&engine, move |e| {
        e.steer_run(run_id, &text, &Actor::app())?;
        e.run(run_id)
    })
    .await
}

/// Agent messages with id > `after` (all when absent), of one run (sent by
/// it, to it, delivered broadcasts) or of every run.
#[tauri::command]
pub async fn list_messages(
    engine: State<'_, Arc<Engine>>,
    run: Option<RunId>,
    after: Option<i64>,
) -> Result<Vec<MessageView>, ApiError> {
    blocking(&engine, move |e| e.messages(run, after)).await
}

/// A message from the user to a run or to every run; a reply carries the
/// correlation id of what it answers.
#[tauri::command]
pub async fn send_message(
    engine: State<'_, Arc<Engine>>,
    to: MessageTo,
    body: String,
    correlation_id: Option<String>,
) -> Result<MessageView, ApiError> {
    blocking(&engine, move |e| {
        e.send_message(to, &body, correlation_id, &Actor::app())
    })
    .await
}

/// A task's own settings as set (rules, approval, supervisor, retries, stage).
#[tauri::command]
pub async fn show_task(
    engine: State<'_, Arc<Engine>>,
    task_id: overseer_core::TaskId,
) -> Result<TaskInfo, ApiError> {
    blocking(&engine, move |e| e.task(task_id)).await
}

#[tauri::command]
pub async fn list_workspaces(
    engine: State<'_, Arc<Engine>>,
) -> Result<Vec<overseer_store::Workspace>, ApiError> {
    blocking(&engine, |e| e.workspaces()).await
}

#[tauri::command]
pub async fn set_workspace_checks(
    engine: State<'_, Arc<Engine>>,
    workspace: String,
    sensors: Vec<String>,
    auto_advance: Option<bool>,
) -> Result<overseer_store::Workspace, ApiError> {
    blocking(&engine, move |e| {
        e.set_workspace_checks(&workspace, sensors, auto_advance, &Actor::app())
    })
    .await
}

#[tauri::command]
pub async fn supervisor_status(
    engine: State<'_, Arc<Engine>>,
    scope: Scope,
) -> Result<PolicyStatus, ApiError> {
    blocking(&engine, move |e| e.supervisor_status(&scope)).await
}

#[tauri::command]
pub async fn set_supervisor(
    engine: State<'_, Arc<Engine>>,
    scope: Scope,
    policy: Option<SupervisorPolicy>,
) -> Result<PolicyStatus, ApiError> {
    blocking(&engine, move |e| {
        e.set_supervisor(&scope, policy, &Actor::app())
    })
    .await
}

/// Rules as the user typed them: parsed here, so a rule that is not one
/// comes back as a typed `invalid_input` naming it (`rules.allow[2]`), not
/// as an argument error.
#[tauri::command]
pub async fn set_permissions(
    engine: State<'_, Arc<Engine>>,
    scope: Scope,
    rules: overseer_engine::RuleTexts,
) -> Result<RuleSet, ApiError> {
    let rules = overseer_engine::settings::check_rules(&rules).map_err(ApiError::invalid_fields)?;
    blocking(&engine, move |e| {
        e.set_permissions(&scope, rules, &Actor::app())
    })
    .await
}

#[tauri::command]
pub async fn notification_settings(
    engine: State<'_, Arc<Engine>>,
) -> Result<NotificationSettings, ApiError> {
    blocking(&engine, |e| Ok(e.notifications())).await
}

#[tauri::command]
pub async fn set_notification_settings(
    engine: State<'_, Arc<Engine>>,
    settings: NotificationSettings,
) -> Result<NotificationSettings, ApiError> {
    blocking(&engine, move |e| {
        e.set_notifications(settings, &Actor::app())
    })
    .await
}

/// Every agent profile: installed or not, its mode, what it still needs.
#[tauri::command]
pub async fn agents(
    engine: State<'_, Arc<Engine>>,
) -> Result<Vec<overseer_engine::config::AgentInfo>, ApiError> {
    blocking(&engine, |e| Ok(e.agents())).await
}

/// A settings write checked, not made: the field errors it would be refused
/// with (empty: it would be saved). The window calls it as the user types.
#[tauri::command]
pub async fn check_settings(
    engine: State<'_, Arc<Engine>>,
    change: overseer_engine::SettingsChange,
) -> Result<Vec<overseer_core::FieldError>, ApiError> {
    blocking(&engine, move |e| e.check_settings(&change)).await
}
