//! The recording calls of [`WriteTx`]: each change a client shows, noted in
//! the transaction's outbox as it is written.

use super::{Changes, Outbox};
use crate::write::WriteTx;
use crate::{read, StoreError};
use overseer_core::{EngineEvent, GateId, GateKind, RunId, TaskId};

impl WriteTx<'_> {
    pub(crate) fn gate_opened(&mut self, gate_id: GateId, run_id: RunId, kind: GateKind) {
        self.outbox().events.push(EngineEvent::GateOpened {
            gate_id,
            run_id,
            kind,
        });
        self.gate_changed(gate_id);
        self.run_changed(run_id, false);
    }

    pub(crate) fn gate_decided(&mut self, gate_id: GateId, run_id: RunId, kind: GateKind) {
        self.outbox().events.push(EngineEvent::GateDecided {
            gate_id,
            run_id,
            kind,
        });
        self.gate_changed(gate_id);
        self.run_changed(run_id, false);
    }

    /// A gate's row changed in a way no event names (its terms, its timer,
    /// the engine acting on it): its waiters look again.
    pub(crate) fn gate_changed(&mut self, gate: GateId) {
        let gates = &mut self.outbox().gates;
        if !gates.contains(&gate) {
            gates.push(gate);
        }
    }

    /// A run's row changed; `moved`: its state did. A released run's row is
    /// pushed again only when it moved (its release): the rest (a late
    /// timeline entry) would repeat the release's notification.
    pub(crate) fn run_changed(&mut self, run: RunId, moved: bool) {
        let runs = &mut self.outbox().runs;
        match runs.iter_mut().find(|(r, _)| *r == run) {
            Some((_, m)) => *m |= moved,
            None => runs.push((run, moved)),
        }
    }

    pub(crate) fn task_created(&mut self, task: TaskId) {
        self.outbox().new_tasks.push(task);
    }

    pub(crate) fn task_changed(&mut self, task_id: TaskId) {
        if !self.outbox().new_tasks.contains(&task_id) {
            self.once(EngineEvent::TaskChanged { task_id });
        }
    }

    pub(crate) fn workspace_changed(&mut self, name: String) {
        self.once(EngineEvent::WorkspaceChanged { name });
    }

    /// An event that needs no further reading (a timeline entry, a message).
    pub(crate) fn happened(&mut self, event: EngineEvent) {
        self.outbox().events.push(event);
    }

    fn once(&mut self, event: EngineEvent) {
        let events = &mut self.outbox().events;
        if !events.contains(&event) {
            events.push(event);
        }
    }

    /// The transaction's [`Changes`], each changed run's row read as it
    /// stands now (inside the transaction, before its commit). Without
    /// `with_events` (nobody will push them: a bulk seed, a test), only the
    /// changed gates, and no row is read.
    pub(crate) fn changes(&mut self, with_events: bool) -> Result<Changes, StoreError> {
        let Outbox {
            mut events,
            runs,
            gates,
            ..
        } = std::mem::take(self.outbox());
        if !with_events {
            return Ok(Changes {
                events: Vec::new(),
                gates,
            });
        }
        for (id, moved) in runs {
            let run = read::run(self.conn(), self.path(), id)?;
            if moved || !run.state.is_released() {
                events.push(EngineEvent::RunChanged { run });
            }
        }
        Ok(Changes { events, gates })
    }
}

impl crate::Store {
    /// Every pending gate told again as if just opened, each followed by
    /// its run's row (after a restart, so that the user is notified again).
    /// Returns the gates that wait, and the events.
    pub fn pending_gates_again(&self) -> Result<(Vec<GateId>, Vec<EngineEvent>), StoreError> {
        // A snoozed gate is told when it wakes, not now.
        let mut gates = self.gates(true)?;
        gates.retain(|g| g.snoozed_until.is_none());
        let mut events = Vec::with_capacity(gates.len() * 2);
        for g in &gates {
            events.push(EngineEvent::GateOpened {
                gate_id: g.id,
                run_id: g.run_id,
                kind: g.kind(),
            });
            events.push(EngineEvent::RunChanged {
                run: self.run(g.run_id)?,
            });
        }
        Ok((gates.iter().map(|g| g.id).collect(), events))
    }
}
