//! Gates: every point where a run stops for a decision.
//!
//! A gate is written to the database before anyone waits on it, and decided
//! exactly once (the store enforces that with a compare-and-set). This module
//! holds the pure parts: kinds, options, and checking a decision against them.

use crate::{Actor, Millis};
use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    Plan,
    ToolCall,
    StepReview,
    SupervisorPause,
    Deviation,
    MergeReview,
    Question,
}

impl GateKind {
    pub const ALL: [GateKind; 7] = [
        GateKind::Plan,
        GateKind::ToolCall,
        GateKind::StepReview,
        GateKind::SupervisorPause,
        GateKind::Deviation,
        GateKind::MergeReview,
        GateKind::Question,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GateKind::Plan => "plan",
            GateKind::ToolCall => "tool_call",
            GateKind::StepReview => "step_review",
            GateKind::SupervisorPause => "supervisor_pause",
            GateKind::Deviation => "deviation",
            GateKind::MergeReview => "merge_review",
            GateKind::Question => "question",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The option that counts as "approve" on this kind of gate: for
    /// co-signing, and for reading a human's choice as a verdict.
    pub fn approve_option(self) -> &'static str {
        match self {
            GateKind::Plan | GateKind::MergeReview => "approve",
            GateKind::ToolCall => "yes",
            GateKind::StepReview | GateKind::SupervisorPause => "proceed",
            GateKind::Deviation => "retry",
            GateKind::Question => "answer",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Pending,
    Decided,
}

impl GateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Pending => "pending",
            GateStatus::Decided => "decided",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(GateStatus::Pending),
            "decided" => Some(GateStatus::Decided),
            _ => None,
        }
    }
}

/// One choice offered by a gate (the "Action" of the two-question pattern).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct GateOption {
    /// Stable identifier, e.g. `approve`.
    pub id: String,
    /// What the user sees, e.g. `Approve and merge`.
    pub label: String,
    /// True when choosing this option requires a non-empty context (a reason).
    #[serde(default)]
    pub requires_context: bool,
}

impl GateOption {
    pub fn new(id: &str, label: &str) -> Self {
        GateOption {
            id: id.to_owned(),
            label: label.to_owned(),
            requires_context: false,
        }
    }

    pub fn with_required_context(mut self) -> Self {
        self.requires_context = true;
        self
    }
}

/// The options of a merge-review gate (a run waiting in pending_review).
pub fn merge_review_options() -> Vec<GateOption> {
    vec![
        GateOption::new("approve", "Approve and merge"),
        GateOption::new("reject", "Reject").with_required_context(),
        GateOption::new("abort", "Abort"),
    ]
}

/// A decision on a gate: the chosen option and the optional context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct GateDecision {
    pub option: String,
    pub context: Option<String>,
    pub actor: Actor,
    pub at: Millis,
}

/// Why a decision does not fit the gate's options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    #[error("option '{chosen}' is not offered by this gate (offered: {offered})")]
    UnknownOption { chosen: String, offered: String },
    #[error("option '{0}' needs a reason: say why")]
    ContextRequired(String),
}

/// Checks `option` and `context` against a gate's options.
pub fn check_decision(
    options: &[GateOption],
    option: &str,
    context: Option<&str>,
) -> Result<(), DecisionError> {
    let Some(found) = options.iter().find(|o| o.id == option) else {
        return Err(DecisionError::UnknownOption {
            chosen: option.to_owned(),
            offered: options
                .iter()
                .map(|o| o.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let has_context = context.is_some_and(|c| !c.trim().is_empty());
    if found.requires_context && !has_context {
        return Err(DecisionError::ContextRequired(option.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names() {
        for k in GateKind::ALL {
            assert_eq!(GateKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(GateKind::parse("nope"), None);
    }

    #[test]
    fn a_decision_must_pick_an_offered_option() {
        let opts = merge_review_options();
        assert_eq!(check_decision(&opts, "approve", None), Ok(()));
        let err = check_decision(&opts, "merge", None).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "option 'merge' is not offered by this gate (offered: approve, reject, abort)"
        );
    }

    #[test]
    fn reject_needs_a_non_blank_reason() {
        let opts = merge_review_options();
        assert!(matches!(
            check_decision(&opts, "reject", None),
            Err(DecisionError::ContextRequired(_))
        ));
        assert!(matches!(
            check_decision(&opts, "reject", Some("   ")),
            Err(DecisionError::ContextRequired(_))
        ));
        assert_eq!(
            check_decision(&opts, "reject", Some("breaks the API")),
            Ok(())
        );
    }
}
