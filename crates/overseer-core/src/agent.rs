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
//! user chose one knowingly (`allow_unsupervised`). Fail closed: only the
//! modes known to ask are trusted; a mode Overseer does not know (OpenCode's
//! `build`, a name a new version invents) counts as acting unasked. A run
//! whose profile names no mode works in the mode its agent starts in only if
//! that one asks; else in an asking mode the agent offers; else it does not
//! start ([`starting_mode`]).

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
/// Any mode not in [`ASKS`] is treated the same way (see [`acts_unasked`]):
/// this list only says, for the ones Overseer knows, what they do.
const ACTS_UNASKED: &[(&str, &str)] = &[
    ("auto", "edits files and runs commands without asking"),
    ("acceptEdits", "edits files without asking"),
    (
        "bypassPermissions",
        "does anything without asking, including destructive commands",
    ),
    ("autoEdit", "edits files without asking"),
    // Qwen Code 0.24: `default`, `plan`, `auto-edit`, `yolo`.
    ("auto-edit", "edits files without asking"),
    ("yolo", "does anything without asking"),
    (
        "full-access",
        "edits files, runs commands and uses the network without asking",
    ),
    (
        "dontAsk",
        "runs what its own settings pre-approve, without asking",
    ),
    // OpenCode 1.x: its agents are its modes; `build` follows OpenCode's own
    // permission config, whose default is `"*": "allow"`.
    (
        "build",
        "does what the agent's own permission config allows, by default everything, without asking",
    ),
];

/// Modes known to ask before acting (or not to act at all). Only these are
/// trusted: a mode Overseer does not know acts unasked until shown otherwise.
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

/// Modes that only plan: known to ask, but no mode to carry out work in.
const PLANS_ONLY: &[&str] = &["plan"];

/// What an unknown mode is taken for.
const UNKNOWN: &str = "unknown to Overseer: treated as acting unasked";

/// True for a mode known to ask before acting (or not to act at all).
pub fn asks(mode: &str) -> bool {
    ASKS.iter().any(|(m, _)| *m == mode)
}

/// True for a mode that may let the agent act without asking: every mode
/// not known to ask (fail closed: `build`, `auto-edit` or a name no agent
/// used yet are all treated as acting unasked).
pub fn acts_unasked(mode: &str) -> bool {
    !asks(mode)
}

/// What a mode lets the agent do unasked, in words for Settings and the CLI.
pub fn describe_mode(mode: &str) -> &'static str {
    ACTS_UNASKED
        .iter()
        .chain(ASKS)
        .find(|(m, _)| *m == mode)
        .map_or(UNKNOWN, |(_, d)| d)
}

/// The supervised mode of a run whose profile names none, chosen once the
/// agent said which modes it offers and which one it is in:
///
/// - no modes at all (`current` None, nothing offered): `None`, nothing to set;
/// - `allow_unsupervised`: the mode it starts in, whatever it does (the
///   user's knowing choice);
/// - the mode it starts in, when that one is known to ask (and is not a
///   planning-only mode);
/// - else the first mode it offers that is known to ask (`default`,
///   `manual`, `read-only`, ...), which Overseer then sets;
/// - else `Err`, naming the mode it starts in and every mode it offers with
///   what each does: the run must not start.
pub fn starting_mode(
    current: Option<&str>,
    offered: &[String],
    allow_unsupervised: bool,
) -> Result<Option<String>, String> {
    let works_asking = |m: &str| asks(m) && !PLANS_ONLY.contains(&m);
    if current.is_none() && offered.is_empty() {
        return Ok(None);
    }
    if allow_unsupervised {
        if let Some(c) = current {
            return Ok(Some(c.to_owned()));
        }
    }
    if let Some(c) = current.filter(|c| works_asking(c)) {
        return Ok(Some(c.to_owned()));
    }
    if let Some(m) = ASKS
        .iter()
        .map(|(m, _)| *m)
        .filter(|m| works_asking(m))
        .find(|m| offered.iter().any(|o| o == m))
    {
        return Ok(Some(m.to_owned()));
    }
    let starts = current.map_or_else(
        || "names no current mode".to_owned(),
        |c| format!("starts in mode `{c}` ({})", describe_mode(c)),
    );
    Err(format!(
        "the agent {starts} and offers {}: none of them is known to ask before acting",
        described(offered)
    ))
}

