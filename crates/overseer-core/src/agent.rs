//! What Overseer knows about the agents it drives: their session modes (which
//! of them let an agent act without asking), how a run plans, and which of an
//! agent's own answers to its exit-plan request keeps supervision on.
//!
//! Agents name their permission modes differently (Claude: `default`,
//! `acceptEdits`, `plan`, `auto`, `bypassPermissions`; Codex: `read-only`,
//! `auto`, `full-access`; Gemini: `default`, `autoEdit`, `yolo`, `plan`). A
//! run is only prompted in the mode its profile names as supervised; a switch
//! to any mode the profile does not list is a security event, and the modes
//! known to act unasked are refused even if a profile lists them, unless the
//! user chose one knowingly (`allow_unsupervised`).

use serde::{Deserialize, Serialize};

/// How a run gets its plan, per agent profile (and per task).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum PlanStrategy {
    /// The agent's own planning mode when it offers one, else the prompt.
    #[default]
    Auto,
    /// The agent's planning mode; a run fails if the agent offers none.
    Mode,
    /// A planning prompt in plain words (read-only turn, a plan block asked for).
    Prompt,
    /// No plan gate: the task is one step.
    Skip,
}

impl PlanStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStrategy::Auto => "auto",
            PlanStrategy::Mode => "mode",
            PlanStrategy::Prompt => "prompt",
            PlanStrategy::Skip => "skip",
        }
    }

    pub fn parse(s: &str) -> Option<PlanStrategy> {
        [
            PlanStrategy::Auto,
            PlanStrategy::Mode,
            PlanStrategy::Prompt,
            PlanStrategy::Skip,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }
}

/// How the planning turn of a run is held, once the agent's modes are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planning {
    /// In the agent's mode of this id; its exit-plan request is the plan gate.
    InMode(String),
    /// With the planning prompt, the turn read-only.
    Prompt,
    /// No planning turn.
    Skip,
}

/// Chooses how to plan. `Err` says why the strategy cannot be followed.
pub fn planning(
    strategy: PlanStrategy,
    plan_mode: &str,
    offered: &[String],
) -> Result<Planning, String> {
    let has_mode = offered.iter().any(|m| m == plan_mode);
    match strategy {
        PlanStrategy::Skip => Ok(Planning::Skip),
        PlanStrategy::Prompt => Ok(Planning::Prompt),
        PlanStrategy::Auto if has_mode => Ok(Planning::InMode(plan_mode.to_owned())),
        PlanStrategy::Auto => Ok(Planning::Prompt),
        PlanStrategy::Mode if has_mode => Ok(Planning::InMode(plan_mode.to_owned())),
        PlanStrategy::Mode => Err(format!(
            "the profile plans in the agent's mode `{plan_mode}`, but the agent offers {}; \
             set `plan = \"prompt\"` (or \"auto\") in the profile",
            list_or_none(offered)
        )),
    }
}

/// Modes known to let an agent edit files or run commands without asking.
const ACTS_UNASKED: &[(&str, &str)] = &[
    ("auto", "edits files and runs commands without asking"),
    ("acceptEdits", "edits files without asking"),
    (
        "bypassPermissions",
        "does anything without asking, including destructive commands",
    ),
    ("autoEdit", "edits files without asking"),
    ("yolo", "does anything without asking"),
    (
        "full-access",
        "edits files, runs commands and uses the network without asking",
    ),
    (
        "dontAsk",
        "runs what its own settings pre-approve, without asking",
    ),
];

/// Modes known to ask before acting (or not to act at all).
const ASKS: &[(&str, &str)] = &[
    ("default", "asks before edits and commands"),
    ("manual", "asks before edits and commands"),
    (
        "read-only",
        "reads only; asks before every write or command",
    ),
    (
        "plan",
        "plans only: reads, runs no tools that change anything",
    ),
    ("code", "asks before edits and commands"),
];

/// True for a mode known to let the agent act without asking.
pub fn acts_unasked(mode: &str) -> bool {
    ACTS_UNASKED.iter().any(|(m, _)| *m == mode)
}

