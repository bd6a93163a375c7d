//! Permission rules in Claude Code's syntax, and the operations that are
//! always gated whatever the rules say. Pure: paths are handled lexically;
//! nothing here reads the filesystem, the environment or a clock.
//!
//! # Rule syntax
//!
//! A rule is `Tool` or `Tool(specifier)`. Tool names compare case-sensitively.
//!
//! - `Tool` matches every call of the tool. `Edit` rules also cover `Write`,
//!   `MultiEdit` and `NotebookEdit` (every file-editing tool); `Read` rules
//!   also cover `Grep` and `Glob`.
//! - `Bash(npm test)` matches exactly that command. Runs of spaces do not
//!   matter and quoting is compared after parsing (`git commit -m "a b"` is
//!   `git commit -m 'a b'`).
//! - `Bash(npm test:*)` matches commands whose words start with `npm test`:
//!   `npm test`, `npm test -- --watch`, not `npm testing`.
//! - Compound commands are split on `&&`, `||`, `;`, `|`, `&`, newlines,
//!   subshells and substitutions, outside quotes: `git commit -m "a && b"` is
//!   one command, and `2>&1` is a redirection, not a separator. An allow
//!   rule matches only if it matches every part; deny and ask rules match if
//!   they match any part, also seen through wrappers (`sudo`, `env X=1`,
//!   `xargs`, `bash -c '...'`). [`decide`] also allows a compound command
//!   whose parts are each allowed by some rule. A command with `$(...)`,
//!   backticks or process substitution, or one that does not parse
//!   (unbalanced quotes), never matches an allow rule, not even a bare
//!   `Bash`, unless the rule is exactly that command's text: it asks.
//! - Path rules (`Edit(src/**)`, `Read(*.md)`) are globs where `*` stays within
//!   a folder and `**` crosses folders. `src/**` and `./src/**` are relative
//!   to the worktree; `//abs/**` is absolute; `/x/**` is read both as the
//!   absolute path and as Claude Code's "relative to the project root" (paths
//!   outside the worktree are denied anyway, so the two readings never
//!   disagree about a call that may run); `~/...` matches nothing (the home
//!   folder is outside the worktree); `dir/` means `dir/**`. Request paths are
//!   resolved lexically first (`.`, `..`, relative to the worktree):
//!   `src/../.env` is `.env` and does not match `Edit(src/**)`. A call that
//!   touches several paths matches an allow or ask rule only if every path
//!   does, and an ask or deny rule if any does.
//! - Symlinks: the engine resolves each path on disk before the rules see it
//!   ([`ToolRequest::resolved`]: the longest existing prefix canonicalized,
//!   so symlinks and `..` count). Allow rules match the resolved path
//!   relative to the worktree: with `docs -> $HOME`, `docs/.bashrc` is not a
//!   `docs/**` file. Deny and ask rules match the path as given or as
//!   resolved. A path that resolves outside the worktree (or cannot be
//!   resolved) is never allowed by a rule: it asks, saying where it leads.
//! - `WebFetch(domain:example.com)` matches fetches from that host and its
//!   subdomains.
//! - `mcp__server` and `mcp__server__*` match every tool of that MCP server;
//!   `mcp__server__tool` matches that tool only.
//! - `Risk(low)`, `Risk(medium)`, `Risk(high)`, `Risk(critical)` match every
//!   call of that risk level ([`risk_of`], the level its card shows), whatever
//!   the tool: `Risk(low)` in an allow list lets reads and known read-only
//!   commands (`git status`, `ls`) through. An allow rule can never name
//!   `high` or `critical` ([`RuleSet::parse`] refuses it, and such a rule
//!   matches no call as an allow rule): always-gated operations and paths
//!   that lead out of the worktree ask whatever the rules say. As a deny or
//!   ask rule any level applies: `Risk(critical)` in a deny list refuses
//!   destructive calls outright instead of asking.
//!
//! # Order of checks in [`decide`]
//!
//! 1. Confinement: a path outside the worktree after lexical resolution
//!    (`~/...` counts as outside) is denied.
//! 2. Deny rules of every layer: deny is checked first, whatever the allow
//!    rules of a more specific layer say.
//! 3. A read-only session denies writes (edit, delete and move kinds, and the
//!    `Edit`, `Write`, `MultiEdit`, `NotebookEdit`, `Delete`, `Move` tools),
//!    even always-gated ones: a denial is stricter than a question.
//! 4. A path that leads outside the worktree once resolved (a symlink out)
//!    or cannot be resolved asks, whatever the allow rules say (rule
//!    [`CONFINEMENT`]).
//! 5. Always-gated operations ([`always_gated`]) ask, whatever the allow rules
//!    or the confidence: a human sees them every time.
//! 6. A read-only session allows known-safe shell commands (`ls`, `cat`,
//!    `git status`, ...) and asks for any other.
//! 7. The layers in precedence order (the run's "always" rules, the task's,
//!    the workspace's): the first layer with a matching rule decides, and ask
//!    beats allow within a layer. A compound shell command no single rule
//!    covers is decided part by part: allowed if every part is allowed.
//! 8. Defaults: read-only kinds (read, search, think, fetch) are allowed;
//!    everything else (edits, shell, git, other tools) asks.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A tool call as the permission layer sees it (the engine maps ACP tool
/// calls to this).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ToolRequest {
    /// Claude-Code-style tool name: `Bash`, `Read`, `Edit`, `Write`, `Delete`,
    /// `Move`, `Grep`, `Glob`, `WebFetch`, `mcp__server__tool`, ...
    pub tool: String,
    /// ACP tool kind (`read`, `edit`, `execute`, ... on the wire).
    pub kind: crate::ToolKind,
    /// The shell command of a `Bash` / `execute` call.
    pub command: Option<String>,
    /// Paths the call touches, as the agent gave them (relative to the
    /// worktree or absolute).
    pub paths: Vec<String>,
    /// Where each of `paths` leads on disk, in the same order, as the engine
    /// resolved it (symlinks followed, `..` applied). Empty when nobody
    /// resolved them: the rules then see the paths as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<Resolved>>", optional)]
    pub resolved: Vec<Resolved>,
}

/// Where a path of a tool call leads, resolved on disk by the engine the way
/// the operating system would resolve it (the longest existing prefix
/// canonicalized, so symlinks and `..` count). Core does no I/O: this is the
/// engine's answer, passed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "leads", rename_all = "snake_case")]
pub enum Resolved {
    /// Inside the worktree, at `path` relative to it.
    Inside { path: String },
    /// Outside the worktree, to the absolute `path`.
    Outside { path: String },
    /// It could not be resolved (`why`): a symlink that points nowhere, a
    /// directory that cannot be read, ...
    Unresolved { why: String },
}

impl ToolRequest {
    /// The first path that leads outside the worktree (or cannot be
    /// resolved) once resolved, with where it leads: no rule may allow it.
    fn leaves_worktree(&self) -> Option<(&str, String)> {
        self.paths
            .iter()
            .zip(&self.resolved)
            .find_map(|(p, r)| match r {
                Resolved::Inside { .. } => None,
                Resolved::Outside { path } => Some((p.as_str(), format!("leads to {path}"))),
                Resolved::Unresolved { why } => {
                    Some((p.as_str(), format!("cannot be resolved ({why})")))
                }
            })
    }

    /// Path `i` as rules match it when every path must match (allow): the
    /// resolved path when there is one, else the path as given.
    fn effective(&self, i: usize, worktree: &str) -> String {
        match self.resolved.get(i) {
            Some(Resolved::Inside { path }) => normalize(worktree, path),
            Some(Resolved::Outside { path }) => normalize(worktree, path),
            Some(Resolved::Unresolved { .. }) | None => {
                normalize(worktree, self.paths.get(i).map_or("", String::as_str))
            }
        }
    }

    /// Path `i` both as given and as resolved (deny and ask rules match
    /// either).
    fn both(&self, i: usize, worktree: &str) -> Vec<String> {
        let given = normalize(worktree, self.paths.get(i).map_or("", String::as_str));
        let resolved = self.effective(i, worktree);
        if resolved == given {
            vec![given]
        } else {
            vec![given, resolved]
        }
    }

