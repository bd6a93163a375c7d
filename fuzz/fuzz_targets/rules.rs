//! Permission rules: `Rule::parse`, `RuleSet::parse`, `decide`, `always_rule`
//! and `always_gated` on arbitrary rule texts and tool calls.
//!
//! Properties: a parsed rule's text (and its Display, and its JSON) parses
//! back to the same rule; nothing panics; `decide` never allows a call with
//! a path outside the worktree (as given, or as resolved), never allows an
//! always-gated operation or a write in a read-only session, and a matching
//! deny rule always denies; an "always" rule is itself a valid rule.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use overseer_core::rules::{
    always_gated, always_rule, decide, is_overseer_tool, normalize, Permission, Resolved, Rule,
    RuleLayer, RuleSet, SessionMode, ToolRequest,
};

const TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "Delete",
    "Move",
    "Grep",
    "Glob",
    "WebFetch",
    "mcp__github__create_issue",
    "mcp__overseer__ask_user",
    "Task",
];
const KINDS: &[&str] = &[
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];
const WORKTREES: &[&str] = &["/w", "/home/u/src/web", "/tmp/x/", "/"];

#[derive(Arbitrary, Debug)]
enum Name {
    Known(u8),
    Other(String),
}

impl Name {
    fn pick(&self, known: &[&str]) -> String {
        match self {
            Name::Known(i) => known[usize::from(*i) % known.len()].to_owned(),
            Name::Other(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum FResolved {
    Inside(String),
    Outside(String),
    Unresolved(String),
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// (layer 0..3, list allow/ask/deny, text)
    rules: Vec<(u8, u8, String)>,
    tool: Name,
    kind: Name,
    command: Option<String>,
    paths: Vec<String>,
    resolved: Vec<FResolved>,
    read_only: bool,
    worktree: u8,
}

/// Lexically inside the worktree, as the module docs define it.
fn inside(worktree: &str, path: &str) -> bool {
    if path.starts_with('~') {
        return false;
    }
    let root = normalize(worktree, ".");
    let p = normalize(worktree, path);
    root == "/" || p == root || p.starts_with(&format!("{root}/"))
}

fn is_write(req: &ToolRequest) -> bool {
    matches!(req.kind.as_str(), "edit" | "delete" | "move")
        || matches!(
            req.tool.as_str(),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit" | "Delete" | "Move"
        )
}

fuzz_target!(|input: Input| {
    let worktree = WORKTREES[usize::from(input.worktree) % WORKTREES.len()];
    let mut lists: Vec<[Vec<String>; 3]> =
        vec![Default::default(), Default::default(), Default::default()];
    for (layer, list, text) in &input.rules {
        if let Ok(rule) = Rule::parse(text) {
            assert_eq!(
                Rule::parse(rule.as_str()).as_ref(),
                Ok(&rule),
                "text re-parses"
            );
            assert_eq!(rule.to_string(), rule.as_str());
            let json = serde_json::to_string(&rule).expect("a rule serializes");
            let back: Rule = serde_json::from_str(&json).expect("a rule's JSON parses");
            assert_eq!(back, rule);
            lists[usize::from(*layer) % 3][usize::from(*list) % 3].push(text.clone());
        }
    }
    let sets: Vec<RuleSet> = lists
        .iter()
        .map(|[allow, ask, deny]| {
            RuleSet::parse(allow, ask, deny).expect("valid rules parse as a set")
        })
        .collect();
    let layers: Vec<&RuleSet> = sets.iter().collect();

    let req = ToolRequest {
        tool: input.tool.pick(TOOLS),
        kind: input.kind.pick(KINDS).as_str().into(),
        command: input.command,
        paths: input.paths,
        resolved: input
            .resolved
            .into_iter()
            .map(|r| match r {
                FResolved::Inside(path) => Resolved::Inside { path },
                FResolved::Outside(path) => Resolved::Outside { path },
                FResolved::Unresolved(why) => Resolved::Unresolved { why },
            })
            .collect(),
    };
    for p in &req.paths {
        let once = normalize(worktree, p);
        assert_eq!(normalize(worktree, &once), once, "normalize is idempotent");
    }
    let mode = if input.read_only {
        SessionMode::ReadOnly
    } else {
        SessionMode::Normal
    };
    let named: Vec<(RuleLayer, &RuleSet)> = layers.iter().map(|l| (RuleLayer::Task, *l)).collect();
    let decided = decide(&req, &named, mode, worktree);

    let denied_by_rule = layers
        .iter()
        .any(|l| l.deny.iter().any(|r| r.matches_any(&req, worktree)));
    let all_inside = req.paths.iter().all(|p| inside(worktree, p));
    if denied_by_rule {
        assert!(
            matches!(decided, Permission::Deny { .. }),
            "a matching deny rule denies: {decided:?}"
        );
    }
    if let Permission::Allow { .. } = &decided {
        assert!(
            all_inside,
            "allowed a path outside the worktree {worktree}: {req:?}"
        );
        if !is_overseer_tool(&req.tool) {
            let leaves = req
                .paths
                .iter()
                .zip(&req.resolved)
                .any(|(_, r)| !matches!(r, Resolved::Inside { .. }));
            assert!(!leaves, "allowed a path that resolves outside: {req:?}");
            assert!(
                always_gated(&req, worktree).is_none(),
                "allowed an always-gated call: {req:?} {decided:?}"
            );
            if mode == SessionMode::ReadOnly {
                assert!(
                    !is_write(&req),
                    "allowed a write in a read-only session: {req:?}"
                );
            }
        }
    }
    // An "always" rule is `Bash(<the command>)`, `Edit(<the one file>)` or
    // the tool's own name, taken literally (an agent's tool named like a
    // rule, `Bash(curl:*)`, must not become that rule). It re-parses when
    // the name is a valid tool name.
    let always = always_rule(&req, worktree);
    let shell = req.kind == overseer_core::ToolKind::Execute || req.tool == "Bash";
    let command = req.command.as_deref().map(str::trim).unwrap_or("");
    let one_edit = req.paths.len() == 1
        && matches!(
            req.tool.as_str(),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit"
        );
    if (!shell || command.is_empty()) && !one_edit {
        assert_eq!(always.tool(), req.tool, "{always:?} for {req:?}");
        assert_eq!(always.specifier(), None, "{always:?} for {req:?}");
    }
    if Rule::parse(&req.tool).is_ok_and(|r| r.specifier().is_none() && r.tool() == req.tool) {
        assert_eq!(
            Rule::parse(always.as_str()).as_ref(),
            Ok(&always),
            "an always rule re-parses"
        );
    }
});
