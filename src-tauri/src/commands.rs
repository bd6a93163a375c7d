//! One line each: the window's intents go to the engine as `user:app`.
//! Errors reach the web view as `{code, message}`.

use overseer_core::{Actor, ApiError, ErrorCode, RunId, RunView};
use overseer_engine::Engine;
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