    /// Every path relative to the worktree when inside it, both as given and
    /// as resolved (always-gated checks look at both).
    fn relative_paths(&self, worktree: &str) -> Vec<String> {
        let mut out: Vec<String> = self.paths.iter().map(|p| relative(worktree, p)).collect();
        for r in &self.resolved {
            if let Resolved::Inside { path } = r {
                let rel = relative(worktree, path);
                if !out.contains(&rel) {
                    out.push(rel);
                }
            }
        }
        out
    }
}

/// One permission rule, kept with its original text. Serialized as that text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rule {
    text: String,
    tool: String,
    spec: Option<String>,
}

/// Why a rule's text is not a rule. Every message shows the expected syntax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("an empty rule: write Tool or Tool(specifier), e.g. Bash(npm test:*)")]
    Empty,
    #[error("rule '{0}' is missing its closing ')': write Tool or Tool(specifier), e.g. Bash(npm test:*)")]
    MissingClose(String),
    #[error("rule '{0}' has an empty specifier: write the tool alone to match every call of it, or Tool(specifier), e.g. Edit(src/**)")]
    EmptySpecifier(String),
    #[error("rule '{0}' does not start with a tool name (letters, digits, _): write Tool or Tool(specifier), e.g. Edit(src/**)")]
    BadTool(String),
    #[error("rule '{0}' has text after its closing ')': write Tool or Tool(specifier), e.g. Bash(npm test:*)")]
    Trailing(String),
    #[error("rule '{rule}' has an invalid path pattern ({why}): * matches within a folder and ** across folders, e.g. Edit(src/**)")]
    BadPattern { rule: String, why: String },
    #[error("rule '{0}' names no host: write WebFetch(domain:example.com)")]
    NoDomain(String),
    #[error("rule '{0}' names no risk level: write Risk(low), Risk(medium), Risk(high) or Risk(critical)")]
    BadRisk(String),
    #[error("rule '{0}' cannot allow: high and critical tool calls always ask a human; allow Risk(low) or Risk(medium), or put it in the deny list")]
    RiskAllow(String),
}

/// The tool name of risk rules (`Risk(low)`): not a tool, the risk level of
/// any call.
pub const RISK_RULE: &str = "Risk";

/// Tools whose specifier is a path glob, checked when the rule is parsed.
fn is_path_tool(tool: &str) -> bool {
    matches!(
        tool,
        "Edit"
            | "Write"
            | "MultiEdit"
            | "NotebookEdit"
            | "Read"
            | "Grep"
            | "Glob"
            | "Delete"
            | "Move"
    )
}

fn valid_tool_name(tool: &str) -> bool {
    let plain = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    // `mcp__server__*`: every tool of a server.
    match tool.strip_suffix("__*") {
        Some(server) if server.starts_with("mcp__") => plain(server),
        Some(_) | None => plain(tool),
    }
}

