//! Agent configuration files in a repository that grant the agent
//! permissions: the agent reads them from the project it works in, so a
//! repository can switch off an agent's own asking before Overseer sees
//! anything (OpenCode's `opencode.json` with `"permission": "allow"`, a
//! `.claude/settings.json` with `permissions.allow` or a `defaultMode`).
//!
//! Overseer shows them in the run's setup: which file, and what it grants.
//! Pure: the engine reads the files (only regular files, bounded) and passes
//! their text in. A file that cannot be read as what it should be is
//! reported as such: Overseer cannot tell what it grants, so it does not
//! say "nothing".

use serde_json::Value;

/// The files agents read from the project for their permissions, relative
/// to the repository's root.
pub const PERMISSION_FILES: &[&str] = &[
    "opencode.json",
    "opencode.jsonc",
    ".opencode/opencode.json",
    ".opencode/opencode.jsonc",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".qwen/settings.json",
    ".gemini/settings.json",
    ".codex/config.toml",
];

/// What one permission file grants, in words (one line each), or `None`
/// when it grants nothing Overseer knows of.
pub fn grants(path: &str, text: &str) -> Option<Vec<String>> {
    if path.ends_with(".toml") {
        return codex(text);
    }
    let json: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => {
            return Some(vec![
                "cannot be read as plain JSON (comments?): Overseer cannot tell what it grants; read it"
                    .to_owned(),
            ])
        }
    };
    let found = if path.contains("opencode") {
        opencode(&json)
    } else if path.starts_with(".claude/") {
        claude(&json)
    } else {
        gemini_like(&json)
    };
    (!found.is_empty()).then_some(found)
}

/// OpenCode: `permission` (a string for every tool, or per tool, each a
/// string or patterns to strings), also under `agent.<name>.permission`;
/// `tools` turned on. Lists what is `allow`ed.
fn opencode(json: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut permission = |at: &str, p: &Value| {
        let allowed = allowed_in(p, "");
        if !allowed.is_empty() {
            out.push(format!(
                "{at} allows without asking: {}",
                allowed.join(", ")
            ));
        }
    };
    if let Some(p) = json.get("permission") {
        permission("`permission`", p);
    }
    if let Some(agents) = json.get("agent").and_then(Value::as_object) {
        for (name, agent) in agents {
            if let Some(p) = agent.get("permission") {
                permission(&format!("`agent.{name}.permission`"), p);
            }
        }
    }
    out
}

/// The keys of an OpenCode permission value set to `allow`: `*` for a bare
/// string, `bash`, `bash: rm *` for patterns.
fn allowed_in(value: &Value, prefix: &str) -> Vec<String> {
    match value {
        Value::String(s) if s == "allow" => {
            vec![if prefix.is_empty() {
                "everything".to_owned()
            } else {
                prefix.to_owned()
            }]
        }
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}: {k}")
                };
                allowed_in(v, &key)
            })
            .collect(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_) => {
            Vec::new()
        }
    }
}

/// Claude Code: `permissions.allow`, `permissions.defaultMode` other than
/// `default`, and MCP servers of the project enabled wholesale.
fn claude(json: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let permissions = json.get("permissions");
    let allow = strings(permissions.and_then(|p| p.get("allow")));
    if !allow.is_empty() {
        out.push(format!(
            "`permissions.allow` allows without asking: {}",
            allow.join(", ")
        ));
    }
    if let Some(mode) = permissions
        .and_then(|p| p.get("defaultMode"))
        .and_then(Value::as_str)
        .filter(|m| *m != "default")
    {
        out.push(format!(
            "`permissions.defaultMode` starts sessions in `{mode}` ({})",
            crate::agent::describe_mode(mode)
        ));
    }
    if json.get("enableAllProjectMcpServers") == Some(&Value::Bool(true)) {
        out.push("`enableAllProjectMcpServers` starts every MCP server of `.mcp.json`".to_owned());
    }
    out
}

