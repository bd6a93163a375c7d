//! What a tool call is and how far it went, as ACP names them: typed from
//! the driver to the rules, the timeline and the window. The wire, the
//! database and the audit log keep ACP's snake_case names (`edit`,
//! `in_progress`), so records written before these types still read.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a tool call does (ACP's `ToolKind`). A kind this version does not
/// know is [`ToolKind::Other`], which the rules never count as read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    #[serde(other)]
    Other,
}

impl ToolKind {
    /// Every kind, in ACP's order.
    pub const ALL: [ToolKind; 10] = [
        ToolKind::Read,
        ToolKind::Edit,
        ToolKind::Delete,
        ToolKind::Move,
        ToolKind::Search,
        ToolKind::Execute,
        ToolKind::Think,
        ToolKind::Fetch,
        ToolKind::SwitchMode,
        ToolKind::Other,
    ];

    /// ACP's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Delete => "delete",
            ToolKind::Move => "move",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Think => "think",
            ToolKind::Fetch => "fetch",
            ToolKind::SwitchMode => "switch_mode",
            ToolKind::Other => "other",
        }
    }

    /// The kind an ACP name means; an unknown name is `Other`.
    pub fn parse(name: &str) -> ToolKind {
        ToolKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .unwrap_or(ToolKind::Other)
    }

    /// Reads, searches, thinking and fetching: allowed by default.
    pub fn is_read_only(self) -> bool {
        match self {
            ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch => true,
            ToolKind::Edit
            | ToolKind::Delete
            | ToolKind::Move
            | ToolKind::Execute
            | ToolKind::SwitchMode
            | ToolKind::Other => false,
        }
    }

    /// Edits, deletions, moves and commands: what an agent may not do
    /// unasked.
    pub fn changes_something(self) -> bool {
        match self {
            ToolKind::Edit | ToolKind::Delete | ToolKind::Move | ToolKind::Execute => true,
            ToolKind::Read
            | ToolKind::Search
            | ToolKind::Think
            | ToolKind::Fetch
            | ToolKind::SwitchMode
            | ToolKind::Other => false,
        }
    }
}

/// An ACP name as a kind (unknown: `Other`).
impl From<&str> for ToolKind {
    fn from(name: &str) -> ToolKind {
        ToolKind::parse(name)
    }
}

impl fmt::Display for ToolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far a tool call went (ACP's `ToolCallStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Announced, not started (or waiting for a permission).
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl ToolCallStatus {
    /// ACP's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCallStatus::Pending => "pending",
            ToolCallStatus::InProgress => "in_progress",
            ToolCallStatus::Completed => "completed",
            ToolCallStatus::Failed => "failed",
        }
    }

    /// The status an ACP name means; None for a name this version does not
    /// know.
    pub fn parse(name: &str) -> Option<ToolCallStatus> {
        [
            ToolCallStatus::Pending,
            ToolCallStatus::InProgress,
            ToolCallStatus::Completed,
            ToolCallStatus::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }

    /// Being carried out or carried out: `in_progress`, `completed`.
    pub fn carried_out(self) -> bool {
        match self {
            ToolCallStatus::InProgress | ToolCallStatus::Completed => true,
            ToolCallStatus::Pending | ToolCallStatus::Failed => false,
        }
    }
}

/// Reads a stored or agent-given status leniently: a name this version does
/// not know is no status (a record written by another version still reads).
pub fn lenient_status<'de, D>(d: D) -> Result<Option<ToolCallStatus>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let name: Option<String> = Option::deserialize(d)?;
    Ok(name.as_deref().and_then(ToolCallStatus::parse))
}

impl fmt::Display for ToolCallStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_keep_acps_names_on_the_wire_and_an_unknown_one_is_other() {
        for k in ToolKind::ALL {
            assert_eq!(ToolKind::parse(k.as_str()), k);
            let json = serde_json::to_string(&k).expect("json");
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<ToolKind>(&json).expect("back"), k);
        }
        assert_eq!(ToolKind::parse("teleport"), ToolKind::Other);
        assert_eq!(
            serde_json::from_str::<ToolKind>("\"teleport\"").expect("unknown"),
            ToolKind::Other
        );
        assert!(!ToolKind::Other.is_read_only() && !ToolKind::Other.changes_something());
        assert!(ToolKind::Execute.changes_something() && ToolKind::Fetch.is_read_only());
    }

    #[test]
    fn statuses_keep_acps_names_and_only_running_or_done_is_carried_out() {
        for s in [
            ToolCallStatus::Pending,
            ToolCallStatus::InProgress,
            ToolCallStatus::Completed,
            ToolCallStatus::Failed,
        ] {
            assert_eq!(ToolCallStatus::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_string(&s).expect("json"),
                format!("\"{}\"", s.as_str())
            );
        }
        assert_eq!(ToolCallStatus::parse("exploded"), None);
        #[derive(Deserialize)]
        struct Call {
            #[serde(default, deserialize_with = "lenient_status")]
            status: Option<ToolCallStatus>,
        }
        let read = |j: &str| serde_json::from_str::<Call>(j).expect("reads").status;
        assert_eq!(read(r#"{"status":"exploded"}"#), None);
        assert_eq!(read(r#"{"status":"failed"}"#), Some(ToolCallStatus::Failed));
        assert_eq!(read(r#"{"status":null}"#), None);
        assert_eq!(read("{}"), None);
        assert!(ToolCallStatus::InProgress.carried_out());
        assert!(!ToolCallStatus::Failed.carried_out());
    }
}
