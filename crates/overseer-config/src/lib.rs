//! The user's configuration: `overseer.toml` in the config dir.
//!
//! ```toml
//! abort_timeout_seconds = 5   # SIGTERM, wait this long, then SIGKILL
//! auto_advance = false        # merge without review when every sensor passes
//!
//! [stages.docs]               # per-stage override of auto_advance
//! auto_advance = true
//!
//! [limits]                    # every run's limits (defaults sized from the machine:
//! pids_max = 1024             #   512 per CPU, 1,024 to 16,384; memory_max half the
//! memory_max = "8G"           #   RAM (at least 2G), memory_high 3/4 of it; cpu_weight
//! cpu_weight = 100            #   100 among runs). See docs/security.md.
//!
//! [disk]                      # the data dir's filesystem (docs/security.md)
//! floor = "256M"              # runs pause below this much free space
//! reserve = "32M"             # kept for the engine's own records when full
//!
//! [supervision]               # defaults for `overseer supervisor configure`
//! model = "llama3.1"          # with base_url: an OpenAI-compatible endpoint
//! base_url = "http://127.0.0.1:11434/v1"
//! max_reorient_attempts = 3
//! timeout_seconds = 30
//! always_supervise = false
//! grace_seconds = 10          # an autonomous decision waits this long (0: at once)
//!
//! [agents.claude]             # an agent profile: how to launch an ACP agent
//! command = "claude-agent-acp"
//! args = []
//! env = { ANTHROPIC_API_KEY = "sk-..." }
//! pass_env = ["ANTHROPIC_BASE_URL"]  # copied from Overseer's own environment
//! mode = "default"            # the supervised mode, set after every session/new
//! plan = "auto"               # auto | mode | prompt | skip
//! read_paths = []             # extra dirs readable in the sandbox
//! write_paths = []            # extra dirs writable in the sandbox
//! network = "private"         # own network, outbound only; "none"; "host" (loopback too)
//! allow_uncontained = false   # run even where bubblewrap cannot contain it
//! limits = { memory_max = "16G" }  # this profile's runs, over [limits]
//!
//! [workspaces.web]            # a registered workspace, by its name
//! limits = { pids_max = 4096 }  # its runs, over [limits]; a profile's go over these
//! ```
//!
//! A missing file means the defaults; a broken one is an error that names the
//! file and the line, never a silent fallback. Profiles `demo` (our scripted
//! agent), `claude`, `codex` and `gemini` are built in unless the file defines
//! its own of that name.

pub mod disk;
pub mod paths;
pub mod webhooks;

pub use paths::Paths;

use overseer_core::agent::{check_supervised_mode, PlanStrategy};
use overseer_core::supervision::check_env_name;
use overseer_core::FieldError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const CONFIG_FILE: &str = "overseer.toml";
pub const DEMO_AGENT: &str = "demo";
const DEMO_AGENT_BIN: &str = "overseer-demo-agent";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {message}; fix the file (see README, Agents) and retry")]
    Invalid { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no agent profile named '{name}' (known: {known}); add [agents.{name}] to {path}")]
    UnknownAgent {
        name: String,
        known: String,
        path: PathBuf,
    },
}

/// How to launch one ACP agent, and how to supervise it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentProfile {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// The agent's whole environment besides a minimal base (PATH, HOME, ...):
    /// agents do not inherit the app's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables copied from Overseer's own environment when set there (an
    /// API key the user exports, a base URL), so keys need not be in the file.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Of these variables, one must be set (in `env` or passed) for the agent
    /// to work; `overseer agents list` says which is missing.
    #[serde(default)]
    pub key_env: Vec<String>,
    /// The session mode the agent works in: Overseer sets it after every
    /// `session/new` or `session/resume`, and any other mode the agent
    /// switches to (but the planning mode while planning) stops the run.
    /// None: the agent offers no modes.
    #[serde(default)]
    pub mode: Option<String>,
    /// Let `mode` be one known to act without asking (`auto`, `acceptEdits`,
    /// ...): the user's knowing choice, never a default.
    #[serde(default)]
    pub allow_unsupervised: bool,
    /// How runs of this agent plan.
    #[serde(default)]
    pub plan: PlanStrategy,
    /// The agent's planning mode, used when `plan` is `auto` or `mode`.
    #[serde(default = "default_plan_mode")]
    pub plan_mode: String,
    /// Extra directories the agent (and the run's sensors) may read inside
    /// the sandbox (absolute paths; never Overseer's data or config dir).
    #[serde(default)]
    pub read_paths: Vec<PathBuf>,
    /// Extra directories the agent may write (absolute paths).
    #[serde(default)]
    pub write_paths: Vec<PathBuf>,
    /// The sandbox's network: `private` (the default: outbound network,
    /// this machine's loopback out of reach), `none`, or `host`.
    #[serde(default)]
    pub network: overseer_contain::net::NetworkMode,
    /// Run this profile's agents even where the machine cannot contain them
    /// (no bubblewrap, user namespaces forbidden): the user's knowing
    /// choice, never a default. Uncontained, an agent can reach everything
    /// the user can, Overseer's key and socket included.
    #[serde(default)]
    pub allow_uncontained: bool,
    /// This profile's runs' resource limits, over `[limits]` and the
    /// machine's defaults (`contain::limits`).
    #[serde(default, skip_serializing_if = "is_default_limits")]
    pub limits: overseer_contain::LimitsConfig,
}

