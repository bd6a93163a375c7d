//! Containing what a run starts: every agent and every sensor runs inside a
//! bubblewrap sandbox ([`bwrap`]) and in a cgroup of its run ([`cgroup`]).
//!
//! The sandbox is the boundary: the system is read-only, the run's working
//! copy is the only writable place besides a private `/tmp` and the agent's
//! own home; the engine's data dir (database, socket), its config dir
//! (signing key), `$XDG_RUNTIME_DIR`, the user's HOME and the user's
//! checkout are hidden under empty tmpfs mounts; the run's `.git` is
//! read-only. The cgroup makes a run's processes exact: a whole run is
//! stopped by `cgroup.kill` (setsid and double forks included), and the
//! engine refuses a socket peer that belongs to a run. Around them:
//! resource limits on the run's cgroup ([`limits`]), Landlock scopes that
//! keep everything a run starts from abstract sockets and signals outside it
//! ([`scope`]), and a network namespace of the run's own with outbound
//! network through slirp4netns ([`net`]).
//!
//! [`probe`] says once per process what this machine can do, and why not;
//! a run whose profile has not chosen `allow_uncontained = true` is not
//! launched without the sandbox ([`require_sandbox`]); the other layers,
//! where missing, are said with what they leave open ([`Containment::gaps`]).

pub mod bwrap;
pub mod cgroup;
pub mod limits;
pub mod net;
pub(crate) mod scope;

use crate::Engine;
use overseer_core::RunId;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub use bwrap::{Mount, SandboxInputs, SandboxPlan};
pub use cgroup::RunCgroup;
pub use limits::{LimitsConfig, RunLimits};

/// Whether agents can run inside bubblewrap on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SandboxStatus {
    /// `bwrap` at this path created the namespaces a run needs.
    Available { bwrap: String },
    /// Runs cannot be contained: why, and the fix.
    Missing { why: String, fix: String },
}

/// Whether each run gets its own cgroup (v2): exact whole-run kill and
/// peer checks on the socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CgroupStatus {
    /// Run cgroups are made under this directory of the cgroup v2 tree.
    Available { root: String },
    /// Why not; runs are then tracked by their environment marker only.
    Missing { why: String },
}

/// Whether everything a run starts is kept from abstract Unix sockets and
/// signals outside it (Landlock scopes, [`scope`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ScopeStatus {
    /// Enforced, with this Landlock ABI.
    Available { abi: u32 },
    /// Not enforced: why, and what that leaves open.
    Missing { why: String, leaves_open: String },
}

/// Whether each run gets resource limits (processes, memory, CPU weight).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LimitsStatus {
    /// Enforced through these cgroup controllers (`how`: where, in words).
    Available {
        controllers: Vec<String>,
        how: String,
    },
    /// Not (or not all) enforced: why, and what that leaves open.
    Missing { why: String, leaves_open: String },
}

/// Whether a run can have a network of its own with outbound network
/// ([`net`]: slirp4netns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NetStatus {
    /// This user-mode network stack gives private networks.
    Available { helper: String },
    /// Not here: why, and what that leaves open.
    Missing { why: String, leaves_open: String },
}

/// What this machine can do to contain a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Containment {
    pub sandbox: SandboxStatus,
    pub cgroups: CgroupStatus,
    pub scopes: ScopeStatus,
    pub limits: LimitsStatus,
    pub private_network: NetStatus,
}

impl Containment {
    pub fn can_sandbox(&self) -> bool {
        matches!(self.sandbox, SandboxStatus::Available { .. })
    }

    /// The bubblewrap binary, when it works.
    pub fn bwrap(&self) -> Option<&Path> {
        match &self.sandbox {
            SandboxStatus::Available { bwrap } => Some(Path::new(bwrap)),
            SandboxStatus::Missing { .. } => None,
        }
    }

    /// Where this machine's run cgroups go (each engine makes its own
    /// directory below it), when cgroups work.
    pub fn cgroup_base(&self) -> Option<&Path> {
        match &self.cgroups {
            CgroupStatus::Available { root } => Some(Path::new(root)),
            CgroupStatus::Missing { .. } => None,
        }
    }

