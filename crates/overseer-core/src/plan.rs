//! Plans: what an agent proposes before it changes anything, and the prompts
//! that ask for a plan and then for each step.
//!
//! Real agents know nothing of Overseer, so every prompt says in plain words
//! what is wanted. A plan reaches the plan gate one of four ways (see
//! [`PlanSource`]): the agent's own plan mode (Claude's `ExitPlanMode`,
//! Gemini's `exit_plan_mode`), a fenced ```` ```overseer-plan ```` JSON block
//! in its message (the format the planning prompt shows), the ACP `plan`
//! progress list it sent during the planning turn, or, failing all of those,
//! the prose it ended the turn with. A missing plan is never a deviation: the
//! user decides on whatever the agent said.
//!
//! After approval each step is its own prompt turn ([`step_prompt`]), so
//! sensors, confidence, verdicts and step reviews apply per step.

use serde::{Deserialize, Serialize};

/// The info string of the fenced block that carries a plan.
pub const FENCE_TAG: &str = "overseer-plan";

/// The first line of every planning prompt; our demo agent recognises it,
/// real agents just read it.
const PLANNING_LEAD: &str = "Plan this task before changing anything.";
/// Step prompts start `Carry out step N of M of the approved plan`.
const STEP_LEAD: &str = "Carry out step ";

/// A plan an agent proposes for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct PlanProposal {
    pub goal: String,
    pub steps: Vec<PlanStep>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub risks: Vec<String>,
    /// The agent's own words for the plan (markdown, untrusted: rendered
    /// inertly), when it came from a plan mode or from prose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub markdown: Option<String>,
    /// How the plan reached Overseer.
    #[serde(default)]
    pub source: PlanSource,
}

/// One step of a [`PlanProposal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct PlanStep {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub agent: Option<String>,
}

/// Where a plan came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum PlanSource {
    /// The ```` ```overseer-plan ```` block the planning prompt asks for.
    #[default]
    Block,
    /// The agent's own plan mode asked to leave it with this plan.
    AgentMode,
    /// The ACP `plan` progress list sent during the planning turn.
    ProgressList,
    /// The message the agent ended the planning turn with.
    Prose,
    /// No planning turn: the profile or task says `plan = "skip"`.
    Skipped,
    /// An agent outside Overseer asked for approval (`request_plan_approval`).
    Requested,
}

impl PlanProposal {
    /// A plan taken from the agent's own words (plan mode or prose): the
    /// steps are its numbered or bulleted list, else its headings, else one
    /// step with the whole text.
    pub fn from_markdown(goal: &str, markdown: &str, source: PlanSource) -> PlanProposal {
        let mut steps = steps_from_markdown(markdown);
        if steps.is_empty() {
            steps.push(PlanStep {
                title: "Carry out the plan as described".to_owned(),
                agent: None,
            });
        }
        PlanProposal {
            goal: goal.to_owned(),
            steps,
            files: Vec::new(),
            risks: Vec::new(),
            markdown: Some(markdown.to_owned()),
            source,
        }
    }

    /// The plan of a run that skips planning: the task as its one step.
    pub fn skipped(goal: &str) -> PlanProposal {
        PlanProposal {
            goal: goal.to_owned(),
            steps: vec![PlanStep {
                title: "Do the task".to_owned(),
                agent: None,
            }],
            files: Vec::new(),
            risks: Vec::new(),
            markdown: None,
            source: PlanSource::Skipped,
        }
    }
}

/// The prompt of a planning turn: the task, what is wanted (a plan, no
/// changes), and the exact block format with an example.
pub fn planning_prompt(task: &str, feedback: &str) -> String {
    let example = plan_block(&PlanProposal {
        goal: "Add a --verbose flag to the CLI".to_owned(),
        steps: vec![
            PlanStep {
                title: "Parse --verbose in src/cli.rs".to_owned(),
                agent: None,
            },
            PlanStep {
                title: "Log each request when it is set".to_owned(),
                agent: None,
            },
        ],
        files: vec!["src/cli.rs".to_owned()],
        risks: vec!["none".to_owned()],
        markdown: None,
        source: PlanSource::Block,
    });
    let mut text = format!(
        "{PLANNING_LEAD} Do not edit files or run commands that change anything in this turn: \
         read what you need, then reply with a plan for the user to approve. After approval \
         you will be asked to carry out the plan one step at a time.\n\n\
         The task:\n{task}\n\n\
         End your reply with the plan as one fenced block tagged {FENCE_TAG} holding JSON with \
         \"goal\" (one sentence), \"steps\" (a list of {{\"title\"}}, in order, each small \
         enough to check on its own), \"files\" (the files you expect to change) and \"risks\". \
         For example:\n\n{example}\n"
    );
    if !feedback.trim().is_empty() {
        text.push_str(&format!("\n{}\n", feedback.trim()));
    }
    text
}

/// Whether `text` is a planning prompt (for agents that follow along, like
/// our demo agent).
pub fn is_planning_prompt(text: &str) -> bool {
    text.trim_start().starts_with(PLANNING_LEAD)
}