impl Rule {
    /// Parses `Tool` or `Tool(specifier)`; surrounding spaces are ignored.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RuleError::Empty);
        }
        let (tool, spec) = match text.find('(') {
            None => {
                if text.contains(')') {
                    return Err(RuleError::BadTool(text.to_owned()));
                }
                (text, None)
            }
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(if text[open..].contains(')') {
                        RuleError::Trailing(text.to_owned())
                    } else {
                        RuleError::MissingClose(text.to_owned())
                    });
                };
                let inner = inner.trim();
                if inner.is_empty() {
                    return Err(RuleError::EmptySpecifier(text.to_owned()));
                }
                (text[..open].trim(), Some(inner.to_owned()))
            }
        };
        if !valid_tool_name(tool) {
            return Err(RuleError::BadTool(text.to_owned()));
        }
        if tool == RISK_RULE && spec.as_deref().and_then(RiskLevel::parse).is_none() {
            return Err(RuleError::BadRisk(text.to_owned()));
        }
        if let Some(spec) = &spec {
            if tool == "Bash" && spec.strip_suffix(":*").is_some_and(|p| p.trim().is_empty()) {
                return Err(RuleError::EmptySpecifier(text.to_owned()));
            }
            if tool == "WebFetch" {
                if let Some(domain) = spec.strip_prefix("domain:") {
                    if domain.trim().trim_start_matches("*.").is_empty() {
                        return Err(RuleError::NoDomain(text.to_owned()));
                    }
                }
            } else if is_path_tool(tool) {
                if let Err(e) = glob::Pattern::new(&pattern_body(spec)) {
                    return Err(RuleError::BadPattern {
                        rule: text.to_owned(),
                        why: e.msg.to_owned(),
                    });
                }
            }
        }
        Ok(Rule {
            text: text.to_owned(),
            tool: tool.to_owned(),
            spec,
        })
    }

    /// The rule's text, as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The tool name the rule is about.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The specifier between the parentheses, if any.
    pub fn specifier(&self) -> Option<&str> {
        self.spec.as_deref()
    }

    /// Whether the rule covers the whole call: every part of a compound
    /// command, every path. This is how allow rules apply.
    pub fn matches(&self, req: &ToolRequest, worktree: &str) -> bool {
        self.test(req, worktree, Quantifier::All)
    }

    /// Whether the rule covers any part of the call (one part of a compound
    /// command, also through `sudo` / `bash -c` wrappers, or one of its
    /// paths). This is how deny and ask rules apply.
    pub fn matches_any(&self, req: &ToolRequest, worktree: &str) -> bool {
        self.test(req, worktree, Quantifier::Any)
    }

    /// The risk level a risk rule (`Risk(low)`) names; None for other rules.
    pub fn risk_level(&self) -> Option<RiskLevel> {
        (self.tool == RISK_RULE)
            .then(|| self.spec.as_deref().and_then(RiskLevel::parse))
            .flatten()
    }

    fn test(&self, req: &ToolRequest, worktree: &str, q: Quantifier) -> bool {
        if self.tool == RISK_RULE {
            let Some(level) = self.risk_level() else {
                return false;
            };
            // As an allow rule it never covers a high or critical call,
            // whatever list it was put in by hand.
            if q == Quantifier::All && level >= RiskLevel::High {
                return false;
            }
            return risk_of_call(req, worktree).level == level;
        }
        if !tool_covers(&self.tool, &req.tool) {
            return false;
        }
        let Some(spec) = &self.spec else {
            // A bare rule covers every call, except that a shell command we
            // cannot parse is never allowed (nor asked by a rule): it asks by
            // default, where the human sees it.
            return match q {
                Quantifier::Any => true,
                Quantifier::All => {
                    !(is_shell(req)
                        && req
                            .command
                            .as_deref()
                            .is_some_and(|c| split_compound(c).is_none()))
                }
            };
        };
        if self.tool == "Bash" {
            return req
                .command
                .as_deref()
                .is_some_and(|c| shell_matches(spec, c, q));
        }
        if self.tool == "WebFetch" {
            if let Some(domain) = spec.strip_prefix("domain:") {
                let domain = domain.trim().trim_start_matches("*.").to_ascii_lowercase();
                let target = req
                    .command
                    .as_deref()
                    .or(req.paths.first().map(String::as_str));
                return target.and_then(host_of).is_some_and(|h| {
                    let h = h.to_ascii_lowercase();
                    h == domain || h.ends_with(&format!(".{domain}"))
                });
            }
        }
        if req.paths.is_empty() {
            return req.command.as_deref().map(str::trim) == Some(spec.as_str());
        }
        let patterns = path_patterns(spec, worktree);
        let hit = |path: &str| patterns.iter().any(|g| g.matches_with(path, GLOB_OPTIONS));
        // Allow rules match where each path really leads (a symlink
        // `docs -> ~` does not make `~/.bashrc` a `docs/**` file); deny and
        // ask rules match the path as given or as resolved.
        let n = req.paths.len();
        match q {
            Quantifier::All => (0..n).all(|i| hit(&req.effective(i, worktree))),
            Quantifier::Any => (0..n).any(|i| req.both(i, worktree).iter().any(|p| hit(p))),
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
    /// Every part / path must match (allow and ask rules).
    All,
    /// One part / path is enough (deny rules).
    Any,
}

fn tool_covers(rule_tool: &str, tool: &str) -> bool {
    if rule_tool == tool {
        return true;
    }
    if let Some(rest) = rule_tool.strip_prefix("mcp__") {
        let server = rest.strip_suffix("__*").unwrap_or(rest);
        return !server.contains("__")
            && (rest.ends_with("__*") || rest == server)
            && tool.starts_with(&format!("mcp__{server}__"));
    }
    match rule_tool {
        "Edit" => matches!(tool, "Write" | "MultiEdit" | "NotebookEdit"),
        "Read" => matches!(tool, "Grep" | "Glob"),
        _ => false,
    }
}

const GLOB_OPTIONS: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// A path specifier with Claude Code's prefixes taken off, for validation.
fn pattern_body(spec: &str) -> String {
    let body = spec
        .strip_prefix("//")
        .or_else(|| spec.strip_prefix("./"))
        .unwrap_or(spec);
    if body.ends_with('/') {
        format!("{body}**")
    } else {
        body.to_owned()
    }
}

/// A rule's path specifier as absolute glob patterns (see the module docs).
fn path_patterns(spec: &str, worktree: &str) -> Vec<glob::Pattern> {
    let root = glob::Pattern::escape(&normalize(worktree, "."));
    let spec = if spec.ends_with('/') {
        format!("{spec}**")
    } else {
        spec.to_owned()
    };
    let under_root = |rel: &str| {
        if root == "/" {
            format!("/{rel}")
        } else {
            format!("{root}/{rel}")
        }
    };
    let texts = if let Some(abs) = spec.strip_prefix("//") {
        vec![format!("/{abs}")]
    } else if spec.starts_with('~') {
        vec![]
    } else if let Some(rel) = spec.strip_prefix('/') {
        vec![spec.clone(), under_root(rel)]
    } else {
        vec![under_root(spec.strip_prefix("./").unwrap_or(&spec))]
    };
    texts
        .iter()
        .filter_map(|t| glob::Pattern::new(&lexical(t)).ok())
        .collect()
}

/// Resolves `.`, `..` and repeated `/` in an absolute path.
fn lexical(abs: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in abs.split('/') {
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

/// Resolves `path` against `worktree` lexically: relative paths are joined
/// onto the worktree, absolute paths stay absolute, `.`, `..` and repeated
/// `/` are resolved. Nothing is read from the filesystem (symlinks are not
/// followed).
pub fn normalize(worktree: &str, path: &str) -> String {
    if path.starts_with('/') {
        lexical(path)
    } else {
        lexical(&format!("{worktree}/{path}"))
    }
}

/// `path` relative to the worktree when it lies inside it, else absolute.
pub fn relative(worktree: &str, path: &str) -> String {
    let root = normalize(worktree, ".");
    let p = normalize(worktree, path);
    if p == root {
        ".".to_owned()
    } else if root == "/" {
        p[1..].to_owned()
    } else {
        match p.strip_prefix(&format!("{root}/")) {
            Some(rel) => rel.to_owned(),
            None => p,
        }
    }
}

/// Whether `path` lies inside the worktree. `~/...` is the home folder: out.
fn inside(worktree: &str, path: &str) -> bool {
    if path.starts_with('~') {
        return false;
    }
    let root = normalize(worktree, ".");
    let p = normalize(worktree, path);
    root == "/" || p == root || p.starts_with(&format!("{root}/"))
}

fn host_of(url: &str) -> Option<&str> {
    let rest = url.trim().split_once("://").map_or(url.trim(), |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = host.split(':').next()?;
    (!host.is_empty()).then_some(host)
}

// ---------------------------------------------------------------------------
// Shell commands
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Inside `"..."`.
    Double,
    /// Inside `$(...)` or `(...)`.
    Sub,
    /// Inside `` `...` ``.
    Tick,
}

/// Splits a shell command into simple commands: on `&&`, `||`, `;`, `|`,
/// `|&`, `&`, newlines, and at subshells `( )`, command substitutions `$( )`
/// and backticks (even inside double quotes, where they still run), never
/// inside single quotes. Redirections such as `2>&1`, `&>` and `>|` are not
/// separators. `None` when quotes or substitutions are unbalanced.
fn split_compound(command: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut stack: Vec<Ctx> = Vec::new();
    let mut single = false;
    let mut chars = command.chars().peekable();
    let cut = |cur: &mut String, parts: &mut Vec<String>| {
        let part = cur.trim();
        if !part.is_empty() {
            parts.push(part.to_owned());
        }
        cur.clear();
    };
    while let Some(c) = chars.next() {
        if single {
            cur.push(c);
            if c == '\'' {
                single = false;
            }
            continue;
        }
        let in_double = stack.last() == Some(&Ctx::Double);
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '\'' if !in_double => {
                single = true;
                cur.push(c);
            }
            '"' => {
                if in_double {
                    stack.pop();
                } else {
                    stack.push(Ctx::Double);
                }
                cur.push(c);
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                cut(&mut cur, &mut parts);
                stack.push(Ctx::Sub);
            }
            '`' => {
                cut(&mut cur, &mut parts);
                if stack.last() == Some(&Ctx::Tick) {
                    stack.pop();
                } else {
                    stack.push(Ctx::Tick);
                }
            }
            _ if in_double => cur.push(c),
            '(' => {
                cut(&mut cur, &mut parts);
                stack.push(Ctx::Sub);
            }
            ')' => {
                cut(&mut cur, &mut parts);
                if stack.last() == Some(&Ctx::Sub) {
                    stack.pop();
                }
            }
            ';' | '\n' => cut(&mut cur, &mut parts),
            '&' => {
                if cur.ends_with(['>', '<']) || chars.peek() == Some(&'>') {
                    // `2>&1`, `<&3`, `&>file`: a redirection.
                    cur.push(c);
                } else {
                    if chars.peek() == Some(&'&') {
                        chars.next();
                    }
                    cut(&mut cur, &mut parts);
                }
            }
            '|' => {
                if cur.ends_with('>') {
                    // `>|file`: a redirection.
                    cur.push(c);
                } else {
                    if matches!(chars.peek(), Some(&'|') | Some(&'&')) {
                        chars.next();
                    }
                    cut(&mut cur, &mut parts);
                }
            }
            _ => cur.push(c),
        }
    }
    if single || !stack.is_empty() {
        return None;
    }
    cut(&mut cur, &mut parts);
    Some(parts)
}

/// For a command that does not parse: split on every separator character,
/// quotes or not. More parts means more is inspected, which is the safe side
/// for gating and deny rules.
fn loose_split(command: &str) -> Vec<String> {
    command
        .split([';', '\n', '&', '|', '(', ')', '`'])
        .map(|p| p.trim().trim_start_matches('$').trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

fn parts_of(command: &str) -> Vec<String> {
    split_compound(command).unwrap_or_else(|| loose_split(command))
}

fn has_substitution(command: &str) -> bool {
    command.contains("$(")
        || command.contains('`')
        || command.contains("<(")
        || command.contains(">(")
}

fn words(sub: &str) -> Option<Vec<String>> {
    shlex::split(sub)
}

fn words_loose(sub: &str) -> Vec<String> {
    words(sub).unwrap_or_else(|| {
        sub.split_whitespace()
            .map(|w| w.trim_matches(['"', '\'']).to_owned())
            .collect()
    })
}

/// Spaces and tabs collapsed; newlines kept (they separate commands).
fn collapse_spaces(s: &str) -> String {
    s.trim()
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn word_match(got: &[String], want: &[String], wildcard: bool) -> bool {
    if wildcard {
        got.len() >= want.len() && got[..want.len()] == want[..]
    } else {
        got == want
    }
}

fn shell_matches(spec: &str, command: &str, q: Quantifier) -> bool {
    let (prefix, wildcard) = match spec.strip_suffix(":*") {
        Some(p) => (p.trim_end(), true),
        None => (spec, false),
    };
    // An exact rule matches its own text, whatever the command contains: this
    // is how a human's "always" answer to a compound command applies again.
    if !wildcard && collapse_spaces(prefix) == collapse_spaces(command) {
        return true;
    }
    // The rule's words; a single command written with a trailing `;` (see
    // `always_rule`) is that command.
    let single = split_compound(prefix).filter(|p| p.len() == 1);
    let prefix = single
        .as_ref()
        .and_then(|p| p.first())
        .map_or(prefix, String::as_str);
    let Some(want) = words(prefix).filter(|w| !w.is_empty()) else {
        return false;
    };
    match q {
        Quantifier::All => {
            if has_substitution(command) {
                return false;
            }
            let Some(parts) = split_compound(command) else {
                return false;
            };
            !parts.is_empty()
                && parts.iter().all(|p| {
                    words(p)
                        .filter(|w| !w.is_empty())
                        .is_some_and(|got| word_match(&got, &want, wildcard))
                })
        }
        Quantifier::Any => any_part_matches(command, &want, wildcard, 0),
    }
}

/// Deny-rule matching: any part, also with its wrappers taken off and its
/// program named by its base name (`/bin/rm`), and inside `bash -c '...'`.
fn any_part_matches(command: &str, want: &[String], wildcard: bool, depth: u8) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    parts_of(command).iter().any(|part| {
        let raw = words_loose(part);
        let (mut bare, _) = unwrap_words(raw.clone());
        if word_match(&raw, want, wildcard) || word_match(&bare, want, wildcard) {
            return true;
        }
        if let Some(first) = bare.first_mut() {
            *first = basename(first).to_owned();
        }
        word_match(&bare, want, wildcard)
            || inner_commands(&bare)
                .iter()
                .any(|inner| any_part_matches(inner, want, wildcard, depth + 1))
    })
}

/// How deep `bash -c "sh -c '...'"` nesting is inspected. Deeper nesting is
/// itself treated as destructive (nobody needs it for ordinary work).
const MAX_DEPTH: u8 = 4;

const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "fish", "ash"];

/// Words that start a compound statement and precede a command.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "}",
];

fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Takes wrappers off a command's words (`sudo -u x`, `env -i X=1`,
/// `xargs -I {}`, `nohup`, `time`, `nice -n 5`, `timeout 10`, `command`,
/// `exec`), leading variable assignments and keywords (`then`, `do`, ...).
/// Returns the words left and whether `sudo` / `doas` was among the wrappers.
/// `command -v x` only looks `x` up: nothing is left.
fn unwrap_words(mut w: Vec<String>) -> (Vec<String>, bool) {
    let mut root = false;
    loop {
        let Some(first) = w.first() else {
            return (w, root);
        };
        if is_assignment(first) || KEYWORDS.contains(&first.as_str()) {
            w.remove(0);
            continue;
        }
        let prog = basename(first).to_owned();
        let with_value: &[&str] = match prog.as_str() {
            "sudo" | "doas" => {
                root = true;
                &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"]
            }
            "nice" | "ionice" => &["-n", "-c"],
            "timeout" => &["-s", "-k", "--signal", "--kill-after"],
            "env" => &["-u", "-C", "-S", "--unset", "--chdir"],
            "xargs" => &["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"],
            "stdbuf" => &["-i", "-o", "-e"],
            "nohup" | "time" | "command" | "exec" | "builtin" => &[],
            _ => return (w, root),
        };
        if prog == "command" && w.get(1).is_some_and(|a| a == "-v" || a == "-V") {
            return (Vec::new(), root);
        }
        w.remove(0);
        while let Some(a) = w.first() {
            if a == "--" {
                w.remove(0);
                break;
            }
            if prog == "env" && is_assignment(a) {
                w.remove(0);
                continue;
            }
            if !a.starts_with('-') || a == "-" {
                break;
            }
            let takes_value = with_value.contains(&a.as_str());
            w.remove(0);
            if takes_value && !w.is_empty() {
                w.remove(0);
            }
        }
        if prog == "timeout" && !w.is_empty() {
            // The duration.
            w.remove(0);
        }
    }
}

/// Commands run by a command: `bash -c '...'`, `eval ...`, `ssh host '...'`.
fn inner_commands(w: &[String]) -> Vec<String> {
    let Some(first) = w.first() else {
        return Vec::new();
    };
    let prog = basename(first);
    let args = &w[1..];
    if SHELLS.contains(&prog) {
        let dash_c = args.iter().position(|a| {
            a == "-c" || (a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
        });
        return dash_c
            .and_then(|i| args.get(i + 1))
            .cloned()
            .into_iter()
            .collect();
    }
    if prog == "eval" {
        return vec![args.join(" ")];
    }
    if prog == "ssh" {
        // Options with values, then the host, then the remote command.
        let mut i = 0;
        while let Some(a) = args.get(i) {
            if a.len() == 2 && a.starts_with('-') && "bcDEeFIiJLlmOopQRSWw".contains(&a[1..]) {
                i += 2;
            } else if a.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
        let remote = args.get(i + 1..).unwrap_or(&[]);
        if !remote.is_empty() {
            return vec![remote.join(" ")];
        }
    }
    Vec::new()
}

/// Commands a read-only session may run: every part is one of a known list
/// of readers, nothing is redirected or substituted, and no option makes the
/// reader write or run something (`find -delete`, `rg --pre`, `tree -o`,
/// `git log --output`).
pub fn known_safe(command: &str) -> bool {
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
            let any = |f: &dyn Fn(&str) -> bool| args.iter().any(|a| f(a));
            match first.as_str() {
                "ls" | "cat" | "head" | "tail" | "wc" | "pwd" | "echo" | "grep" | "which"
                | "stat" | "du" | "df" => true,
                "rg" => !any(&|a| a.starts_with("--pre")),
                "tree" => !any(&|a| a == "-o" || a.starts_with("--output")),
                "file" => !any(&|a| a == "-C" || a == "--compile"),
                "find" => !any(&|a| {
                    a == "-delete"
                        || a.starts_with("-exec")
                        || a.starts_with("-ok")
                        || a.starts_with("-fprint")
                        || a == "-fls"
                }),
                "git" => {
                    let sub = args.first().copied();
                    let rest = args.get(1..).unwrap_or(&[]);
                    let writes = rest.iter().any(|a| {
                        a.starts_with("--output") || *a == "--ext-diff" || a.starts_with("--exec")
                    });
                    !writes
                        && match sub {
                            Some("status" | "log" | "diff" | "show") => true,
                            Some("branch") => rest.iter().all(|a| {
                                matches!(
                                    *a,
                                    "-a" | "-r" | "-v" | "-vv" | "--list" | "--all" | "--remotes"
                                )
                            }),
                            _ => false,
                        }
                }
                _ => false,
            }
        })
}

// ---------------------------------------------------------------------------
// Rule sets, sessions, decisions
// ---------------------------------------------------------------------------

/// Allow, ask and deny lists of one layer (workspace, task, or the run's
/// "always" answers). Serialized as lists of rule texts.
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

/// A rule of an allow list: any rule, except one naming a risk level that
/// always asks (`Risk(high)`, `Risk(critical)`).
fn allow_rule(text: &str) -> Result<Rule, RuleError> {
    let rule = Rule::parse(text)?;
    match rule.risk_level() {
        Some(level) if level >= RiskLevel::High => Err(RuleError::RiskAllow(rule.text)),
        Some(_) | None => Ok(rule),
    }
}

impl RuleSet {
    /// Parses three lists of rule texts; the first invalid rule is the error.
    pub fn parse(allow: &[String], ask: &[String], deny: &[String]) -> Result<RuleSet, RuleError> {
        let list = |v: &[String], parse: fn(&str) -> Result<Rule, RuleError>| {
            v.iter().map(|s| parse(s)).collect::<Result<Vec<_>, _>>()
        };
        Ok(RuleSet {
            allow: list(allow, allow_rule)?,
            ask: list(ask, Rule::parse)?,
            deny: list(deny, Rule::parse)?,
        })
    }

    /// Parses three lists of rule texts, naming every rule that is not one
    /// by its place: `allow[2]` is the third text of `allow` (see
    /// [`crate::FieldError`]).
    pub fn parse_fields(
        allow: &[String],
        ask: &[String],
        deny: &[String],
    ) -> Result<RuleSet, Vec<crate::FieldError>> {
        let mut errors = Vec::new();
        let mut list = |name: &str, v: &[String]| {
            let mut rules = Vec::new();
            for (i, text) in v.iter().enumerate() {
                let parsed = if name == "allow" {
                    allow_rule(text)
                } else {
                    Rule::parse(text)
                };
                match parsed {
                    Ok(r) => rules.push(r),
                    Err(e) => errors.push(crate::FieldError::new(
                        format!("{name}[{i}]"),
                        e.to_string(),
                    )),
                }
            }
            rules
        };
        let set = RuleSet {
            allow: list("allow", allow),
            ask: list("ask", ask),
            deny: list("deny", deny),
        };
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(errors)
        }
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

/// How much a tool call can harm, for the human deciding it: shown on its
/// card and in its notification; batch approval never includes `high` or
/// `critical`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    Low,
    Medium,
    High,
    Critical,
}

impl RiskLevel {
    /// From its name (`low`, `medium`, `high`, `critical`; any case).
    pub fn parse(name: &str) -> Option<RiskLevel> {
        match name.trim().to_ascii_lowercase().as_str() {
            "low" => Some(RiskLevel::Low),
            "medium" => Some(RiskLevel::Medium),
            "high" => Some(RiskLevel::High),
            "critical" => Some(RiskLevel::Critical),
            _ => None,
        }
    }
}

/// A tool call's risk and why, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Risk {
    pub level: RiskLevel,
    pub why: String,
}

/// The risk of a tool call the rules sent to a human: what it does
/// (`req`), the always-gated category it falls in, and the rule that asked
/// (`confinement`: it leads out of the worktree).
pub fn risk_of(req: &ToolRequest, always_gated: Option<AlwaysGated>, rule: Option<&str>) -> Risk {
    let risk = |level, why: &str| Risk {
        level,
        why: why.to_owned(),
    };
    if let Some(gated) = always_gated {
        let level = match gated {
            AlwaysGated::DeleteFiles | AlwaysGated::DropTables | AlwaysGated::DestructiveShell => {
                RiskLevel::Critical
            }
            AlwaysGated::ProductionConfig
            | AlwaysGated::InstallPackages
            | AlwaysGated::SecretFiles => RiskLevel::High,
        };
        return risk(level, gated.describe());
    }
    if rule == Some(CONFINEMENT) {
        return risk(RiskLevel::High, "it reaches outside the run's worktree");
    }
    if is_dispatch_tool(&req.tool) {
        return risk(RiskLevel::Medium, "it starts a subagent");
    }
    match req.kind {
        crate::ToolKind::Delete => risk(RiskLevel::High, "deletes a file"),
        crate::ToolKind::Execute => match &req.command {
            Some(c) if known_safe(c) => risk(RiskLevel::Low, "a command known to only read"),
            Some(_) | None => risk(RiskLevel::Medium, "runs a shell command"),
        },
        crate::ToolKind::Edit | crate::ToolKind::Move => {
            risk(RiskLevel::Medium, "changes files in the run's worktree")
        }
        crate::ToolKind::Fetch => risk(RiskLevel::Medium, "reaches the network"),
        crate::ToolKind::Read | crate::ToolKind::Search | crate::ToolKind::Think => {
            risk(RiskLevel::Low, "only reads")
        }
        crate::ToolKind::SwitchMode | crate::ToolKind::Other => {
            risk(RiskLevel::Medium, "a tool Overseer cannot classify")
        }
    }
}

/// The risk of a call as [`decide`] would see it: its always-gated category
/// and whether it leads out of the worktree, found as `decide` finds them.
pub fn risk_of_call(req: &ToolRequest, worktree: &str) -> Risk {
    let gated = always_gated(req, worktree).map(|(g, _)| g);
    let leaves = req.paths.iter().any(|p| !inside(worktree, p)) || req.leaves_worktree().is_some();
    risk_of(req, gated, leaves.then_some(CONFINEMENT))
}

/// Operations a human sees every time, whatever the rules or the confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
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
    /// The snake_case name, as serialized.
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

    /// What the operation does, for the human: "deletes files", ...
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

/// The layer a rule that decided a tool call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum RuleLayer {
    /// Overseer's own: confinement, the read-only session, the defaults.
    BuiltIn,
    /// The run's own rules: its "always" answers.
    Run,
    /// The task's rules.
    Task,
    /// The workspace's rules.
    Workspace,
}

