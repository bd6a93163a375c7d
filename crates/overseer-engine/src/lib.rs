//! The running system: owns the store (the one writer), applies intents from
//! every surface through the same code paths, publishes an event after each
//! commit, and serves the local API on a Unix socket.
//!
//! Table of contents:
//! - [`Engine`]: open, act (approve / reject / abort), subscribe, shut down.
//! - [`ops`]: the operations themselves, one store transaction each; also used
//!   by the CLI when no engine is running, so both paths are the same code.
//! - The transports (the local socket, each run's own socket, the wire
//!   format and its client) are the `overseer-server` crate; a run's socket
//!   is served through the [`RunVoices`] it gives the orchestrator.
//! - [`demo`]: the deterministic demo fleet.
//! - [`paths`]: where the data and config dirs are.
//! - [`Clock`], [`Notifier`]: the outside world, as traits.

mod activity;
mod advice;
#[deny(clippy::wildcard_enum_match_arm)]
pub mod agents;
mod autorun;
mod budget;
mod clock;
pub use overseer_config as config;
mod contained_eval;
mod containment;
mod decide;
pub mod demo;
pub mod devices;
pub mod disk;
mod engine;
pub mod fleet;
pub mod flood;
pub mod gate_page;
// The modules that decide gates match their choices exhaustively: a new
// choice must force a decision, never fall into a wildcard arm.
#[deny(clippy::wildcard_enum_match_arm)]
mod merge;
mod notify;
#[deny(clippy::wildcard_enum_match_arm)]
pub mod ops;
#[deny(clippy::wildcard_enum_match_arm)]
mod orchestrator;
pub mod people;
pub use overseer_config::paths;
#[deny(clippy::wildcard_enum_match_arm)]
pub mod settings;
mod signed;
mod snooze;
mod supervise;
mod waiting;
pub mod web_serving;
pub mod webhooks;
#[deny(clippy::wildcard_enum_match_arm)]
mod work;

pub use clock::{Clock, SystemClock};
pub use devices::{DeviceView, Paired, Pairing};
pub use engine::{
    Engine, EngineError, Merges, Records, RunVoice, RunVoices, Runs, Shared, Supervision,
};
pub use fleet::{FleetCounts, RunsHead};
pub use gate_page::{GatePage, GATE_PAGE, GATE_PAGE_MAX};
pub use merge::{hidden_ref, MergeOutcome};
pub use notify::{
    coalesce, notification_for, quick_answer, what_it_decides, LogNotifier, Notification,
    NotificationKind, NotificationSettings, Notifier, QuickAnswer, WebhookEvent,
};
pub use orchestrator::MAX_RETRIES;
pub use overseer_contain::process::{raise_fd_limit, started_fd_limit};
pub use overseer_core::urgency::{Urgency, UrgencySettings};
pub use overseer_core::web::{WebSettings, WebStatus};
pub use overseer_git::FileChange;
pub use overseer_store::{Workspace, WorkspaceSettings};
pub use paths::Paths;
pub use settings::Scope;
pub use settings::{RuleTexts, SettingsChange};
pub use supervise::{GateStory, PolicyStatus, RunStory, TaskInfo};
pub use web_serving::{WebHost, WebServing};
pub use webhooks::{
    DeliveryStatus, Webhook, WebhookAdded, WebhookAttempt, WebhookBatch, WebhookBatchItem,
    WebhookBatchKind, WebhookBody, WebhookDelivery,
};
pub use work::{run_branch, Started, TaskStart};
