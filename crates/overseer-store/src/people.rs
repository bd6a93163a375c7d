//! What each person may do: the grant the owner gave (`people`), and the
//! workspace an operation acts in, which the role check needs.
//!
//! A person without a row only reads ([`Grant::nothing`]); a grant names
//! workspaces that exist when it is given (a typo is refused, not stored
//! as a grant to nothing). Giving a grant is a signed record, and each of
//! the person's devices is told again as `DeviceChanged` (every client
//! shows the new role at once).

use crate::grant::grant_of;
use crate::{StoreError, WriteTx};
use overseer_core::audit::AuditPayload;
use overseer_core::device::check_person;
use overseer_core::{Actor, EngineEvent, GateId, Grant, Millis, Role, RunId, TaskId};
use rusqlite::{params, OptionalExtension};

/// A person and their grant, as Settings and `overseer people list` show.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct PersonView {
    pub person: String,
    pub grant: Grant,
    /// Who set it (`user:cli`, or `engine` for the people paired before
    /// roles existed).
    pub set_by: String,
    pub set_at: Millis,
    /// Paired before roles existed: made an approver of every workspace
    /// by the upgrade, until the owner says otherwise.
    pub migrated: bool,
}

impl crate::Store {
    /// What `person` may do ([`Grant::nothing`] when no grant is recorded).
    pub fn grant(&self, person: &str) -> Result<Grant, StoreError> {
        let row = self
            .conn
            .prepare_cached("SELECT role, workspaces FROM people WHERE person = ?1")
            .and_then(|mut s| {
                s.query_row([person], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
                })
                .optional()
            })
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?;
        Ok(row.map_or_else(Grant::nothing, |(role, ws)| grant_of(Some(role), ws)))
    }

    /// Every person with a grant, by name.
    pub fn people(&self) -> Result<Vec<PersonView>, StoreError> {
        let sql = |e| StoreError::from_sqlite(e, self.path());
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT person, role, workspaces, set_by, set_at, migrated FROM people
                 ORDER BY person",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(PersonView {
                    person: r.get(0)?,
                    grant: grant_of(r.get(1)?, r.get(2)?),
                    set_by: r.get(3)?,
                    set_at: r.get(4)?,
                    migrated: r.get::<_, i64>(5)? != 0,
                })
            })
            .map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)
    }

    /// The workspace a run belongs to (by name).
    pub fn run_workspace(&self, run: RunId) -> Result<String, StoreError> {
        self.workspace_by(
            "SELECT w.name FROM runs r JOIN tasks t ON t.id = r.task_id
             JOIN workspaces w ON w.id = t.workspace_id WHERE r.id = ?1",
            "run",
            run.into(),
        )
    }

    /// The workspace a gate's run belongs to (by name).
    pub fn gate_workspace(&self, gate: GateId) -> Result<String, StoreError> {
        self.workspace_by(
            "SELECT w.name FROM gates g JOIN runs r ON r.id = g.run_id
             JOIN tasks t ON t.id = r.task_id
             JOIN workspaces w ON w.id = t.workspace_id WHERE g.id = ?1",
            "gate",
            gate.into(),
        )
    }

    /// The workspace a task belongs to (by name).
    pub fn task_workspace(&self, task: TaskId) -> Result<String, StoreError> {
        self.workspace_by(
            "SELECT w.name FROM tasks t JOIN workspaces w ON w.id = t.workspace_id
             WHERE t.id = ?1",
            "task",
            task.into(),
        )
    }

    /// The workspace name `sql` finds for `what` number `id`.
    fn workspace_by(&self, sql: &str, what: &'static str, id: i64) -> Result<String, StoreError> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))?
            .ok_or(StoreError::NotFound { what, id })
    }

    /// Who started a task: the actor of its signed `task_created` record
    /// (`user:cli`, `user:ana`), if it has one.
    pub fn task_starter(&self, task: TaskId) -> Result<Option<String>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT actor FROM audit_log
                 WHERE json_extract(payload, '$.type') = 'task_created'
                   AND json_extract(payload, '$.task_id') = ?1
                 ORDER BY seq LIMIT 1",
            )
            .and_then(|mut s| s.query_row([task], |r| r.get(0)).optional())
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }
}