impl RuleLayer {
    /// The layer in words, as decision records and the timeline say it.
    pub fn describe(self) -> &'static str {
        match self {
            RuleLayer::BuiltIn => "built-in rule",
            RuleLayer::Run => "this run's rule, from an “always” answer",
            RuleLayer::Task => "task rule",
            RuleLayer::Workspace => "workspace rule",
        }
    }
}

/// One rule that decided a tool call, and the layer it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RuleProvenance {
    pub layer: RuleLayer,
    /// The rule's text (`Edit(src/**)`), or the built-in rule's words
    /// (`confinement`, `default: read-only kind read`, ...).
    pub rule: String,
}

/// The rules that decided a tool call, each with its layer: one, or for a
/// compound shell command allowed part by part, each part's rule (in order,
/// each once). Serialized as the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(transparent)]
pub struct Provenance(pub Vec<RuleProvenance>);

impl Provenance {
    /// One rule of one layer.
    pub fn one(layer: RuleLayer, rule: impl Into<String>) -> Provenance {
        Provenance(vec![RuleProvenance {
            layer,
            rule: rule.into(),
        }])
    }

    /// A built-in rule.
    pub fn built_in(rule: impl Into<String>) -> Provenance {
        Provenance::one(RuleLayer::BuiltIn, rule)
    }