/// The prompt of step `index` (0-based) of an approved plan.
pub fn step_prompt(plan: &PlanProposal, index: usize, feedback: &str) -> String {
    let total = plan.steps.len();
    let title = plan
        .steps
        .get(index)
        .map_or("the task", |s| s.title.as_str());
    let mut text = format!(
        "{STEP_LEAD}{} of {total} of the approved plan: {title}\n\n\
         Do only this step, then end your turn with a short summary of what you changed. \
         The whole plan, for reference:\n",
        index + 1
    );
    for (i, step) in plan.steps.iter().enumerate() {
        text.push_str(&format!("{}. {}\n", i + 1, step.title));
    }
    if !feedback.trim().is_empty() {
        text.push_str(&format!("\n{}\n", feedback.trim()));
    }
    text
}

/// The step (0-based) a step prompt asks for.
pub fn step_of_prompt(text: &str) -> Option<usize> {
    let rest = text.trim_start().strip_prefix(STEP_LEAD)?;
    let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
    number.parse::<usize>().ok()?.checked_sub(1)
}

/// The steps of a markdown plan: its top-level numbered or bulleted list
/// items (the least indented), else its headings below the first, else none.
pub fn steps_from_markdown(markdown: &str) -> Vec<PlanStep> {
    let mut items: Vec<(usize, String)> = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(item) = list_item(line.trim_start()) {
            items.push((indent, item));
        }
    }
    let titles: Vec<String> = match items.iter().map(|(i, _)| *i).min() {
        Some(top) => items
            .into_iter()
            .filter(|(i, _)| *i == top)
            .map(|(_, t)| t)
            .collect(),
        None => markdown
            .lines()
            .filter_map(|l| l.strip_prefix("## ").or_else(|| l.strip_prefix("### ")))
            .map(|t| t.trim().to_owned())
            .collect(),
    };
    titles
        .into_iter()
        .filter(|t| !t.is_empty())
        .map(|title| PlanStep {
            title: title.chars().take(300).collect(),
            agent: None,
        })
        .collect()
}

/// The text of a list item (`1. x`, `2) x`, `- x`, `* x`), emphasis markers
/// and a leading checkbox removed.
fn list_item(line: &str) -> Option<String> {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let rest = if digits > 0 {
        let after = &line[digits..];
        after
            .strip_prefix(". ")
            .or_else(|| after.strip_prefix(") "))?
    } else {
        line.strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))?
    };
    let rest = rest
        .trim_start_matches("[ ] ")
        .trim_start_matches("[x] ")
        .replace("**", "");
    let text = rest.trim();
    (!text.is_empty()).then(|| text.to_owned())
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
    let block = serde_json::json!({
        "goal": plan.goal,
        "steps": plan.steps,
        "files": plan.files,
        "risks": plan.risks,
    });
    // Serializing plain strings and vectors cannot fail; an empty object is
    // the harmless answer if it ever did (parse_plan would then find nothing).
    let json = serde_json::to_string_pretty(&block).unwrap_or_else(|_| "{}".to_owned());
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
            markdown: None,
            source: PlanSource::Block,
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

    #[test]
    fn the_planning_prompt_says_what_is_wanted_and_its_example_parses() {
        let text = planning_prompt("Fix the login bug", "Feedback: smaller steps");
        assert!(is_planning_prompt(&text));
        assert!(text.contains("Do not edit files"));
        assert!(text.contains("Fix the login bug"));
        assert!(text.ends_with("Feedback: smaller steps\n"));
        let example = parse_plan(&text).expect("the example is a valid block");
        assert_eq!(example.steps.len(), 2);
        assert!(!is_planning_prompt("Fix the login bug"));
    }

    #[test]
    fn a_step_prompt_names_its_step_and_reads_back() {
        let text = step_prompt(&sample(), 1, "USER INSTRUCTION: be brief");
        assert!(text.starts_with("Carry out step 2 of 2 of the approved plan: Note it in NOTES.md"));
        assert!(text.contains("1. Write src/greeting.txt"));
        assert!(text.contains("be brief"));
        assert_eq!(step_of_prompt(&text), Some(1));
        assert_eq!(step_of_prompt("Carry out step 0 of 2"), None);
        assert_eq!(step_of_prompt("hello"), None);
    }

    #[test]
    fn markdown_plans_become_steps_from_their_top_level_list() {
        let md = "# Plan\n\nContext first.\n\n1. **Edit** README.md\n   - a detail\n2) Run the tests\n\n```sh\n1. not a step\n```\n";
        let titles: Vec<String> = steps_from_markdown(md)
            .into_iter()
            .map(|s| s.title)
            .collect();
        assert_eq!(titles, ["Edit README.md", "Run the tests"]);
        let md = "## Update the parser\nwords\n## Add a test\n";
        let titles: Vec<String> = steps_from_markdown(md)
            .into_iter()
            .map(|s| s.title)
            .collect();
        assert_eq!(titles, ["Update the parser", "Add a test"]);
        let plan = PlanProposal::from_markdown("goal", "Just do it.", PlanSource::Prose);
        assert_eq!(plan.steps.len(), 1, "prose without a list is one step");
        assert_eq!(plan.markdown.as_deref(), Some("Just do it."));
        assert_eq!(plan.source, PlanSource::Prose);
    }
}
