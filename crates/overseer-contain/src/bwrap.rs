//! The bubblewrap sandbox of one agent or sensor, built as data
//! ([`SandboxPlan`]) from what it must hide and what it may reach
//! ([`SandboxInputs`]), then turned into `bwrap` arguments.
//!
//! The layout, mount by mount (bwrap applies them in order):
//!
//! - an empty, read-only root with the system's own directories bound
//!   read-only at their place ([`SYSTEM_DIRS`]: `/usr`, `/etc`, `/opt`,
//!   `/var`, ...; merged-`/usr` symlinks recreated), a new `/dev`, a
//!   `/proc` of the sandbox's own pid namespace, a private `/tmp`, and
//!   `/var/tmp` hidden. Nothing else of the host's root is there: a
//!   checkout, a data dir or a disk mounted elsewhere needs no hide of its
//!   own, so its path is not named in the sandbox's `/proc/self/mountinfo`
//!   (a hide is a mount at the hidden path, and mountinfo lists it); the
//!   user's checkout under `/tmp` or inside a system directory has none
//!   either ([`plan`] splits that directory's bind around it);
//! - an empty tmpfs over each place a run must never reach: Overseer's data
//!   dir (database, socket, other runs' worktrees), its config dir (the
//!   audit signing key), `$XDG_RUNTIME_DIR` (D-Bus, the ssh agent), the
//!   user's HOME (dotfiles) and the user's checkout;
//! - bound back: the run's working copy (writable) with its `.git`
//!   read-only again (a `.git` that is missing or a symlink is covered by
//!   `/dev/null`, so the run cannot create one either; it holds its own
//!   copy of the objects its base commit reaches, nothing of the user's
//!   repository is bound), toolchains under HOME (read-only), the
//!   agent program's own install (read-only), the agent's HOME and TMPDIR
//!   (writable), every directory a profile's `*_HOME` variable names
//!   (writable), and the profile's `read_paths` / `write_paths`.
//!
//! Mounts are applied parents first (by path depth), so a bind-back under
//! a hidden place works and a hidden place under a bound one stays hidden.
//! A bind may never BE a hidden place nor lie inside the data or config
//! dir (other than the run's own working copy and the agent's home): the
//! plan refuses such a profile with the reason.

use super::net::NetworkMode;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Directories under HOME that toolchains run from, bound read-only when
/// they exist.
pub const TOOLCHAIN_DIRS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".nvm",
    ".local/bin",
    ".local/lib",
    ".bun",
    ".deno",
    ".volta",
    ".pyenv",
    "go",
];

/// The system's own directories under `/`: bound read-only at their place
/// when they exist (a symlink among them is recreated as that symlink).
/// Everything else of the host's root is absent from the sandbox.
pub const SYSTEM_DIRS: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "var", "run", "sys",
    "nix", "gnu", "snap",
];

/// The system's second shared temp dir: hidden like the data dir (other
/// users' and programs' files; checkouts are often made there).
const VAR_TMP: &str = "/var/tmp";

/// Secrets inside those toolchain dirs: covered by `/dev/null`.
const TOOLCHAIN_SECRETS: &[&str] = &[".cargo/credentials", ".cargo/credentials.toml"];