    /// The rules' texts, as cited: `A + B` for a compound command.
    pub fn rule(&self) -> String {
        self.0
            .iter()
            .map(|r| r.rule.as_str())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// The layers in words, each once: `task rule + workspace rule`.
    pub fn layers(&self) -> String {
        let mut layers: Vec<RuleLayer> = Vec::new();
        for r in &self.0 {
            if !layers.contains(&r.layer) {
                layers.push(r.layer);
            }
        }
        layers
            .iter()
            .map(|l| l.describe())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Whether confinement decided (a path outside the worktree).
    pub fn is_confinement(&self) -> bool {
        matches!(self.0.as_slice(), [r] if r.layer == RuleLayer::BuiltIn && r.rule == CONFINEMENT)
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rule())
    }
}

/// The outcome, with the reason shown to the human and cited in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Permission {
    /// `rule`: a layer's rule (each part's for a compound command), or the
    /// built-in `default: read-only kind <kind>` or `read-only session:
    /// known-safe command`.
    Allow { rule: Provenance },
    Ask {
        reason: String,
        always_gated: Option<AlwaysGated>,
        rule: Option<String>,
    },
    /// `rule`: a layer's deny rule, or the built-in `confinement` or
    /// `read-only session`.
    Deny { rule: Provenance, reason: String },
}

/// `mcp__overseer__*`: the tools of `overseer mcp`.
pub fn is_overseer_tool(tool: &str) -> bool {
    tool.strip_prefix("mcp__overseer__")
        .is_some_and(|t| !t.is_empty() && !t.contains("__"))
}

/// True for read-only kinds: read, search, think, fetch.
pub fn is_read_only_kind(kind: crate::ToolKind) -> bool {
    kind.is_read_only()
}

fn is_edit_tool(tool: &str) -> bool {
    matches!(tool, "Edit" | "Write" | "MultiEdit" | "NotebookEdit")
}

fn is_write(req: &ToolRequest) -> bool {
    matches!(req.kind.as_str(), "edit" | "delete" | "move")
        || is_edit_tool(&req.tool)
        || matches!(req.tool.as_str(), "Delete" | "Move")
}

/// Tools that hand work to another agent (Claude Code's `Task` and
/// `Agent`): the subagent's work is not this call's to judge, and whether
/// its own tool calls come back for permission is the agent's choice.
pub fn is_dispatch_tool(tool: &str) -> bool {
    matches!(tool, "Task" | "Agent")
}

fn is_shell(req: &ToolRequest) -> bool {
    req.kind == crate::ToolKind::Execute || req.tool == "Bash"
}

/// The `rule` of a decision made by confinement: a denial of a path outside
/// the worktree as given, or a question about one that leads out once
/// resolved. An "always" answer could never apply to it.
pub const CONFINEMENT: &str = "confinement";

