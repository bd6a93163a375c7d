//! Installing `overseer hook` into an agent's settings: Claude Code's
//! `settings.json` and Codex's `hooks.json` share one shape,
//! `{"hooks": {"<Event>": [{"matcher": "*", "hooks": [{"type": "command",
//! "command": "...", "timeout": N}]}]}}`.
//!
//! Pure text in, text out. What we own is recognised by its command (the
//! `overseer` binary running `hook <vendor>`), so a user's own entries are
//! never touched, reordered or rewritten, installing twice changes nothing,
//! and an install after the binary moved updates our entry in place.

use super::Vendor;
use serde_json::{json, Map, Value};
use std::path::Path;

/// How long the agent lets our hook run before killing it. Longer than
/// [`DEFAULT_WAIT_SECS`], so the hook always falls back itself first.
pub const TOOL_HOOK_TIMEOUT_SECS: u64 = 3600;
/// The hook's own limit on waiting for a decision.
pub const DEFAULT_WAIT_SECS: u64 = 3000;
/// Reports (notices, stop, end) never wait for a human.
pub const REPORT_HOOK_TIMEOUT_SECS: u64 = 30;

/// The events we install, each with its matcher (tool events: every tool).
pub fn events(vendor: Vendor) -> &'static [(&'static str, Option<&'static str>)] {
    match vendor {
        Vendor::Claude => &[
            ("PreToolUse", Some("*")),
            ("PermissionRequest", Some("*")),
            ("Notification", None),
            ("Stop", None),
            ("SessionEnd", None),
        ],
        // Codex has no Notification event.
        Vendor::Codex => &[
            ("PreToolUse", Some("*")),
            ("PermissionRequest", Some("*")),
            ("Stop", None),
            ("SessionEnd", None),
        ],
    }
}

fn timeout_of(event: &str) -> u64 {
    match event {
        "PreToolUse" | "PermissionRequest" => TOOL_HOOK_TIMEOUT_SECS,
        _ => REPORT_HOOK_TIMEOUT_SECS,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallError(pub String);

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InstallError {}

/// The command the agent runs, quoted for a shell: the absolute path of the
/// `overseer` binary, `--data-dir` when not the default, `hook <vendor>`.
pub fn command_line(
    exe: &Path,
    data_dir: Option<&Path>,
    vendor: Vendor,
) -> Result<String, InstallError> {
    let quote = |p: &Path| -> Result<String, InstallError> {
        let s = p.to_str().ok_or_else(|| {
            InstallError(format!(
                "{} is not valid UTF-8 and cannot be written into a settings file; move it to a plain path",
                p.display()
            ))
        })?;
        if !p.is_absolute() {
            return Err(InstallError(format!("{s} is not an absolute path")));
        }
        shlex::try_quote(s).map(|q| q.into_owned()).map_err(|_| {
            InstallError(format!(
                "{s} contains a character no shell can quote (a NUL byte)"
            ))
        })
    };
    let mut cmd = quote(exe)?;
    if let Some(dir) = data_dir {
        cmd.push_str(" --data-dir ");
        cmd.push_str(&quote(dir)?);
    }
    cmd.push_str(" hook ");
    cmd.push_str(vendor.as_str());
    Ok(cmd)
}

/// Ours: the `overseer` binary (any path, any data dir) running `hook <vendor>`.
pub fn is_ours(command: &str, vendor: Vendor) -> bool {
    let Some(words) = shlex::split(command) else {
        return false;
    };
    let program_is_overseer = words.first().is_some_and(|w| {
        Path::new(w)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| {
                n == "overseer" || n.starts_with("overseer-") || n.starts_with("overseer.")
            })
    });
    let n = words.len();
    program_is_overseer && n >= 3 && words[n - 2] == "hook" && words[n - 1] == vendor.as_str()
}

/// What an install or uninstall did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Change {
    /// Events that got our entry.
    pub added: Vec<String>,
    /// Events whose entry of ours was rewritten (another binary path, data
    /// dir or timeout).
    pub updated: Vec<String>,
    /// Events whose entries of ours were removed.
    pub removed: Vec<String>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty()
    }
}

