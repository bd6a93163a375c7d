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

pub mod blocking;
pub mod bwrap;
pub mod cgroup;
mod child;
pub mod launcher;
pub mod limits;
pub mod net;
pub mod process;
pub mod procscan;
pub mod scope;

use overseer_core::RunId;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
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
pub const NAMESPACE_FLAGS: &[&str] = &[
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

pub fn is_executable(p: &Path) -> bool {
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
pub fn cgroup_dir_name(marker_prefix: &str) -> String {
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

/// `run-12` or `run-12-sensors` → 12.
pub fn parse_run_name(name: &str) -> Option<RunId> {
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