/// Gemini CLI and Qwen Code: `autoAccept`, `yolo`, an approval mode that
/// acts unasked, tools allowed without confirmation; at the top level or
/// under `tools` / `general`.
fn gemini_like(json: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (section, v) in [
        ("", Some(json)),
        ("tools.", json.get("tools")),
        ("general.", json.get("general")),
        ("security.", json.get("security")),
    ] {
        let Some(v) = v else { continue };
        for flag in ["autoAccept", "yolo"] {
            if v.get(flag) == Some(&Value::Bool(true)) {
                out.push(format!(
                    "`{section}{flag}` accepts tool calls without asking"
                ));
            }
        }
        for key in ["approvalMode", "defaultApprovalMode"] {
            if let Some(mode) = v
                .get(key)
                .and_then(Value::as_str)
                .filter(|m| crate::agent::acts_unasked(m))
            {
                out.push(format!(
                    "`{section}{key}` starts sessions in `{mode}` ({})",
                    crate::agent::describe_mode(mode)
                ));
            }
        }
        for key in ["allowed", "allowedTools"] {
            let list = strings(v.get(key));
            if !list.is_empty() {
                out.push(format!(
                    "`{section}{key}` runs without asking: {}",
                    list.join(", ")
                ));
            }
        }
    }
    out
}

/// Codex: `approval_policy` and `sandbox_mode` lines (read as text: the
/// keys Codex reads for the project).
fn codex(text: &str) -> Option<Vec<String>> {
    let found: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("approval_policy") || l.starts_with("sandbox_mode"))
        .filter(|l| !l.contains("\"untrusted\"") && !l.contains("\"read-only\""))
        .map(|l| format!("`{l}`"))
        .collect();
    (!found.is_empty()).then_some(found)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_permissions_that_allow_are_named() {
        let all = grants("opencode.json", r#"{"permission": "allow"}"#).expect("grants");
        assert_eq!(all, ["`permission` allows without asking: everything"]);
        let per = grants(
            "opencode.json",
            r#"{"permission": {"*": "allow", "edit": "ask", "bash": {"rm *": "allow", "*": "ask"}},
                "agent": {"build": {"permission": {"webfetch": "allow"}}}}"#,
        )
        .expect("grants");
        assert_eq!(
            per,
            [
                "`permission` allows without asking: *, bash: rm *",
                "`agent.build.permission` allows without asking: webfetch"
            ]
        );
        assert_eq!(
            grants("opencode.json", r#"{"permission": {"*": "ask"}}"#),
            None
        );
        // JSONC: cannot tell, so it says so rather than "nothing".
        let jsonc = grants("opencode.jsonc", "{ // all\n \"permission\": \"allow\" }").expect("?");
        assert!(jsonc[0].contains("cannot tell"), "{jsonc:?}");
    }

    #[test]
    fn claude_qwen_gemini_and_codex_settings_are_read() {
        let claude = grants(
            ".claude/settings.json",
            r#"{"permissions": {"allow": ["Bash(rm:*)", "Edit"], "defaultMode": "bypassPermissions"}}"#,
        )
        .expect("claude");
        assert_eq!(claude.len(), 2);
        assert!(claude[0].contains("Bash(rm:*), Edit"), "{claude:?}");
        assert!(claude[1].contains("`bypassPermissions`"), "{claude:?}");
        assert_eq!(
            grants(
                ".claude/settings.json",
                r#"{"permissions": {"defaultMode": "default"}}"#
            ),
            None
        );
        let qwen = grants(
            ".qwen/settings.json",
            r#"{"tools": {"approvalMode": "auto-edit", "allowed": ["run_shell_command"]}}"#,
        )
        .expect("qwen");
        assert!(qwen
            .iter()
            .any(|g| g.contains("`tools.approvalMode` starts sessions in `auto-edit`")));
        assert!(qwen.iter().any(|g| g.contains("run_shell_command")));
        let gemini = grants(".gemini/settings.json", r#"{"autoAccept": true}"#).expect("gemini");
        assert!(gemini[0].contains("`autoAccept`"), "{gemini:?}");
        assert_eq!(
            grants(
                ".gemini/settings.json",
                r#"{"general": {"approvalMode": "default"}}"#
            ),
            None
        );
        let codex = grants(
            ".codex/config.toml",
            "model = \"x\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n",
        )
        .expect("codex");
        assert_eq!(codex, ["`approval_policy = \"never\"`"]);
    }
}
