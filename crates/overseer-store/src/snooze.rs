//! Snoozed inbox items: a pending gate the user put off until a time. Until
//! then it asks nothing (it is out of the inbox's list and "needs you"); at
//! that time it wakes, told again as if just opened (so it notifies again).
//! The time is stored with the gate: an engine restart keeps it.

use crate::{read, StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::{Actor, GateId, GateView, Millis};
use rusqlite::{params, OptionalExtension};

impl WriteTx<'_> {
    /// The user snoozes a pending gate until `until` (after `now`).
    pub fn snooze_gate(
        &mut self,
        gate_id: GateId,
        until: Millis,
        actor: &Actor,
        now: Millis,
    ) -> Result<GateView, StoreError> {
        let gate = read::gate(self.conn(), self.path(), gate_id)?;
        if let Some(d) = gate.decision {
            return Err(StoreError::AlreadyDecided {
                gate_id,
                by: d.who_and_when(),
                option: d.option,
            });
        }
        if until <= now {
            return Err(StoreError::InvalidInput(format!(
                "gate {gate_id}: a snooze ends in the future; give a later time"
            )));
        }
        self.conn()
            .execute(
                "UPDATE gates SET snoozed_until = ?1 WHERE id = ?2 AND status = 'pending'",
                params![until, gate_id],
            )
            .map_err(|e| self.sql(e))?;
        self.append_audit(
            actor,
            &AuditPayload::GateSnoozed {
                gate_id,
                run_id: gate.run_id,
                until,
                device: actor.device().cloned(),
            },
            now,
        )?;
        self.gate_changed(gate_id);
        self.run_changed(gate.run_id, false);
        read::gate(self.conn(), self.path(), gate_id)
    }

    /// Wakes every pending gate whose snooze ended by `now`: each is told
    /// again as just opened. Returns the gates woken.
    pub fn wake_snoozed(&mut self, now: Millis) -> Result<Vec<GateId>, StoreError> {
        let due: Vec<GateId> = self
            .conn()
            .prepare_cached(
                "SELECT id FROM gates
                 WHERE status = 'pending' AND snoozed_until IS NOT NULL AND snoozed_until <= ?1
                 ORDER BY id",
            )
            .and_then(|mut s| {
                s.query_map([now], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.sql(e))?;
        for id in &due {
            self.conn()
                .execute("UPDATE gates SET snoozed_until = NULL WHERE id = ?1", [id])
                .map_err(|e| self.sql(e))?;
            let gate = read::gate(self.conn(), self.path(), *id)?;
            self.gate_opened(gate.id, gate.run_id, gate.kind());
        }
        Ok(due)
    }
}

impl crate::Store {
    /// When the next snoozed pending gate wakes, if any is snoozed.
    pub fn next_snooze_end(&self) -> Result<Option<Millis>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT MIN(snoozed_until) FROM gates
                 WHERE status = 'pending' AND snoozed_until IS NOT NULL",
            )
            .and_then(|mut s| {
                s.query_row([], |r| r.get::<_, Option<Millis>>(0))
                    .optional()
            })
            .map(Option::flatten)
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }
}