/// What a sandbox is built from.
#[derive(Debug, Clone, Default)]
pub struct SandboxInputs {
    /// The bubblewrap binary.
    pub bwrap: PathBuf,
    pub data_dir: PathBuf,
    pub config_dir: PathBuf,
    pub runtime_dir: Option<PathBuf>,
    /// The user's HOME (hidden; toolchains under it come back read-only).
    pub host_home: Option<PathBuf>,
    /// Overseer's own PATH (used when the profile sets none).
    pub host_path: Option<String>,
    /// The user's checkout (hidden).
    pub repo: Option<PathBuf>,
    /// The run's working copy: writable, and the working directory.
    pub worktree: PathBuf,
    /// The agent's own HOME, bound at the user's HOME path, when the
    /// profile's environment sets no HOME.
    pub private_home: Option<PathBuf>,
    /// The resolved program: its install is bound read-only.
    pub program: Option<PathBuf>,
    /// The profile's environment (HOME, TMPDIR, `*_HOME`, PATH are read).
    pub env: Vec<(String, String)>,
    pub read_paths: Vec<PathBuf>,
    pub write_paths: Vec<PathBuf>,
    /// The run's network (see `contain::net`).
    pub network: NetworkMode,
    /// The `/etc/resolv.conf` a private network's sandbox sees (DNS at
    /// slirp4netns's 10.0.2.3).
    pub resolv_conf: Option<PathBuf>,
    /// The run's own socket (asks only), bound at [`AGENT_SOCKET`] inside.
    pub agent_socket: Option<PathBuf>,
    /// The `overseer` binary the agent starts as its MCP server: its
    /// directory is bound read-only.
    pub overseer_bin: Option<PathBuf>,
}

/// Where a run's own socket is inside its sandbox (the private `/tmp`).
pub const AGENT_SOCKET: &str = "/tmp/overseer-agent.sock";

/// One mount of the sandbox, after the fixed base (`/`, `/dev`, `/proc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// An empty tmpfs: hides what is there (read-only, but `/tmp`, the
    /// sandbox's private temp dir).
    Tmpfs(PathBuf),
    Bind {
        source: PathBuf,
        target: PathBuf,
        writable: bool,
    },
    /// `/dev/null`, read-only, over a protected path that is missing or a
    /// symlink (so the run cannot create it).
    Cover(PathBuf),
    /// A symlink of the host's root (`/bin -> usr/bin`), recreated.
    Symlink { link: PathBuf, to: PathBuf },
    /// An entry of a system directory bound at its own place because the
    /// directory is split around the user's checkout (see `unname`): the
    /// host's view, if it is still there when the sandbox is made (an entry
    /// gone meanwhile is skipped, never a sandbox that fails to start).
    Entry { path: PathBuf, writable: bool },
}

impl Mount {
    pub fn target(&self) -> &Path {
        match self {
            Mount::Tmpfs(t) | Mount::Cover(t) => t,
            Mount::Bind { target, .. } => target,
            Mount::Symlink { link, .. } => link,
            Mount::Entry { path, .. } => path,
        }
    }

    fn order(&self) -> u8 {
        match self {
            Mount::Tmpfs(_) => 0,
            Mount::Bind { .. } | Mount::Symlink { .. } | Mount::Entry { .. } => 1,
            Mount::Cover(_) => 2,
        }
    }

    /// True when what is at the target afterwards is the host's own content
    /// at that path.
    fn is_host_view(&self) -> bool {
        match self {
            Mount::Bind { source, target, .. } => source == target,
            Mount::Symlink { .. } | Mount::Entry { .. } => true,
            Mount::Tmpfs(_) | Mount::Cover(_) => false,
        }
    }
}

/// A sandbox, ready to become `bwrap` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPlan {
    pub bwrap: PathBuf,
    /// In the order bwrap applies them.
    pub mounts: Vec<Mount>,
    pub network: NetworkMode,
    pub chdir: PathBuf,
    /// Variables set inside unless the profile sets them (HOME, TMPDIR).
    pub env: Vec<(String, String)>,
}

