//! A decision as it is submitted, before the store records it.

use overseer_core::supervision::Verdict;

/// A decision as submitted: by a human, the supervisor, a rule or a timer.
#[derive(Debug, Clone, Default)]
pub struct DecisionInput {
    pub verdict: Option<Verdict>,
    pub option: Option<String>,
    /// The human's context (a reason, an answer, guidance).
    pub context: Option<String>,
    pub rationale: Option<String>,
    pub correction: Option<String>,
    pub rule_ref: Option<String>,
    /// A permission rule's decision: the rules and their layers.
    pub provenance: Option<overseer_core::rules::Provenance>,
    pub model_id: Option<String>,
    pub prompt_version: Option<String>,
    pub confidence: Option<f64>,
    pub source_event: Option<String>,
}

/// The device a decision names, as its column keeps it (JSON `{"id",
/// "name"}`), NULL for none.
pub(crate) fn device_text(d: Option<&overseer_core::DeviceRef>) -> Option<String> {
    d.map(|d| serde_json::to_string(d).unwrap_or_default())
}

/// A device column read back (`None` for NULL; an error names the text).
pub(crate) fn device_of_text(
    text: Option<&str>,
) -> Result<Option<overseer_core::DeviceRef>, String> {
    text.map(|t| serde_json::from_str(t).map_err(|e| format!("device '{t}': {e}")))
        .transpose()
}

/// A decision's provenance as its column keeps it (JSON), NULL for none.
pub(crate) fn provenance_text(p: Option<&overseer_core::rules::Provenance>) -> Option<String> {
    p.map(|p| serde_json::to_string(p).unwrap_or_default())
}
