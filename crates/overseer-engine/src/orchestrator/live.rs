//! The runs the orchestrator is driving and their live agents: state the
//! engine's handle holds, knowing nothing of how runs are driven.

use overseer_acp::{AcpSessions, AgentSession, StartSession};
use overseer_contain::process::AgentProcess;
use overseer_core::{GateId, RunId};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A run whose agent is alive.
pub(crate) struct Live {
    pub(crate) conn: Arc<dyn AgentSession>,
    pub(crate) process: tokio::sync::Mutex<AgentProcess>,
    /// The run's own socket for its MCP server, held to be closed with the
    /// agent (dropping it closes it).
    pub(crate) _asks: Option<Box<dyn Send + Sync>>,
}

/// The runs the orchestrator is driving, by id.
#[derive(Default)]
pub(crate) struct LiveRuns {
    pub(crate) agents: Mutex<HashMap<RunId, Arc<Live>>>,
    pub(super) driving: Mutex<HashSet<RunId>>,
    /// Questions whose asker stopped with the engine, by gate, with their
    /// run and what they asked: the first of an answer or the carried-on
    /// agent asking the same again takes one.
    pub(super) orphans: Mutex<HashMap<GateId, (RunId, String)>>,
    /// How agent sessions start; None: over ACP ([`AcpSessions`]).
    pub(crate) sessions: Mutex<Option<Arc<dyn StartSession>>>,
    /// Runs stopped by an abort whose record is not written yet: their
    /// driver records nothing of its own ending, and nothing launches them.
    pub(crate) aborting: Mutex<HashSet<RunId>>,
}

impl LiveRuns {
    pub(crate) fn set_aborting(&self, run: RunId, on: bool) {
        let mut set = self.aborting.lock().unwrap_or_else(|p| p.into_inner());
        if on {
            set.insert(run);
        } else {
            set.remove(&run);
        }
    }

    pub(crate) fn is_aborting(&self, run: RunId) -> bool {
        self.aborting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&run)
    }

    pub(crate) fn get(&self, run: RunId) -> Option<Arc<Live>> {
        self.agents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&run)
            .cloned()
    }

    pub(super) fn set(&self, run: RunId, live: Option<Arc<Live>>) {
        let mut agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        match live {
            Some(l) => agents.insert(run, l),
            None => agents.remove(&run),
        };
    }

    /// True when this call took the run (no other task drives it).
    pub(super) fn take(&self, run: RunId) -> bool {
        self.driving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(run)
    }

    pub(super) fn keep_orphan(&self, gate: GateId, run: RunId, asked: &str) {
        self.orphans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(gate, (run, asked.to_owned()));
    }

    /// True when this call took the orphan (nobody else will).
    pub(super) fn take_orphan(&self, gate: GateId) -> bool {
        self.orphans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&gate)
            .is_some()
    }

    /// The orphaned question of `run` that asked exactly `asked`, taken.
    pub(super) fn adopt_orphan(&self, run: RunId, asked: &str) -> Option<GateId> {
        let mut orphans = self.orphans.lock().unwrap_or_else(|p| p.into_inner());
        let gate = orphans
            .iter()
            .filter(|(_, (r, a))| *r == run && a == asked)
            .map(|(g, _)| *g)
            .min()?;
        orphans.remove(&gate);
        Some(gate)
    }

    /// How the next agent session starts.
    pub(super) fn sessions(&self) -> Arc<dyn StartSession> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| Arc::new(AcpSessions))
    }

    pub(super) fn release(&self, run: RunId) {
        self.driving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&run);
    }
}

/// Stops an agent's whole process tree (SIGTERM, `grace`, SIGKILL) and
/// returns the pids killed; survivors and failures are logged loudly.
pub(super) async fn terminate_tree(
    run: RunId,
    live: &Live,
    grace: Duration,
    when: &str,
) -> Vec<u32> {
    match live.process.lock().await.terminate(grace).await {
        Ok(r) => {
            if !r.survivors.is_empty() {
                tracing::error!(run = %run, survivors = ?r.survivors, "processes survived the stop {when}");
            }
            r.killed
        }
        Err(e) => {
            tracing::error!(run = %run, "stopping the agent {when}: {e}");
            Vec::new()
        }
    }
}