impl SandboxPlan {
    /// The arguments after `bwrap` and before the program.
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = super::NAMESPACE_FLAGS.iter().map(OsString::from).collect();
        if self.network != NetworkMode::Host {
            a.push("--unshare-net".into());
        }
        // Started by root, bwrap keeps every capability inside (started by
        // anyone else, it keeps none): a run could then change its own
        // network's routes (the unreachable ones to this machine's own
        // addresses, `net`). Only CAP_SETFCAP stays, which a nested user
        // namespace mapping root needs (an agent's own sandbox) and which
        // reaches nothing of ours.
        if rustix::process::geteuid().is_root() {
            for s in ["--cap-drop", "ALL", "--cap-add", "CAP_SETFCAP"] {
                a.push(s.into());
            }
        }
        // The root is bwrap's own empty tmpfs (read-only at the end): the
        // system directories are among the mounts.
        for s in ["--dev", "/dev", "--proc", "/proc"] {
            a.push(s.into());
        }
        for m in &self.mounts {
            match m {
                Mount::Tmpfs(t) => {
                    a.push("--tmpfs".into());
                    a.push(t.into());
                }
                Mount::Bind {
                    source,
                    target,
                    writable,
                } => {
                    a.push(if *writable { "--bind" } else { "--ro-bind" }.into());
                    a.push(source.into());
                    a.push(target.into());
                }
                Mount::Cover(t) => {
                    a.push("--ro-bind".into());
                    a.push("/dev/null".into());
                    a.push(t.into());
                }
                Mount::Symlink { link, to } => {
                    a.push("--symlink".into());
                    a.push(to.into());
                    a.push(link.into());
                }
                Mount::Entry { path, writable } => {
                    a.push(
                        if *writable {
                            "--bind-try"
                        } else {
                            "--ro-bind-try"
                        }
                        .into(),
                    );
                    a.push(path.into());
                    a.push(path.into());
                }
            }
        }
        // The root itself: what is not bound is not there, and nothing can
        // be created in its place.
        a.push("--remount-ro".into());
        a.push("/".into());
        // Hidden places are read-only too (a write there would vanish with
        // the sandbox; better that it fails). Last: bwrap made the mount
        // points of the binds inside them already.
        for m in &self.mounts {
            if let Mount::Tmpfs(t) = m {
                if t.as_path() != Path::new("/tmp") {
                    a.push("--remount-ro".into());
                    a.push(t.into());
                }
            }
        }
        a.push("--chdir".into());
        a.push(self.chdir.clone().into());
        a.push("--".into());
        a
    }

    /// The mount that decides what is at `path` (absolute, canonical):
    /// the last applied one at or above it; None: nothing (the sandbox's
    /// empty root).
    fn deciding(&self, path: &Path) -> Option<&Mount> {
        self.mounts
            .iter()
            .rev()
            .find(|m| path.starts_with(m.target()))
    }

    /// Whether a write at `path` inside reaches the host's file there (its
    /// working copy, its homes, the profile's write paths). The private
    /// `/tmp` takes writes too, but they land in the sandbox's own tmpfs and
    /// reach nothing: a host path under `/tmp` (a data dir there, say) is
    /// out of sight, not writable.
    pub fn writable(&self, path: &Path) -> bool {
        self.deciding(path).is_some_and(|m| match m {
            Mount::Bind { writable, .. } | Mount::Entry { writable, .. } => *writable,
            Mount::Tmpfs(_) | Mount::Cover(_) | Mount::Symlink { .. } => false,
        })
    }

    /// Whether the host's `path` is out of sight inside (not under a
    /// system directory or a bind, under a tmpfs, or under something else
    /// bound at its place).
    pub fn hides(&self, path: &Path) -> bool {
        self.deciding(path).is_none_or(|m| !m.is_host_view())
    }
}

/// Why a sandbox cannot be built as the profile asks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

