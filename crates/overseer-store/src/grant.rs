//! A grant as the `people` table stores it, read back: by `people` (a
//! person's grant) and by `devices` (a device's, through its person).

use overseer_core::{Grant, Role};

/// A grant as stored: the role's text and the workspaces' JSON array.
/// Unreadable text reads as [`Grant::nothing`] (never as more).
pub(crate) fn grant_of(role: Option<String>, workspaces: Option<String>) -> Grant {
    let role = match role.as_deref() {
        Some("approver") => Role::Approver,
        _ => return Grant::nothing(),
    };
    let workspaces = match workspaces {
        None => None,
        Some(text) => match serde_json::from_str::<Vec<String>>(&text) {
            Ok(names) => Some(names),
            // A list we cannot read grants no workspace.
            Err(_) => Some(Vec::new()),
        },
    };
    Grant { role, workspaces }
}