    /// What a layer other than the sandbox cannot do here, and what that
    /// leaves open: one line each (empty: every layer holds).
    pub fn gaps(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let ScopeStatus::Missing { why, leaves_open } = &self.scopes {
            out.push(format!("no Landlock scopes ({why}): {leaves_open}"));
        }
        if let LimitsStatus::Missing { why, leaves_open } = &self.limits {
            out.push(format!("no resource limits per run ({why}): {leaves_open}"));
        }
        if let NetStatus::Missing { why, leaves_open } = &self.private_network {
            out.push(format!("no private networks ({why}): {leaves_open}"));
        }
        out
    }

    /// One line, as `overseer agents list` prints it.
    pub fn summary(&self) -> String {
        let cgroups = match &self.cgroups {
            CgroupStatus::Available { root } => format!("cgroup v2 at {root}"),
            CgroupStatus::Missing { why } => format!("no run cgroups ({why})"),
        };
        let mut layers = vec![cgroups];
        if let ScopeStatus::Available { abi } = &self.scopes {
            layers.push(format!("Landlock scopes (ABI {abi})"));
        }
        if let LimitsStatus::Available { how, .. } = &self.limits {
            layers.push(format!("limits per run ({how})"));
        }
        if let NetStatus::Available { .. } = &self.private_network {
            layers.push("private networks (slirp4netns)".to_owned());
        }
        let gaps = self.gaps();
        let gaps = if gaps.is_empty() {
            String::new()
        } else {
            format!("; MISSING: {}", gaps.join("; "))
        };
        let layers = layers.join(", ");
        match &self.sandbox {
            SandboxStatus::Available { .. } => {
                format!("contained: bubblewrap, {layers}{gaps}")
            }
            SandboxStatus::Missing { why, fix } => {
                format!("NOT CONTAINED: {why}; fix: {fix}; {layers}{gaps}")
            }
        }
    }
}

/// What this machine can do, measured once per process (a real `bwrap`
/// run, a real cgroup directory).
pub fn probe() -> &'static Containment {
    static PROBED: OnceLock<Containment> = OnceLock::new();
    PROBED.get_or_init(|| {
        let cgroups = cgroup::probe();
        let limits = limits::probe(&cgroups);
        let c = Containment {
            sandbox: probe_sandbox(),
            cgroups,
            scopes: scope::probe(),
            limits,
            private_network: net::probe(),
        };
        tracing::info!("containment: {}", c.summary());
        c
    })
}

/// The flags every sandbox starts with; the probe runs exactly these.
pub(crate) const NAMESPACE_FLAGS: &[&str] = &[
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
];

const BWRAP_FIX: &str = "install bubblewrap (`apt-get install bubblewrap` on Debian/Ubuntu, `dnf install bubblewrap` on Fedora) and restart Overseer";

fn find_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/local/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join("bwrap"))
        .find(|p| is_executable(p))
}

pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The bubblewrap binary to use instead of the one on PATH.
pub const BWRAP_ENV: &str = "OVERSEER_BWRAP";

fn probe_sandbox() -> SandboxStatus {
    let chosen = std::env::var_os(BWRAP_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let bwrap = match chosen {
        Some(p) if is_executable(&p) => p,
        Some(p) => {
            return SandboxStatus::Missing {
                why: format!("{BWRAP_ENV}={} is not an executable file", p.display()),
                fix: format!(
                    "point {BWRAP_ENV} at bubblewrap, or unset it to use the one on PATH, and restart Overseer"
                ),
            }
        }
        None => match find_bwrap() {
            Some(p) => p,
            None => {
                return SandboxStatus::Missing {
                    why: "bubblewrap (bwrap) is not installed".to_owned(),
                    fix: BWRAP_FIX.to_owned(),
                }
            }
        },
    };
    let mut cmd = std::process::Command::new(&bwrap);
    cmd.args(NAMESPACE_FLAGS)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--",
            "true",
        ])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let why = match run_with_timeout(cmd, Duration::from_secs(10)) {
        Ok((true, _)) => {
            return SandboxStatus::Available {
                bwrap: bwrap.to_string_lossy().into_owned(),
            }
        }
        Ok((false, stderr)) => format!(
            "{} cannot create a sandbox: {}",
            bwrap.display(),
            stderr
                .lines()
                .next()
                .unwrap_or("it failed without saying why")
                .trim()
        ),
        Err(e) => format!("{} could not be run: {e}", bwrap.display()),
    };
    SandboxStatus::Missing {
        why,
        fix: userns_fix(),
    }
}

