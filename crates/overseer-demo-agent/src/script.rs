//! The scenarios: what the demo agent plans and what it then does, step by step.
//!
//! Everything is fixed text, so a demo or a test sees the same run every time.

use agent_client_protocol::v1::schema as acp;
use overseer_core::plan::{PlanProposal, PlanSource, PlanStep};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    /// Plan two edits, make them, commit.
    Happy,
    /// Ask a form question before planning; the answers shape the plan.
    Questions,
    /// Ask to run `rm -rf build/` and to edit `.env`.
    Destructive,
    /// The first attempt at step 2 fails the prompt; a retry succeeds.
    Flaky,
    /// Declare one file in the plan, also edit another.
    Drift,
    /// Like `drift`, in two steps: each declared edit comes with an edit
    /// of a file the plan does not declare.
    DriftTwice,
    /// Ignore SIGTERM, leave a grandchild behind, never end the turn unless cancelled.
    Stubborn,
    /// Write garbage to stdout, then carry on like `happy`.
    Garbage,
    /// Not for demos: try to write outside the worktree three ways.
    Escape,
    /// Like `happy`, but at the first step it switches itself to mode `auto`
    /// (as no one asked it to) and then writes without asking.
    Hijack,
    /// For benchmarks: after the plan, ask for many permissions in a row
    /// (reads and edits, alternating), timing each round trip; then write the
    /// greeting like `happy`. See [`PermissionSettings`].
    Permissions,
    /// Announces `rm -rf build/` as `in_progress` without asking, then
    /// never ends the turn unless cancelled (nothing else is sent).
    Lingering,
    /// Like `lingering`, but ends the turn right after the announcement.
    Fleeting,
    /// Announces its README edit as `in_progress` first and asks for it
    /// right after, as codex-acp does with a patch; writes once allowed.
    LateAsk,
    /// Like `hijack`, but it keeps asking before each tool call after its
    /// switch to `auto`: a mode breach and nothing else.
    Switch,
    /// Asks nothing, whatever mode it reports (as OpenCode does with its
    /// default `"*": "allow"`): edits README.md, then runs `rm -rf build/`,
    /// with no permission request.
    Unasked,
    /// Hands a review to a subagent first, as Claude Code's `Task` tool
    /// does (kind `think`, `_meta.claudeCode.toolName` "Task"), asking
    /// before it; then writes the greeting.
    Dispatch,
    /// Like `happy`, and after each tool call it reports its usage
    /// (`usage_update`): context used growing, a cumulative cost of 0.25 USD
    /// per call. After the first it also sends two reports that cannot be
    /// true (a negative cost, then a cost lower than before).
    Costly,
    /// Consulted (`consult`): answers a question in one turn, quoting the
    /// first line of README.md as it reads it through the client, and
    /// reports a cost of 0.05 USD.
    Consult,
    /// Consulted: tries to change README.md (asks to edit it, then writes
    /// it through the client), then answers with what happened.
    ConsultWrite,
    /// Consulted: asks to run `cargo test` before answering, and waits.
    ConsultShell,
}

impl Scenario {
    pub(crate) fn parse(name: &str) -> Option<Scenario> {
        Some(match name {
            "happy" => Scenario::Happy,
            "questions" => Scenario::Questions,
            "destructive" => Scenario::Destructive,
            "flaky" => Scenario::Flaky,
            "drift" => Scenario::Drift,
            "drift_twice" => Scenario::DriftTwice,
            "stubborn" => Scenario::Stubborn,
            "garbage" => Scenario::Garbage,
            "escape" => Scenario::Escape,
            "permissions" => Scenario::Permissions,
            "hijack" => Scenario::Hijack,
            "unasked" => Scenario::Unasked,
            "switch" => Scenario::Switch,
            "lingering" => Scenario::Lingering,
            "fleeting" => Scenario::Fleeting,
            "late_ask" => Scenario::LateAsk,
            "dispatch" => Scenario::Dispatch,
            "costly" => Scenario::Costly,
            "consult" => Scenario::Consult,
            "consult_write" => Scenario::ConsultWrite,
            "consult_shell" => Scenario::ConsultShell,
            _ => return None,
        })
    }

