//! `overseer hook`: the command Claude Code and Codex run for their hooks,
//! and installing it into their settings.
//!
//! A hook invocation always exits 0 with something the agent can read: the
//! decision, or, when Overseer cannot answer, the fallback that lets the
//! agent decide on its own (never an allow). What went wrong goes to stderr.

use anyhow::Context;
use overseer_core::{ErrorCode, SessionAnswer, SessionAsk, SessionRef};
use overseer_engine::Paths;
use overseer_hooks::{self as hooks, install, Event, HookCall, Vendor};
use overseer_server::api::Request;
use overseer_server::client::Client;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Subcommand)]
pub enum HookCommand {
    /// Handle one Claude Code hook event (JSON on stdin, the answer on stdout)
    Claude(AskArgs),
    /// Handle one Codex hook event (JSON on stdin, the answer on stdout)
    Codex(AskArgs),
    /// Add `overseer hook <agent>` to Claude Code's settings.json or Codex's hooks.json
    Install(Target),
    /// Remove exactly the entries `install` added (your own hooks stay)
    Uninstall(Target),
}

#[derive(clap::Args)]
pub struct AskArgs {
    /// Longest wait for a decision, in seconds; then the agent decides on its own
    /// (Claude Code asks you). Kept below the timeout `install` writes.
    #[arg(long, value_name = "SECS", default_value_t = install::DEFAULT_WAIT_SECS)]
    wait: u64,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    fn vendor(self) -> Vendor {
        match self {
            Agent::Claude => Vendor::Claude,
            Agent::Codex => Vendor::Codex,
        }
    }
}

#[derive(clap::Args)]
pub struct Target {
    #[arg(value_enum)]
    agent: Agent,
    /// One repository: DIR/.claude/settings.json (Claude) or DIR/.codex/hooks.json (Codex)
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    project: Option<PathBuf>,
    /// Every session of yours: ~/.claude/settings.json (Claude) or $CODEX_HOME/hooks.json (Codex)
    #[arg(long)]
    user: bool,
    /// Codex: the `codex` binary used to mark the hooks trusted [default: codex on PATH]
    #[arg(long, value_name = "BIN")]
    codex: Option<PathBuf>,
}

pub async fn run(paths: &Paths, cmd: HookCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HookCommand::Claude(args) => Ok(answer_hook(paths, Vendor::Claude, &args).await),
        HookCommand::Codex(args) => Ok(answer_hook(paths, Vendor::Codex, &args).await),
        HookCommand::Install(t) => install_hooks(paths, &t).await,
        HookCommand::Uninstall(t) => uninstall_hooks(&t),
    }
}

/// Most a hook's stdin may hold; more is not a hook's input.
const MAX_STDIN: u64 = 64 << 20;
/// A lost connection is retried this long (the engine keeps a gate for its
/// asker a few seconds, and for a minute after its own restart).
const RECONNECT_FOR: Duration = Duration::from_secs(30);
/// Reports wait no longer than this, whatever `--wait` says.
const REPORT_WAIT: Duration = Duration::from_secs(20);

async fn answer_hook(paths: &Paths, vendor: Vendor, args: &AskArgs) -> ExitCode {
    let mut raw = String::new();
    let read = std::io::stdin().take(MAX_STDIN).read_to_string(&mut raw);
    let out = match read {
        Err(e) => {
            warn(vendor, &format!("cannot read the hook input: {e}"));
            hooks::fallback(vendor, None, "Overseer could not read the hook input")
        }
        Ok(_) => match hooks::read(vendor, &raw, &salt_of(&raw)) {
            Err(e) => {
                warn(vendor, &e.message);
                hooks::fallback(
                    vendor,
                    e.event.as_ref(),
                    "Overseer could not read the hook input",
                )
            }
            Ok(call) => answer_call(paths, &call, args).await,
        },
    };
    let mut stdout = std::io::stdout().lock();
    // Nothing else to do if the agent closed our stdout: it is not listening.
    let _ = writeln!(stdout, "{out}").and_then(|()| stdout.flush());
    ExitCode::SUCCESS
}

async fn answer_call(paths: &Paths, call: &HookCall, args: &AskArgs) -> String {
    let Some(ask) = &call.ask else {
        return "{}".to_owned();
    };
    let limit = if call.event.waits_for_a_decision() {
        Duration::from_secs(args.wait)
    } else {
        REPORT_WAIT.min(Duration::from_secs(args.wait))
    };
    let asked = tokio::time::timeout(limit, ask_engine(paths, &call.session, ask)).await;
    let why = match asked {
        Ok(Ok(answer)) => return hooks::render(call, &answer),
        Ok(Err(why)) => why,
        Err(_) => format!(
            "Overseer did not answer within {} s (overseer hook {} --wait)",
            limit.as_secs(),
            call.vendor.as_str()
        ),
    };
    warn(call.vendor, &format!("{why}; {}", decides_alone(call)));
    hooks::fallback(call.vendor, Some(&call.event), &why)
}