fn is_default_limits(l: &overseer_contain::LimitsConfig) -> bool {
    *l == overseer_contain::LimitsConfig::default()
}

fn default_plan_mode() -> String {
    "plan".to_owned()
}

impl AgentProfile {
    fn builtin(
        command: &str,
        args: &[&str],
        mode: &str,
        pass_env: &[&str],
        key_env: &[&str],
    ) -> Self {
        let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        AgentProfile {
            command: command.to_owned(),
            args: strings(args),
            env: BTreeMap::new(),
            pass_env: strings(pass_env),
            key_env: strings(key_env),
            mode: Some(mode.to_owned()),
            allow_unsupervised: false,
            plan: PlanStrategy::Auto,
            plan_mode: default_plan_mode(),
            read_paths: Vec::new(),
            write_paths: Vec::new(),
            network: overseer_contain::net::NetworkMode::Private,
            allow_uncontained: false,
            limits: overseer_contain::LimitsConfig::default(),
        }
    }

    /// Checks the profile: every setting in error by its path inside it
    /// (`command`, `mode`, `pass_env[1]`, `key_env[0]`; see
    /// [`FieldError`]). `pass_env` and `key_env` name variables: a key
    /// pasted there instead is refused (keys go in `env`, or are exported).
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        if self.command.trim().is_empty() {
            errors.push(FieldError::new(
                "command",
                "empty command: give the program that speaks ACP, e.g. claude-agent-acp",
            ));
        }
        if let Some(Err(why)) = self
            .mode
            .as_deref()
            .map(|m| check_supervised_mode(m, self.allow_unsupervised))
        {
            errors.push(FieldError::new("mode", why));
        }
        for (list, names) in [("pass_env", &self.pass_env), ("key_env", &self.key_env)] {
            for (i, name) in names.iter().enumerate() {
                if let Err(why) = check_env_name(name) {
                    errors.push(FieldError::new(format!("{list}[{i}]"), why));
                }
            }
        }
        if let Err(why) = overseer_contain::RunLimits::for_machine().with(&self.limits) {
            errors.push(FieldError::new("limits", why));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The environment the agent gets from its profile: `env`, then each
    /// `pass_env` variable that is set in `host` (and not in `env`).
    pub fn environment(&self, host: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for name in &self.pass_env {
            if self.env.contains_key(name) {
                continue;
            }
            if let Some(v) = host(name) {
                out.push((name.clone(), v));
            }
        }
        out
    }
}

/// The profiles Overseer knows without a config file. Claude runs in
/// `default` (asks before edits and commands; claude-agent-acp 0.101 starts
/// sessions in `auto`, so setting it matters), Codex in `read-only` (every
/// write is an escalation we see), Gemini in `default`.
pub fn builtin_profiles() -> BTreeMap<String, AgentProfile> {
    let mut profiles = BTreeMap::new();
    profiles.insert(
        "claude".to_owned(),
        AgentProfile::builtin(
            "claude-agent-acp",
            &[],
            "default",
            &[
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                "CLAUDE_CODE_OAUTH_TOKEN",
            ],
            &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
        ),
    );
    profiles.insert(
        "codex".to_owned(),
        AgentProfile::builtin(
            "codex-acp",
            &[],
            "read-only",
            &["OPENAI_API_KEY", "CODEX_HOME"],
            &["OPENAI_API_KEY"],
        ),
    );
    profiles.insert(
        "gemini".to_owned(),
        AgentProfile::builtin(
            "gemini",
            &["--acp"],
            "default",
            &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        ),
    );
    profiles
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageConfig {
    pub auto_advance: Option<bool>,
}

/// `[workspaces.NAME]`: what applies to one registered workspace's runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// Its runs' resource limits, over `[limits]`; a profile's `limits` go
    /// over these (field by field: what a later layer sets wins).
    #[serde(default, skip_serializing_if = "is_default_limits")]
    pub limits: overseer_contain::LimitsConfig,
}

/// `[supervision]`: the defaults a new supervisor policy starts from (the
/// verdicts document's configuration). The supervisor stays off until a
/// policy enables it for a workspace or task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionConfig {
    /// Model of the OpenAI-compatible evaluator.
    pub model: Option<String>,
    /// Base URL of the OpenAI-compatible endpoint, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// Environment variable holding the endpoint's API key.
    pub api_key_env: Option<String>,
    /// An external reviewer command (JSON in, verdict out) instead of a model.
    pub command: Option<String>,
    pub max_reorient_attempts: Option<u32>,
    pub timeout_seconds: Option<u64>,
    pub always_supervise: Option<bool>,
    pub pause_timeout_seconds: Option<u64>,
    /// Seconds an autonomous supervisor's decision waits before it takes
    /// effect (a human may decide otherwise meanwhile); 0: at once.
    pub grace_seconds: Option<u64>,
    /// Environment variables an evaluator may use (a policy's `api_key_env`
    /// may name one; a command evaluator gets them), besides `api_key_env`
    /// above and any variable named `OVERSEER_EVAL_...`. An evaluator never
    /// gets the engine's other variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

impl SupervisionConfig {
    /// The variables the owner named as secrets an evaluator may use:
    /// `secrets` and `api_key_env` (any `OVERSEER_EVAL_...` variable too,
    /// by its name alone).
    pub fn evaluator_secrets(&self) -> Vec<String> {
        self.secrets
            .iter()
            .chain(self.api_key_env.iter())
            .cloned()
            .collect()
    }