/// What to change when bwrap is there but cannot create namespaces.
fn userns_fix() -> String {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return "AppArmor forbids unprivileged user namespaces (Ubuntu 24.04 and later): \
                `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0` (and the same line in \
                /etc/sysctl.d/ to keep it), or an AppArmor profile for /usr/bin/bwrap that allows `userns`"
            .to_owned();
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return "unprivileged user namespaces are off: `sudo sysctl kernel.unprivileged_userns_clone=1`".to_owned();
    }
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return "user namespaces are disabled: `sudo sysctl user.max_user_namespaces=15000`"
            .to_owned();
    }
    "check that this kernel allows unprivileged user namespaces (inside a container, run Overseer \
     with user namespaces allowed), then restart Overseer"
        .to_owned()
}

/// Runs `cmd` to its end or until `limit`; (success, stderr).
fn run_with_timeout(
    mut cmd: std::process::Command,
    limit: Duration,
) -> std::io::Result<(bool, String)> {
    use std::io::Read;
    let mut child = cmd.spawn()?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return Ok((status.success(), err));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other(format!(
                "it did not finish within {} s",
                limit.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a run of profile `profile` may start: `Ok(true)` contained,
/// `Ok(false)` uncontained because the profile allows it, `Err` with the
/// note for the run when it may not start at all.
pub fn require_sandbox(
    containment: &Containment,
    profile: &str,
    allow_uncontained: bool,
) -> Result<bool, String> {
    match &containment.sandbox {
        SandboxStatus::Available { .. } => Ok(true),
        SandboxStatus::Missing { .. } if allow_uncontained => Ok(false),
        SandboxStatus::Missing { why, fix } => Err(format!(
            "not started: this machine cannot contain the agent ({why}). Fix: {fix}. \
             To run profile `{profile}` uncontained anyway (it could then read Overseer's \
             key and approve its own work), set allow_uncontained = true in [agents.{profile}]"
        )),
    }
}

/// The per-database name of this engine's cgroup directory: `overseer-<db id>`.
fn cgroup_dir_name(marker_prefix: &str) -> String {
    let safe: String = marker_prefix
        .trim_end_matches('-')
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    if safe.is_empty() {
        "overseer-unknown".to_owned()
    } else {
        safe
    }
}

impl Engine {
    /// This engine's cgroup directory (the parent of every `run-*` cgroup),
    /// when cgroups work here. One per database: engines on other data dirs
    /// never touch it.
    pub fn run_cgroup_root(&self) -> Option<PathBuf> {
        let base = probe().cgroup_base()?;
        Some(base.join(cgroup_dir_name(&crate::orchestrator::marker_prefix(self))))
    }

    /// Where a profile's agents keep their own HOME (Claude's sessions,
    /// caches): `<data dir>/agent-homes/<profile>`, never the user's.
    pub fn agent_home(&self, profile: &str) -> PathBuf {
        self.paths()
            .data_dir
            .join("agent-homes")
            .join(safe_name(profile))
    }

    /// Everything a sandbox for `worktree` must hide or know, with this
    /// engine's dirs and the user's repository `repo`.
    pub(crate) fn sandbox_inputs(&self, repo: Option<&Path>, worktree: &Path) -> SandboxInputs {
        let host_home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                let p = PathBuf::from(format!("/run/user/{}", rustix::process::getuid().as_raw()));
                p.is_dir().then_some(p)
            });
        SandboxInputs {
            bwrap: probe().bwrap().map(Path::to_owned).unwrap_or_default(),
            data_dir: self.paths().data_dir.clone(),
            config_dir: self.paths().config_dir.clone(),
            runtime_dir,
            host_home,
            host_path: std::env::var("PATH").ok(),
            repo: repo.map(Path::to_owned),
            worktree: worktree.to_owned(),
            ..SandboxInputs::default()
        }
    }
}

/// How a run's agent reaches us: its own socket (asks only) and the
/// `overseer` binary it starts as its MCP server; bound into its sandbox.
#[derive(Debug, Default, Clone)]
pub(crate) struct AgentVoice {
    pub(crate) socket: Option<PathBuf>,
    pub(crate) overseer_bin: Option<PathBuf>,
}

/// How one of a run's processes is contained.
#[derive(Debug, Default)]
pub(crate) struct Contained {
    pub(crate) sandbox: Option<SandboxPlan>,
    pub(crate) cgroup: Option<RunCgroup>,
}

/// A directory only this user may enter (an agent's or sensors' home).
fn private_dir(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p)
        .and_then(|()| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)))
        .map_err(|e| format!("cannot create {}: {e}", p.display()))
}