/// Decides a tool call; see the module docs for the order of checks.
/// `layers` in precedence order, each named: the run's "always" rules, the
/// task's, the workspace's. The decision names the rule and its layer.
pub fn decide(
    req: &ToolRequest,
    layers: &[(RuleLayer, &RuleSet)],
    mode: SessionMode,
    worktree: &str,
) -> Permission {
    if let Some(outside) = req.paths.iter().find(|p| !inside(worktree, p)) {
        let shown = if outside.starts_with('~') {
            outside.clone()
        } else {
            normalize(worktree, outside)
        };
        return Permission::Deny {
            rule: Provenance::built_in(CONFINEMENT),
            reason: format!("{shown} is outside the run's worktree {worktree}"),
        };
    }
    for (name, layer) in layers {
        if let Some(rule) = layer.deny.iter().find(|r| r.matches_any(req, worktree)) {
            return Permission::Deny {
                rule: Provenance::one(*name, rule.to_string()),
                reason: format!("denied by the rule {rule}"),
            };
        }
    }
    // Overseer's own MCP tools only ask and report (each opens its own gate
    // where it must): no question before the question.
    if is_overseer_tool(&req.tool) {
        return Permission::Allow {
            rule: Provenance::built_in(
                "default: Overseer's own tools (mcp__overseer__*) only ask and report",
            ),
        };
    }
    if mode == SessionMode::ReadOnly && is_write(req) {
        return Permission::Deny {
            rule: Provenance::built_in("read-only session"),
            reason: "read-only session: writes are denied".to_owned(),
        };
    }
    if let Some((path, leads)) = req.leaves_worktree() {
        return Permission::Ask {
            reason: format!(
                "{path} {leads}: it leaves the run's worktree {worktree} (through a symlink), so no rule can allow it"
            ),
            always_gated: None,
            rule: Some(CONFINEMENT.to_owned()),
        };
    }
    if let Some((gated, detail)) = always_gated(req, worktree) {
        return Permission::Ask {
            reason: format!("{}: {detail}", gated.describe()),
            always_gated: Some(gated),
            rule: None,
        };
    }
    // A subagent could carry a read-only session's work past what it may
    // do: starting one asks, whatever its kind (`think`) or the rules say.
    if mode == SessionMode::ReadOnly && is_dispatch_tool(&req.tool) {
        return Permission::Ask {
            reason: format!(
                "read-only session: {} starts a subagent, which could act beyond this session's limits",
                req.tool
            ),
            always_gated: None,
            rule: None,
        };
    }
    if mode == SessionMode::ReadOnly && is_shell(req) {
        return match &req.command {
            Some(c) if known_safe(c) => Permission::Allow {
                rule: Provenance::built_in("read-only session: known-safe command"),
            },
            Some(_) | None => Permission::Ask {
                reason: "read-only session: shell commands ask".to_owned(),
                always_gated: None,
                rule: None,
            },
        };
    }
    if let Some(decided) = layer_verdict(req, layers, worktree) {
        return decided;
    }
    if let Some(decided) = per_part_verdict(req, layers, worktree) {
        return decided;
    }
    if is_read_only_kind(req.kind) {
        return Permission::Allow {
            rule: Provenance::built_in(format!("default: read-only kind {}", req.kind)),
        };
    }
    let reason = if is_shell(req) {
        "shell commands ask by default".to_owned()
    } else if is_write(req) {
        "edits ask by default".to_owned()
    } else {
        format!("tools of kind {} ask by default", req.kind)
    };
    Permission::Ask {
        reason,
        always_gated: None,
        rule: None,
    }
}

/// The first layer with a matching ask or allow rule decides; within a layer
/// ask (matching any part of the call) beats allow (matching all of it).
fn layer_verdict(
    req: &ToolRequest,
    layers: &[(RuleLayer, &RuleSet)],
    worktree: &str,
) -> Option<Permission> {
    for (name, layer) in layers {
        if let Some(rule) = layer.ask.iter().find(|r| r.matches_any(req, worktree)) {
            return Some(Permission::Ask {
                reason: format!("the rule {rule} asks"),
                always_gated: None,
                rule: Some(rule.to_string()),
            });
        }
        if let Some(rule) = layer.allow.iter().find(|r| r.matches(req, worktree)) {
            return Some(Permission::Allow {
                rule: Provenance::one(*name, rule.to_string()),
            });
        }
    }
    None
}

/// A compound shell command no single rule covers is allowed when each of
/// its parts is allowed on its own (`cargo test 2>&1 | tail -5` with
/// `Bash(cargo test:*)` and `Bash(tail:*)`). Commands with substitutions or
/// that do not parse are never allowed this way.
fn per_part_verdict(
    req: &ToolRequest,
    layers: &[(RuleLayer, &RuleSet)],
    worktree: &str,
) -> Option<Permission> {
    let command = req.command.as_deref().filter(|_| is_shell(req))?;
    if has_substitution(command) {
        return None;
    }
    let parts = split_compound(command).filter(|p| p.len() > 1)?;
    let mut used: Vec<RuleProvenance> = Vec::new();
    for part in parts {
        let sub = ToolRequest {
            command: Some(part),
            ..req.clone()
        };
        match layer_verdict(&sub, layers, worktree)? {
            Permission::Allow { rule } => {
                for r in rule.0 {
                    if !used.contains(&r) {
                        used.push(r);
                    }
                }
            }
            ask @ Permission::Ask { .. } => return Some(ask),
            deny @ Permission::Deny { .. } => return Some(deny),
        }
    }
    Some(Permission::Allow {
        rule: Provenance(used),
    })
}

/// Whether "always" may be offered for this call: the rule it would add
/// must cover this call and its like, never a whole tool by accident. Not
/// for a shell call without a command (the rule would be bare `Bash`: every
/// command), nor for a tool name that covers more than one tool
/// (`mcp__server`, `mcp__server__*`: the agent chose the name).
pub fn always_offerable(req: &ToolRequest) -> bool {
    if is_shell(req) {
        return req.command.as_deref().is_some_and(|c| !c.trim().is_empty());
    }
    match req.tool.strip_prefix("mcp__") {
        Some(rest) => rest.split_once("__").is_some_and(|(server, tool)| {
            !server.is_empty() && !tool.is_empty() && !tool.contains('*')
        }),
        None => true,
    }
}

/// The rule a human's "always" answer adds for the run: `Bash(<exact
/// command>)` for shell, `Edit(<path relative to the worktree>)` for a
/// file-editing tool touching one path (glob characters in the path escaped,
/// so `app/[id]/page.tsx` means that file), otherwise the bare tool name.
pub fn always_rule(req: &ToolRequest, worktree: &str) -> Rule {
    let command = req.command.as_deref().map(str::trim).unwrap_or("");
    let text = match req.paths.as_slice() {
        // A command ending in `:*` would read as a prefix rule; a trailing
        // `;` changes nothing in the shell and keeps the rule exact.
        _ if is_shell(req) && command.ends_with(":*") => format!("Bash({command};)"),
        _ if is_shell(req) && !command.is_empty() => format!("Bash({command})"),
        // The file the edit really touched, once resolved.
        [_] if is_edit_tool(&req.tool) => {
            let path = req.effective(0, worktree);
            format!(
                "Edit({})",
                glob::Pattern::escape(&relative(worktree, &path))
            )
        }
        _ if valid_tool_name(&req.tool) => req.tool.clone(),
        // The agent chose the name: one written as a rule (`Bash(curl:*)`)
        // is not read as one; the rule names that tool as it is.
        _ => return bare_tool(req),
    };
    Rule::parse(&text).unwrap_or_else(|_| bare_tool(req))
}

/// A rule for the request's tool name taken literally, never parsed.
fn bare_tool(req: &ToolRequest) -> Rule {
    Rule {
        text: req.tool.clone(),
        tool: req.tool.clone(),
        spec: None,
    }
}

// ---------------------------------------------------------------------------
// Always-gated operations
// ---------------------------------------------------------------------------