    /// A (disabled) policy with these defaults.
    pub fn base_policy(&self) -> overseer_core::supervision::SupervisorPolicy {
        use overseer_core::supervision::{EvaluatorConfig, SupervisorPolicy};
        let evaluator = match (&self.command, &self.base_url, &self.model) {
            (Some(c), _, _) => EvaluatorConfig::Command {
                command: c.clone(),
                args: Vec::new(),
            },
            (None, Some(url), Some(model)) => EvaluatorConfig::Openai {
                base_url: url.clone(),
                model: model.clone(),
                api_key_env: self.api_key_env.clone(),
            },
            _ => EvaluatorConfig::Rules,
        };
        let mut p = SupervisorPolicy {
            evaluator,
            ..SupervisorPolicy::default()
        };
        if let Some(n) = self.max_reorient_attempts {
            p.max_reorient_attempts = n;
        }
        if let Some(n) = self.timeout_seconds {
            p.timeout_seconds = n;
        }
        if let Some(b) = self.always_supervise {
            p.always_supervise = b;
        }
        if let Some(n) = self.pause_timeout_seconds {
            p.pause_timeout_seconds = n;
        }
        if let Some(n) = self.grace_seconds {
            p.grace_seconds = n;
        }
        p
    }
}

/// `[questions]`: the expiry of an external session's questions (an MCP
/// `ask_user`) when neither the asker nor its task set one (one day unless
/// set), and of a launched run's when its task sets none (only when set).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionsConfig {
    /// Seconds (default one day); `0` makes them wait for the user.
    pub expiry_seconds: Option<u64>,
}

impl QuestionsConfig {
    pub fn is_default(&self) -> bool {
        *self == QuestionsConfig::default()
    }

    /// The expiry the owner set for every question, `None` when unset or
    /// `0` (wait for the user): what a launched run's question without its
    /// task's expiry gets (its agent gives none; unset, it waits, as a plan
    /// or a tool call does).
    pub fn set_expiry(&self) -> Option<u64> {
        self.expiry_seconds.filter(|n| *n > 0)
    }

    /// The expiry to use, `None` to wait for the user.
    pub fn expiry(&self) -> Option<u64> {
        match self.expiry_seconds {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(overseer_core::questions::DEFAULT_EXPIRY_SECONDS),
        }
    }
}

