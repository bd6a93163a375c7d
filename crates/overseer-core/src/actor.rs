//! Who did something. The actor is derived from where a call came from (the app
//! window, the CLI connection, a paired device, the engine itself), never
//! from a request field.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The names only the local owner acts as (the window, the CLI): no person
/// may take them.
pub const RESERVED_PERSONS: &[&str] = &["app", "cli"];

/// The paired device a person acted through: its id and its name then.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
pub struct DeviceRef {
    pub id: crate::DeviceId,
    pub name: String,
}

impl fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (device {})", self.name, self.id)
    }
}

/// The origin of an action, recorded in every audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Actor {
    /// A human: the local owner through a named surface, `app` (the window)
    /// or `cli`; or, read back from a record, a person (`ana`).
    User(String),
    /// A person through one of their paired devices (a browser, a phone):
    /// recorded as `user:<person>`, the device beside it in the signed
    /// record. On the wire it is the user it acts as (`{"kind": "user",
    /// "name": "ana"}`); views name the device in fields of their own.
    #[serde(rename = "user", skip_deserializing, serialize_with = "person_name")]
    #[ts(skip)]
    Person { person: String, device: DeviceRef },
    /// The delegated supervisor.
    Supervisor(String),
    /// The engine acting on its own (claiming queued runs, recovery, timers).
    Engine,
    /// An agent reporting something. Agents can ask and report, never decide.
    Agent(String),
}

/// Which of the local owner's surfaces a connection to the engine's socket
/// carries, said when it subscribes: a terminal's `overseer` (the default)
/// or a window, the app's link to this host over `ssh HOST overseer bridge`.
/// Only the owner reaches the socket, so it only names the owner's surface
/// (`user:cli` or `user:app`); a process an agent started is refused
/// decisions whatever it says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerSurface {
    #[default]
    Cli,
    App,
}

impl OwnerSurface {
    /// The actor the owner acts as through this surface.
    pub fn actor(self) -> Actor {
        match self {
            OwnerSurface::Cli => Actor::cli(),
            OwnerSurface::App => Actor::app(),
        }
    }
}

impl Actor {
    /// The human at the app window.
    pub fn app() -> Self {
        Actor::User("app".to_owned())
    }
    /// The human at the command line.
    pub fn cli() -> Self {
        Actor::User("cli".to_owned())
    }
    /// Parses what `Display` printed (`user:cli`, `engine`, ...).
    pub fn parse(s: &str) -> Option<Self> {
        if s == "engine" {
            return Some(Actor::Engine);
        }
        let (kind, name) = s.split_once(':')?;
        let name = name.to_owned();
        match kind {
            "user" => Some(Actor::User(name)),
            "supervisor" => Some(Actor::Supervisor(name)),
            "agent" => Some(Actor::Agent(name)),
            _ => None,
        }
    }

    /// True for human actors.
    pub fn is_user(&self) -> bool {
        matches!(self, Actor::User(_) | Actor::Person { .. })
    }

    /// The human's name (`app`, `cli`, `ana`), for human actors.
    pub fn user_name(&self) -> Option<&str> {
        match self {
            Actor::User(n) | Actor::Person { person: n, .. } => Some(n),
            Actor::Supervisor(_) | Actor::Engine | Actor::Agent(_) => None,
        }
    }

    /// The device a person acts through, if any.
    pub fn device(&self) -> Option<&DeviceRef> {
        match self {
            Actor::Person { device, .. } => Some(device),
            Actor::User(_) | Actor::Supervisor(_) | Actor::Engine | Actor::Agent(_) => None,
        }
    }

    /// True for the local owner: the window (`user:app`) or the CLI
    /// (`user:cli`) of the machine the engine runs on.
    pub fn is_local_owner(&self) -> bool {
        matches!(self, Actor::User(n) if RESERVED_PERSONS.contains(&n.as_str()))
    }
}

/// A person through a device is, on the wire, the user it acts as.
fn person_name<S: serde::Serializer>(
    person: &str,
    _device: &DeviceRef,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(person)
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::User(n) | Actor::Person { person: n, .. } => write!(f, "user:{n}"),
            Actor::Supervisor(n) => write!(f, "supervisor:{n}"),
            Actor::Engine => write!(f, "engine"),
            Actor::Agent(n) => write!(f, "agent:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_print_as_kind_and_name() {
        assert_eq!(Actor::app().to_string(), "user:app");
        assert_eq!(Actor::cli().to_string(), "user:cli");
        assert_eq!(Actor::Engine.to_string(), "engine");
        assert!(Actor::cli().is_user());
        assert!(!Actor::Supervisor("rules".into()).is_user());
        for a in [
            Actor::app(),
            Actor::Engine,
            Actor::Agent("demo".into()),
            Actor::Supervisor("x".into()),
        ] {
            assert_eq!(Actor::parse(&a.to_string()), Some(a));
        }
        assert_eq!(Actor::parse("root"), None);
    }

    #[test]
    fn a_person_through_a_device_is_the_user_it_acts_as_on_the_wire() {
        let ana = Actor::Person {
            person: "ana".into(),
            device: DeviceRef {
                id: crate::DeviceId(2),
                name: "Ana's phone".into(),
            },
        };
        assert_eq!(ana.to_string(), "user:ana");
        assert_eq!(
            serde_json::to_value(&ana).expect("json"),
            serde_json::json!({"kind": "user", "name": "ana"})
        );
        assert_eq!(ana.user_name(), Some("ana"));
        assert!(!ana.is_local_owner());
        assert!(Actor::app().is_local_owner() && Actor::cli().is_local_owner());
        assert!(!Actor::User("ana".into()).is_local_owner());
        let back: Actor =
            serde_json::from_value(serde_json::json!({"kind": "user", "name": "ana"}))
                .expect("read");
        assert_eq!(back, Actor::User("ana".into()));
    }
}