/// Whether the request is always gated, with a human-readable detail
/// (`rm -rf build: recursive delete`).
///
/// - Paths: a delete (kind `delete` or tool `Delete`); any path that is a
///   secret file, whatever the kind (reading one would send it to the model
///   provider); a write to production configuration.
/// - Shell commands: see [`shell_gated`] — deletes, destructive commands, SQL
///   that drops or empties tables, package installs, secret files named
///   anywhere in the command, writes to production configuration. Wrappers
///   (`sudo`, `env`, `xargs`, `nohup`, `time`, `timeout`, `bash -c`, `eval`,
///   `ssh host cmd`) are looked through; `sudo` with nothing more specific is
///   destructive in itself.
///
/// Deliberately *not* gated (ordinary work): `npm test`, `cargo build`,
/// `git commit`, `git push` without force, `ls -la`, plain `npm install` /
/// `npm ci` / `yarn install` (they install what the lockfile pins), reading
/// production configuration, `.env.example` / `.env.sample` /
/// `.env.template` / `.env.dist` / `.env.defaults`, `.envrc.example`,
/// `git rm --cached` (the file stays), `git restore --staged` (only
/// unstages). Running a script (`bash deploy.sh`) is not inspected.
///
/// Deliberately conservative (asks although harmless): SQL keywords inside
/// any quoted text (`grep "drop table" docs/`), secret-looking words anywhere
/// in a command (`echo '*.pem' >> .gitignore`), `prod` as a file-name word in
/// source code (`src/prod.rs`).
pub fn always_gated(req: &ToolRequest, worktree: &str) -> Option<(AlwaysGated, String)> {
    if req.kind == crate::ToolKind::Delete || req.tool == "Delete" {
        return Some((
            AlwaysGated::DeleteFiles,
            format!("deletes {}", req.paths.join(", ")),
        ));
    }
    // Judged relative to the worktree so that the worktree's own location
    // (`/srv/prod-app/...`, `~/.aws/...`) does not gate every call; both as
    // given and where a symlink leads (`notes.txt -> .env`).
    let paths = req.relative_paths(worktree);
    for p in &paths {
        if is_secret(p) {
            return Some((AlwaysGated::SecretFiles, format!("{p}: a secret file")));
        }
    }
    if is_write(req) {
        for p in &paths {
            if is_production(p) {
                return Some((
                    AlwaysGated::ProductionConfig,
                    format!("{p}: production configuration"),
                ));
            }
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
    let path = path.trim_end_matches('/');
    path.rsplit('/').next().unwrap_or(path)
}

/// Secret files: `.env` and `.env.*` (not examples/samples/templates),
/// `.envrc` (direnv files usually export credentials), keys (`*.pem`,
/// `*.key`, `*.p12`, `*.pfx`, `*.jks`, `*.keystore`, `id_rsa`, `id_ed25519`,
/// `id_ecdsa`, `id_dsa`, not `.pub`), credential files (`credentials`,
/// `credentials.json`, `secrets.*`, `.npmrc`, `.pypirc`, `.netrc`, `.pgpass`,
/// `.git-credentials`), and anything under `.ssh`, `.aws`, `.gnupg`, `.kube`,
/// `.azure`.
fn is_secret(path: &str) -> bool {
    let name = file_name(path).to_ascii_lowercase();
    let example = [
        ".example",
        ".sample",
        ".template",
        ".dist",
        ".defaults",
        ".tmpl",
    ]
    .iter()
    .any(|s| name.ends_with(s));
    let env = name == ".env" || name == ".envrc" || (name.starts_with(".env.") && !example);
    let key_file = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"]
        .iter()
        .any(|ext| name.ends_with(ext));
    let ssh_key = matches!(
        name.as_str(),
        "id_rsa" | "id_ed25519" | "id_ecdsa" | "id_dsa"
    );
    let creds = matches!(
        name.as_str(),
        "credentials"
            | "credentials.json"
            | ".npmrc"
            | ".pypirc"
            | ".netrc"
            | ".pgpass"
            | ".git-credentials"
    ) || (name.starts_with("secrets.") && !example);
    let dirs = path
        .split('/')
        .any(|c| matches!(c, ".ssh" | ".aws" | ".gnupg" | ".kube" | ".azure"));
    env || key_file || ssh_key || creds || dirs
}

/// Production configuration: a folder or file-name word `prod` or
/// `production` (`config/production.rb`, `docker-compose.prod.yml`,
/// `k8s/prod/deploy.yaml`, `terraform/prod/main.tf`). Not `products/`.
fn is_production(path: &str) -> bool {
    path.split(['/', '.', '-', '_'])
        .any(|w| w.eq_ignore_ascii_case("prod") || w.eq_ignore_ascii_case("production"))
}

/// Where a word redirects output to, if it is a redirection: `>`, `>>`,
/// `2>`, `&>`, `>|` (the target is the next word), or `>file`, `2>>file`,
/// `x>file` (a `>` inside a word: shlex keeps it there; a quoted `>` is
/// counted too, which only errs on the side of asking).
fn redirect_target<'a>(w: &'a str, next: Option<&'a String>) -> Option<&'a str> {
    let at = w.rfind('>')?;
    let target = w[at + 1..].trim_start_matches('|');
    if target.is_empty() {
        next.map(String::as_str)
    } else if target.starts_with('&') {
        // `2>&1`: a file descriptor.
        None
    } else {
        Some(target)
    }
}

/// A shell command's always-gated category: the first part (see
/// [`split_compound`]) that is gated decides. `depth` counts `bash -c`
/// nesting.
fn shell_gated(command: &str, depth: u8) -> Option<(AlwaysGated, String)> {
    if depth > MAX_DEPTH {
        return Some((
            AlwaysGated::DestructiveShell,
            "shells nested too deep to inspect".to_owned(),
        ));
    }
    let lower = command.to_ascii_lowercase();
    if lower.contains(":(){") || lower.contains(":() {") {
        return Some((AlwaysGated::DestructiveShell, "a fork bomb".to_owned()));
    }
    if let Some(why) = sql_gated(&lower) {
        return Some((
            AlwaysGated::DropTables,
            format!("{}: {why}", command.trim()),
        ));
    }
    let mut as_root = None;
    for part in parts_of(command) {
        let raw = words_loose(&part);
        let at = |why: &str| format!("{part}: {why}");
        for (i, w) in raw.iter().enumerate() {
            let Some(t) = redirect_target(w, raw.get(i + 1)) else {
                continue;
            };
            if t == "/dev/null" {
                continue;
            }
            if is_secret(t) {
                return Some((AlwaysGated::SecretFiles, at(&format!("writes {t}"))));
            }
            if is_production(t) {
                return Some((AlwaysGated::ProductionConfig, at(&format!("writes {t}"))));
            }
            if t.starts_with("/dev/sd") || t.starts_with("/dev/nvme") || t.starts_with("/dev/disk")
            {
                return Some((AlwaysGated::DestructiveShell, at(&format!("writes {t}"))));
            }
        }
        let (w, root) = unwrap_words(raw);
        if root && as_root.is_none() {
            as_root = Some(at("runs as root"));
        }
        let Some(first) = w.first() else {
            continue;
        };
        let prog = basename(first);
        let args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
        for inner in inner_commands(&w) {
            if let Some(found) = shell_gated(&inner, depth + 1) {
                return Some(found);
            }
        }
        if SHELLS.contains(&prog)
            && args.iter().all(|a| a.starts_with('-'))
            && !args.iter().any(|a| matches!(*a, "--version" | "--help"))
        {
            return Some((
                AlwaysGated::DestructiveShell,
                at("runs commands from its input, which cannot be inspected"),
            ));
        }
        if let Some((gated, why)) = command_gated(prog, &args) {
            return Some((gated, at(why)));
        }
        for a in &args {
            let value = a.split_once('=').map_or(*a, |(_, v)| v);
            if is_secret(a) || is_secret(value) {
                return Some((AlwaysGated::SecretFiles, at(&format!("uses {a}"))));
            }
        }
    }
    as_root.map(|detail| (AlwaysGated::DestructiveShell, detail))
}

/// SQL (or database commands) that drop or empty tables, anywhere in the
/// command (`psql -c "..."`, `sqlite3 db "..."`, `mysql -e "..."`).
/// `lower` is the lowercased command.
fn sql_gated(lower: &str) -> Option<&'static str> {
    let flat = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    for (needle, why) in [
        ("drop table", "drops a table"),
        ("drop database", "drops a database"),
        ("drop schema", "drops a schema"),
        ("truncate table", "empties a table"),
        ("dropdatabase(", "drops a database"),
        (".drop()", "drops a collection"),
        ("db:drop", "drops the database"),
        ("db:reset", "resets the database"),
        ("migrate reset", "resets the database"),
    ] {
        if flat.contains(needle) {
            return Some(why);
        }
    }
    // `DELETE FROM t` without a WHERE in the same statement.
    let mut rest = flat.as_str();
    while let Some(i) = rest.find("delete from") {
        let after = &rest[i + "delete from".len()..];
        let end = after
            .find([';', '"', '\'', '&', '|', '\n'])
            .unwrap_or(after.len());
        if !after[..end].split_whitespace().any(|w| w == "where") {
            return Some("deletes every row of a table");
        }
        rest = after;
    }
    let tokens: Vec<&str> = flat
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .collect();
    if tokens
        .iter()
        .any(|w| matches!(*w, "flushall" | "flushdb" | "dropdb"))
    {
        return Some("empties or drops a database");
    }
    None
}

/// Whether a short-option cluster (`-rf`) or a long option names a flag.
fn has_flag(args: &[&str], short: char, long: &str) -> bool {
    args.iter().any(|a| {
        *a == long || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(short))
    })
}