fn depth(p: &Path) -> usize {
    p.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

fn canon(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

fn env_of<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Builds the sandbox for `inputs`, in named steps: the places a run never
/// reaches ([`Places`]), the agent's home, the directories the profile
/// names (its state dirs, `write_paths`, `read_paths`), the automatic
/// read-only binds (toolchains, PATH, the program's install), then the
/// run's own (its working copy, socket and repository metadata); ordered,
/// and the user's checkout left unnamed.
pub fn plan(inputs: &SandboxInputs) -> Result<SandboxPlan, PlanError> {
    let places = Places::of(inputs)?;
    let mut mounts: Vec<Mount> = system_root();
    let mut env: Vec<(String, String)> = Vec::new();
    // Allowed inside the data dir: the working copy, the agent's home.
    let mut allowed_inside: Vec<PathBuf> = vec![places.worktree.clone()];
    if let Some(home) = private_home(inputs, &places)? {
        if let Mount::Bind { source, target, .. } = &home {
            allowed_inside.push(source.clone());
            env.push(("HOME".to_owned(), target.to_string_lossy().into_owned()));
        }
        mounts.push(home);
    }
    if env_of(&inputs.env, "TMPDIR").is_none() {
        env.push(("TMPDIR".to_owned(), "/tmp".to_owned()));
    }
    let mut writable = profile_state_dirs(inputs, &places, &allowed_inside)?;
    writable.extend(places.user_paths(&inputs.write_paths, "write_paths", &allowed_inside)?);
    let mut readable = places.user_paths(&inputs.read_paths, "read_paths", &allowed_inside)?;
    let (automatic, mut covers) = automatic_binds(inputs, &places);
    for p in automatic {
        if places.check(&p, &allowed_inside).is_ok() && p.is_dir() {
            readable.push(p);
        } else {
            tracing::debug!("not bound into the sandbox: {}", p.display());
        }
    }
    mounts.extend(places.hides());
    mounts.extend(binds(readable, false));
    mounts.extend(binds(writable, true));
    mounts.extend(run_own(inputs, &places.worktree, &mut covers));
    mounts.extend(covers.into_iter().map(Mount::Cover));
    let mut mounts = order(mounts);
    if let Some(repo) = &places.repo {
        mounts = unname(mounts, repo);
    }
    Ok(SandboxPlan {
        bwrap: inputs.bwrap.clone(),
        mounts,
        network: inputs.network,
        chdir: places.worktree,
        env,
    })
}

/// The places of a plan, canonical: the run's working copy, the engine's
/// dirs, the user's home and checkout, and which of them a run never
/// reaches.
#[derive(Debug)]
struct Places {
    worktree: PathBuf,
    data_dir: PathBuf,
    config_dir: PathBuf,
    host_home: Option<PathBuf>,
    repo: Option<PathBuf>,
    /// Hidden (each an empty tmpfs where it exists): the shared temp dirs,
    /// the engine's dirs, the runtime dir, the user's home and checkout.
    hidden: Vec<PathBuf>,
    /// Nothing inside these is bound but what is allowed inside (the
    /// working copy, the agent's home): the engine's dirs, the runtime dir.
    secret_roots: Vec<PathBuf>,
}

impl Places {
    fn of(inputs: &SandboxInputs) -> Result<Places, PlanError> {
        let worktree = canon(&inputs.worktree).ok_or_else(|| {
            PlanError(format!(
                "the run's working copy {} does not exist",
                inputs.worktree.display()
            ))
        })?;
        let data_dir = canon(&inputs.data_dir).unwrap_or_else(|| inputs.data_dir.clone());
        let config_dir = canon(&inputs.config_dir).unwrap_or_else(|| inputs.config_dir.clone());
        let runtime_dir = inputs.runtime_dir.as_deref().and_then(canon);
        let host_home = inputs.host_home.as_deref().and_then(canon);
        let repo = inputs.repo.as_deref().and_then(canon);
        let mut hidden: Vec<PathBuf> = vec![
            PathBuf::from("/tmp"),
            PathBuf::from(VAR_TMP),
            data_dir.clone(),
            config_dir.clone(),
        ];
        hidden.extend(runtime_dir.clone());
        hidden.extend(host_home.clone());
        hidden.extend(repo.clone());
        let secret_roots: Vec<PathBuf> = [
            Some(data_dir.clone()),
            Some(config_dir.clone()),
            runtime_dir,
        ]
        .into_iter()
        .flatten()
        .collect();
        Ok(Places {
            worktree,
            data_dir,
            config_dir,
            host_home,
            repo,
            hidden,
            secret_roots,
        })
    }

    /// Whether `p` may be bound: an error naming what it would expose when
    /// it is the whole filesystem, a hidden place, or lies inside a secret
    /// root without being inside what is allowed there. A bind the user
    /// asked for fails on it; an automatic one is skipped.
    fn check(&self, p: &Path, allowed_inside: &[PathBuf]) -> Result<(), String> {
        if depth(p) == 0 {
            return Err(format!("{} is the whole filesystem", p.display()));
        }
        if let Some(h) = self.hidden.iter().find(|h| h.as_path() == p) {
            return Err(format!(
                "{} is a place a run must not reach ({})",
                p.display(),
                self.what_is(h)
            ));
        }
        if let Some(s) = self.secret_roots.iter().find(|s| p.starts_with(s)) {
            if !allowed_inside.iter().any(|a| p.starts_with(a)) {
                return Err(format!("{} lies inside {}", p.display(), self.what_is(s)));
            }
        }
        Ok(())
    }

    fn what_is(&self, p: &Path) -> &'static str {
        what_is(
            p,
            &self.data_dir,
            &self.config_dir,
            self.host_home.as_deref(),
            self.repo.as_deref(),
        )
    }

    /// A profile's own paths (`field`): each must exist and expose
    /// nothing hidden.
    fn user_paths(
        &self,
        paths: &[PathBuf],
        field: &str,
        allowed_inside: &[PathBuf],
    ) -> Result<Vec<PathBuf>, PlanError> {
        paths
            .iter()
            .map(|p| {
                let dir = user_path(p, field)?;
                self.check(&dir, allowed_inside).map_err(|why| {
                    PlanError(format!("{field} entry {}: {why}; remove it", p.display()))
                })?;
                Ok(dir)
            })
            .collect()
    }

    /// An empty tmpfs over each hidden place that exists.
    fn hides(&self) -> Vec<Mount> {
        self.hidden
            .iter()
            .filter(|h| h.exists())
            .map(|h| Mount::Tmpfs(h.clone()))
            .collect()
    }
}

/// The agent's own home, bound writable at the user's HOME path (its own
/// path when the user has no HOME; the HOME it is told is the target);
/// None when the profile's environment sets HOME or there is no private
/// home.
fn private_home(inputs: &SandboxInputs, places: &Places) -> Result<Option<Mount>, PlanError> {
    if env_of(&inputs.env, "HOME").is_some() {
        return Ok(None);
    }
    let Some(private) = &inputs.private_home else {
        return Ok(None);
    };
    let private = canon(private).ok_or_else(|| {
        PlanError(format!(
            "the agent's home {} does not exist",
            private.display()
        ))
    })?;
    let target = places.host_home.clone().unwrap_or_else(|| private.clone());
    Ok(Some(Mount::Bind {
        source: private,
        target,
        writable: true,
    }))
}

/// Directories the profile's environment names for the agent's own state
/// (HOME, TMPDIR and every `*_HOME`, when absolute and existing): writable;
/// one that would expose a hidden place is an error naming it.
fn profile_state_dirs(
    inputs: &SandboxInputs,
    places: &Places,
    allowed_inside: &[PathBuf],
) -> Result<Vec<PathBuf>, PlanError> {
    let mut writable = Vec::new();
    for (k, v) in &inputs.env {
        if !(k == "HOME" || k == "TMPDIR" || k.ends_with("_HOME")) || !v.starts_with('/') {
            continue;
        }
        // TMPDIR=/tmp is the private /tmp already.
        let Some(dir) = canon(Path::new(v)).filter(|d| d.is_dir() && d != Path::new("/tmp")) else {
            continue;
        };
        places.check(&dir, allowed_inside).map_err(|why| {
            PlanError(format!(
                "the profile's {k}={v} cannot be given to the agent: {why}; point it elsewhere"
            ))
        })?;
        writable.push(dir);
    }
    Ok(writable)
}

/// The read-only binds a run needs without asking (the caller drops any
/// that would expose a hidden place): toolchains and PATH entries under
/// the user's HOME, PATH entries outside the system directories, HOME and
/// the checkout, the program's install and the `overseer` binary's
/// directory. Also the toolchains' secrets to cover with `/dev/null`.
fn automatic_binds(inputs: &SandboxInputs, places: &Places) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut automatic: Vec<PathBuf> = Vec::new();
    let mut covers: Vec<PathBuf> = Vec::new();
    let path = env_of(&inputs.env, "PATH")
        .map(str::to_owned)
        .or_else(|| inputs.host_path.clone())
        .unwrap_or_default();
    let host_home = places.host_home.as_deref();
    if let Some(home) = host_home {
        for d in TOOLCHAIN_DIRS {
            automatic.extend(canon(&home.join(d)));
        }
        for s in TOOLCHAIN_SECRETS {
            let p = home.join(s);
            if p.exists() {
                covers.push(p);
            }
        }
    }
    // PATH entries under HOME; elsewhere, those the system directories do
    // not hold (`/srv/tools/bin`, say), unless inside the user's checkout.
    for entry in std::env::split_paths(&path) {
        let Some(e) = canon(&entry) else { continue };
        let in_system = SYSTEM_DIRS
            .iter()
            .any(|d| e.starts_with(Path::new("/").join(d)));
        let in_home = host_home.is_some_and(|h| e.starts_with(h));
        let in_repo = places.repo.as_deref().is_some_and(|r| e.starts_with(r));
        if in_home && host_home != Some(e.as_path()) || !in_system && !in_home && !in_repo {
            automatic.push(e);
        }
    }
    if let Some(program) = inputs.program.as_deref().and_then(canon) {
        automatic.extend(install_dir(&program));
    }
    if let Some(bin) = inputs.overseer_bin.as_deref().and_then(canon) {
        automatic.extend(bin.parent().map(Path::to_owned));
    }
    (automatic, covers)
}

