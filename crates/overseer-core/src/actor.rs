//! Who did something. The actor is derived from where a call came from (the app
//! window, the CLI connection, the engine itself), never from a request field.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The origin of an action, recorded in every audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Actor {
    /// A human, through a named surface: `app` (the window) or `cli`.
    User(String),
    /// The delegated supervisor.
    Supervisor(String),
    /// The engine acting on its own (claiming queued runs, recovery, timers).
    Engine,
    /// An agent reporting something. Agents can ask and report, never decide.
    Agent(String),
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
        matches!(self, Actor::User(_))
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::User(n) => write!(f, "user:{n}"),
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
}