    pub(crate) const NAMES: &'static str =
        "happy, questions, destructive, flaky, drift, drift_twice, stubborn, garbage, permissions, hijack, switch, unasked, lingering, fleeting, late_ask, costly, consult, consult_write, consult_shell";
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scenario::Happy => "happy",
            Scenario::Questions => "questions",
            Scenario::Destructive => "destructive",
            Scenario::Flaky => "flaky",
            Scenario::Drift => "drift",
            Scenario::DriftTwice => "drift_twice",
            Scenario::Stubborn => "stubborn",
            Scenario::Garbage => "garbage",
            Scenario::Escape => "escape",
            Scenario::Permissions => "permissions",
            Scenario::Hijack => "hijack",
            Scenario::Unasked => "unasked",
            Scenario::Switch => "switch",
            Scenario::Lingering => "lingering",
            Scenario::Fleeting => "fleeting",
            Scenario::LateAsk => "late_ask",
            Scenario::Dispatch => "dispatch",
            Scenario::Costly => "costly",
            Scenario::Consult => "consult",
            Scenario::ConsultWrite => "consult_write",
            Scenario::ConsultShell => "consult_shell",
        })
    }
}

/// The answers to the `questions` scenario's form, or its defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answers {
    pub(crate) framework: String,
    pub(crate) add_tests: bool,
    pub(crate) notes: String,
    /// False when the user declined or cancelled the form.
    pub(crate) given: bool,
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            framework: "svelte".into(),
            add_tests: false,
            notes: String::new(),
            given: false,
        }
    }
}

/// How the `permissions` scenario behaves, from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PermissionSettings {
    /// How many permission requests to time (`OVERSEER_DEMO_PERMISSIONS`).
    pub(crate) count: usize,
    /// Where to append one `<kind> <micros>` line per request
    /// (`OVERSEER_DEMO_LATENCY_FILE`).
    pub(crate) latency_file: Option<std::path::PathBuf>,
    /// Ask for one edit and wait for the answer instead of timing
    /// (`OVERSEER_DEMO_HOLD=1`, or a count of 0).
    pub(crate) hold: bool,
    /// Wait before the first timed request until this many agents are
    /// ready (`OVERSEER_DEMO_BARRIER=<count>:<dir>`): each leaves a file in
    /// the directory and waits for the others', so the requests are timed
    /// with every agent started, not while the others are still starting.
    pub(crate) barrier: Option<(usize, std::path::PathBuf)>,
    /// The model's thinking between requests, in ms, as a real agent waits
    /// for its model between tool calls (`OVERSEER_DEMO_THINK_MS`; each
    /// pause drawn between half and one and a half times it). 0: none.
    pub(crate) think_ms: u64,
}

impl PermissionSettings {
    pub(crate) const DEFAULT_COUNT: usize = 20;

    /// The tool kind of the `index`th timed request: reads and edits alternate,
    /// starting with a read.
    pub(crate) fn kind_of(index: usize) -> acp::ToolKind {
        if index.is_multiple_of(2) {
            acp::ToolKind::Read
        } else {
            acp::ToolKind::Edit
        }
    }
}

/// What one step does to the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Write the file through the client's `fs/write_text_file`.
    Write { content: String },
    /// `rm -rf <location>`, done here (the client offers no terminal).
    RemoveDir,
    /// Starts a subagent (nothing of it runs here): the tool call carries
    /// the agent's own tool name, as Claude Code's `_meta.claudeCode`.
    Dispatch { tool_name: &'static str },
}

impl Effect {
    /// The `_meta` a tool call with this effect carries.
    pub(crate) fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            Effect::Dispatch { tool_name } => {
                let meta = serde_json::json!({ "claudeCode": { "toolName": tool_name } });
                meta.as_object().cloned()
            }
            Effect::Write { .. } | Effect::RemoveDir => None,
        }
    }
}

/// One tool call of the execute phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Action {
    /// Which plan entry this action belongs to.
    pub(crate) entry: usize,
    pub(crate) title: String,
    pub(crate) kind: acp::ToolKind,
    /// Relative to the session's cwd.
    pub(crate) location: &'static str,
    pub(crate) raw_input: serde_json::Value,
    pub(crate) effect: Effect,
}

/// A scenario's plan and its execution.
#[derive(Debug, Clone)]
pub(crate) struct Script {
    pub(crate) plan: PlanProposal,
    pub(crate) actions: Vec<Action>,
}

fn write(entry: usize, title: &str, location: &'static str, content: String) -> Action {
    Action {
        entry,
        title: title.to_owned(),
        kind: acp::ToolKind::Edit,
        location,
        raw_input: serde_json::json!({ "path": location, "content": content }),
        effect: Effect::Write { content },
    }
}

