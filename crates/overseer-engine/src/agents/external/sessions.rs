//! What the engine keeps in memory about external sessions (their state;
//! the engine's handle holds one).

use overseer_core::rules::RuleSet;
use overseer_core::{GateId, RunId};
use std::collections::HashMap;
use std::sync::Mutex;

/// What the engine keeps in memory about external sessions.
#[derive(Default)]
pub(crate) struct Sessions {
    /// The agent process of each session, by pid: (its start time, the run).
    pub(super) agents: Mutex<HashMap<u32, (u64, RunId)>>,
    /// Rules the user's "always" answers added, per session.
    pub(super) rules: Mutex<HashMap<RunId, RuleSet>>,
    /// How many askers wait on each gate right now.
    pub(super) waiting: Mutex<HashMap<GateId, usize>>,
    /// Notices whose reply is watched for, to become steering: once each.
    pub(super) replies: Mutex<std::collections::HashSet<GateId>>,
}