/// `[notifications]`: how loudly each kind of inbox item is told when the
/// user chose nothing in Settings (`[notifications.urgency]`: `question`,
/// `info`, each `critical`, `normal`, `low` or `silent`; `blocking` is
/// always `critical`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationsConfig {
    #[serde(default)]
    pub urgency: overseer_core::urgency::UrgencySettings,
}

impl NotificationsConfig {
    pub fn is_default(&self) -> bool {
        *self == NotificationsConfig::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_abort_timeout")]
    pub abort_timeout_seconds: u64,
    #[serde(default)]
    pub auto_advance: bool,
    #[serde(default)]
    pub stages: BTreeMap<String, StageConfig>,
    #[serde(default)]
    pub agents: BTreeMap<String, AgentProfile>,
    /// Settings of registered workspaces, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workspaces: BTreeMap<String, WorkspaceConfig>,
    #[serde(default)]
    pub supervision: SupervisionConfig,
    /// Every run's resource limits, over the machine's defaults
    /// (`contain::limits`); a profile's `limits` go over these.
    #[serde(default, skip_serializing_if = "is_default_limits")]
    pub limits: overseer_contain::LimitsConfig,
    /// The free-space floor and the engine's reserve on the data dir's
    /// filesystem (`disk`).
    #[serde(default, skip_serializing_if = "disk::DiskConfig::is_default")]
    pub disk: disk::DiskConfig,
    /// Webhook delivery: the receiver's timeout and the retry schedule
    /// (`webhooks`).
    #[serde(default, skip_serializing_if = "webhooks::WebhooksConfig::is_default")]
    pub webhooks: webhooks::WebhooksConfig,
    /// How long agents' questions wait when neither the asker nor the task
    /// set an expiry (`questions`).
    #[serde(default, skip_serializing_if = "QuestionsConfig::is_default")]
    pub questions: QuestionsConfig,
    /// How loudly each kind of inbox item is told (`notifications`).
    #[serde(default, skip_serializing_if = "NotificationsConfig::is_default")]
    pub notifications: NotificationsConfig,
    #[serde(skip)]
    path: PathBuf,
}

fn default_abort_timeout() -> u64 {
    5
}

impl Config {
    /// Reads `overseer.toml` from `config_dir`; defaults when it is absent.
    pub fn load(config_dir: &Path) -> Result<Config, ConfigError> {
        let path = config_dir.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(ConfigError::Io { path, source }),
        };
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: PathBuf) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.clone(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        if config.abort_timeout_seconds == 0 || config.abort_timeout_seconds > 600 {
            return Err(ConfigError::Invalid {
                path,
                message: format!(
                    "abort_timeout_seconds = {} is out of range (1 to 600)",
                    config.abort_timeout_seconds
                ),
            });
        }
        let mut errors = Vec::new();
        if let Err(why) = overseer_contain::RunLimits::for_machine().with(&config.limits) {
            errors.push(FieldError::new("limits", why));
        }
        for (name, w) in &config.workspaces {
            if let Err(why) = overseer_contain::RunLimits::for_machine().with(&w.limits) {
                errors.push(FieldError::new(format!("workspaces.{name}.limits"), why));
            }
        }
        if let Err(e) = config.notifications.urgency.validate() {
            errors.extend(overseer_core::error::under("notifications.urgency", e));
        }
        for (name, p) in &config.agents {
            if let Err(e) = p.validate() {
                errors.extend(overseer_core::error::under(&format!("agents.{name}"), e));
            }
        }
        if !errors.is_empty() {
            let message = errors
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ConfigError::Invalid { path, message });
        }
        config.path = path;
        Ok(config)
    }

    pub fn abort_timeout(&self) -> Duration {
        Duration::from_secs(self.abort_timeout_seconds)
    }

    /// Auto-advance for `stage`: the workspace's setting, else the stage
    /// override, else the global default (off unless the user turned it on).
    pub fn auto_advance(&self, stage: &str, workspace: Option<bool>) -> bool {
        workspace
            .or_else(|| self.stages.get(stage).and_then(|s| s.auto_advance))
            .unwrap_or(self.auto_advance)
    }

    /// The profile called `name`: the file's, else a built-in one.
    pub fn profile(&self, name: &str) -> Result<AgentProfile, ConfigError> {
        self.profiles()
            .remove(name)
            .ok_or_else(|| ConfigError::UnknownAgent {
                name: name.to_owned(),
                known: self.profiles().into_keys().collect::<Vec<_>>().join(", "),
                path: self.path.clone(),
            })
    }

    /// The limits of a run in `workspace` of `profile` (named `name`): the
    /// machine's defaults, then `[limits]`, then the workspace's, then the
    /// profile's. Err: the note the run fails with.
    pub fn run_limits(
        &self,
        workspace: &str,
        name: &str,
        profile: &AgentProfile,
    ) -> Result<overseer_contain::RunLimits, String> {
        let mut limits = overseer_contain::RunLimits::for_machine()
            .with(&self.limits)
            .map_err(|e| format!("[limits] in {}: {e}", self.path.display()))?;
        if let Some(w) = self.workspaces.get(workspace) {
            limits = limits.with(&w.limits).map_err(|e| {
                format!(
                    "[workspaces.{workspace}.limits] in {}: {e}",
                    self.path.display()
                )
            })?;
        }
        limits
            .with(&profile.limits)
            .map_err(|e| format!("[agents.{name}.limits] in {}: {e}", self.path.display()))
    }

    /// Every profile by name: the built-in ones, overridden by the file's.
    pub fn profiles(&self) -> BTreeMap<String, AgentProfile> {
        let mut all = builtin_profiles();
        all.insert(DEMO_AGENT.to_owned(), demo_profile());
        for (name, p) in &self.agents {
            all.insert(name.clone(), p.clone());
        }
        all
    }

    /// Where the config file is (or would be).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// One agent profile as Settings and `overseer agents list` show it: what