/// Modes with what each does: "`build` (...), `plan` (...)".
pub fn described(modes: &[String]) -> String {
    if modes.is_empty() {
        return "no modes".to_owned();
    }
    modes
        .iter()
        .map(|m| format!("`{m}` ({})", describe_mode(m)))
        .collect::<Vec<_>>()
        .join(", ")
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
        let what = if ACTS_UNASKED.iter().any(|(m, _)| *m == mode) {
            describe_mode(mode).to_owned()
        } else {
            format!("is {UNKNOWN}")
        };
        return Err(format!(
            "mode `{mode}` {what}, so Overseer would not see what the agent does; \
             choose a mode that asks ({}), or set `allow_unsupervised = true` in the profile \
             if you really want it",
            ASKS.iter()
                .filter(|(m, _)| !PLANS_ONLY.contains(m))
                .map(|(m, _)| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
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
    kind: Option<crate::ToolKind>,
    title: Option<&str>,
    raw_input: Option<&serde_json::Value>,
) -> bool {
    let has = |key: &str| raw_input.is_some_and(|r| r.get(key).is_some());
    kind == Some(crate::ToolKind::SwitchMode)
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
    fn a_mode_overseer_does_not_know_is_treated_as_acting_unasked() {
        // Only the modes known to ask are trusted.
        for asking in ["default", "manual", "read-only", "plan"] {
            assert!(!acts_unasked(asking), "{asking}");
        }
        // Known to act unasked, Qwen Code's and OpenCode's included, and
        // names nobody has taught Overseer.
        for unasked in [
            "auto",
            "auto-edit",
            "autoEdit",
            "yolo",
            "build",
            "brand-new",
            "",
            "Default",
        ] {
            assert!(acts_unasked(unasked), "{unasked:?}");
        }
        assert_eq!(describe_mode("auto-edit"), "edits files without asking");
        assert!(describe_mode("build").contains("by default everything"));
        assert!(describe_mode("brand-new").contains("treated as acting unasked"));
        // A profile naming one needs the user's consent.
        let err = check_supervised_mode("brand-new", false).expect_err("unknown");
        assert!(err.contains("unknown to Overseer"), "{err}");
        assert!(err.contains("allow_unsupervised"), "{err}");
        assert!(err.contains("`default`"), "names modes that ask: {err}");
        assert!(check_supervised_mode("auto-edit", false).is_err());
        assert!(check_supervised_mode("brand-new", true).is_ok());
    }

    #[test]
    fn without_a_mode_in_the_profile_the_run_starts_only_in_an_asking_mode() {
        // Agents without modes: nothing to choose.
        assert_eq!(starting_mode(None, &[], false), Ok(None));
        // Starts in a mode that asks: kept.
        let claude = modes(&["default", "acceptEdits", "plan", "auto"]);
        assert_eq!(
            starting_mode(Some("default"), &claude, false),
            Ok(Some("default".into()))
        );
        // Starts in one that acts unasked: switched to one that asks.
        assert_eq!(
            starting_mode(Some("auto"), &claude, false),
            Ok(Some("default".into()))
        );
        // Qwen Code started in `auto-edit`: it offers `default`.
        let qwen = modes(&["plan", "default", "auto-edit", "yolo"]);
        assert_eq!(
            starting_mode(Some("auto-edit"), &qwen, false),
            Ok(Some("default".into()))
        );
        // Starts in planning: not a mode to work in.
        let codex = modes(&["read-only", "auto", "full-access"]);
        assert_eq!(
            starting_mode(Some("plan"), &codex, false),
            Ok(Some("read-only".into()))
        );
        // OpenCode: `build` and `plan` only. Nothing to work in that asks:
        // the run must not start, and the message names every mode.
        let opencode = modes(&["build", "plan"]);
        let err = starting_mode(Some("build"), &opencode, false).expect_err("refused");
        assert!(err.contains("starts in mode `build`"), "{err}");
        assert!(err.contains("`build` (does what"), "{err}");
        assert!(err.contains("`plan` (plans only"), "{err}");
        // An unknown mode offered alone: refused too.
        let err =
            starting_mode(Some("brand-new"), &modes(&["brand-new"]), false).expect_err("unknown");
        assert!(err.contains("unknown to Overseer"), "{err}");
        // Modes offered but none current: one that asks, else refused.
        assert_eq!(
            starting_mode(None, &claude, false),
            Ok(Some("default".into()))
        );
        assert!(starting_mode(None, &opencode, false).is_err());
        // The user's knowing choice keeps the mode it starts in.
        assert_eq!(
            starting_mode(Some("build"), &opencode, true),
            Ok(Some("build".into()))
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
        assert!(is_exit_plan_request(
            Some(crate::ToolKind::SwitchMode),
            None,
            None
        ));
        assert!(is_exit_plan_request(
            Some(crate::ToolKind::Other),
            None,
            Some(&plan)
        ));
        assert!(is_exit_plan_request(
            Some(crate::ToolKind::Other),
            None,
            Some(&file)
        ));
        assert!(is_exit_plan_request(
            Some(crate::ToolKind::Other),
            Some("Requesting plan approval for: plan.md"),
            None
        ));
        let edit = serde_json::json!({"file_path": "README.md"});
        assert!(!is_exit_plan_request(
            Some(crate::ToolKind::Edit),
            Some("Edit README.md"),
            Some(&edit)
        ));
    }
}
