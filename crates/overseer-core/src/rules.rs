//! Permission rules in Claude Code's syntax, and the operations that are
//! always gated whatever the rules say. Pure: paths are handled lexically.
//!
//! A rule is `Tool` or `Tool(specifier)`:
//! - `Bash(npm test)` matches exactly that command; `Bash(npm test:*)` matches
//!   commands whose words start with `npm test` (`npm test -- --watch`, not
//!   `npm testing`). A compound command (`a && b`, `a; b`, `a | b`) matches an
//!   allow or ask rule only if every part does, and a deny rule if any part
//!   does. Commands with substitutions (`$(...)`, backticks) never match an
//!   allow rule.
//! - `Edit(src/**)`, `Read(*.md)`, `Edit(/abs/**)`, `Edit(//abs/**)`: globs on
//!   paths relative to the worktree (`*` stays within a folder, `**` crosses
//!   folders), matched after resolving `.` and `..`: `src/../.env` is `.env`.
//!   `Edit` rules also cover `Write`, `MultiEdit` and `NotebookEdit`; `Read`
//!   rules also cover `Grep` and `Glob`.
//! - `WebFetch(domain:example.com)` matches fetches from that host.
//! - `mcp__server` matches every tool of that MCP server.
//!
//! [`decide`] checks, in order: paths outside the worktree (denied); deny
//! rules of every layer (deny is checked first); always-gated operations (ask,
//! whatever the allow rules say); a read-only session's limits; then the
//! layers in precedence order (the run's "always" rules, the task's, the
//! workspace's), the first layer with a matching rule deciding (ask beats
//! allow within a layer); finally the defaults: read-only kinds are allowed,
//! everything else asks.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A tool call as the permission layer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// Claude-Code-style tool name: `Bash`, `Read`, `Edit`, `Write`, `Delete`, ...
    pub tool: String,
    /// ACP tool kind: `read`, `edit`, `delete`, `move`, `search`, `execute`, ...
    pub kind: String,
    /// The shell command of a `Bash` / `execute` call.
    pub command: Option<String>,
    /// Paths the call touches, as the agent gave them.
    pub paths: Vec<String>,
}