/// Each of `paths` bound at its own place.
fn binds(paths: Vec<PathBuf>, writable: bool) -> impl Iterator<Item = Mount> {
    paths.into_iter().map(move |p| Mount::Bind {
        source: p.clone(),
        target: p,
        writable,
    })
}

/// The run's own: its working copy (writable), its socket at
/// [`AGENT_SOCKET`] (where its MCP server asks; in the private /tmp, so it
/// hides nothing of the host), its repository metadata (read-only, or
/// covered when missing so nothing can be made there) and, on a private
/// network, the `resolv.conf` that names slirp4netns's DNS.
fn run_own(inputs: &SandboxInputs, worktree: &Path, covers: &mut Vec<PathBuf>) -> Vec<Mount> {
    let mut mounts = vec![Mount::Bind {
        source: worktree.to_owned(),
        target: worktree.to_owned(),
        writable: true,
    }];
    if let Some(sock) = &inputs.agent_socket {
        mounts.push(Mount::Bind {
            source: sock.clone(),
            target: PathBuf::from(AGENT_SOCKET),
            writable: true,
        });
    }
    let git = worktree.join(".git");
    match std::fs::symlink_metadata(&git) {
        Ok(m) if m.is_dir() || m.is_file() => mounts.push(Mount::Bind {
            source: git.clone(),
            target: git,
            writable: false,
        }),
        _ => covers.push(git),
    }
    if let (NetworkMode::Private, Some(conf)) = (inputs.network, &inputs.resolv_conf) {
        mounts.push(Mount::Bind {
            source: conf.clone(),
            target: PathBuf::from("/etc/resolv.conf"),
            writable: false,
        });
    }
    mounts
}