fn decides_alone(call: &HookCall) -> &'static str {
    match (call.vendor, &call.event) {
        (Vendor::Claude, Event::PreToolUse | Event::PermissionRequest) => {
            "Claude Code asks you itself"
        }
        (Vendor::Codex, Event::PreToolUse | Event::PermissionRequest) => {
            "Codex's own approval policy decides"
        }
        _ => "nothing was recorded in Overseer",
    }
}

fn warn(vendor: Vendor, message: &str) {
    eprintln!("overseer hook {}: {message}", vendor.as_str());
}

/// The transcript's length: two identical asks of one prompt (which the
/// agent gives no id of its own) are told apart by where the session was.
fn salt_of(raw: &str) -> String {
    serde_json::from_str::<serde_json::Value>(raw)
        .ok()
        .and_then(|v| v.get("transcript_path")?.as_str().map(PathBuf::from))
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len().to_string())
        .unwrap_or_default()
}

/// Asks the engine, re-asking with the same key after a lost connection
/// (the same gate is found again) until [`RECONNECT_FOR`] has passed
/// without one. No engine at the first try: no waiting at all.
async fn ask_engine(
    paths: &Paths,
    session: &SessionRef,
    ask: &SessionAsk,
) -> Result<SessionAnswer, String> {
    let socket = paths.socket();
    let mut lost_since: Option<Instant> = None;
    let mut backoff = Duration::from_millis(100);
    let mut last_error = String::new();
    loop {
        if let Some(since) = lost_since {
            if since.elapsed() >= RECONNECT_FOR {
                return Err(format!(
                    "lost Overseer and could not reach it again for {} s ({last_error})",
                    RECONNECT_FOR.as_secs()
                ));
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        let client = match Client::connect(&socket).await {
            Ok(Some(c)) => c,
            Ok(None) if lost_since.is_none() => {
                return Err(format!(
                    "Overseer is not running (no engine at {}; open the app or run `overseer serve`)",
                    socket.display()
                ));
            }
            Ok(None) => {
                last_error = "the engine is not running".into();
                continue;
            }
            Err(e) if lost_since.is_none() => return Err(e.message),
            Err(e) => {
                last_error = e.message;
                continue;
            }
        };
        let mut client = client;
        let request = Request::Session {
            session: session.clone(),
            ask: ask.clone(),
        };
        match client.call(request).await {
            Ok(value) => {
                return serde_json::from_value(value)
                    .map_err(|e| format!("Overseer's answer is unreadable ({e}); is the app older than this `overseer`?"));
            }
            Err(e) if e.code == ErrorCode::EngineUnavailable => {
                last_error = e.message;
                if lost_since.is_none() {
                    lost_since = Some(Instant::now());
                    backoff = Duration::from_millis(100);
                }
            }
            Err(e) => return Err(format!("Overseer refused the ask: {}", e.message)),
        }
    }
}

// ---- install / uninstall ----

fn home() -> anyhow::Result<PathBuf> {
    directories::BaseDirs::new()
        .map(|b| b.home_dir().to_owned())
        .context("cannot find your home directory: set HOME, or use --project DIR")
}

fn codex_home() -> anyhow::Result<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(home()?.join(".codex")),
    }
}

/// The settings file a target names.
fn settings_file(t: &Target) -> anyhow::Result<PathBuf> {
    let dir = match (&t.project, t.user) {
        (Some(dir), _) => {
            let dir = std::path::absolute(dir)
                .with_context(|| format!("cannot resolve {}", dir.display()))?;
            anyhow::ensure!(
                dir.is_dir(),
                "{} is not a directory: --project takes the repository the agent works in",
                dir.display()
            );
            match t.agent {
                Agent::Claude => dir.join(".claude"),
                Agent::Codex => dir.join(".codex"),
            }
        }
        (None, true) => match t.agent {
            Agent::Claude => home()?.join(".claude"),
            Agent::Codex => codex_home()?,
        },
        (None, false) => anyhow::bail!(
            "say where to install: --project DIR (one repository) or --user (every session of yours)"
        ),
    };
    Ok(match t.agent {
        Agent::Claude => dir.join("settings.json"),
        Agent::Codex => dir.join("hooks.json"),
    })
}

