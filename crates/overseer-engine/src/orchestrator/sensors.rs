//! After a step: the workspace's sensor commands, contained, and the files
//! changed outside the plan.

use super::turn::tail;
use crate::Engine;
use overseer_contain::process::{self, AgentSpec};
use overseer_core::activity::{Activity, SensorRun};
use overseer_core::plan::PlanProposal;
use overseer_core::RunId;
use overseer_store::RunWork;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one sensor may run.
pub(super) const SENSOR_TIMEOUT: Duration = Duration::from_secs(600);

/// Sensor output kept per command.
pub(super) const SENSOR_OUTPUT_MAX: usize = 64 * 1024;

/// Files the agent changed that its plan did not declare. A plan that
/// declares no files (one from a plan mode or prose) cannot drift.
pub(super) fn check_drift(engine: &Engine, work: &RunWork, plan: &PlanProposal) -> Vec<String> {
    if plan.files.is_empty() {
        return Vec::new();
    }
    let Ok((files, _)) = engine.diff_of_run(work.run_id) else {
        return Vec::new();
    };
    let outside: Vec<String> = files
        .into_iter()
        .map(|f| f.path)
        .filter(|p| !plan.files.iter().any(|d| d == p))
        .collect();
    if !outside.is_empty() {
        engine.record_activity_or_warn(
            work.run_id,
            Activity::Drift {
                text: format!("changed files outside the plan: {}", outside.join(", ")),
                files: outside.clone(),
            },
        );
    }
    outside
}

#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct SensorResult {
    pub(super) command: String,
    pub(super) exit_code: Option<i32>,
    pub(super) passed: bool,
    pub(super) output: String,
}

pub(super) async fn run_sensors(
    engine: &Engine,
    run: RunId,
    worktree: &Path,
    commands: &[String],
) -> Vec<SensorResult> {
    // A check is new work: none starts while the disk is nearly full.
    if !commands.is_empty() && !engine.disk_room_now() {
        engine.disk.wait_for_room().await;
    }
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
        // A check may have filled the disk: its result is recorded and
        // weighed once there is room (read now), never half-written on a
        // full disk nor lost.
        engine
            .wait_for_disk_room(run, &format!("the result of the check `{command}`"))
            .await;
        engine.record_activity_or_warn(
            run,
            Activity::Sensor(SensorRun {
                command: result.command.clone(),
                exit_code: result.exit_code,
                passed: result.passed,
                output: result.output.clone(),
            }),
        );
        results.push(result);
    }
    results
}
