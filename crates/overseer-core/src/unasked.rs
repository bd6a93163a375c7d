//! Tool calls an agent carried out without asking.
//!
//! Whatever mode an agent claims to be in, and whatever its own settings say,
//! Overseer watches what it reports doing: a tool call that edits, deletes,
//! moves or executes (ACP kinds `edit`, `delete`, `move`, `execute`) and that
//! reaches `in_progress` or `completed` with no `session/request_permission`
//! for it, where Overseer's own rules would not have allowed it on their own
//! (they would have asked, or denied), is a security event: the agent decided
//! something only a human (or a rule the user wrote) may decide.
//!
//! What is fine without asking: what the rules allow (a rule the user wrote,
//! an "always" answer of this run), and a shell command the rules know as
//! read-only and safe ([`rules::known_safe`]: `ls`, `cat`, `git status`...).
//! Reads, searches and the like never count: only the four kinds that change
//! something. Pure: the engine passes in the rules' verdict.

use crate::rules::{self, Permission, ToolRequest};
use crate::ToolKind;

/// Judges a tool call the agent carried out without asking, given what the
/// rules would have said had it asked (`permission`, from
/// [`rules::decide`] with the run's layers). `Some(why)`: a security event,
/// in words for the timeline, the notification and the audit record.
pub fn judge(
    req: &ToolRequest,
    title: &str,
    permission: &Permission,
    worktree: &str,
) -> Option<String> {
    if !req.kind.changes_something() {
        return None;
    }
    let would = match permission {
        Permission::Allow { .. } => return None,
        Permission::Ask { reason, .. } => format!("Overseer's rules would have asked ({reason})"),
        Permission::Deny { reason, .. } => {
            format!("Overseer's rules would have denied it ({reason})")
        }
    };
    let is_shell = req.kind == ToolKind::Execute || req.tool == "Bash";
    if is_shell && req.command.as_deref().is_some_and(rules::known_safe) {
        return None;
    }
    let mut paths: Vec<String> = Vec::new();
    for p in &req.paths {
        let shown = rules::relative(worktree, p);
        if !paths.contains(&shown) {
            paths.push(shown);
        }
    }
    let verb = match req.kind {
        ToolKind::Edit => "edited",
        ToolKind::Delete => "deleted",
        ToolKind::Move => "moved",
        ToolKind::Execute
        | ToolKind::Read
        | ToolKind::Search
        | ToolKind::Think
        | ToolKind::Fetch
        | ToolKind::SwitchMode
        | ToolKind::Other => "ran",
    };
    let what = match (&req.command, paths.as_slice()) {
        (Some(c), _) if is_shell => format!("ran `{c}`"),
        (_, []) => format!("carried out a tool call of kind {}", req.kind),
        (_, paths) => format!("{verb} {}", paths.join(", ")),
    };
    Some(format!(
        "the agent {what} (\"{title}\") without asking for permission; {would}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{decide, RuleLayer, RuleSet, SessionMode};

    const WT: &str = "/w";

    fn req(kind: &str, command: Option<&str>, paths: &[&str]) -> ToolRequest {
        let tool = match kind {
            "execute" => "Bash",
            "edit" => "Edit",
            "delete" => "Delete",
            "move" => "Move",
            "read" => "Read",
            _ => "Other",
        };
        ToolRequest {
            tool: tool.to_owned(),
            kind: ToolKind::parse(kind),
            command: command.map(str::to_owned),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            resolved: Vec::new(),
        }
    }

    fn judged(r: &ToolRequest, rules: &RuleSet) -> Option<String> {
        judge(
            r,
            "t",
            &decide(r, &[(RuleLayer::Task, rules)], SessionMode::Normal, WT),
            WT,
        )
    }

    #[test]
    fn changes_nobody_allowed_are_security_events() {
        let none = RuleSet::default();
        let rm = judged(&req("execute", Some("rm -rf build"), &[]), &none).expect("rm");
        assert!(rm.contains("ran `rm -rf build`"), "{rm}");
        assert!(
            rm.contains("without asking") && rm.contains("would have asked"),
            "{rm}"
        );
        let edit = judged(&req("edit", None, &["/w/README.md", "README.md"]), &none).expect("edit");
        assert!(
            edit.contains("edited README.md ("),
            "one path, as the user knows it: {edit}"
        );
        assert!(judged(&req("delete", None, &["build"]), &none).is_some());
        assert!(judged(&req("move", None, &["a", "b"]), &none).is_some());
        // A denial counts too.
        let deny = RuleSet::parse(&[], &[], &["Edit(secrets/**)".to_owned()]).expect("rules");
        let denied = judged(&req("edit", None, &["secrets/k"]), &deny).expect("denied");
        assert!(denied.contains("would have denied"), "{denied}");
    }

    #[test]
    fn what_the_rules_allow_or_know_as_safe_is_fine() {
        let none = RuleSet::default();
        for safe in ["ls -la", "git status", "cat README.md", "grep -r x src"] {
            assert_eq!(
                judged(&req("execute", Some(safe), &[]), &none),
                None,
                "{safe}"
            );
        }
        // Not safe: a redirect, a substitution, a writer.
        for unsafe_ in ["ls > out", "cat $(x)", "find . -delete", "touch x"] {
            assert!(
                judged(&req("execute", Some(unsafe_), &[]), &none).is_some(),
                "{unsafe_}"
            );
        }
        let allow = RuleSet::parse(
            &["Edit(docs/**)".to_owned(), "Bash(cargo test:*)".to_owned()],
            &[],
            &[],
        )
        .expect("rules");
        assert_eq!(judged(&req("edit", None, &["docs/a.md"]), &allow), None);
        assert_eq!(
            judged(&req("execute", Some("cargo test -p x"), &[]), &allow),
            None
        );
        assert!(judged(&req("edit", None, &["src/a.rs"]), &allow).is_some());
        // Kinds that change nothing never count.
        for kind in ["read", "search", "think", "fetch", "other", "switch_mode"] {
            assert_eq!(judged(&req(kind, None, &["x"]), &none), None, "{kind}");
        }
    }
}