/// it runs, whether that is installed, what it still needs, and what its
/// mode lets the agent do unasked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AgentInfo {
    pub name: String,
    pub command: String,
    /// Where the command was found, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub found: Option<String>,
    /// The supervised mode (None: the agent offers no modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub mode: Option<String>,
    /// What that mode lets the agent do, in words.
    pub mode_effect: String,
    pub plan: PlanStrategy,
    /// What the profile still needs before it can run (empty: ready).
    pub needs: Vec<String>,
    /// True when `overseer.toml` defines it (else it is built in).
    pub from_file: bool,
    /// What this machine can do to contain its runs.
    pub containment: overseer_contain::Containment,
    /// Whether its runs would be contained: false when the machine cannot
    /// and the profile allows running uncontained (else it is a need).
    pub contained: bool,
    /// Its sandbox's network.
    pub network: overseer_contain::net::NetworkMode,
}

impl Config {
    /// Every profile as [`AgentInfo`]; `host` reads Overseer's environment
    /// (for `pass_env` keys and `PATH`). Containment is this machine's.
    pub fn agent_infos(&self, host: impl Fn(&str) -> Option<String>) -> Vec<AgentInfo> {
        self.agent_infos_in(host, overseer_contain::probe())
    }

    /// [`Config::agent_infos`] on a machine that contains as `containment` says.
    pub fn agent_infos_in(
        &self,
        host: impl Fn(&str) -> Option<String>,
        containment: &overseer_contain::Containment,
    ) -> Vec<AgentInfo> {
        self.profiles()
            .into_iter()
            .map(|(name, p)| {
                let found = find_command(&p.command, host("PATH").as_deref());
                let mut needs = Vec::new();
                if found.is_none() {
                    needs.push(format!(
                        "`{}` on PATH (not found){}",
                        p.command,
                        install_hint(&name)
                    ));
                }
                let env = p.environment(&host);
                if !p.key_env.is_empty()
                    && !p.key_env.iter().any(|k| env.iter().any(|(n, _)| n == k))
                {
                    needs.push(format!(
                        "an API key: set {} in Overseer's environment or in [agents.{name}] env",
                        p.key_env.join(" or ")
                    ));
                }
                let contained =
                    match overseer_contain::require_sandbox(containment, &name, p.allow_uncontained) {
                        Ok(contained) => contained,
                        Err(_) => {
                            if let overseer_contain::SandboxStatus::Missing { why, fix } =
                                &containment.sandbox
                            {
                                needs.push(format!(
                                    "a sandbox: {why}; {fix} (or set allow_uncontained = true in [agents.{name}] to run it uncontained)"
                                ));
                            }
                            false
                        }
                    };
                AgentInfo {
                    containment: containment.clone(),
                    contained,
                    network: p.network,
                    from_file: self.agents.contains_key(&name),
                    mode_effect: p.mode.as_deref().map_or_else(
                        || "no mode is set: only for agents that offer none".to_owned(),
                        |m| overseer_core::agent::describe_mode(m).to_owned(),
                    ),
                    found: found.map(|f| f.to_string_lossy().into_owned()),
                    command: p.command,
                    mode: p.mode,
                    plan: p.plan,
                    needs,
                    name,
                }
            })
            .collect()
    }
}