impl Engine {
    /// The sandbox and cgroup for `work`'s agent, started as `program` with
    /// `env` (its profile's environment). Err: the note the run fails with
    /// (the machine cannot contain and the profile does not allow running
    /// uncontained, or the profile asks for a bind that would expose what
    /// must stay hidden).
    pub(crate) fn contain_agent(
        &self,
        work: &overseer_store::RunWork,
        profile: &crate::config::AgentProfile,
        env: &[(String, String)],
        worktree: &Path,
        voice: &AgentVoice,
    ) -> Result<Contained, String> {
        let run = work.run_id;
        let contained = require_sandbox(probe(), &work.agent, profile.allow_uncontained)?;
        let limits = self.config.run_limits(&work.agent, profile)?;
        let mut out = Contained {
            cgroup: self.run_cgroup(&format!("run-{run}"), run, &limits),
            ..Contained::default()
        };
        if !contained {
            let _ = self.record_activity(
                run,
                overseer_core::Activity::Security(overseer_core::activity::SecurityEntry {
                    text: format!(
                        "the agent runs UNCONTAINED (allow_uncontained = true in [agents.{}]): {}",
                        work.agent,
                        probe().summary()
                    ),
                    ..overseer_core::activity::SecurityEntry::default()
                }),
            );
            return Ok(out);
        }
        let mut inputs = self.sandbox_inputs(Some(Path::new(&work.workspace.path)), worktree);
        if !env.iter().any(|(k, _)| k == "HOME") {
            let home = self.agent_home(&work.agent);
            private_dir(&home)?;
            inputs.private_home = Some(home);
        }
        let path = env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| inputs.host_path.clone());
        inputs.program =
            crate::process::resolve_program(Path::new(&profile.command), path.as_deref());
        inputs.env = env.to_vec();
        inputs.read_paths = profile.read_paths.clone();
        inputs.write_paths = profile.write_paths.clone();
        inputs.network = self.run_network(run, &work.agent, profile.network, true);
        inputs.resolv_conf = self.resolv_conf(inputs.network);
        inputs.agent_socket = voice.socket.clone();
        inputs.overseer_bin = voice.overseer_bin.clone();
        out.sandbox = Some(bwrap::plan(&inputs).map_err(|e| {
            format!(
                "the agent's sandbox cannot be built: {e} (in [agents.{}] of overseer.toml)",
                work.agent
            )
        })?);
        Ok(out)
    }

    /// The sandbox and cgroup for one sensor command of `run`: like its
    /// agent's (the run's profile decides network and extra paths), but
    /// with a cleared environment and a fresh home of its own
    /// (`<data dir>/agent-homes/_sensors/run-<id>`, emptied first; the caller
    /// removes it after the command), never the agent's (which holds its
    /// credentials and session store).
    pub(crate) fn contain_sensor(&self, run: RunId, worktree: &Path) -> Result<Contained, String> {
        let work = self
            .store()
            .run_work(run)
            .map_err(|e| format!("cannot read the run: {e}"))?;
        let profile = self
            .config
            .profile(&work.agent)
            .map_err(|e| e.to_string())?;
        let contained = require_sandbox(probe(), &work.agent, profile.allow_uncontained)?;
        let limits = self.config.run_limits(&work.agent, &profile)?;
        let mut out = Contained {
            cgroup: self.run_cgroup(&format!("run-{run}-sensors"), run, &limits),
            ..Contained::default()
        };
        if !contained {
            return Ok(out);
        }
        let mut inputs = self.sandbox_inputs(Some(Path::new(&work.workspace.path)), worktree);
        let home = self.sensor_home(run);
        let _ = std::fs::remove_dir_all(&home);
        private_dir(&home)?;
        inputs.private_home = Some(home);
        inputs.read_paths = profile.read_paths.clone();
        inputs.write_paths = profile.write_paths.clone();
        inputs.network = self.run_network(run, &work.agent, profile.network, false);
        inputs.resolv_conf = self.resolv_conf(inputs.network);
        out.sandbox = Some(bwrap::plan(&inputs).map_err(|e| {
            format!(
                "the sensors' sandbox cannot be built: {e} (in [agents.{}] of overseer.toml)",
                work.agent
            )
        })?);
        Ok(out)
    }

    /// The network a run of `profile` gets: what the profile asks for, but
    /// the host's when a private network cannot be made here (said on the
    /// run's timeline once, by its agent's launch: `tell`).
    fn run_network(
        &self,
        run: RunId,
        profile: &str,
        wanted: net::NetworkMode,
        tell: bool,
    ) -> net::NetworkMode {
        match (wanted, &probe().private_network) {
            (net::NetworkMode::Private, NetStatus::Missing { why, leaves_open }) => {
                if tell {
                    self.note_security(
                        run,
                        format!(
                            "the run shares this machine's network: no private network here \
                             ({why}); {leaves_open}. Install slirp4netns, or set network = \
                             \"none\" or \"host\" in [agents.{profile}] to choose"
                        ),
                    );
                }
                net::NetworkMode::Host
            }
            (mode, _) => mode,
        }
    }

    /// The resolver a private network's sandbox uses (slirp4netns's DNS),
    /// written once in the data dir.
    fn resolv_conf(&self, mode: net::NetworkMode) -> Option<PathBuf> {
        if mode != net::NetworkMode::Private {
            return None;
        }
        let p = self.paths().data_dir.join("net-resolv.conf");
        let text = "# Overseer: a run's private network (slirp4netns)\nnameserver 10.0.2.3\n";
        if std::fs::read_to_string(&p).ok().as_deref() != Some(text) {
            if let Err(e) = std::fs::write(&p, text) {
                tracing::warn!(
                    "cannot write {}: {e}; runs keep the host's resolver",
                    p.display()
                );
                return None;
            }
        }
        Some(p)
    }

    /// A `security` entry on `run`'s timeline (a failure to record it is
    /// logged, not dropped).
    fn note_security(&self, run: RunId, text: String) {
        if let Err(e) = self.record_activity(
            run,
            overseer_core::Activity::Security(overseer_core::activity::SecurityEntry {
                text,
                ..overseer_core::activity::SecurityEntry::default()
            }),
        ) {
            tracing::warn!(run = %run, "cannot record a security note: {e}");
        }
    }

    /// The sensors' home of `run`.
    pub(crate) fn sensor_home(&self, run: RunId) -> PathBuf {
        self.agent_home("_sensors").join(format!("run-{run}"))
    }

    /// A fresh cgroup `name` for `run` with `limits`; None (with a warning
    /// on the run) when cgroups are missing here or it cannot be made.
    fn run_cgroup(&self, name: &str, run: RunId, limits: &RunLimits) -> Option<RunCgroup> {
        let root = self.run_cgroup_root()?;
        match RunCgroup::create(&root, name, Some(limits)) {
            Ok(cg) => Some(cg),
            Err(e) => {
                tracing::warn!(run = %run, "no cgroup for the run: {e}");
                None
            }
        }
    }
}

