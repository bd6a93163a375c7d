//! The demo agent's state: its one session, where it is in Overseer's plan
//! and execute cycle, its modes, and what the client offered.

use crate::script::{Answers, PermissionSettings, Scenario};
use agent_client_protocol::v1::schema as acp;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// Logs to stderr; stdout belongs to the protocol.
macro_rules! log {
    ($($arg:tt)*) => {
        eprintln!("overseer-demo-agent: {}", format_args!($($arg)*))
    };
}
pub(crate) use log;

/// The modes the demo offers unless `OVERSEER_DEMO_MODES` says others, and
/// the one it starts in.
pub(crate) const MODES: [&str; 3] = ["default", "plan", "auto"];
pub(crate) const START_MODE: &str = "auto";

/// The modes the demo offers: `OVERSEER_DEMO_MODES` (comma-separated ids,
/// e.g. `build,plan` to look like OpenCode), else [`MODES`]. In any mode but
/// `default` and `plan` it acts without asking.
pub(crate) fn modes() -> Vec<String> {
    std::env::var("OVERSEER_DEMO_MODES")
        .ok()
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|list| !list.is_empty())
        .unwrap_or_else(|| MODES.iter().map(|m| (*m).to_owned()).collect())
}

/// The mode a session starts in: `OVERSEER_DEMO_START_MODE` if it names one
/// of [`modes`], else `auto` (as claude-agent-acp 0.101 does) when offered,
/// else the first offered.
pub(crate) fn start_mode() -> String {
    let offered = modes();
    std::env::var("OVERSEER_DEMO_START_MODE")
        .ok()
        .filter(|m| offered.contains(m))
        .or_else(|| offered.iter().find(|m| *m == START_MODE).cloned())
        .or_else(|| offered.first().cloned())
        .unwrap_or_else(|| START_MODE.to_owned())
}

/// Where the session is in Overseer's plan → execute cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    #[default]
    Idle,
    Planned,
    Executing,
    Done,
}

/// The one session this agent serves.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: acp::SessionId,
    pub(crate) cwd: PathBuf,
    pub(crate) phase: Phase,
    /// How many of the script's actions are done.
    pub(crate) done: usize,
    /// The user chose "always allow".
    pub(crate) always_allowed: bool,
    /// The flaky scenario has failed its one time.
    pub(crate) flaky_failed: bool,
    pub(crate) answers: Option<Answers>,
    /// Tool calls made so far, for unique ids across retries.
    pub(crate) tool_calls: usize,
    /// The session mode: `default`, `plan` or `auto`.
    pub(crate) mode: String,
    /// The plan step being carried out (0-based).
    pub(crate) step: usize,
    pub(crate) turn_running: bool,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) client_reads: bool,
    pub(crate) client_writes: bool,
    pub(crate) client_forms: bool,
    pub(crate) session: Option<Session>,
}

pub(crate) struct Demo {
    pub(crate) scenario: Scenario,
    pub(crate) step: Duration,
    /// What the `permissions` scenario does.
    pub(crate) permissions: PermissionSettings,
    /// Raw lines to stdout, for the garbage scenario; the protocol's own
    /// lines go through the same writer, so lines never interleave.
    pub(crate) raw_out: std::sync::mpsc::Sender<Vec<u8>>,
    /// Bumped by `session/cancel`.
    pub(crate) cancel: watch::Sender<u64>,
    pub(crate) state: Mutex<State>,
}

impl Demo {
    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the session; a turn only runs once there is one.
    pub(crate) fn with_session<T: Default>(&self, f: impl FnOnce(&mut Session) -> T) -> T {
        self.state().session.as_mut().map(f).unwrap_or_default()
    }

    pub(crate) fn client_reads(&self) -> bool {
        self.state().client_reads
    }

    pub(crate) fn client_writes(&self) -> bool {
        self.state().client_writes
    }

    pub(crate) fn client_forms(&self) -> bool {
        self.state().client_forms
    }
}
