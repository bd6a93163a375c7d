//! Who may do what: the owner, approvers and observers.
//!
//! Every operation of the contract declares what it needs ([`Access`]):
//! reading, deciding within one workspace (a gate, a run's review, a
//! steer, a task), or the owner's powers (everything that configures what
//! runs on the machine or who is told). A caller is the local owner (the
//! window, the CLI at the engine's machine, a host link acting for the
//! owner) or a person through a paired device, whose [`Grant`] the owner
//! gave: [`Role::Approver`] in some workspaces or all, or
//! [`Role::Observer`]. [`Grant::permits`] is the one place this is
//! decided; the transports call it from the contract's declaration, never
//! per handler.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What an operation needs of its caller, as the contract declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads or asks: every paired person may.
    Read,
    /// Decides or acts within one workspace (a gate, a run's review, a
    /// steer, a message, a task): an approver granted that workspace may.
    Decide,
    /// Configures the machine (policies, evaluators, rules, checks,
    /// profiles, notifications, webhooks, hosts, devices, web serving):
    /// the owner only.
    Own,
}

/// A person's role, given by the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The machine's owner: the window, the CLI, a host link acting for
    /// the owner. Never a paired person.
    Owner,
    /// Decides gates and reviews runs (and starts tasks) in the workspaces
    /// granted.
    Approver,
    /// Reads only.
    Observer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Approver => "approver",
            Role::Observer => "observer",
        }
    }

    /// A role as typed (`approver`, `observer`); `owner` is not a role a
    /// person can be given.
    pub fn parse_person_role(text: &str) -> Result<Role, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "approver" => Ok(Role::Approver),
            "observer" => Ok(Role::Observer),
            "owner" => Err(
                "`owner` is not a role a paired person can have: the owner's powers stay at \
                 the engine's machine (its window and CLI). Give `approver` or `observer`"
                    .to_owned(),
            ),
            other => Err(format!(
                "`{other}` is not a role: give `approver` (decides gates and reviews runs in \
                 the workspaces granted) or `observer` (reads only)"
            )),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a person may do: their role, and for an approver the workspaces
/// it holds in (`None`: every workspace, present and future).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Grant {
    pub role: Role,
    /// Workspace names; `None`: all of them.
    #[serde(default)]
    pub workspaces: Option<Vec<String>>,
}

/// Where an operation acts, for [`Access::Decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Within one workspace, by name.
    Workspace(String),
    /// Across workspaces, or outside any (a broadcast to every run, an
    /// external session's gate): only an approver of every workspace may.
    Anywhere,
}

impl Grant {
    /// The owner's grant: everything.
    pub fn owner() -> Grant {
        Grant {
            role: Role::Owner,
            workspaces: None,
        }
    }

    /// What a person with no grant recorded gets: reading only.
    pub fn nothing() -> Grant {
        Grant {
            role: Role::Observer,
            workspaces: None,
        }
    }

    /// Whether this grant permits `access` at `target` (ignored unless
    /// `access` is [`Access::Decide`]).
    pub fn permits(&self, access: Access, target: &Target) -> bool {
        match (self.role, access) {
            (Role::Owner, _) => true,
            (Role::Approver | Role::Observer, Access::Read) => true,
            (Role::Approver | Role::Observer, Access::Own) => false,
            (Role::Observer, Access::Decide) => false,
            (Role::Approver, Access::Decide) => match (&self.workspaces, target) {
                (None, _) => true,
                (Some(_), Target::Anywhere) => false,
                (Some(granted), Target::Workspace(w)) => granted.iter().any(|g| g == w),
            },
        }
    }

    /// How the grant reads: `approver of every workspace`, `approver of
    /// web-app, api`, `observer`.
    pub fn describe(&self) -> String {
        match (self.role, &self.workspaces) {
            (Role::Approver, None) => "approver of every workspace".to_owned(),
            (Role::Approver, Some(w)) if w.is_empty() => "approver of no workspace".to_owned(),
            (Role::Approver, Some(w)) => format!("approver of {}", w.join(", ")),
            (role, _) => role.to_string(),
        }
    }
}

/// Why `actor` may not: the message of a `forbidden` refusal, saying what
/// the grant allows and who can change it.
pub fn refusal(who: &str, grant: &Grant, access: Access, what: &str, target: &Target) -> String {
    let needs = match (access, target) {
        (Access::Own, _) | (Access::Read, _) => {
            "only the owner at the engine's machine (its window or CLI) may".to_owned()
        }
        (Access::Decide, Target::Workspace(w)) => {
            format!("it needs an approver of workspace `{w}` (or the owner)")
        }
        (Access::Decide, Target::Anywhere) => {
            "it reaches beyond one workspace: it needs an approver of every workspace (or the \
             owner)"
                .to_owned()
        }
    };
    format!(
        "{who} may not {what}: {needs}, and {who} is {}; ask the owner to change the role \
         (`overseer people set`)",
        grant.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approver(of: &[&str]) -> Grant {
        Grant {
            role: Role::Approver,
            workspaces: Some(of.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    #[test]
    fn each_role_permits_what_it_says() {
        let web = Target::Workspace("web".to_owned());
        let api = Target::Workspace("api".to_owned());
        let owner = Grant::owner();
        for access in [Access::Read, Access::Decide, Access::Own] {
            assert!(owner.permits(access, &Target::Anywhere));
        }
        let ana = approver(&["web"]);
        assert!(ana.permits(Access::Read, &api));
        assert!(ana.permits(Access::Decide, &web));
        assert!(!ana.permits(Access::Decide, &api));
        assert!(!ana.permits(Access::Decide, &Target::Anywhere));
        assert!(!ana.permits(Access::Own, &web));
        let all = Grant {
            role: Role::Approver,
            workspaces: None,
        };
        assert!(all.permits(Access::Decide, &Target::Anywhere));
        assert!(!all.permits(Access::Own, &Target::Anywhere));
        let watcher = Grant::nothing();
        assert!(watcher.permits(Access::Read, &web));
        assert!(!watcher.permits(Access::Decide, &web));
        assert!(!watcher.permits(Access::Own, &web));
    }

    #[test]
    fn owner_is_not_a_role_to_give() {
        assert_eq!(Role::parse_person_role(" Approver "), Ok(Role::Approver));
        assert_eq!(Role::parse_person_role("observer"), Ok(Role::Observer));
        assert!(Role::parse_person_role("owner")
            .is_err_and(|e| e.contains("stay at the engine's machine")));
        assert!(Role::parse_person_role("admin").is_err_and(|e| e.contains("`approver`")));
    }

    #[test]
    fn a_refusal_names_the_grant_and_the_fix() {
        let text = refusal(
            "user:ana",
            &approver(&["web"]),
            Access::Decide,
            "decide gate 3",
            &Target::Workspace("api".to_owned()),
        );
        assert!(text.contains("approver of workspace `api`"), "{text}");
        assert!(text.contains("approver of web"), "{text}");
        assert!(text.contains("overseer people set"), "{text}");
    }
}