/// The system's own directories, each bound read-only at its place (a
/// symlink recreated as one), from the host's root as it is now.
fn system_root() -> Vec<Mount> {
    let mut out = Vec::new();
    for name in SYSTEM_DIRS {
        let path = Path::new("/").join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(to) = std::fs::read_link(&path) {
                out.push(Mount::Symlink { link: path, to });
            }
        } else if meta.is_dir() {
            out.push(Mount::Bind {
                source: path.clone(),
                target: path,
                writable: false,
            });
        }
    }
    out
}

/// Parents first; at one depth, hide, then bind, then cover; a hide that an
/// earlier mount already took away from the host's view, or that nothing
/// shows (the sandbox's root is empty), is dropped: it would only create
/// an empty mount point that names the hidden path. Duplicates are
/// dropped, a writable bind winning over a read-only one of the same path.
fn order(mut mounts: Vec<Mount>) -> Vec<Mount> {
    mounts.sort_by_key(|m| (depth(m.target()), m.order()));
    let mut out: Vec<Mount> = Vec::new();
    for m in mounts {
        if let Some(same) = out.iter_mut().find(|o| o.target() == m.target()) {
            match (&*same, &m) {
                (
                    Mount::Bind {
                        source: s1,
                        writable: false,
                        ..
                    },
                    Mount::Bind {
                        source: s2,
                        writable: true,
                        ..
                    },
                ) if s1 == s2 => *same = m,
                // Something else in its place: the hide is not needed.
                (Mount::Tmpfs(_), Mount::Bind { .. }) if !m.is_host_view() => *same = m,
                (Mount::Tmpfs(_), Mount::Bind { .. } | Mount::Cover(_)) => out.push(m),
                _ => {}
            }
            continue;
        }
        if let Mount::Tmpfs(t) = &m {
            // The mount that decides what is at `t` so far: the deepest
            // (last applied) one above it. None: the host's own view.
            let above = out
                .iter()
                .rev()
                .find(|o| t.starts_with(o.target()) && o.target() != t.as_path());
            // Under the private /tmp (a data dir in /tmp) the hide stays:
            // /tmp takes writes, a hidden place must not (the checkout's is
            // taken away again by `unname`: nothing is bound inside it).
            let private_tmp =
                |o: &Mount| matches!(o, Mount::Tmpfs(p) if p.as_path() == Path::new("/tmp"));
            let shown = match above {
                Some(o) => o.is_host_view() || private_tmp(o),
                // The private /tmp stands on the empty root.
                None => t.as_path() == Path::new("/tmp"),
            };
            if !shown {
                continue;
            }
        }
        out.push(m);
    }
    out
}

