//! The settings writes the window and the CLI make, checked in one place.
//!
//! Each write (`set_workspace_checks`, `set_supervisor`, `set_permissions`,
//! `set_notifications`) refuses its input with these checks, and
//! [`Engine::check_settings`] runs the same checks without writing: the
//! window calls it as the user types, so it never needs rules of its own.
//! Errors name their field as the window's forms know it (see
//! [`overseer_core::FieldError`]).

use crate::engine::NOTIFICATIONS_KEY;
use crate::{NotificationSettings, Records};
use overseer_core::error::under;
use overseer_core::rules::RuleSet;
use overseer_core::supervision::SupervisorPolicy;
use overseer_core::{Actor, ErrorCode};
use overseer_core::{ApiError, FieldError};
use serde::{Deserialize, Serialize};

/// Permission rules as the user typed them, one text per rule: parsed by
/// the engine, so a text that is not a rule is named, not a wire error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RuleTexts {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Where a supervisor policy or permission rules apply.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct Scope {
    pub workspace: String,
    /// A task of the workspace: its settings override the workspace's.
    #[serde(default)]
    pub task: Option<overseer_core::TaskId>,
}

/// One settings write, as a dry run checks it: the arguments of the write
/// of the same name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SettingsChange {
    WorkspaceChecks {
        workspace: String,
        sensors: Vec<String>,
        auto_advance: Option<bool>,
    },
    Supervisor {
        scope: Scope,
        policy: Option<SupervisorPolicy>,
    },
    Permissions {
        scope: Scope,
        rules: RuleTexts,
    },
    Notifications {
        settings: NotificationSettings,
    },
}

/// The sensors (check commands) as stored: trimmed, none empty, none twice.
pub fn check_sensors(sensors: &[String]) -> Result<Vec<String>, Vec<FieldError>> {
    let trimmed: Vec<String> = sensors.iter().map(|s| s.trim().to_owned()).collect();
    let mut errors = Vec::new();
    for (i, s) in trimmed.iter().enumerate() {
        if s.is_empty() {
            errors.push(FieldError::new(
                format!("sensors[{i}]"),
                format!(
                    "sensor {} is empty: give a check command such as `npm test`, or remove it",
                    i + 1
                ),
            ));
        } else if let Some(first) = trimmed[..i].iter().position(|t| t == s) {
            errors.push(FieldError::new(
                format!("sensors[{i}]"),
                format!(
                    "sensor {} (`{s}`) is the same as sensor {}: remove one",
                    i + 1,
                    first + 1
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(trimmed)
    } else {
        Err(errors)
    }
}

/// A supervisor policy, its errors under `policy`.
pub fn check_policy(policy: &SupervisorPolicy) -> Result<(), Vec<FieldError>> {
    policy.validate().map_err(|e| under("policy", e))
}

/// Rule texts parsed, their errors under `rules` (`rules.allow[2]`).
pub fn check_rules(rules: &RuleTexts) -> Result<RuleSet, Vec<FieldError>> {
    RuleSet::parse_fields(&rules.allow, &rules.ask, &rules.deny).map_err(|e| under("rules", e))
}

/// Notification settings, their errors under `notifications`.
pub fn check_notifications(settings: &NotificationSettings) -> Result<(), Vec<FieldError>> {
    settings.validate().map_err(|e| under("notifications", e))
}

impl Records {
    pub(crate) fn task_of(&self, scope: &Scope) -> Result<Option<overseer_core::TaskId>, ApiError> {
        let ws = self.store().workspace(&scope.workspace)?;
        if let Some(task) = scope.task {
            let belongs = self
                .store()
                .raw_connection()
                .query_row(
                    "SELECT workspace_id FROM tasks WHERE id = ?1",
                    [task],
                    |r| r.get::<_, i64>(0),
                )
                .ok();
            match belongs {
                Some(w) if w == ws.id => {}
                Some(_) => {
                    return Err(ApiError::new(
                        ErrorCode::InvalidInput,
                        format!("task {task} is not in workspace '{}'", scope.workspace),
                    ))
                }
                None => {
                    return Err(ApiError::new(
                        ErrorCode::NotFound,
                        format!(
                            "task {task} does not exist: `overseer runs list` shows tasks and runs"
                        ),
                    ))
                }
            }
        }
        Ok(scope.task)
    }

    /// Checks a settings write without making it: the field errors the
    /// write would be refused with (empty: it would be accepted). Reads
    /// only: nothing is written to the database or the audit log. A scope
    /// that does not exist is an error, as it is for the write.
    pub fn check_settings(&self, change: &SettingsChange) -> Result<Vec<FieldError>, ApiError> {
        let found = match change {
            SettingsChange::WorkspaceChecks {
                workspace, sensors, ..
            } => {
                self.store().workspace(workspace)?;
                check_sensors(sensors).err()
            }
            SettingsChange::Supervisor { scope, policy } => {
                self.task_of(scope)?;
                policy.as_ref().and_then(|p| check_policy(p).err())
            }
            SettingsChange::Permissions { scope, rules } => {
                self.task_of(scope)?;
                check_rules(rules).err()
            }
            SettingsChange::Notifications { settings } => check_notifications(settings).err(),
        };
        Ok(found.unwrap_or_default())
    }
}

impl Records {
    /// Mutes (or unmutes) notification kinds; blocking asks cannot be muted.
    pub fn set_notifications(
        &self,
        settings: crate::notify::NotificationSettings,
        actor: &Actor,
    ) -> Result<crate::notify::NotificationSettings, ApiError> {
        check_notifications(&settings).map_err(ApiError::invalid_fields)?;
        let text = serde_json::to_string(&settings)
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        let now = self.clock.now();
        self.write(|tx| tx.set_setting(NOTIFICATIONS_KEY, &text, actor, now))?;
        *self.notifications.lock().unwrap_or_else(|p| p.into_inner()) = settings.clone();
        Ok(settings)
    }
}

impl From<&RuleSet> for RuleTexts {
    fn from(rules: &RuleSet) -> RuleTexts {
        let texts = |v: &[overseer_core::rules::Rule]| v.iter().map(|r| r.to_string()).collect();
        RuleTexts {
            allow: texts(&rules.allow),
            ask: texts(&rules.ask),
            deny: texts(&rules.deny),
        }
    }
}
