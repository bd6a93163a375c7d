//! The plan parsers: the fenced `overseer-plan` block (`parse_plan`), plans
//! from the agent's own words (`PlanProposal::from_markdown`,
//! `steps_from_markdown`), and the prompt readers.
//!
//! Properties: nothing panics; a found plan has a goal and steps with
//! titles; a plan from prose always has a step and no empty or overlong
//! title; a found plan written back with `plan_block` reads back the same;
//! `planning_prompt` and `step_prompt` are recognised by their readers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use overseer_core::plan::{
    is_planning_prompt, parse_plan, plan_block, planning_prompt, step_of_prompt, step_prompt,
    steps_from_markdown, PlanProposal, PlanSource,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line plays the goal / task, the rest the agent's words.
    let (goal, words) = text.split_once('\n').unwrap_or((text, ""));

    for step in steps_from_markdown(text) {
        assert!(!step.title.is_empty());
        assert!(step.title.chars().count() <= 300);
    }
    let prose = PlanProposal::from_markdown(goal, words, PlanSource::Prose);
    assert!(!prose.steps.is_empty());
    assert_eq!(prose.markdown.as_deref(), Some(words));

    if let Some(plan) = parse_plan(text) {
        assert!(!plan.goal.trim().is_empty());
        assert!(!plan.steps.is_empty());
        assert!(plan.steps.iter().all(|s| !s.title.trim().is_empty()));
        let block = plan_block(&plan);
        let again = parse_plan(&block).expect("a plan block reads back");
        assert_eq!(again.goal, plan.goal);
        assert_eq!(again.steps, plan.steps);
        assert_eq!(again.files, plan.files);
        assert_eq!(again.risks, plan.risks);

        let index = usize::from(data[0]) % (plan.steps.len() + 1);
        let prompt = step_prompt(&plan, index, words);
        assert_eq!(step_of_prompt(&prompt), Some(index));
    }
    let _ = step_of_prompt(text);
    let _ = is_planning_prompt(text);
    assert!(is_planning_prompt(&planning_prompt(goal, words)));
});