/// Takes away the hide at the user's checkout `repo` where a hide is the only
/// thing that would name it (a mount at its path is listed, path and all, in
/// the sandbox's `/proc/self/mountinfo`), keeping it out of sight:
///
/// - under the private `/tmp`: the checkout is not there at all (the tmpfs
///   is the run's own); a write at its path lands in that tmpfs and reaches
///   nothing of the host, so no hide is needed;
/// - inside one of the system's directories (`/opt/src/app`,
///   `/var/lib/...`, `/usr/local/src/...`): its bind is split instead. Every entry beside the path down to the
///   checkout is bound on its own, the directories on the way are only
///   mount points bwrap makes in the empty root, and the checkout itself is
///   absent. Mountinfo lists the siblings, never the checkout.
///
/// The directories on the way are listed once, when the sandbox is made: an
/// entry created beside them later is not in the sandbox. Kept as it is
/// when a mount must appear inside the checkout (a data dir or a profile
/// path under it), when a profile's own path holds the checkout (the
/// profile shows that directory whole), or when a directory on the way
/// cannot be listed.
fn unname(mounts: Vec<Mount>, repo: &Path) -> Vec<Mount> {
    let Some(hide) = mounts
        .iter()
        .position(|m| *m == Mount::Tmpfs(repo.to_owned()))
    else {
        return mounts;
    };
    if mounts
        .iter()
        .any(|m| m.target().starts_with(repo) && m.target() != repo)
    {
        return mounts;
    }
    // The mounts above the checkout, parents first.
    let above: Vec<usize> = (0..hide)
        .filter(|&i| repo.starts_with(mounts[i].target()))
        .collect();
    // Below the deepest place that is not the host's own view (a hide's
    // tmpfs, the private /tmp: the checkout is not in it), every bind of
    // the host's view on the way down is split; above it nothing shows.
    let first = match above.iter().rposition(|&i| !mounts[i].is_host_view()) {
        Some(c) if matches!(mounts[above[c]], Mount::Tmpfs(_)) => c + 1,
        Some(_) => return mounts,
        None => 0,
    };
    let mut split = Vec::new();
    for &i in &above[first..] {
        // Only the system's own directories are split: a directory the
        // profile binds is the user's to show whole (a hide stays there).
        let Mount::Bind {
            target, writable, ..
        } = &mounts[i]
        else {
            return mounts;
        };
        let system = depth(target) == 1
            && SYSTEM_DIRS
                .iter()
                .any(|d| target.as_path() == Path::new("/").join(d));
        if !system {
            return mounts;
        }
        let Some(parts) = split_bind(target, repo, *writable) else {
            return mounts;
        };
        split.extend(parts);
    }
    // A place with a mount of its own keeps it (a hide among the siblings,
    // `/var/tmp` say, must not come back as the host's view): without the
    // bind it stood on, a hide there is dropped and the place is absent.
    split.retain(|s| {
        !mounts
            .iter()
            .any(|m| m.target() == s.target() && !matches!(m, Mount::Cover(_)))
    });
    let out: Vec<Mount> = mounts
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != hide && !above[first..].contains(i))
        .map(|(_, m)| m)
        .chain(split)
        .collect();
    order(out)
}