impl WriteTx<'_> {
    /// Gives `person` a grant (checked: a person's name, not the owner's
    /// role, workspaces that exist), signed, and tells each of their
    /// devices again. Nothing is written when any part is wrong.
    pub fn set_grant(
        &mut self,
        person: &str,
        grant: &Grant,
        actor: &Actor,
        now: Millis,
    ) -> Result<PersonView, StoreError> {
        let person = check_person(person).map_err(StoreError::InvalidInput)?;
        let role =
            match grant.role {
                Role::Approver => "approver",
                Role::Observer => "observer",
                Role::Owner => return Err(StoreError::InvalidInput(
                    "`owner` is not a role a paired person can have: the owner's powers stay at \
                     the engine's machine. Give `approver` or `observer`"
                        .to_owned(),
                )),
            };
        let conn = self.conn();
        // An observer's workspaces mean nothing: not stored.
        let workspaces = match (grant.role, &grant.workspaces) {
            (Role::Approver, Some(names)) => {
                let mut names = names.clone();
                names.sort();
                names.dedup();
                for name in &names {
                    let known: Option<i64> = conn
                        .query_row("SELECT id FROM workspaces WHERE name = ?1", [name], |r| {
                            r.get(0)
                        })
                        .optional()
                        .map_err(|e| self.sql(e))?;
                    if known.is_none() {
                        return Err(StoreError::InvalidInput(format!(
                            "no workspace named `{name}`: grant one that exists (`overseer \
                             workspace list`), or add it first"
                        )));
                    }
                }
                Some(names)
            }
            _ => None,
        };
        let stored = workspaces
            .as_ref()
            .map(|w| serde_json::to_string(w).unwrap_or_else(|_| "[]".to_owned()));
        conn.execute(
            "INSERT INTO people(person, role, workspaces, set_by, set_at, migrated)
             VALUES (?1, ?2, ?3, ?4, ?5, 0)
             ON CONFLICT(person) DO UPDATE SET role = ?2, workspaces = ?3, set_by = ?4,
                 set_at = ?5, migrated = 0",
            params![person, role, stored, actor.to_string(), now],
        )
        .map_err(|e| self.sql(e))?;
        let grant = Grant {
            role: grant.role,
            workspaces,
        };
        self.append_audit(
            actor,
            &AuditPayload::PersonRoleSet {
                person: person.clone(),
                role: grant.role,
                workspaces: grant.workspaces.clone(),
            },
            now,
        )?;
        let ids: Vec<overseer_core::DeviceId> = conn
            .prepare_cached("SELECT id FROM devices WHERE person = ?1 ORDER BY id")
            .and_then(|mut s| {
                s.query_map([&person], |r| r.get(0))?
                    .collect::<Result<_, _>>()
            })
            .map_err(|e| self.sql(e))?;
        for id in ids {
            let device = crate::devices::device_of(conn, id).map_err(|e| self.sql(e))?;
            if let Some(device) = device {
                self.happened(EngineEvent::DeviceChanged { device });
            }
        }
        Ok(PersonView {
            person,
            grant,
            set_by: actor.to_string(),
            set_at: now,
            migrated: false,
        })
    }

    /// Whether `person` has a grant recorded.
    pub fn person_has_grant(&mut self, person: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = self
            .conn()
            .query_row("SELECT 1 FROM people WHERE person = ?1", [person], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(found.is_some())
    }

    /// The grant a device paired before its person had one gets: approver
    /// of every workspace, as the people paired before roles existed
    /// (a code issued by an older version names no role). Left as it is
    /// when the person has one.
    pub(crate) fn grant_if_none(&mut self, person: &str, now: Millis) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO people(person, role, workspaces, set_by, set_at, migrated)
                 VALUES (?1, 'approver', NULL, 'engine', ?2, 1)
                 ON CONFLICT(person) DO NOTHING",
                params![person, now],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_grants_never_read_as_more_than_written() {
        assert_eq!(grant_of(None, None), Grant::nothing());
        assert_eq!(grant_of(Some("owner".into()), None), Grant::nothing());
        assert_eq!(
            grant_of(Some("approver".into()), Some("not json".into())),
            Grant {
                role: Role::Approver,
                workspaces: Some(vec![])
            }
        );
        assert_eq!(
            grant_of(Some("approver".into()), Some(r#"["web"]"#.into())).workspaces,
            Some(vec!["web".to_owned()])
        );
    }
}