fn read_settings(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes next to the file, then renames: an agent starting meanwhile reads
/// the old settings or the new, never half of them.
fn write_settings(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("settings.json");
    let tmp = dir.join(format!(".{name}.overseer-{}", std::process::id()));
    let written = std::fs::write(&tmp, text)
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| {
            if let Ok(meta) = std::fs::metadata(path) {
                // Keep the user's permissions on their file.
                let _ = std::fs::set_permissions(&tmp, meta.permissions());
            }
            std::fs::rename(&tmp, path)
                .with_context(|| format!("cannot replace {}", path.display()))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `--data-dir` goes into the command only when it is not the default, so
/// a default install follows the default.
fn data_dir_for_command(paths: &Paths) -> Option<PathBuf> {
    let default = directories::ProjectDirs::from("dev", "overseer", "overseer")
        .map(|p| p.data_dir().to_owned());
    (default.as_deref() != Some(paths.data_dir.as_path())).then(|| paths.data_dir.clone())
}

fn command_for(paths: &Paths, vendor: Vendor) -> anyhow::Result<String> {
    let exe = std::env::current_exe()
        .context("cannot tell where this `overseer` binary is; run it by its full path")?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    Ok(install::command_line(
        &exe,
        data_dir_for_command(paths).as_deref(),
        vendor,
    )?)
}

async fn install_hooks(paths: &Paths, t: &Target) -> anyhow::Result<ExitCode> {
    let vendor = t.agent.vendor();
    let file = settings_file(t)?;
    let command = command_for(paths, vendor)?;
    let what = file.display().to_string();
    let (text, change) =
        install::install(read_settings(&file)?.as_deref(), vendor, &command, &what)?;
    match text {
        Some(text) => {
            write_settings(&file, &text)?;
            let mut done = Vec::new();
            if !change.added.is_empty() {
                done.push(format!("added {}", change.added.join(", ")));
            }
            if !change.updated.is_empty() {
                done.push(format!("updated {}", change.updated.join(", ")));
            }
            println!(
                "{} hooks in {}: {} (command: {command})",
                vendor.label(),
                file.display(),
                done.join("; ")
            );
        }
        None => println!(
            "{} hooks already installed in {}; nothing changed",
            vendor.label(),
            file.display()
        ),
    }
    match t.agent {
        Agent::Claude => {
            println!(
                "Claude Code sessions started from now on ask Overseer before each tool call \
                 (when Overseer is not running, Claude Code asks you itself)."
            );
            Ok(ExitCode::SUCCESS)
        }
        Agent::Codex => trust_codex_hooks(t, &file).await,
    }
}

fn uninstall_hooks(t: &Target) -> anyhow::Result<ExitCode> {
    let vendor = t.agent.vendor();
    let file = settings_file(t)?;
    let what = file.display().to_string();
    let (text, change) = install::uninstall(read_settings(&file)?.as_deref(), vendor, &what)?;
    match text {
        Some(text) => {
            write_settings(&file, &text)?;
            println!(
                "removed Overseer's {} hooks from {} ({})",
                vendor.label(),
                file.display(),
                change.removed.join(", ")
            );
        }
        None => println!(
            "no Overseer {} hooks in {}; nothing changed",
            vendor.label(),
            file.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

// ---- Codex trust ----

/// Codex runs a hook only once trusted: it keeps, per hook, the hash of the
/// hook as the user approved it (`hooks.state."<file>:<event>:<i>:<j>".
/// trusted_hash` in its config.toml). We ask Codex itself (its app server,
/// the same thing its own UI uses) for the hooks it sees and their current
/// hashes, and have it record ours as trusted: no guessing its hash format,
/// and its config.toml is edited by its own editor.
async fn trust_codex_hooks(t: &Target, file: &Path) -> anyhow::Result<ExitCode> {
    let codex = match &t.codex {
        Some(bin) => bin.clone(),
        None => match which("codex") {
            Some(bin) => bin,
            None => {
                eprintln!("{}", untrusted_help(file, "`codex` is not on PATH"));
                return Ok(ExitCode::FAILURE);
            }
        },
    };
    let cwd = match &t.project {
        Some(dir) => std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    match codex_trust(&codex, &cwd, file).await {
        Ok(0) => {
            eprintln!(
                "{}",
                untrusted_help(
                    file,
                    &format!(
                        "Codex ({}) does not list the hooks of {} for {}{}",
                        codex.display(),
                        file.display(),
                        cwd.display(),
                        match &t.project {
                            Some(_) => format!(
                                " (Codex reads a project's .codex/ only once you trust the project: \
                                 open Codex there and trust it, or add\n    [projects.\"{}\"]\n    \
                                 trust_level = \"trusted\"\nto {}, then run this again)",
                                cwd.display(),
                                codex_home()
                                    .map(|h| h.join("config.toml").display().to_string())
                                    .unwrap_or_else(|_| "$CODEX_HOME/config.toml".into())
                            ),
                            None => String::new(),
                        }
                    )
                )
            );
            Ok(ExitCode::FAILURE)
        }
        Ok(n) => {
            println!(
                "Codex trusts them ({n} hooks, recorded by {} in its config.toml); \
                 Codex sessions started from now on ask Overseer before each tool call.",
                codex.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{}", untrusted_help(file, &format!("{e:#}")));
            Ok(ExitCode::FAILURE)
        }
    }
}

fn untrusted_help(file: &Path, why: &str) -> String {
    format!(
        "The hooks are written in {} but Codex skips a hook until you trust it, and they could \
         not be marked trusted: {why}.\nTo finish: run `overseer hook install codex ... --codex \
         /path/to/codex` again (it asks Codex to trust exactly these hooks), or open Codex and \
         trust them when it lists them for review.",
        file.display()
    )
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Codex's app server over stdio: JSON-RPC, one message per line.
struct AppServer {
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl AppServer {
    async fn send(&mut self, msg: serde_json::Value) -> anyhow::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(format!("{msg}\n").as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    async fn call(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> anyhow::Result<serde_json::Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await?;
        while let Some(line) = self.lines.next_line().await? {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if v.get("id").and_then(serde_json::Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(err) = v.get("error") {
                anyhow::bail!("codex refused {method}: {err}");
            }
            return Ok(v.get("result").cloned().unwrap_or_default());
        }
        anyhow::bail!("codex app-server ended before answering {method}")
    }
}

/// One hook of ours as Codex lists it: its trust key, current hash, trusted?
struct Listed {
    key: String,
    hash: String,
    trusted: bool,
}

/// Trusts, through `codex app-server`, the hooks of ours that Codex lists
/// from `file`; returns how many of ours it listed.
async fn codex_trust(codex: &Path, cwd: &Path, file: &Path) -> anyhow::Result<usize> {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(codex)
        .arg("app-server")
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run `{} app-server`", codex.display()))?;
    let mut server = AppServer {
        stdin: child.stdin.take().context("no stdin to codex")?,
        lines: tokio::io::BufReader::new(child.stdout.take().context("no stdout from codex")?)
            .lines(),
        next_id: 0,
    };
    let want = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
    let work = async {
        server
            .call(
                "initialize",
                serde_json::json!({"clientInfo": {"name": "overseer", "version": env!("CARGO_PKG_VERSION")}}),
            )
            .await?;
        server
            .send(serde_json::json!({"jsonrpc": "2.0", "method": "initialized"}))
            .await?;
        let listed = server
            .call("hooks/list", serde_json::json!({"cwds": [cwd]}))
            .await?;
        let ours: Vec<Listed> = listed["data"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|entry| entry["hooks"].as_array().into_iter().flatten())
            .filter(|h| {
                let same_file = h["sourcePath"].as_str().is_some_and(|s| {
                    std::fs::canonicalize(s).unwrap_or_else(|_| PathBuf::from(s)) == want
                });
                same_file
                    && h["command"]
                        .as_str()
                        .is_some_and(|c| install::is_ours(c, Vendor::Codex))
            })
            .filter_map(|h| {
                Some(Listed {
                    key: h["key"].as_str()?.to_owned(),
                    hash: h["currentHash"].as_str()?.to_owned(),
                    trusted: h["trustStatus"].as_str() == Some("trusted"),
                })
            })
            .collect();
        for hook in ours.iter().filter(|h| !h.trusted) {
            let quoted = hook.key.replace('\\', "\\\\").replace('"', "\\\"");
            server
                .call(
                    "config/value/write",
                    serde_json::json!({
                        "keyPath": format!("hooks.state.\"{quoted}\".trusted_hash"),
                        "value": hook.hash,
                        "mergeStrategy": "replace",
                    }),
                )
                .await?;
        }
        anyhow::Ok(ours.len())
    };
    let n = tokio::time::timeout(Duration::from_secs(30), work)
        .await
        .context("codex app-server did not answer within 30 s")??;
    let _ = child.start_kill();
    let _ = child.wait().await;
    Ok(n)
}