fn parse(text: Option<&str>, what: &str) -> Result<Map<String, Value>, InstallError> {
    let text = text.map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(InstallError(format!(
            "{what} is not a JSON object; fix it (or move it away) and run this again"
        ))),
        Err(e) => Err(InstallError(format!(
            "{what} is not valid JSON ({e}); fix it (or move it away) and run this again: nothing was changed"
        ))),
    }
}

fn hooks_of<'a>(
    root: &'a mut Map<String, Value>,
    what: &str,
) -> Result<&'a mut Map<String, Value>, InstallError> {
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    hooks.as_object_mut().ok_or_else(|| {
        InstallError(format!(
            "\"hooks\" in {what} is not an object; fix it and run this again: nothing was changed"
        ))
    })
}

fn render(root: Map<String, Value>) -> Result<String, InstallError> {
    serde_json::to_string_pretty(&Value::Object(root))
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| InstallError(format!("cannot write the settings: {e}")))
}

/// Adds our entries to a settings text (`None`: no file yet). Returns the
/// new text, or `None` when nothing had to change.
pub fn install(
    text: Option<&str>,
    vendor: Vendor,
    command: &str,
    what: &str,
) -> Result<(Option<String>, Change), InstallError> {
    let mut root = parse(text, what)?;
    let hooks = hooks_of(&mut root, what)?;
    let mut change = Change::default();
    for (event, matcher) in events(vendor) {
        let timeout = timeout_of(event);
        let wanted = json!({"type": "command", "command": command, "timeout": timeout});
        let groups = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(groups) = groups.as_array_mut() else {
            return Err(InstallError(format!(
                "hooks.{event} in {what} is not a list; fix it and run this again: nothing was changed"
            )));
        };
        // Ours already there: keep the first in place (rewritten if it
        // differs), drop any duplicates of ours.
        let mut seen = false;
        let mut rewrote = false;
        for group in groups.iter_mut() {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                continue;
            };
            list.retain_mut(|h| {
                let ours = h
                    .get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| is_ours(c, vendor));
                if !ours {
                    return true;
                }
                if seen {
                    rewrote = true;
                    return false;
                }
                seen = true;
                if *h != wanted {
                    *h = wanted.clone();
                    rewrote = true;
                }
                true
            });
        }
        // A group of ours emptied by dropping a duplicate goes too.
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|l| !l.is_empty())
        });
        if !seen {
            let mut group = Map::new();
            if let Some(m) = matcher {
                group.insert("matcher".into(), Value::String((*m).to_owned()));
            }
            group.insert("hooks".into(), Value::Array(vec![wanted]));
            groups.push(Value::Object(group));
            change.added.push((*event).to_owned());
        } else if rewrote {
            change.updated.push((*event).to_owned());
        }
    }
    if change.is_empty() {
        return Ok((None, change));
    }
    Ok((Some(render(root)?), change))
}