fn step(title: &str) -> PlanStep {
    PlanStep {
        title: title.to_owned(),
        agent: Some("demo".to_owned()),
    }
}

const GREETING: &str = "Hello from the Overseer demo agent!\n";
const NOTES: &str = "# Notes\n\n- `src/greeting.txt` now greets whoever opens it.\n";

impl Script {
    pub(crate) fn for_scenario(scenario: Scenario, answers: &Answers) -> Script {
        match scenario {
            Scenario::Happy
            | Scenario::Costly
            | Scenario::Consult
            | Scenario::ConsultWrite
            | Scenario::ConsultShell
            | Scenario::Flaky
            | Scenario::Stubborn
            | Scenario::Garbage
            | Scenario::Hijack
            | Scenario::Switch
            | Scenario::Lingering
            | Scenario::Fleeting
            | Scenario::LateAsk
            | Scenario::Escape => Script::greeting(
                "Add a greeting to the project".into(),
                GREETING.into(),
                NOTES.into(),
            ),
            Scenario::Questions => {
                let tests = if answers.add_tests {
                    "with tests"
                } else {
                    "without tests"
                };
                let mut goal = format!("Add a {} greeting, {tests}", answers.framework);
                if !answers.notes.trim().is_empty() {
                    goal.push_str(&format!(" (notes: {})", answers.notes.trim()));
                }
                if !answers.given {
                    goal.push_str(" (no answers given; using defaults)");
                }
                let notes = format!(
                    "{NOTES}- Framework: {}\n- Tests: {}\n",
                    answers.framework,
                    if answers.add_tests { "yes" } else { "no" }
                );
                Script::greeting(goal, format!("Hello from {}!\n", answers.framework), notes)
            }
            Scenario::Destructive => Script {
                plan: PlanProposal {
                    goal: "Start clean and enable demo mode".into(),
                    steps: vec![
                        step("Clean the build directory"),
                        step("Enable demo mode in .env"),
                    ],
                    files: vec!["build/".into(), ".env".into()],
                    risks: vec![
                        "deletes build/ recursively".into(),
                        "edits .env, which may hold secrets".into(),
                    ],
                    markdown: None,
                    source: PlanSource::Block,
                },
                actions: vec![
                    Action {
                        entry: 0,
                        title: "Run rm -rf build/".into(),
                        kind: acp::ToolKind::Execute,
                        location: "build",
                        raw_input: serde_json::json!({ "command": "rm -rf build/" }),
                        effect: Effect::RemoveDir,
                    },
                    write(1, "Edit .env", ".env", "DEMO_MODE=1\n".into()),
                ],
            },
            Scenario::Dispatch => Script {
                plan: PlanProposal {
                    goal: "Have a subagent review the greeting, then write it".into(),
                    steps: vec![step("Review with a subagent, then write the greeting")],
                    files: vec!["src/greeting.txt".into()],
                    risks: vec!["none: one small text file".into()],
                    markdown: None,
                    source: PlanSource::Block,
                },
                actions: vec![
                    Action {
                        entry: 0,
                        title: "Task".into(),
                        kind: acp::ToolKind::Think,
                        location: ".",
                        raw_input: serde_json::json!({
                            "description": "Review the greeting",
                            "prompt": "Review src/greeting.txt and fix what is wrong",
                            "subagent_type": "general-purpose",
                        }),
                        effect: Effect::Dispatch { tool_name: "Task" },
                    },
                    write(
                        0,
                        "Edit src/greeting.txt",
                        "src/greeting.txt",
                        GREETING.into(),
                    ),
                ],
            },
            Scenario::Permissions => Script {
                plan: PlanProposal {
                    goal: "Time permission round trips, then add a greeting".into(),
                    steps: vec![
                        step("Ask for permission to read and to edit, many times"),
                        step("Write the greeting"),
                    ],
                    files: vec!["src/greeting.txt".into()],
                    risks: vec!["none: one small text file".into()],
                    markdown: None,
                    source: PlanSource::Block,
                },
                actions: vec![write(
                    1,
                    "Edit src/greeting.txt",
                    "src/greeting.txt",
                    GREETING.into(),
                )],
            },
            Scenario::Unasked => Script {
                plan: PlanProposal {
                    goal: "Rewrite the README and start clean".into(),
                    steps: vec![step("Rewrite the README, clean the build directory")],
                    files: vec!["README.md".into(), "build/".into()],
                    risks: vec!["deletes build/ recursively".into()],
                    markdown: None,
                    source: PlanSource::Block,
                },
                actions: vec![
                    write(
                        0,
                        "Edit README.md",
                        "README.md",
                        "# rewritten unasked\n".into(),
                    ),
                    Action {
                        entry: 0,
                        title: "Run rm -rf build/".into(),
                        kind: acp::ToolKind::Execute,
                        location: "build",
                        raw_input: serde_json::json!({ "command": "rm -rf build/" }),
                        effect: Effect::RemoveDir,
                    },
                ],
            },
            Scenario::DriftTwice => Script::drift_twice(),
            Scenario::Drift => Script {
                plan: PlanProposal {
                    goal: "Add a greeting to the project".into(),
                    steps: vec![step("Write the greeting")],
                    files: vec!["src/greeting.txt".into()],
                    risks: vec![],
                    markdown: None,
                    source: PlanSource::Block,
                },
                actions: vec![
                    write(
                        0,
                        "Edit src/greeting.txt",
                        "src/greeting.txt",
                        GREETING.into(),
                    ),
                    write(
                        0,
                        "Edit config/settings.toml",
                        "config/settings.toml",
                        "[greeting]\nenabled = true\n".into(),
                    ),
                ],
            },
        }
    }