/// How often a run's cgroup is read for limits it hit.
const LIMIT_WATCH: Duration = Duration::from_secs(2);

/// `n` bytes as people read them ("512 MiB", "8.0 GiB").
fn human_bytes(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let gib = n as f64 / f64::from(1u32 << 30);
    if gib >= 1.0 {
        format!("{gib:.1} GiB")
    } else {
        format!("{} MiB", n >> 20)
    }
}

impl Engine {
    /// Follows `run`'s cgroup while it exists: each time the run hits one
    /// of its limits again, a security entry on its timeline (how often,
    /// which limit, how to raise it), a signed security event, and the
    /// first time for each limit, one notification.
    pub(crate) async fn watch_limits(
        self: Arc<Engine>,
        run: RunId,
        profile: String,
        cg: RunCgroup,
    ) {
        let Some(limits) = cg.limits().copied() else {
            return;
        };
        let mut seen = limits::LimitHits::default();
        let raise = format!("raise it in [limits] or [agents.{profile}.limits] of overseer.toml if the work needs more");
        while cg.path().exists() {
            tokio::time::sleep(LIMIT_WATCH).await;
            let now = cg.limit_hits();
            let mut said: Vec<(&str, String)> = Vec::new();
            if now.pids > seen.pids {
                said.push(("pids", format!(
                    "the run hit its process limit ({} processes and threads): {} fork(s) refused so far; {raise}",
                    limits.pids_max, now.pids
                )));
            }
            if now.oom_kills > seen.oom_kills {
                said.push(("memory", format!(
                    "the run hit its memory limit ({}): {} of its processes killed by the OOM killer so far; {raise}",
                    human_bytes(limits.memory_max), now.oom_kills
                )));
            }
            if now.memory_high > seen.memory_high && seen.memory_high == 0 {
                said.push(("memory_high", format!(
                    "the run went above {} of memory and is slowed down to stay under its limit of {}; {raise}",
                    human_bytes(limits.memory_high), human_bytes(limits.memory_max)
                )));
            }
            for (limit, text) in said {
                self.audit(
                    &overseer_core::Actor::Engine,
                    overseer_core::audit::AuditPayload::SecurityEvent(
                        overseer_core::audit::SecurityPayload::LimitHit {
                            run_id: run,
                            limit: limit.to_owned(),
                            text: text.clone(),
                        },
                    ),
                );
                self.note_security(run, text.clone());
                let first = match limit {
                    "pids" => seen.pids == 0,
                    "memory" => seen.oom_kills == 0,
                    _ => true,
                };
                if first {
                    self.notify_user(
                        crate::NotificationKind::SecurityEvent,
                        run,
                        format!("Run {run} hit a resource limit"),
                        text,
                    );
                }
            }
            seen = now;
        }
    }
}