/// What a mode lets the agent do unasked, in words for Settings and the CLI.
pub fn describe_mode(mode: &str) -> &'static str {
    ACTS_UNASKED
        .iter()
        .chain(ASKS)
        .find(|(m, _)| *m == mode)
        .map_or(
            "unknown to Overseer: treat it as acting unasked",
            |(_, d)| d,
        )
}

/// Whether a mode the agent reports is one the run allows right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModeCheck {
    Allowed,
    /// Nobody chose this mode; the run must stop and tell the user.
    Breach {
        mode: String,
        why: String,
    },
}

/// Checks the mode an agent reports against what the run allows: its
/// supervised mode, and the planning mode while planning.
pub fn check_mode(reported: &str, allowed: &[String]) -> ModeCheck {
    if allowed.iter().any(|m| m == reported) {
        return ModeCheck::Allowed;
    }
    ModeCheck::Breach {
        mode: reported.to_owned(),
        why: format!(
            "the agent switched itself to mode `{reported}` ({}), which nobody chose; \
             the run allows {}",
            describe_mode(reported),
            list_or_none(allowed)
        ),
    }
}

/// Checks the supervised mode a profile or task asks for before any session:
/// a mode known to act unasked needs the user's explicit consent.
pub fn check_supervised_mode(mode: &str, allow_unsupervised: bool) -> Result<(), String> {
    if acts_unasked(mode) && !allow_unsupervised {
        return Err(format!(
            "mode `{mode}` {}, so Overseer would not see what the agent does; \
             choose a mode that asks, or set `allow_unsupervised = true` in the profile \
             if you really want it",
            describe_mode(mode)
        ));
    }
    Ok(())
}

/// True when a permission request is the agent asking to leave its planning
/// mode with a plan: Claude's `ExitPlanMode` (kind `switch_mode`, the plan in
/// `rawInput.plan`), Gemini's `exit_plan_mode` (`rawInput.plan_filename`,
/// titled "Requesting plan approval ..."). Only meaningful while planning in
/// a mode.
pub fn is_exit_plan_request(
    kind: Option<&str>,
    title: Option<&str>,
    raw_input: Option<&serde_json::Value>,
) -> bool {
    let has = |key: &str| raw_input.is_some_and(|r| r.get(key).is_some());
    kind == Some("switch_mode")
        || has("plan")
        || has("plan_filename")
        || has("planFilePath")
        || title.is_some_and(|t| {
            let t = t.to_ascii_lowercase();
            t.contains("plan approval") || t.contains("approve plan") || t.contains("exit plan")
        })
}

/// One answer an agent offers to a permission request: `(option id, kind)`.
pub type OfferedOption<'a> = (&'a str, &'a str);

/// The option that approves an exit-plan request WITHOUT switching off
/// per-edit supervision: an `allow_once` whose id does not name an
/// auto-accepting mode. Never an `allow_always` (Claude's "Yes, and
/// auto-accept edits"). `None` when the agent offers no such option.
pub fn exit_plan_approve_option<'a>(options: &[OfferedOption<'a>]) -> Option<&'a str> {
    options
        .iter()
        .filter(|(_, kind)| *kind == "allow_once")
        .map(|(id, _)| *id)
        .find(|id| {
            let lower = id.to_ascii_lowercase();
            !["auto", "bypass", "acceptedits", "yolo"]
                .iter()
                .any(|bad| lower.contains(bad))
        })
}

/// The option that keeps the agent planning (a rejection).
pub fn exit_plan_reject_option<'a>(options: &[OfferedOption<'a>]) -> Option<&'a str> {
    ["reject_once", "reject_always"].iter().find_map(|k| {
        options
            .iter()
            .find(|(_, kind)| kind == k)
            .map(|(id, _)| *id)
    })
}

