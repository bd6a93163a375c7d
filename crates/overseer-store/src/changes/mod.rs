//! What a write transaction changed, as the events its changes cause.
//!
//! The functions of [`WriteTx`] that change something a client shows record
//! it here as they go (a gate opened or decided, a run moved, a timeline
//! entry, a message, a workspace's or a task's settings). When the writer's
//! closure succeeds, the record becomes its [`Changes`]: the events to push,
//! each run's row once and as it stands at the end of the transaction, and
//! the gates whose row changed (what a waiter on a gate watches). The caller
//! gets them only once the transaction is committed ([`crate::Writer`]), so
//! nothing is ever pushed for a write that was rolled back, and no caller
//! re-derives what its write did.

mod record;

use overseer_core::{EngineEvent, GateId, RunId, TaskId};

/// The events a committed write causes, in the order they happened, each
/// run's row last (a notification about a gate reads the row after it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    events: Vec<EngineEvent>,
    gates: Vec<GateId>,
}

impl Changes {
    /// What to push to subscribers.
    pub fn events(&self) -> &[EngineEvent] {
        &self.events
    }

    pub fn into_events(self) -> Vec<EngineEvent> {
        self.events
    }

    /// Every gate whose row the write changed (opened, decided, overridden,
    /// acted on, its timer or terms changed), once each.
    pub fn gates(&self) -> &[GateId] {
        &self.gates
    }
}

/// What a transaction recorded so far (see [`WriteTx`]'s recording calls).
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    events: Vec<EngineEvent>,
    /// Runs whose row changed, in order; true when its state moved.
    runs: Vec<(RunId, bool)>,
    gates: Vec<GateId>,
    /// Tasks made in this transaction: their settings are news only with
    /// their first run.
    new_tasks: Vec<TaskId>,
}