fn install_hint(name: &str) -> &'static str {
    match name {
        "claude" => ": npm install -g @agentclientprotocol/claude-agent-acp",
        "codex" => ": npm install -g @zed-industries/codex-acp",
        "gemini" => ": npm install -g @google/gemini-cli",
        _ => "",
    }
}

/// `command` as the process spawner would find it: a path as given, a bare
/// name on `path`.
fn find_command(command: &str, path: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = PathBuf::from(command);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(command))
        .find(|p| runnable(p))
}

/// Our scripted agent: it offers `default` and `plan` (and `auto`, which
/// only its `hijack` scenario switches to, to test the guard).
fn demo_profile() -> AgentProfile {
    AgentProfile {
        command: demo_agent_command(),
        ..AgentProfile::builtin("", &[], "default", &[], &[])
    }
}

/// The demo agent binary: beside the running executable (a cargo build puts
/// them together), else on PATH.
fn demo_agent_command() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(DEMO_AGENT_BIN)))
        .filter(|p| p.exists())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEMO_AGENT_BIN.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, PathBuf::from("/cfg/overseer.toml"))
    }

    #[test]
    fn an_empty_file_is_the_safe_defaults() {
        let c = parse("").expect("defaults");
        assert_eq!(c.abort_timeout(), Duration::from_secs(5));
        assert!(
            !c.auto_advance("default", None),
            "auto-advance is off by default"
        );
        assert!(c.profile("demo").is_ok());
    }

    #[test]
    fn profiles_and_stage_overrides_are_read() {
        let c = parse(
            r#"
            auto_advance = false
            [stages.docs]
            auto_advance = true
            [agents.gemini]
            command = "gemini"
            args = ["--experimental-acp"]
            env = { GEMINI_API_KEY = "k" }
            "#,
        )
        .expect("valid");
        let g = c.profile("gemini").expect("profile");
        assert_eq!(g.args, ["--experimental-acp"]);
        assert_eq!(g.env.get("GEMINI_API_KEY").map(String::as_str), Some("k"));
        assert!(c.auto_advance("docs", None));
        assert!(!c.auto_advance("code", None));
        assert!(
            !c.auto_advance("docs", Some(false)),
            "the workspace setting wins"
        );
    }

    #[test]
    fn mistakes_are_named_with_the_file() {
        let err = parse("abort_timout_seconds = 5").expect_err("typo");
        let msg = err.to_string();
        assert!(msg.contains("/cfg/overseer.toml"), "{msg}");
        assert!(msg.contains("abort_timout_seconds"), "{msg}");
        let err = parse("abort_timeout_seconds = 0").expect_err("range");
        assert!(err.to_string().contains("out of range"));
        let err = parse("[agents.x]\ncommand = \"\"").expect_err("empty");
        assert!(
            err.to_string().contains("agents.x.command: empty command"),
            "{err}"
        );
        let err = parse(
            "[agents.x]\ncommand = \"x\"\npass_env = [\"HOME\", \"sk-ant-api03-abcdef\"]\nkey_env = [\"MY KEY\"]",
        )
        .expect_err("a key where a name belongs");
        let msg = err.to_string();
        assert!(
            msg.contains("agents.x.pass_env[1]: this looks like a key"),
            "{msg}"
        );
        assert!(!msg.contains("sk-ant"), "never echoed: {msg}");
        assert!(
            msg.contains("agents.x.key_env[0]: 'MY KEY' is not an environment variable name"),
            "{msg}"
        );
        let err = parse("")
            .expect("ok")
            .profile("claud")
            .expect_err("unknown");
        assert!(err.to_string().contains("add [agents.claud]"), "{err}");
        assert!(
            err.to_string().contains("claude, codex, demo, gemini"),
            "{err}"
        );
        let err = parse("[agents.x]\ncommand = \"x\"\nmode = \"auto\"").expect_err("unasked");
        assert!(err.to_string().contains("allow_unsupervised"), "{err}");
        assert!(
            parse("[agents.x]\ncommand = \"x\"\nmode = \"auto\"\nallow_unsupervised = true")
                .is_ok()
        );
    }

    #[test]
    fn built_in_profiles_run_supervised_and_plan_automatically() {
        let c = parse("").expect("defaults");
        let claude = c.profile("claude").expect("claude");
        assert_eq!(claude.command, "claude-agent-acp");
        assert_eq!(claude.mode.as_deref(), Some("default"));
        assert_eq!(claude.plan, PlanStrategy::Auto);
        assert_eq!(
            c.profile("codex").expect("codex").mode.as_deref(),
            Some("read-only")
        );
        let gemini = c.profile("gemini").expect("gemini");
        assert_eq!(gemini.args, ["--acp"]);
        // The file's profile of the same name wins.
        let c = parse("[agents.claude]\ncommand = \"claude-code-acp\"\nplan = \"skip\"")
            .expect("valid");
        let claude = c.profile("claude").expect("claude");
        assert_eq!(claude.command, "claude-code-acp");
        assert_eq!(claude.plan, PlanStrategy::Skip);
        assert_eq!(claude.mode, None, "a profile in the file says its own mode");
    }

    #[test]
    fn agent_infos_say_what_is_missing_and_what_the_mode_allows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("claude-agent-acp");
        std::fs::write(&bin, "#!/bin/sh\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let c = parse("").expect("defaults");
        let path = dir.path().to_string_lossy().into_owned();
        let host = |k: &str| match k {
            "PATH" => Some(path.clone()),
            "ANTHROPIC_API_KEY" => Some("k".into()),
            _ => None,
        };
        let infos = c.agent_infos_in(host, &contained());
        let claude = infos.iter().find(|i| i.name == "claude").expect("claude");
        assert_eq!(
            claude.found.as_deref(),
            Some(bin.to_string_lossy().as_ref())
        );
        assert!(claude.needs.is_empty(), "{:?}", claude.needs);
        assert_eq!(claude.mode_effect, "asks before edits and commands");
        let codex = infos.iter().find(|i| i.name == "codex").expect("codex");
        assert_eq!(codex.found, None);
        assert_eq!(codex.needs.len(), 2, "{:?}", codex.needs);
        assert!(codex.needs[0].contains("npm install -g @zed-industries/codex-acp"));
        assert!(codex.needs[1].contains("OPENAI_API_KEY"));
        assert!(!codex.from_file);
        assert!(claude.contained && claude.network == overseer_contain::net::NetworkMode::Private);
    }

    fn contained() -> overseer_contain::Containment {
        overseer_contain::Containment {
            sandbox: overseer_contain::SandboxStatus::Available {
                bwrap: "/usr/bin/bwrap".into(),
            },
            cgroups: overseer_contain::CgroupStatus::Available {
                root: "/sys/fs/cgroup".into(),
            },
            scopes: overseer_contain::ScopeStatus::Available { abi: 7 },
            limits: overseer_contain::LimitsStatus::Available {
                controllers: vec!["pids".into(), "memory".into(), "cpu".into()],
                how: "cgroup v2".into(),
            },
            private_network: overseer_contain::NetStatus::Available {
                helper: "/usr/bin/slirp4netns".into(),
            },
        }
    }

    #[test]
    fn limits_are_read_globally_and_per_profile_and_checked() {
        let c = parse(
            "[limits]\npids_max = 300\nmemory_max = \"4G\"\n[agents.x]\ncommand = \"/bin/true\"\nlimits = { memory_max = \"1G\", cpu_weight = 50 }\n",
        )
        .expect("valid");
        let x = c.profile("x").expect("x");
        let l = c.run_limits("w", "x", &x).expect("limits");
        assert_eq!(l.pids_max, 300, "from [limits]");
        assert_eq!(
            (l.memory_max, l.memory_high, l.cpu_weight),
            (1 << 30, 3 << 28, 50)
        );
        let claude = c.profile("claude").expect("claude");
        assert_eq!(
            c.run_limits("w", "claude", &claude)
                .expect("limits")
                .memory_max,
            4 << 30
        );
        let err = parse("[agents.x]\ncommand = \"/bin/true\"\nlimits = { pids_max = 2 }\n")
            .expect_err("too low");
        assert!(err.to_string().contains("agents.x.limits"), "{err}");
        assert!(err.to_string().contains("at least 8"), "{err}");
        let err = parse("[limits]\nmemory_max = \"lots\"\n").expect_err("not a size");
        assert!(err.to_string().contains("512M"), "{err}");
    }

    #[test]
    fn a_workspace_has_limits_of_its_own_between_the_global_ones_and_a_profiles() {
        let c = parse(
            "[limits]\npids_max = 300\nmemory_max = \"4G\"\n[workspaces.web]\nlimits = { pids_max = 4096, memory_max = \"6G\" }\n[agents.x]\ncommand = \"/bin/true\"\nlimits = { memory_max = \"1G\" }\n",
        )
        .expect("valid");
        let x = c.profile("x").expect("x");
        let claude = c.profile("claude").expect("claude");
        let web = c.run_limits("web", "claude", &claude).expect("limits");
        assert_eq!(
            (web.pids_max, web.memory_max),
            (4096, 6 << 30),
            "the workspace's"
        );
        let web_x = c.run_limits("web", "x", &x).expect("limits");
        assert_eq!(
            (web_x.pids_max, web_x.memory_max),
            (4096, 1 << 30),
            "the profile's memory over the workspace's, the workspace's pids"
        );
        let other = c.run_limits("other", "claude", &claude).expect("limits");
        assert_eq!(
            (other.pids_max, other.memory_max),
            (300, 4 << 30),
            "[limits] only"
        );
        let err = parse("[workspaces.web]\nlimits = { pids_max = 2 }\n").expect_err("too low");
        assert!(err.to_string().contains("workspaces.web.limits"), "{err}");
        let err = parse("[workspaces.web]\nsensors = []\n").expect_err("unknown");
        assert!(err.to_string().contains("sensors"), "{err}");
    }

    #[test]
    fn containment_settings_are_read_and_a_machine_that_cannot_contain_is_a_need() {
        let c = parse(
            "[agents.x]\ncommand = \"/bin/true\"\nread_paths = [\"/opt/data\"]\nwrite_paths = [\"/srv/cache\"]\nnetwork = false\nallow_uncontained = true\n",
        )
        .expect("valid");
        let x = c.profile("x").expect("x");
        assert_eq!(x.read_paths, [PathBuf::from("/opt/data")]);
        assert_eq!(x.write_paths, [PathBuf::from("/srv/cache")]);
        assert!(x.network == overseer_contain::net::NetworkMode::None && x.allow_uncontained);
        let claude = c.profile("claude").expect("claude");
        assert!(
            claude.network == overseer_contain::net::NetworkMode::Private
                && !claude.allow_uncontained
                && claude.read_paths.is_empty()
        );

        let cannot = overseer_contain::Containment {
            sandbox: overseer_contain::SandboxStatus::Missing {
                why: "bubblewrap (bwrap) is not installed".into(),
                fix: "apt-get install bubblewrap".into(),
            },
            ..contained()
        };
        let infos = c.agent_infos_in(|k| (k == "PATH").then(|| "/bin".to_owned()), &cannot);
        let x = infos.iter().find(|i| i.name == "x").expect("x");
        assert!(!x.contained && x.network == overseer_contain::net::NetworkMode::None);
        assert!(
            x.needs.is_empty(),
            "x runs uncontained by choice: {:?}",
            x.needs
        );
        let demo = infos.iter().find(|i| i.name == "demo").expect("demo");
        assert!(!demo.contained);
        assert!(
            demo.needs.iter().any(|n| n.starts_with(
                "a sandbox: bubblewrap (bwrap) is not installed; apt-get install bubblewrap"
            ) && n.contains("allow_uncontained = true in [agents.demo]")),
            "{:?}",
            demo.needs
        );
    }

    #[test]
    fn pass_env_copies_only_what_is_set_and_env_wins() {
        let c = parse(
            "[agents.x]\ncommand = \"x\"\nenv = { A = \"file\" }\npass_env = [\"A\", \"B\", \"C\"]",
        )
        .expect("valid");
        let env = c.profile("x").expect("x").environment(|k| match k {
            "A" => Some("host".into()),
            "B" => Some("b".into()),
            _ => None,
        });
        assert_eq!(
            env,
            [
                ("A".to_owned(), "file".to_owned()),
                ("B".to_owned(), "b".to_owned())
            ]
        );
    }
}
