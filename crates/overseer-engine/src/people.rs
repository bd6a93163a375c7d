//! People and what they may do: the one check every operation passes
//! ([`Records::authorize`], called by the contract's adapter from each
//! operation's declared [`Access`]), and the owner giving a person a role.
//!
//! The local owner (the window's `user:app`, the CLI's `user:cli`, a host
//! link acting for the owner) may do everything. A person through a paired
//! device may do what their [`Grant`] says, read fresh at every call: a
//! role changed or a device revoked applies to the next request. Anyone
//! else (the supervisor, an agent, the engine) never comes through a
//! transport; if one did, it would only read.

use crate::Records;
use overseer_core::role::{refusal, Access, Grant, Target};
use overseer_core::{Actor, ApiError, ErrorCode};

/// Whether two human actors are one person: the owner through any of
/// their surfaces (`user:app`, `user:cli`), or one person by name.
fn same_person(a: &Actor, b: &Actor) -> bool {
    (a.is_local_owner() && b.is_local_owner())
        || matches!((a.user_name(), b.user_name()), (Some(x), Some(y)) if x == y)
}
pub use overseer_store::people::PersonView;

impl Records {
    /// What `actor` may do.
    pub fn grant_of(&self, actor: &Actor) -> Result<Grant, ApiError> {
        if actor.is_local_owner() {
            return Ok(Grant::owner());
        }
        match actor {
            Actor::Person { person, .. } | Actor::User(person) => Ok(self.store().grant(person)?),
            Actor::Supervisor(_) | Actor::Engine | Actor::Agent(_) => Ok(Grant::nothing()),
        }
    }

    /// Refuses `actor` (`forbidden`, saying what their grant allows and
    /// who can change it) unless their grant permits `access` where the
    /// operation acts; `target` is asked only for [`Access::Decide`] by
    /// someone whose grant depends on it. `what` names the operation as
    /// a person reads it (`decide_gate`).
    pub fn authorize(
        &self,
        actor: &Actor,
        access: Access,
        what: &str,
        target: impl FnOnce() -> Result<Target, ApiError>,
    ) -> Result<(), ApiError> {
        if actor.is_local_owner() || access == Access::Read {
            return Ok(());
        }
        let grant = self.grant_of(actor)?;
        let target = match (access, &grant.workspaces) {
            // Only an approver limited to some workspaces needs to know where.
            (Access::Decide, Some(_)) => target()?,
            _ => Target::Anywhere,
        };
        if grant.permits(access, &target) {
            return Ok(());
        }
        let who = format!("{actor}{}", overseer_core::device::through(actor.device()));
        Err(ApiError::new(
            ErrorCode::Forbidden,
            refusal(&who, &grant, access, &format!("call `{what}`"), &target),
        ))
    }

    /// The workspace a run belongs to (by name): where deciding on it acts.
    pub fn run_workspace(&self, run: overseer_core::RunId) -> Result<String, ApiError> {
        Ok(self.store().run_workspace(run)?)
    }

    /// The workspace a gate's run belongs to.
    pub fn gate_workspace(&self, gate: overseer_core::GateId) -> Result<String, ApiError> {
        Ok(self.store().gate_workspace(gate)?)
    }

    /// A workspace's name as a call names it (by name, or by id written as
    /// a number), resolved as the call itself will resolve it.
    pub fn workspace_name(&self, name_or_id: &str) -> Result<String, ApiError> {
        Ok(self.store().workspace(name_or_id)?.name)
    }

    /// The workspace a task belongs to.
    pub fn task_workspace(&self, task: overseer_core::TaskId) -> Result<String, ApiError> {
        Ok(self.store().task_workspace(task)?)
    }

    /// Turns a workspace's two-person merges on or off (the owner only).
    pub fn set_two_person_merge(
        &self,
        workspace: &str,
        on: bool,
        actor: &Actor,
    ) -> Result<overseer_store::Workspace, ApiError> {
        crate::devices::owner_only(actor, "change how a workspace merges")?;
        let now = self.clock.now();
        let ws = self.store().workspace(workspace)?;
        let mut settings = ws.settings.clone();
        settings.two_person_merge = on;
        self.write(|tx| tx.set_workspace_settings(ws.id, &settings, actor, now))?;
        Ok(self.store().workspace(workspace)?)
    }

    /// Why approving `run` now cannot merge it under its workspace's
    /// two-person rule, or `None` when it can: it needs a human approver
    /// (`actor`, or a human's approving vote on `gate`) who did not start
    /// the run. The owner is one person whichever surface they use (the
    /// window, the CLI); the supervisor never counts.
    pub(crate) fn second_person_missing(
        &self,
        run: overseer_core::RunId,
        gate: Option<overseer_core::GateId>,
        actor: &Actor,
    ) -> Result<Option<String>, ApiError> {
        let work = self.store().run_work(run)?;
        if !work.workspace.settings.two_person_merge {
            return Ok(None);
        }
        let starter = self
            .store()
            .task_starter(work.task_id)?
            .and_then(|a| Actor::parse(&a));
        let mut approvers: Vec<Actor> = Vec::new();
        if actor.is_user() {
            approvers.push(actor.clone());
        }
        if let Some(gate) = gate {
            approvers.extend(
                self.store()
                    .decisions_of_gate(gate)?
                    .into_iter()
                    .filter(|d| {
                        d.actor.is_user()
                            && d.option.as_deref()
                                == Some(overseer_core::GateKind::MergeReview.approve_option())
                    })
                    .map(|d| d.actor),
            );
        }
        let second = approvers
            .iter()
            .any(|a| starter.as_ref().is_none_or(|s| !same_person(a, s)));
        if second {
            return Ok(None);
        }
        let started = starter.map_or_else(|| "someone unrecorded".to_owned(), |s| s.to_string());
        Ok(Some(format!(
            "workspace `{}` merges only with a second person's approval: run {run} was started \
             by {started}, so another approver (not {started}, and not the supervisor) must \
             approve it (`overseer people list` names who may)",
            work.workspace.name
        )))
    }

    /// Gives `person` a role (and for an approver, the workspaces it holds
    /// in; `None`: all): a signed record, each of their devices told again.
    /// Only the local owner may.
    pub fn set_grant(
        &self,
        person: &str,
        grant: &Grant,
        actor: &Actor,
    ) -> Result<PersonView, ApiError> {
        crate::devices::owner_only(actor, "give a person a role")?;
        let now = self.clock.now();
        Ok(self.write(|tx| tx.set_grant(person, grant, actor, now))?)
    }

    /// Every person with a role: all of them for the owner, a person only
    /// themselves.
    pub fn people_seen_by(&self, actor: &Actor) -> Result<Vec<PersonView>, ApiError> {
        let all = self.store().people()?;
        if actor.is_local_owner() {
            return Ok(all);
        }
        let me = actor.user_name().unwrap_or_default();
        Ok(all.into_iter().filter(|p| p.person == me).collect())
    }

    /// Says once, at start, who kept an approver's grant from before roles
    /// existed (they lost only the owner's powers).
    pub(crate) fn tell_migrated_people(&self) {
        let Ok(people) = self.store().people() else {
            return;
        };
        let migrated: Vec<&str> = people
            .iter()
            .filter(|p| p.migrated)
            .map(|p| p.person.as_str())
            .collect();
        if !migrated.is_empty() {
            tracing::warn!(
                "paired people now have roles: {} (paired before roles existed) are approvers of \
                 every workspace and no longer have the owner's powers; change that with \
                 `overseer people set PERSON --role approver|observer [--workspace NAME]`",
                migrated.join(", ")
            );
        }
    }
}