/// The host's view of `dir` without `repo` (below it): every entry beside
/// the path from `dir` down to `repo`, each bound (or recreated as its
/// symlink) on its own. None when a directory on the way cannot be read.
fn split_bind(dir: &Path, repo: &Path, writable: bool) -> Option<Vec<Mount>> {
    let rest = repo.strip_prefix(dir).ok()?;
    let mut out = Vec::new();
    let mut cur = dir.to_owned();
    for part in rest.components() {
        let next = cur.join(part);
        for entry in std::fs::read_dir(&cur).ok()? {
            let path = entry.ok()?.path();
            if path == next {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if meta.file_type().is_symlink() {
                out.push(Mount::Symlink {
                    to: std::fs::read_link(&path).ok()?,
                    link: path,
                });
            } else {
                out.push(Mount::Entry { path, writable });
            }
        }
        cur = next;
    }
    Some(out)
}

fn user_path(p: &Path, field: &str) -> Result<PathBuf, PlanError> {
    if !p.is_absolute() {
        return Err(PlanError(format!(
            "{field} entry {} is not an absolute path; write it in full",
            p.display()
        )));
    }
    canon(p).ok_or_else(|| {
        PlanError(format!(
            "{field} entry {} does not exist; create it or remove the entry",
            p.display()
        ))
    })
}

fn what_is(
    p: &Path,
    data: &Path,
    config: &Path,
    home: Option<&Path>,
    repo: Option<&Path>,
) -> &'static str {
    if p == data {
        "Overseer's data dir: database, socket, every run's working copy"
    } else if p == config {
        "Overseer's config dir: the audit signing key"
    } else if Some(p) == home {
        "your HOME: dotfiles, credentials"
    } else if Some(p) == repo {
        "your checkout of the repository"
    } else if p == Path::new("/tmp") {
        "the shared /tmp: other programs' files and sockets"
    } else if p == Path::new(VAR_TMP) {
        "the shared /var/tmp: other programs' files"
    } else {
        "$XDG_RUNTIME_DIR: D-Bus, the ssh agent"
    }
}

/// What to bind so `program` can run: the top-most `node_modules` above
/// it (an npm-installed adapter and its packages), else its directory.
pub fn install_dir(program: &Path) -> Option<PathBuf> {
    let top_node_modules = program
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last();
    top_node_modules
        .or_else(|| program.parent())
        .map(Path::to_owned)
}

#[cfg(test)]
mod tests;