/// The category of one simple command (wrappers already taken off).
fn command_gated(prog: &str, args: &[&str]) -> Option<(AlwaysGated, &'static str)> {
    use AlwaysGated::{
        DeleteFiles, DestructiveShell, InstallPackages, ProductionConfig, SecretFiles,
    };
    let first_word = args.iter().find(|a| !a.starts_with('-')).copied();
    let install = |yes: bool| yes.then_some((InstallPackages, "installs packages"));
    match prog {
        "rm" => Some(
            if has_flag(args, 'r', "--recursive") || has_flag(args, 'R', "--recursive") {
                (DestructiveShell, "recursive delete")
            } else {
                (DeleteFiles, "deletes files")
            },
        ),
        "unlink" | "rmdir" | "shred" | "srm" => Some((DeleteFiles, "deletes files")),
        "find" => {
            let deletes = args.contains(&"-delete")
                || args
                    .iter()
                    .skip_while(|a| !(a.starts_with("-exec") || a.starts_with("-ok")))
                    .nth(1)
                    .is_some_and(|p| matches!(basename(p), "rm" | "shred" | "unlink" | "rmdir"));
            deletes.then_some((DeleteFiles, "deletes the files it finds"))
        }
        "rsync" => args
            .iter()
            .any(|a| a.starts_with("--delete") || *a == "--remove-source-files")
            .then_some((DeleteFiles, "deletes files")),
        "dd" | "wipefs" | "fdisk" | "sfdisk" | "parted" | "mke2fs" => {
            Some((DestructiveShell, "writes a disk"))
        }
        p if p.starts_with("mkfs") => Some((DestructiveShell, "formats a disk")),
        "truncate" => Some((DestructiveShell, "truncates files")),
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            Some((DestructiveShell, "stops the machine"))
        }
        "chmod" | "chown" | "chgrp" => has_flag(args, 'R', "--recursive")
            .then_some((DestructiveShell, "recursive permission change")),
        "crontab" => {
            has_flag(args, 'r', "--remove").then_some((DestructiveShell, "removes the crontab"))
        }
        "git" => git_gated(args),
        "apt" | "apt-get" | "aptitude" | "dnf" | "yum" | "zypper" | "apk" | "brew" | "snap"
        | "port" | "choco" | "winget" | "flatpak" | "pkg" => {
            install(matches!(first_word, Some("install" | "add" | "reinstall")))
        }
        "pacman" | "yay" | "paru" => install(
            args.iter()
                .any(|a| a.starts_with("-S") && !a[2..].contains(['s', 'i', 'c', 'l', 'g', 'p'])),
        ),
        // `npm install` / `npm ci` alone install what the lockfile pins: not
        // gated. Naming a package adds a dependency: gated.
        "npm" | "pnpm" | "bun" => match args.first() {
            Some(&("install" | "i" | "in" | "add")) => {
                install(args[1..].iter().any(|a| !a.starts_with('-')))
            }
            _ => None,
        },
        "yarn" => install(matches!(args, ["add", ..] | ["global", "add", ..])),
        "pip" | "pip3" | "pipx" | "gem" | "conda" | "mamba" | "micromamba" => {
            install(first_word == Some("install"))
        }
        "uv" => install(matches!(
            args,
            ["add", ..] | ["pip", "install", ..] | ["tool", "install", ..]
        )),
        "cargo" => install(matches!(first_word, Some("install" | "add"))),
        "go" => install(matches!(first_word, Some("install" | "get"))),
        "poetry" | "bundle" => install(first_word == Some("add")),
        "composer" => install(first_word == Some("require")),
        "dotnet" => install(matches!(
            args,
            ["add", _, "package", ..] | ["add", "package", ..]
        )),
        p if p.starts_with("python") || p == "py" => install(
            args.windows(3)
                .any(|w| w[0] == "-m" && w[1].starts_with("pip") && w[2] == "install"),
        ),
        "tee" | "cp" | "mv" | "install" | "ln" | "scp" => {
            let targets: Vec<&str> = if prog == "tee" {
                args.iter()
                    .filter(|a| !a.starts_with('-'))
                    .copied()
                    .collect()
            } else {
                args.iter()
                    .rfind(|a| !a.starts_with('-'))
                    .copied()
                    .into_iter()
                    .collect()
            };
            if targets.iter().any(|t| is_secret(t)) {
                Some((SecretFiles, "writes a secret file"))
            } else if targets.iter().any(|t| is_production(t)) {
                Some((ProductionConfig, "writes production configuration"))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn git_gated(args: &[&str]) -> Option<(AlwaysGated, &'static str)> {
    use AlwaysGated::{DeleteFiles, DestructiveShell};
    // Skip global options (`-C dir`, `-c key=value`, `--no-pager`).
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if matches!(
            *a,
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
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
        "push" => {
            let force = has_flag(rest, 'f', "--force")
                || rest
                    .iter()
                    .any(|a| a.starts_with("--force-with-lease") || *a == "--force-if-includes")
                || rest.iter().any(|a| a.starts_with('+'));
            let delete = has_flag(rest, 'd', "--delete")
                || has("--mirror")
                || has("--prune")
                || rest.iter().any(|a| a.starts_with(':') && a.len() > 1);
            if force {
                Some((DestructiveShell, "force push"))
            } else if delete {
                Some((DestructiveShell, "deletes remote branches"))
            } else {
                None
            }
        }
        "reset" => has("--hard").then_some((DestructiveShell, "discards uncommitted work")),
        "clean" => {
            has_flag(rest, 'f', "--force").then_some((DeleteFiles, "deletes untracked files"))
        }
        "rm" => (!has("--cached")).then_some((DeleteFiles, "deletes files")),
        "checkout" => (has(".") || has("--") || has_flag(rest, 'f', "--force"))
            .then_some((DestructiveShell, "discards uncommitted changes")),
        "restore" => {
            let staged_only = (has("--staged") || has_flag(rest, 'S', "--staged"))
                && !(has("--worktree") || has_flag(rest, 'W', "--worktree"));
            (!staged_only).then_some((DestructiveShell, "discards uncommitted changes"))
        }
        "switch" => (has("--discard-changes") || has_flag(rest, 'f', "--force"))
            .then_some((DestructiveShell, "discards uncommitted changes")),
        "branch" => (has_flag(rest, 'D', "-D")
            || (has_flag(rest, 'd', "--delete") && has_flag(rest, 'f', "--force")))
        .then_some((DestructiveShell, "force-deletes a branch")),
        "filter-branch" | "filter-repo" => Some((DestructiveShell, "rewrites history")),
        "stash" => matches!(rest.first(), Some(&("drop" | "clear")))
            .then_some((DestructiveShell, "drops stashed work")),
        _ => None,
    }
}
