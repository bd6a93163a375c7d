//! The prompt convention between Overseer's orchestrator and an agent, and the
//! plan block an agent answers a plan-only turn with.
//!
//! ACP has no "plan for approval" message: its `plan` update is a progress
//! list, not a proposal with files and risks. So a plan-only turn is a prompt
//! that starts with [`PLAN_PROMPT_PREFIX`], and the agent ends it with one
//! fenced ```` ```overseer-plan ```` block of JSON in its message. Agents that
//! do not know the convention still work: [`parse_plan`] then finds nothing
//! and the orchestrator shows the message as it is.

use serde::{Deserialize, Serialize};

/// A prompt that starts with this asks for a plan only: no edits this turn.
pub const PLAN_PROMPT_PREFIX: &str = "[overseer:plan]";
/// A prompt that starts with this asks the agent to carry out the approved plan.
pub const EXECUTE_PROMPT_PREFIX: &str = "[overseer:execute]";

/// The info string of the fenced block that carries a plan.
const FENCE_TAG: &str = "overseer-plan";

/// A plan an agent proposes for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanProposal {
    pub goal: String,
    pub steps: Vec<PlanStep>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub risks: Vec<String>,
}

/// One step of a [`PlanProposal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Finds the plan in an agent's message: the last ```` ```overseer-plan ````
/// block whose JSON is a plan with a goal and at least one step. Text around
/// the block, other fenced blocks and blocks that do not parse are ignored, so
/// an agent that restates or corrects its plan is read by its final word.
pub fn parse_plan(text: &str) -> Option<PlanProposal> {
    let mut found = None;
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after_fence = &rest[start + 3..];
        let Some(line_end) = after_fence.find('\n') else {
            break;
        };
        let info = after_fence[..line_end].trim();
        let body_and_rest = &after_fence[line_end + 1..];
        let Some(close) = body_and_rest.find("```") else {
            break;
        };
        if info == FENCE_TAG {
            if let Some(plan) = plan_from_json(&body_and_rest[..close]) {
                found = Some(plan);
            }
        }
        rest = &body_and_rest[close + 3..];
    }
    found
}

fn plan_from_json(body: &str) -> Option<PlanProposal> {
    let plan: PlanProposal = serde_json::from_str(body.trim()).ok()?;
    let usable = !plan.goal.trim().is_empty()
        && !plan.steps.is_empty()
        && plan.steps.iter().all(|s| !s.title.trim().is_empty());
    usable.then_some(plan)
}

/// The fenced block an agent puts in its message to propose `plan`; what
/// [`parse_plan`] reads back.
pub fn plan_block(plan: &PlanProposal) -> String {
    // Serializing plain strings and vectors cannot fail; an empty object is
    // the harmless answer if it ever did (parse_plan would then find nothing).
    let json = serde_json::to_string_pretty(plan).unwrap_or_else(|_| "{}".to_owned());
    format!("```{FENCE_TAG}\n{json}\n```")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PlanProposal {
        PlanProposal {
            goal: "Add a greeting".into(),
            steps: vec![
                PlanStep {
                    title: "Write src/greeting.txt".into(),
                    agent: Some("demo".into()),
                },
                PlanStep {
                    title: "Note it in NOTES.md".into(),
                    agent: None,
                },
            ],
            files: vec!["src/greeting.txt".into(), "NOTES.md".into()],
            risks: vec!["none".into()],
        }
    }

    #[test]
    fn a_plan_block_reads_back_as_the_same_plan() {
        let text = format!(
            "Here is my plan:\n\n{}\n\nShall I go ahead?",
            plan_block(&sample())
        );
        assert_eq!(parse_plan(&text), Some(sample()));
    }

    #[test]
    fn the_block_is_found_among_other_text_and_other_code_blocks() {
        let text = "Some thoughts.\n```rust\nfn main() {}\n```\nThe plan:\r\n```overseer-plan\r\n\
            {\"goal\": \"g\", \"steps\": [{\"title\": \"t\", \"agent\": \"demo\"}]}\r\n```\r\nDone.";
        let plan = parse_plan(text).expect("plan");
        assert_eq!(plan.goal, "g");
        assert_eq!(plan.steps[0].agent.as_deref(), Some("demo"));
        assert!(plan.files.is_empty() && plan.risks.is_empty());
    }

    #[test]
    fn the_last_valid_block_wins_and_broken_blocks_are_skipped() {
        let text = "```overseer-plan\n{\"goal\": \"first\", \"steps\": [{\"title\": \"a\"}]}\n```\n\
            Correction:\n```overseer-plan\n{\"goal\": \"second\", \"steps\": [{\"title\": \"b\"}]}\n```\n\
            ```overseer-plan\n{not json}\n```";
        assert_eq!(parse_plan(text).expect("plan").goal, "second");
    }

    #[test]
    fn text_without_a_usable_plan_has_no_plan() {
        for text in [
            "",
            "no block here",
            "```overseer-plan\n{\"goal\": \"g\", \"steps\": []}\n```",
            "```overseer-plan\n{\"goal\": \"  \", \"steps\": [{\"title\": \"t\"}]}\n```",
            "```overseer-plan\n{\"steps\": [{\"title\": \"t\"}]}\n```",
            "```json\n{\"goal\": \"g\", \"steps\": [{\"title\": \"t\"}]}\n```",
            "```overseer-plan\n{\"goal\": \"g\", \"steps\": [{\"title\": \"t\"}]}\n",
        ] {
            assert_eq!(parse_plan(text), None, "{text:?}");
        }
    }
}