fn list_or_none(modes: &[String]) -> String {
    if modes.is_empty() {
        "no modes".to_owned()
    } else {
        modes
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modes(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn auto_plans_in_the_agents_mode_when_offered_else_by_prompt() {
        let claude = modes(&["default", "acceptEdits", "plan", "auto"]);
        let codex = modes(&["read-only", "auto", "full-access"]);
        assert_eq!(
            planning(PlanStrategy::Auto, "plan", &claude),
            Ok(Planning::InMode("plan".into()))
        );
        assert_eq!(
            planning(PlanStrategy::Auto, "plan", &codex),
            Ok(Planning::Prompt)
        );
        assert_eq!(
            planning(PlanStrategy::Prompt, "plan", &claude),
            Ok(Planning::Prompt)
        );
        assert_eq!(
            planning(PlanStrategy::Skip, "plan", &claude),
            Ok(Planning::Skip)
        );
        let err = planning(PlanStrategy::Mode, "plan", &codex).expect_err("no plan mode");
        assert!(err.contains("`read-only`, `auto`, `full-access`"), "{err}");
        assert!(err.contains("plan = \"prompt\""), "{err}");
    }

    #[test]
    fn a_switch_nobody_chose_is_a_breach_and_says_what_the_mode_does() {
        let allowed = modes(&["default", "plan"]);
        assert_eq!(check_mode("plan", &allowed), ModeCheck::Allowed);
        for bad in [
            "auto",
            "acceptEdits",
            "bypassPermissions",
            "yolo",
            "brand-new",
        ] {
            let ModeCheck::Breach { mode, why } = check_mode(bad, &allowed) else {
                panic!("{bad} must be a breach");
            };
            assert_eq!(mode, bad);
            assert!(why.contains("nobody chose") && why.contains("`default`, `plan`"));
        }
        let ModeCheck::Breach { why, .. } = check_mode("auto", &allowed) else {
            panic!("breach");
        };
        assert!(why.contains("without asking"), "{why}");
    }

    #[test]
    fn a_supervised_mode_that_acts_unasked_needs_consent() {
        assert!(check_supervised_mode("default", false).is_ok());
        assert!(check_supervised_mode("read-only", false).is_ok());
        let err = check_supervised_mode("auto", false).expect_err("unasked");
        assert!(err.contains("allow_unsupervised"), "{err}");
        assert!(check_supervised_mode("auto", true).is_ok());
        assert!(acts_unasked("full-access") && !acts_unasked("default"));
        assert_eq!(
            describe_mode("plan"),
            "plans only: reads, runs no tools that change anything"
        );
    }

    #[test]
    fn exit_plan_approval_never_picks_an_auto_accepting_option() {
        // claude-agent-acp 0.101
        let claude = [
            ("exit-plan-auto", "allow_always"),
            ("exit-plan-clear-auto", "allow_always"),
            ("exit-plan-default", "allow_once"),
            ("reject", "reject_once"),
        ];
        assert_eq!(exit_plan_approve_option(&claude), Some("exit-plan-default"));
        assert_eq!(exit_plan_reject_option(&claude), Some("reject"));
        // claude-code-acp 0.16
        let old = [
            ("acceptEdits", "allow_always"),
            ("default", "allow_once"),
            ("plan", "reject_once"),
        ];
        assert_eq!(exit_plan_approve_option(&old), Some("default"));
        // Gemini
        let gemini = [("proceed_once", "allow_once"), ("cancel", "reject_once")];
        assert_eq!(exit_plan_approve_option(&gemini), Some("proceed_once"));
        // Only auto-accepting choices: none is safe.
        let unsafe_only = [("auto", "allow_once"), ("always", "allow_always")];
        assert_eq!(exit_plan_approve_option(&unsafe_only), None);
    }

    #[test]
    fn exit_plan_requests_are_recognised_by_kind_input_or_title() {
        let plan = serde_json::json!({"plan": "# Plan"});
        let file = serde_json::json!({"plan_filename": "plan.md"});
        assert!(is_exit_plan_request(Some("switch_mode"), None, None));
        assert!(is_exit_plan_request(Some("other"), None, Some(&plan)));
        assert!(is_exit_plan_request(Some("other"), None, Some(&file)));
        assert!(is_exit_plan_request(
            Some("other"),
            Some("Requesting plan approval for: plan.md"),
            None
        ));
        let edit = serde_json::json!({"file_path": "README.md"});
        assert!(!is_exit_plan_request(
            Some("edit"),
            Some("Edit README.md"),
            Some(&edit)
        ));
    }
}