/// Removes exactly our entries (and the groups and event lists they leave
/// empty); everything else stays as it was.
pub fn uninstall(
    text: Option<&str>,
    vendor: Vendor,
    what: &str,
) -> Result<(Option<String>, Change), InstallError> {
    let mut change = Change::default();
    if text.is_none_or(|t| t.trim().is_empty()) {
        return Ok((None, change));
    }
    let mut root = parse(text, what)?;
    let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return Ok((None, change));
    };
    let names: Vec<String> = hooks.keys().cloned().collect();
    for event in names {
        let Some(groups) = hooks.get_mut(&event).and_then(Value::as_array_mut) else {
            continue;
        };
        let mut removed = false;
        groups.retain_mut(|group| {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = list.len();
            list.retain(|h| {
                !h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| is_ours(c, vendor))
            });
            if list.len() == before {
                return true;
            }
            removed = true;
            !list.is_empty()
        });
        if removed {
            if groups.is_empty() {
                hooks.remove(&event);
            }
            change.removed.push(event);
        }
    }
    if change.is_empty() {
        return Ok((None, change));
    }
    if hooks.is_empty() {
        root.remove("hooks");
    }
    Ok((Some(render(root)?), change))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/opt/overseer/bin/overseer hook claude";

    fn v(s: &str) -> Value {
        serde_json::from_str(s).expect("json")
    }

    #[test]
    fn the_command_is_absolute_and_quoted_for_a_shell() {
        let cmd = command_line(
            Path::new("/home/me/my tools/overseer"),
            Some(Path::new("/home/me/it's data")),
            Vendor::Claude,
        )
        .expect("command");
        assert_eq!(
            shlex::split(&cmd).expect("splits"),
            vec![
                "/home/me/my tools/overseer",
                "--data-dir",
                "/home/me/it's data",
                "hook",
                "claude"
            ]
        );
        assert!(is_ours(&cmd, Vendor::Claude));
        assert!(!is_ours(&cmd, Vendor::Codex));
        assert!(command_line(Path::new("overseer"), None, Vendor::Codex).is_err());
        assert_eq!(
            command_line(Path::new("/usr/bin/overseer"), None, Vendor::Codex).expect("cmd"),
            "/usr/bin/overseer hook codex"
        );
    }

    #[test]
    fn only_overseer_running_its_hook_is_ours() {
        assert!(is_ours("/x/overseer hook claude", Vendor::Claude));
        assert!(is_ours(
            "'/x y/overseer' --data-dir /d hook claude",
            Vendor::Claude
        ));
        assert!(!is_ours("/x/my-linter hook claude", Vendor::Claude));
        assert!(!is_ours(
            "/x/overseer hook claude --verbose",
            Vendor::Claude
        ));
        assert!(!is_ours("echo overseer hook claude", Vendor::Claude));
        assert!(!is_ours("'unterminated", Vendor::Claude));
    }

    #[test]
    fn install_into_nothing_adds_every_event_with_a_long_timeout() {
        let (text, change) = install(None, Vendor::Claude, CMD, "settings").expect("install");
        let text = text.expect("changed");
        assert_eq!(
            change.added,
            vec![
                "PreToolUse",
                "PermissionRequest",
                "Notification",
                "Stop",
                "SessionEnd"
            ]
        );
        let s = v(&text);
        assert_eq!(
            s["hooks"]["PreToolUse"],
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": CMD, "timeout": TOOL_HOOK_TIMEOUT_SECS}]}])
        );
        assert_eq!(
            s["hooks"]["Stop"],
            json!([{"hooks": [{"type": "command", "command": CMD, "timeout": REPORT_HOOK_TIMEOUT_SECS}]}])
        );
        const { assert!(DEFAULT_WAIT_SECS < TOOL_HOOK_TIMEOUT_SECS) };
    }

    const USERS: &str = r#"{
  "model": "opus",
  "permissions": {"allow": ["Bash(npm test:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "/home/me/guard.sh"}]}
    ],
    "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier"}]}]
  },
  "zz_last": true
}"#;

    #[test]
    fn the_users_own_settings_and_hooks_stay_as_they_were() {
        let (text, _) = install(Some(USERS), Vendor::Claude, CMD, "settings").expect("install");
        let text = text.expect("changed");
        let s = v(&text);
        assert_eq!(s["model"], "opus");
        assert_eq!(s["permissions"]["allow"][0], "Bash(npm test:*)");
        assert_eq!(
            s["hooks"]["PreToolUse"][0],
            json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "/home/me/guard.sh"}]}),
            "the user's hook first, untouched"
        );
        assert_eq!(s["hooks"]["PreToolUse"][1]["hooks"][0]["command"], CMD);
        assert_eq!(s["hooks"]["PostToolUse"], v(USERS)["hooks"]["PostToolUse"]);
        // Keys keep their order (serde_json's preserve_order is on in this
        // build: the ACP crate turns it on), so a diff shows only our lines.
        let keys: Vec<&String> = s.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["model", "permissions", "hooks", "zz_last"]);

        // Twice: nothing to do.
        let (again, change) = install(Some(&text), Vendor::Claude, CMD, "settings").expect("again");
        assert_eq!(again, None);
        assert!(change.is_empty());

        // Uninstall: exactly what we added goes.
        let (back, change) = uninstall(Some(&text), Vendor::Claude, "settings").expect("uninstall");
        assert_eq!(change.removed.len(), 5);
        assert_eq!(v(&back.expect("changed")), v(USERS));
        let (none, change) = uninstall(Some(USERS), Vendor::Claude, "settings").expect("nothing");
        assert_eq!(none, None);
        assert!(change.is_empty());
    }

    #[test]
    fn a_moved_binary_updates_our_entry_in_place_and_drops_duplicates() {
        let (text, _) = install(Some(USERS), Vendor::Claude, CMD, "settings").expect("install");
        let mut s = v(&text.expect("changed"));
        // A duplicate of ours, as a hand edit might leave.
        s["hooks"]["Stop"]
            .as_array_mut()
            .expect("list")
            .push(json!({"hooks": [{"type": "command", "command": "/old/overseer hook claude"}]}));
        let moved = "/new/place/overseer --data-dir /d hook claude";
        let (text, change) =
            install(Some(&s.to_string()), Vendor::Claude, moved, "settings").expect("install");
        assert!(change.added.is_empty());
        assert_eq!(change.updated.len(), 5);
        let s = v(&text.expect("changed"));
        assert_eq!(
            s["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "/home/me/guard.sh"
        );
        assert_eq!(s["hooks"]["PreToolUse"][1]["hooks"][0]["command"], moved);
        assert_eq!(s["hooks"]["Stop"].as_array().expect("list").len(), 1);
    }

    #[test]
    fn a_group_shared_with_the_users_hook_keeps_the_users_hook() {
        let shared = json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "/u/notify.sh"},
            {"type": "command", "command": CMD}
        ]}]}});
        let (text, change) =
            uninstall(Some(&shared.to_string()), Vendor::Claude, "settings").expect("uninstall");
        assert_eq!(change.removed, vec!["Stop"]);
        assert_eq!(
            v(&text.expect("changed")),
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/u/notify.sh"}]}]}})
        );
    }

    #[test]
    fn codex_gets_its_own_events_and_claudes_entries_are_not_ours() {
        let codex_cmd = "/opt/overseer hook codex";
        let (text, change) =
            install(None, Vendor::Codex, codex_cmd, "hooks.json").expect("install");
        assert_eq!(
            change.added,
            vec!["PreToolUse", "PermissionRequest", "Stop", "SessionEnd"]
        );
        let (_, change) =
            uninstall(text.as_deref(), Vendor::Claude, "hooks.json").expect("uninstall");
        assert!(change.is_empty(), "a claude uninstall leaves codex's hooks");
    }

    #[test]
    fn broken_settings_are_refused_and_never_overwritten() {
        let e = install(
            Some("{ nope"),
            Vendor::Claude,
            CMD,
            "/p/.claude/settings.json",
        )
        .expect_err("broken");
        assert!(
            e.0.contains("/p/.claude/settings.json is not valid JSON"),
            "{e}"
        );
        assert!(e.0.contains("nothing was changed"), "{e}");
        assert!(install(Some("[]"), Vendor::Claude, CMD, "s").is_err());
        assert!(install(Some(r#"{"hooks": []}"#), Vendor::Claude, CMD, "s").is_err());
        assert!(install(Some(r#"{"hooks": {"Stop": {}}}"#), Vendor::Claude, CMD, "s").is_err());
        assert!(uninstall(Some("{ nope"), Vendor::Claude, "s").is_err());
        let (text, _) = install(Some("  \n"), Vendor::Claude, CMD, "s").expect("empty file");
        assert!(text.is_some());
    }
}
