//! What the engine tells the user outside the window. The desktop shell
//! implements [`Notifier`] with OS notifications; headless it only logs.

use overseer_core::{EngineEvent, GateKind, RunId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationKind {
    RunPendingReview,
    /// The supervisor handed a decision to the human.
    SupervisorEscalated,
    /// The supervisor's evaluator failed (timeout, error, garbage): the
    /// human decides.
    SupervisorFailed,
}

impl NotificationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::RunPendingReview => "run_pending_review",
            NotificationKind::SupervisorEscalated => "supervisor_escalated",
            NotificationKind::SupervisorFailed => "supervisor_failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub kind: NotificationKind,
    pub run_id: RunId,
    pub title: String,
    pub body: String,
}

pub trait Notifier: Send + Sync {
    fn notify(&self, n: &Notification);
}

/// Headless: notifications go to the log.
#[derive(Debug, Default)]
pub struct LogNotifier;

impl Notifier for LogNotifier {
    fn notify(&self, n: &Notification) {
        tracing::info!(
            kind = n.kind.as_str(),
            run = n.run_id,
            "{}: {}",
            n.title,
            n.body
        );
    }
}

/// The notification an event calls for, if any. `task` names the run's task.
pub(crate) fn notification_for(event: &EngineEvent, task: &str) -> Option<Notification> {
    match event {
        EngineEvent::GateOpened {
            run_id,
            kind: GateKind::MergeReview,
            ..
        } => Some(Notification {
            kind: NotificationKind::RunPendingReview,
            run_id: *run_id,
            title: format!("Run {run_id} is ready for review"),
            body: task.to_owned(),
        }),
        EngineEvent::GateOpened { .. }
        | EngineEvent::GateDecided { .. }
        | EngineEvent::RunChanged { .. }
        | EngineEvent::RunActivity { .. }
        | EngineEvent::OrchestrationAborted { .. } => None,
    }
}