    fn drift_twice() -> Script {
        Script {
            plan: PlanProposal {
                goal: "Add a greeting and its notes".into(),
                steps: vec![step("Write the greeting"), step("Write the notes")],
                files: vec!["src/greeting.txt".into(), "NOTES.md".into()],
                risks: vec![],
                markdown: None,
                source: PlanSource::Block,
            },
            actions: vec![
                write(
                    0,
                    "Edit src/greeting.txt",
                    "src/greeting.txt",
                    GREETING.into(),
                ),
                write(
                    0,
                    "Edit config/greeting.toml",
                    "config/greeting.toml",
                    "[greeting]\nenabled = true\n".into(),
                ),
                write(1, "Edit NOTES.md", "NOTES.md", NOTES.into()),
                write(
                    1,
                    "Edit config/notes.toml",
                    "config/notes.toml",
                    "[notes]\nenabled = true\n".into(),
                ),
            ],
        }
    }

    fn greeting(goal: String, greeting: String, notes: String) -> Script {
        Script {
            plan: PlanProposal {
                goal,
                steps: vec![
                    step("Write the greeting"),
                    step("Note the change in NOTES.md"),
                ],
                files: vec!["src/greeting.txt".into(), "NOTES.md".into()],
                risks: vec!["none: two small text files".into()],
                markdown: None,
                source: PlanSource::Block,
            },
            actions: vec![
                write(0, "Edit src/greeting.txt", "src/greeting.txt", greeting),
                write(1, "Edit NOTES.md", "NOTES.md", notes),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_name_parses_back() {
        for name in Scenario::NAMES.split(", ").chain(["escape"]) {
            let scenario = Scenario::parse(name).expect(name);
            assert_eq!(scenario.to_string(), name);
        }
        assert_eq!(Scenario::parse("nope"), None);
    }

    #[test]
    fn every_action_belongs_to_a_plan_step() {
        for name in Scenario::NAMES.split(", ") {
            let script =
                Script::for_scenario(Scenario::parse(name).expect(name), &Answers::default());
            assert!(script
                .actions
                .iter()
                .all(|a| a.entry < script.plan.steps.len()));
        }
    }

    #[test]
    fn permission_requests_alternate_reads_and_edits() {
        let kinds: Vec<acp::ToolKind> = (0..4).map(PermissionSettings::kind_of).collect();
        assert_eq!(
            kinds,
            [
                acp::ToolKind::Read,
                acp::ToolKind::Edit,
                acp::ToolKind::Read,
                acp::ToolKind::Edit
            ]
        );
    }

    #[test]
    fn drift_edits_a_file_its_plan_does_not_declare() {
        let script = Script::for_scenario(Scenario::Drift, &Answers::default());
        assert!(script
            .actions
            .iter()
            .any(|a| !script.plan.files.iter().any(|f| f == a.location)));
    }

    #[test]
    fn the_answers_shape_the_questions_plan() {
        let answers = Answers {
            framework: "react".into(),
            add_tests: true,
            notes: "keep it short".into(),
            given: true,
        };
        let goal = Script::for_scenario(Scenario::Questions, &answers)
            .plan
            .goal;
        assert_eq!(
            goal,
            "Add a react greeting, with tests (notes: keep it short)"
        );
    }
}