fn safe_name(s: &str) -> String {
    let safe = crate::paths::file_safe(s);
    if safe.is_empty() {
        "_".to_owned()
    } else {
        safe
    }
}

/// `run-12` or `run-12-sensors` → 12.
pub(crate) fn parse_run_name(name: &str) -> Option<RunId> {
    let rest = name.strip_prefix("run-")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing() -> Containment {
        Containment {
            sandbox: SandboxStatus::Missing {
                why: "bubblewrap (bwrap) is not installed".into(),
                fix: BWRAP_FIX.into(),
            },
            cgroups: CgroupStatus::Missing {
                why: "no cgroup2 mount".into(),
            },
            scopes: ScopeStatus::Available { abi: 7 },
            limits: LimitsStatus::Available {
                controllers: vec!["pids".into()],
                how: "cgroup v2".into(),
            },
            private_network: NetStatus::Missing {
                why: "slirp4netns is not installed".into(),
                leaves_open: "loopback".into(),
            },
        }
    }

    #[test]
    fn without_a_sandbox_a_run_starts_only_when_its_profile_allows_it() {
        let err = require_sandbox(&missing(), "claude", false).expect_err("refused");
        assert!(err.contains("bubblewrap (bwrap) is not installed"), "{err}");
        assert!(err.contains("apt-get install bubblewrap"), "{err}");
        assert!(
            err.contains("allow_uncontained = true in [agents.claude]"),
            "{err}"
        );
        assert_eq!(require_sandbox(&missing(), "claude", true), Ok(false));
        let ok = Containment {
            sandbox: SandboxStatus::Available {
                bwrap: "/usr/bin/bwrap".into(),
            },
            ..missing()
        };
        assert_eq!(require_sandbox(&ok, "claude", false), Ok(true));
        assert!(ok.summary().starts_with("contained: bubblewrap"));
        assert!(missing().summary().starts_with("NOT CONTAINED: bubblewrap"));
    }

    #[test]
    fn run_names_and_cgroup_names() {
        assert_eq!(parse_run_name("run-12"), Some(RunId(12)));
        assert_eq!(parse_run_name("run-12-sensors"), Some(RunId(12)));
        assert_eq!(parse_run_name("runs"), None);
        assert_eq!(cgroup_dir_name("overseer-ab12-"), "overseer-ab12");
        assert_eq!(cgroup_dir_name("../"), "overseer-unknown");
        assert_eq!(safe_name("my agent/x"), "my_agent_x");
    }

    #[test]
    fn this_machine_contains() {
        // The machines this project is tested on have bubblewrap and a
        // writable cgroup v2 tree (see docs/security.md); a machine without
        // them must say why.
        let c = probe();
        if let SandboxStatus::Missing { why, fix } = &c.sandbox {
            assert!(!why.is_empty() && !fix.is_empty());
        }
    }
}
