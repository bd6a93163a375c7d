//! What the ACP driver reports, as core's timeline entries. The driver's
//! types stay its own; these copies are what a run's timeline keeps.

use overseer_acp::{ModeInfo, PlanEntry, ToolCallInfo};
use overseer_core::activity::{AgentMode, ProgressEntry, ToolCallEntry};

/// The agent's progress list.
pub(crate) fn progress(entries: &[PlanEntry]) -> Vec<ProgressEntry> {
    entries
        .iter()
        .map(|e| ProgressEntry {
            content: e.content.clone(),
            priority: e.priority.clone(),
            status: e.status.clone(),
        })
        .collect()
}

/// A tool call's current state.
pub(crate) fn tool_call(info: &ToolCallInfo) -> ToolCallEntry {
    ToolCallEntry {
        id: info.id.clone(),
        title: info.title.clone(),
        kind: info.kind,
        status: info.status,
        raw_input: info.raw_input.clone(),
        locations: info
            .locations
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        text: info.text.clone(),
        name: info.name.clone(),
    }
}

/// The session modes an agent offers.
pub(crate) fn modes(modes: &[ModeInfo]) -> Vec<AgentMode> {
    modes
        .iter()
        .map(|m| AgentMode {
            id: m.id.clone(),
            name: m.name.clone(),
            description: m.description.clone(),
        })
        .collect()
}