/// One permission rule, kept with its original text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rule {
    text: String,
    tool: String,
    spec: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("an empty rule: write Tool or Tool(specifier), e.g. Bash(npm test:*)")]
    Empty,
    #[error("rule '{0}' is missing its closing ')': write Tool or Tool(specifier), e.g. Bash(npm test:*)")]
    MissingClose(String),
    #[error(
        "rule '{0}' has an empty specifier: drop the parentheses to match every call of the tool"
    )]
    EmptySpecifier(String),
    #[error("rule '{0}' does not start with a tool name (letters, digits, _): e.g. Edit(src/**)")]
    BadTool(String),
    #[error("rule '{0}' has text after its closing ')'")]
    Trailing(String),
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RuleError::Empty);
        }
        let (tool, spec) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(if text.contains(')') {
                        RuleError::Trailing(text.to_owned())
                    } else {
                        RuleError::MissingClose(text.to_owned())
                    });
                };
                if inner.trim().is_empty() {
                    return Err(RuleError::EmptySpecifier(text.to_owned()));
                }
                (text[..open].trim(), Some(inner.trim().to_owned()))
            }
        };
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(RuleError::BadTool(text.to_owned()));
        }
        Ok(Rule {
            text: text.to_owned(),
            tool: tool.to_owned(),
            spec,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule covers the whole call (every subcommand, every path).
    pub fn matches(&self, req: &ToolRequest, worktree: &str) -> bool {
        self.test(req, worktree, Quantifier::All)
    }

    /// Whether the rule covers any part of the call (how deny rules apply).
    pub fn matches_any(&self, req: &ToolRequest, worktree: &str) -> bool {
        self.test(req, worktree, Quantifier::Any)
    }

    fn test(&self, req: &ToolRequest, worktree: &str, q: Quantifier) -> bool {
        if !tool_covers(&self.tool, &req.tool) {
            return false;
        }
        let Some(spec) = &self.spec else {
            return true;
        };
        if self.tool == "Bash" {
            let Some(command) = &req.command else {
                return false;
            };
            return shell_matches(spec, command, q);
        }
        if self.tool == "WebFetch" {
            if let Some(domain) = spec.strip_prefix("domain:") {
                let target = req
                    .command
                    .as_deref()
                    .or(req.paths.first().map(String::as_str));
                return target
                    .and_then(host_of)
                    .is_some_and(|h| h == domain || h.ends_with(&format!(".{domain}")));
            }
        }
        if req.paths.is_empty() {
            return req.command.as_deref() == Some(spec.as_str());
        }
        let pattern = pattern_path(spec, worktree);
        let Ok(glob) = glob::Pattern::new(&pattern) else {
            return false;
        };
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        let hit = |p: &String| glob.matches_with(&normalize(worktree, p), options);
        match q {
            Quantifier::All => req.paths.iter().all(hit),
            Quantifier::Any => req.paths.iter().any(hit),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for Rule {
    type Error = RuleError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Rule::parse(&s)
    }
}

impl From<Rule> for String {
    fn from(r: Rule) -> String {
        r.text
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quantifier {
    All,
    Any,
}

fn tool_covers(rule_tool: &str, tool: &str) -> bool {
    if rule_tool == tool {
        return true;
    }
    match rule_tool {
        "Edit" => matches!(tool, "Write" | "MultiEdit" | "NotebookEdit"),
        "Read" => matches!(tool, "Grep" | "Glob"),
        t if t.starts_with("mcp__") && t.matches("__").count() == 1 => {
            tool.starts_with(&format!("{t}__"))
        }
        _ => false,
    }
}

/// A rule's path pattern as an absolute pattern.
fn pattern_path(spec: &str, worktree: &str) -> String {
    if let Some(abs) = spec.strip_prefix("//") {
        return format!("/{abs}");
    }
    if spec.starts_with('/') {
        return spec.to_owned();
    }
    let rel = spec.strip_prefix("./").unwrap_or(spec);
    format!("{}/{rel}", normalize(worktree, "."))
}

/// Resolves `path` against `worktree` lexically (`.`, `..`, repeated `/`).
pub fn normalize(worktree: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{worktree}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

fn inside(worktree: &str, path: &str) -> bool {
    let root = normalize(worktree, ".");
    let p = normalize(worktree, path);
    p == root || p.starts_with(&format!("{root}/"))
}

fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = host.split(':').next()?;
    (!host.is_empty()).then_some(host)
}

/// Splits a shell command on `&&`, `||`, `;`, `|`, `&` and newlines outside
/// quotes. `None` when quotes are unbalanced.
fn split_compound(command: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = command.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\\' if !single => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '\'' if !double => {
                single = !single;
                cur.push(c);
            }
            '"' if !single => {
                double = !double;
                cur.push(c);
            }
            ';' | '\n' | '&' | '|' if !single && !double => {
                if matches!(c, '&' | '|') && chars.peek() == Some(&c) {
                    chars.next();
                }
                parts.push(std::mem::take(&mut cur));
            }
            _ => cur.push(c),
        }
    }
    if single || double {
        return None;
    }
    parts.push(cur);
    Some(
        parts
            .into_iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect(),
    )
}

fn has_substitution(command: &str) -> bool {
    command.contains("$(") || command.contains('`') || command.contains("<(")
}

fn words(sub: &str) -> Option<Vec<String>> {
    shlex::split(sub)
}

fn shell_matches(spec: &str, command: &str, q: Quantifier) -> bool {
    let (prefix, wildcard) = match spec.strip_suffix(":*") {
        Some(p) => (p, true),
        None => (spec, false),
    };
    let Some(want) = words(prefix) else {
        return false;
    };
    let parts = match split_compound(command) {
        Some(p) => p,
        // Unparsable: deny rules still see the raw words; allow never matches.
        None if q == Quantifier::Any => vec![command.to_owned()],
        None => return false,
    };
    if q == Quantifier::All && has_substitution(command) {
        return false;
    }
    let hit = |sub: &String| {
        let got = words(sub).unwrap_or_else(|| sub.split_whitespace().map(str::to_owned).collect());
        if wildcard {
            got.len() >= want.len() && got[..want.len()] == want[..]
        } else {
            got == want
        }
    };
    match q {
        Quantifier::All => !parts.is_empty() && parts.iter().all(hit),
        Quantifier::Any => parts.iter().any(hit),
    }
}

/// Precedence-ordered rules: allow, ask and deny lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RuleSet {
    #[serde(default)]
    #[ts(as = "Vec<String>")]
    pub allow: Vec<Rule>,
    #[serde(default)]
    #[ts(as = "Vec<String>")]
    pub ask: Vec<Rule>,
    #[serde(default)]
    #[ts(as = "Vec<String>")]
    pub deny: Vec<Rule>,
}

impl RuleSet {
    pub fn parse(allow: &[String], ask: &[String], deny: &[String]) -> Result<RuleSet, RuleError> {
        let list = |v: &[String]| {
            v.iter()
                .map(|s| Rule::parse(s))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(RuleSet {
            allow: list(allow)?,
            ask: list(ask)?,
            deny: list(deny)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }
}

/// Whether a session may change things.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    #[default]
    Normal,
    /// A consultation: writes denied, shell asks, known-safe commands allowed.
    ReadOnly,
}

/// Operations a human sees every time, whatever the rules or the confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlwaysGated {
    DeleteFiles,
    DropTables,
    ProductionConfig,
    InstallPackages,
    DestructiveShell,
    SecretFiles,
}

impl AlwaysGated {
    pub fn as_str(self) -> &'static str {
        match self {
            AlwaysGated::DeleteFiles => "delete_files",
            AlwaysGated::DropTables => "drop_tables",
            AlwaysGated::ProductionConfig => "production_config",
            AlwaysGated::InstallPackages => "install_packages",
            AlwaysGated::DestructiveShell => "destructive_shell",
            AlwaysGated::SecretFiles => "secret_files",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            AlwaysGated::DeleteFiles => "deletes files",
            AlwaysGated::DropTables => "drops or empties database tables",
            AlwaysGated::ProductionConfig => "changes production configuration",
            AlwaysGated::InstallPackages => "installs packages",
            AlwaysGated::DestructiveShell => "runs a destructive shell command",
            AlwaysGated::SecretFiles => "touches a secret file (.env, keys, credentials)",
        }
    }
}

/// The outcome, with the reason shown to the human and cited in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Permission {
    Allow {
        rule: String,
    },
    Ask {
        reason: String,
        always_gated: Option<AlwaysGated>,
        rule: Option<String>,
    },
    Deny {
        rule: String,
        reason: String,
    },
}

/// Read-only tool kinds, allowed by default.
pub fn is_read_only_kind(kind: &str) -> bool {
    matches!(kind, "read" | "search" | "think" | "fetch")
}

fn is_write(req: &ToolRequest) -> bool {
    matches!(req.kind.as_str(), "edit" | "delete" | "move")
        || matches!(
            req.tool.as_str(),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit" | "Delete" | "Move"
        )
}

fn is_shell(req: &ToolRequest) -> bool {
    req.kind == "execute" || req.tool == "Bash"
}

/// Decides a tool call. `layers` in precedence order: the run's "always"
/// rules, the task's, the workspace's.
pub fn decide(
    req: &ToolRequest,
    layers: &[&RuleSet],
    mode: SessionMode,
    worktree: &str,
) -> Permission {
    if let Some(outside) = req.paths.iter().find(|p| !inside(worktree, p)) {
        return Permission::Deny {
            rule: "confinement".to_owned(),
            reason: format!(
                "{} is outside the run's worktree",
                normalize(worktree, outside)
            ),
        };
    }
    for layer in layers {
        if let Some(rule) = layer.deny.iter().find(|r| r.matches_any(req, worktree)) {
            return Permission::Deny {
                rule: rule.to_string(),
                reason: format!("denied by the rule {rule}"),
            };
        }
    }
    if let Some((gated, detail)) = always_gated(req, worktree) {
        return Permission::Ask {
            reason: format!("{}: {detail}", gated.describe()),
            always_gated: Some(gated),
            rule: None,
        };
    }
    if mode == SessionMode::ReadOnly {
        if is_write(req) {
            return Permission::Deny {
                rule: "read-only session".to_owned(),
                reason: "read-only session: writes are denied".to_owned(),
            };
        }
        if is_shell(req) {
            return match &req.command {
                Some(c) if known_safe(c) => Permission::Allow {
                    rule: "read-only session: known-safe command".to_owned(),
                },
                _ => Permission::Ask {
                    reason: "read-only session: shell commands ask".to_owned(),
                    always_gated: None,
                    rule: None,
                },
            };
        }
    }
    for layer in layers {
        if let Some(rule) = layer.ask.iter().find(|r| r.matches(req, worktree)) {
            return Permission::Ask {
                reason: format!("the rule {rule} asks"),
                always_gated: None,
                rule: Some(rule.to_string()),
            };
        }
        if let Some(rule) = layer.allow.iter().find(|r| r.matches(req, worktree)) {
            return Permission::Allow {
                rule: rule.to_string(),
            };
        }
    }
    if is_read_only_kind(&req.kind) {
        return Permission::Allow {
            rule: format!("default: read-only kind {}", req.kind),
        };
    }
    let what = if is_shell(req) {
        "shell commands ask by default"
    } else if is_write(req) {
        "edits ask by default"
    } else {
        "this kind of tool asks by default"
    };
    Permission::Ask {
        reason: what.to_owned(),
        always_gated: None,
        rule: None,
    }
}

/// The rule a human's "always" answer adds for the run.
pub fn always_rule(req: &ToolRequest, worktree: &str) -> Rule {
    let root = normalize(worktree, ".");
    let text = match (&req.command, req.paths.as_slice()) {
        (Some(c), _) if is_shell(req) => format!("Bash({})", c.trim()),
        (_, [one]) if is_write(req) => {
            let p = normalize(worktree, one);
            let rel = p.strip_prefix(&format!("{root}/")).unwrap_or(&p);
            format!("{}({rel})", req.tool)
        }
        _ => req.tool.clone(),
    };
    Rule::parse(&text).unwrap_or_else(|_| Rule {
        text: req.tool.clone(),
        tool: req.tool.clone(),
        spec: None,
    })
}

/// Whether the request is always gated, with a human-readable detail.
pub fn always_gated(req: &ToolRequest, worktree: &str) -> Option<(AlwaysGated, String)> {
    if req.kind == "delete" || req.tool == "Delete" {
        return Some((
            AlwaysGated::DeleteFiles,
            format!("deletes {}", req.paths.join(", ")),
        ));
    }
    let reads_or_writes = is_write(req) || matches!(req.kind.as_str(), "read" | "search");
    for p in &req.paths {
        if reads_or_writes && is_secret(&normalize(worktree, p)) {
            return Some((AlwaysGated::SecretFiles, p.clone()));
        }
        if is_write(req) && is_production(&normalize(worktree, p)) {
            return Some((AlwaysGated::ProductionConfig, p.clone()));
        }
    }
    if is_shell(req) {
        if let Some(c) = &req.command {
            return shell_gated(c, 0);
        }
    }
    None
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `.env` files (not their examples), keys, credentials, and what lives under
/// `.ssh`, `.aws`, `.gnupg`.
fn is_secret(path: &str) -> bool {
    let name = file_name(path);
    let env = name == ".env"
        || (name.starts_with(".env.")
            && !matches!(
                &name[5..],
                "example" | "sample" | "template" | "dist" | "defaults"
            ));
    let key_file = [".pem", ".key", ".p12", ".pfx"]
        .iter()
        .any(|ext| name.ends_with(ext));
    let ssh_key = matches!(name, "id_rsa" | "id_ed25519" | "id_ecdsa" | "id_dsa");
    let creds = matches!(
        name,
        "credentials" | "credentials.json" | ".npmrc" | ".pypirc" | ".netrc"
    ) || name.starts_with("secrets.");
    let dirs = path
        .split('/')
        .any(|c| matches!(c, ".ssh" | ".aws" | ".gnupg"));
    env || key_file || ssh_key || creds || dirs
}

/// Paths of production configuration: a folder or file-name word `prod` or
/// `production` (`config/production.rb`, `docker-compose.prod.yml`, `k8s/prod/`).
fn is_production(path: &str) -> bool {
    path.split(['/', '.', '-', '_'])
        .any(|w| w.eq_ignore_ascii_case("prod") || w.eq_ignore_ascii_case("production"))
}

const WRAPPERS: &[&str] = &["sudo", "nohup", "time", "nice", "command", "exec", "doas"];
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh"];

fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// Drops wrappers (`sudo`, `env X=1`, `xargs`, `nohup`, ...) and leading
/// variable assignments from a command's words.
fn unwrap_words(mut w: Vec<String>) -> Vec<String> {
    loop {
        let Some(first) = w.first().map(|s| basename(s).to_owned()) else {
            return w;
        };
        if WRAPPERS.contains(&first.as_str()) {
            w.remove(0);
            while w.first().is_some_and(|s| s.starts_with('-')) {
                w.remove(0);
            }
        } else if first == "env" || first == "xargs" {
            w.remove(0);
            while w
                .first()
                .is_some_and(|s| s.starts_with('-') || s.contains('='))
            {
                w.remove(0);
            }
        } else if first.contains('=') && !first.starts_with('=') {
            w.remove(0);
        } else {
            return w;
        }
    }
}

fn shell_gated(command: &str, depth: u8) -> Option<(AlwaysGated, String)> {
    if depth > 4 {
        return None;
    }
    let lower = command.to_ascii_lowercase();
    if lower.contains(":(){") || lower.contains(":() {") {
        return Some((AlwaysGated::DestructiveShell, "a fork bomb".to_owned()));
    }
    let sql = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    if sql.contains("drop table")
        || sql.contains("drop database")
        || sql.contains("drop schema")
        || sql.contains("truncate table")
        || (sql.contains("delete from") && !sql.contains(" where "))
    {
        return Some((AlwaysGated::DropTables, command.trim().to_owned()));
    }
    let parts = split_compound(command).unwrap_or_else(|| vec![command.to_owned()]);
    for part in parts {
        let raw =
            words(&part).unwrap_or_else(|| part.split_whitespace().map(str::to_owned).collect());
        // Redirection targets are written files.
        for (i, w) in raw.iter().enumerate() {
            let target = match w.as_str() {
                ">" | ">>" | "&>" | "1>" | "2>" => raw.get(i + 1).map(String::as_str),
                s if s.starts_with(">>") => Some(&s[2..]),
                s if s.starts_with('>') => Some(&s[1..]),
                _ => None,
            };
            if let Some(t) = target.filter(|t| !t.is_empty() && *t != "/dev/null") {
                if is_secret(t) {
                    return Some((AlwaysGated::SecretFiles, format!("writes {t}")));
                }
                if is_production(t) {
                    return Some((AlwaysGated::ProductionConfig, format!("writes {t}")));
                }
                if t.starts_with("/dev/sd") || t.starts_with("/dev/nvme") {
                    return Some((AlwaysGated::DestructiveShell, format!("writes {t}")));
                }
            }
        }
        let w = unwrap_words(raw);
        let Some(first) = w.first() else { continue };
        let prog = basename(first);
        let args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
        let flag = |short: char, long: &str| {
            args.iter().any(|a| {
                *a == long || (a.starts_with('-') && !a.starts_with("--") && a.contains(short))
            })
        };
        let detail = || part.trim().to_owned();
        if SHELLS.contains(&prog) {
            if let Some(i) = args.iter().position(|a| {
                *a == "-c" || (a.starts_with('-') && a.ends_with('c') && !a.starts_with("--"))
            }) {
                if let Some(inner) = args.get(i + 1) {
                    if let Some(found) = shell_gated(inner, depth + 1) {
                        return Some(found);
                    }
                }
            }
            continue;
        }
        let gated = match prog {
            "rm" => {
                if flag('r', "--recursive") || flag('R', "--recursive") {
                    Some(AlwaysGated::DestructiveShell)
                } else {
                    Some(AlwaysGated::DeleteFiles)
                }
            }
            "unlink" | "rmdir" | "shred" => Some(AlwaysGated::DeleteFiles),
            "find" if args.contains(&"-delete") => Some(AlwaysGated::DeleteFiles),
            "find" if args.iter().any(|a| *a == "-exec" || *a == "-execdir") => args
                .iter()
                .skip_while(|a| **a != "-exec" && **a != "-execdir")
                .nth(1)
                .filter(|p| matches!(basename(p), "rm" | "shred" | "unlink"))
                .map(|_| AlwaysGated::DeleteFiles),
            "dd" | "wipefs" | "fdisk" | "sfdisk" | "parted" | "truncate" => {
                Some(AlwaysGated::DestructiveShell)
            }
            p if p.starts_with("mkfs") => Some(AlwaysGated::DestructiveShell),
            "chmod" | "chown" | "chgrp" if flag('R', "--recursive") => {
                Some(AlwaysGated::DestructiveShell)
            }
            "git" => git_gated(&args),
            "apt" | "apt-get" | "dnf" | "yum" | "zypper" | "apk" | "brew" | "snap" => args
                .iter()
                .any(|a| matches!(*a, "install" | "add" | "reinstall"))
                .then_some(AlwaysGated::InstallPackages),
            "pacman" => args
                .iter()
                .any(|a| a.starts_with("-S"))
                .then_some(AlwaysGated::InstallPackages),
            // `npm install` / `npm ci` alone install what the lockfile pins:
            // not gated. Naming a package adds a dependency: gated.
            "npm" | "pnpm" | "bun" => match args.first() {
                Some(&("install" | "i" | "add" | "in")) => args[1..]
                    .iter()
                    .any(|a| !a.starts_with('-'))
                    .then_some(AlwaysGated::InstallPackages),
                _ => None,
            },
            "yarn" => (args.first() == Some(&"add")).then_some(AlwaysGated::InstallPackages),
            "pip" | "pip3" | "pipx" | "uv" | "gem" | "cargo" | "go" => {
                let sub = if prog == "uv" {
                    args.iter().find(|a| **a != "pip")
                } else {
                    args.first()
                };
                matches!(sub, Some(&("install" | "add" | "get")))
                    .then_some(AlwaysGated::InstallPackages)
            }
            p if p.starts_with("python") => {
                let pip = args
                    .windows(3)
                    .any(|w| w[0] == "-m" && w[1] == "pip" && w[2] == "install");
                pip.then_some(AlwaysGated::InstallPackages)
            }
            "tee" | "cp" | "mv" | "install" | "ln" => {
                let targets: Vec<&&str> = if prog == "tee" {
                    args.iter().filter(|a| !a.starts_with('-')).collect()
                } else {
                    args.iter()
                        .rfind(|a| !a.starts_with('-'))
                        .into_iter()
                        .collect()
                };
                if let Some(t) = targets.iter().find(|t| is_secret(t)) {
                    return Some((AlwaysGated::SecretFiles, format!("writes {t}")));
                }
                if let Some(t) = targets.iter().find(|t| is_production(t)) {
                    return Some((AlwaysGated::ProductionConfig, format!("writes {t}")));
                }
                None
            }
            _ => None,
        };
        if let Some(g) = gated {
            return Some((g, detail()));
        }
    }
    None
}

fn git_gated(args: &[&str]) -> Option<AlwaysGated> {
    // Skip global options (`-C dir`, `-c key=value`, `--no-pager`).
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if *a == "-C" || *a == "-c" {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let sub = *args.get(i)?;
    let rest = &args[i + 1..];
    let has = |f: &str| rest.contains(&f);
    match sub {
        "push" => (has("--force")
            || has("-f")
            || rest.iter().any(|a| {
                a.starts_with("--force-with-lease")
                    || *a == "--force-if-includes"
                    || *a == "--delete"
                    || *a == "--mirror"
            })
            || rest.iter().any(|a| a.starts_with('+')))
        .then_some(AlwaysGated::DestructiveShell),
        "reset" => has("--hard").then_some(AlwaysGated::DestructiveShell),
        "clean" => rest
            .iter()
            .any(|a| {
                *a == "--force" || (a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
            })
            .then_some(AlwaysGated::DeleteFiles),
        "rm" => Some(AlwaysGated::DeleteFiles),
        "checkout" | "restore" => (rest.contains(&".") || has("--"))
            .then_some(AlwaysGated::DestructiveShell)
            .filter(|_| rest.iter().any(|a| *a == "." || *a == "--")),
        "branch" => {
            (has("-D") || (has("-d") && has("--force"))).then_some(AlwaysGated::DestructiveShell)
        }
        "filter-branch" | "filter-repo" => Some(AlwaysGated::DestructiveShell),
        "stash" => matches!(rest.first(), Some(&("drop" | "clear")))
            .then_some(AlwaysGated::DestructiveShell),
        _ => None,
    }
}

/// Commands a read-only session may run: every part is one of a known list
/// of readers, and nothing is redirected.
fn known_safe(command: &str) -> bool {
    if has_substitution(command) || command.contains('>') {
        return false;
    }
    let Some(parts) = split_compound(command) else {
        return false;
    };
    !parts.is_empty()
        && parts.iter().all(|part| {
            let Some(w) = words(part) else { return false };
            let Some(first) = w.first() else { return false };
            let args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
            match basename(first) {
                "ls" | "cat" | "head" | "tail" | "wc" | "pwd" | "echo" | "grep" | "rg"
                | "which" | "stat" | "file" | "tree" | "du" | "df" => true,
                "find" => !args.iter().any(|a| {
                    matches!(
                        *a,
                        "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir" | "-fprint"
                    )
                }),
                "git" => match args.first() {
                    Some(&("status" | "log" | "diff" | "show")) => true,
                    Some(&"branch") => args[1..]
                        .iter()
                        .all(|a| matches!(*a, "-a" | "-r" | "-v" | "-vv" | "--list" | "--all")),
                    _ => false,
                },
                _ => false,
            }
        })
}
