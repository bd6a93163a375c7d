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

/// Builds the sandbox for `inputs`.
pub fn plan(inputs: &SandboxInputs) -> Result<SandboxPlan, PlanError> {
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
    // The places a run never reaches.
    let tmp = PathBuf::from("/tmp");
    let mut hidden: Vec<PathBuf> = vec![
        tmp.clone(),
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

    let mut mounts: Vec<Mount> = system_root();
    let mut env: Vec<(String, String)> = Vec::new();
    // Allowed inside the data dir: the working copy, the agent's home.
    let mut allowed_inside: Vec<PathBuf> = vec![worktree.clone()];

    // A bind the user asked for (profile paths and env dirs): an error when
    // it would expose what is hidden. Automatic ones are skipped instead.
    let check = |p: &Path, allowed_inside: &[PathBuf]| -> Result<(), String> {
        if depth(p) == 0 {
            return Err(format!("{} is the whole filesystem", p.display()));
        }
        if let Some(h) = hidden.iter().find(|h| h.as_path() == p) {
            return Err(format!(
                "{} is a place a run must not reach ({})",
                p.display(),
                what_is(
                    h,
                    &data_dir,
                    &config_dir,
                    host_home.as_deref(),
                    repo.as_deref()
                )
            ));
        }
        if let Some(s) = secret_roots.iter().find(|s| p.starts_with(s)) {
            if !allowed_inside.iter().any(|a| p.starts_with(a)) {
                return Err(format!(
                    "{} lies inside {}",
                    p.display(),
                    what_is(
                        s,
                        &data_dir,
                        &config_dir,
                        host_home.as_deref(),
                        repo.as_deref()
                    )
                ));
            }
        }
        Ok(())
    };

    // HOME: the profile's, or the agent's own bound at the user's HOME.
    let profile_home = env_of(&inputs.env, "HOME");
    if profile_home.is_none() {
        if let Some(private) = &inputs.private_home {
            let private = canon(private).ok_or_else(|| {
                PlanError(format!(
                    "the agent's home {} does not exist",
                    private.display()
                ))
            })?;
            let target = host_home.clone().unwrap_or_else(|| private.clone());
            allowed_inside.push(private.clone());
            env.push(("HOME".to_owned(), target.to_string_lossy().into_owned()));
            mounts.push(Mount::Bind {
                source: private,
                target,
                writable: true,
            });
        }
    }
    if env_of(&inputs.env, "TMPDIR").is_none() {
        env.push(("TMPDIR".to_owned(), "/tmp".to_owned()));
    }

    // Directories the profile's environment names for the agent's own
    // state: HOME, TMPDIR and every *_HOME.
    let mut writable: Vec<PathBuf> = Vec::new();
    for (k, v) in &inputs.env {
        if !(k == "HOME" || k == "TMPDIR" || k.ends_with("_HOME")) || !v.starts_with('/') {
            continue;
        }
        // TMPDIR=/tmp is the private /tmp already.
        let Some(dir) = canon(Path::new(v)).filter(|d| d.is_dir() && *d != tmp) else {
            continue;
        };
        check(&dir, &allowed_inside).map_err(|why| {
            PlanError(format!(
                "the profile's {k}={v} cannot be given to the agent: {why}; point it elsewhere"
            ))
        })?;
        writable.push(dir);
    }
    // The profile's own paths: each must exist and expose nothing hidden.
    let user_paths = |paths: &[PathBuf], field: &str| -> Result<Vec<PathBuf>, PlanError> {
        paths
            .iter()
            .map(|p| {
                let dir = user_path(p, field)?;
                check(&dir, &allowed_inside).map_err(|why| {
                    PlanError(format!("{field} entry {}: {why}; remove it", p.display()))
                })?;
                Ok(dir)
            })
            .collect()
    };
    writable.extend(user_paths(&inputs.write_paths, "write_paths")?);
    let mut readable = user_paths(&inputs.read_paths, "read_paths")?;

    // Automatic read-only binds: toolchains under HOME, PATH entries under
    // HOME, the program's install.
    let mut automatic: Vec<PathBuf> = Vec::new();
    let mut covers: Vec<PathBuf> = Vec::new();
    if let Some(home) = &host_home {
        for d in TOOLCHAIN_DIRS {
            automatic.extend(canon(&home.join(d)));
        }
        let path = env_of(&inputs.env, "PATH")
            .map(str::to_owned)
            .or_else(|| inputs.host_path.clone())
            .unwrap_or_default();
        for entry in std::env::split_paths(&path) {
            if let Some(e) = canon(&entry).filter(|e| e.starts_with(home) && e != home) {
                automatic.push(e);
            }
        }
        for s in TOOLCHAIN_SECRETS {
            let p = home.join(s);
            if p.exists() {
                covers.push(p);
            }
        }
    }
    // PATH entries elsewhere that the system directories do not hold
    // (`/srv/tools/bin`, say): read-only, unless inside the user's checkout.
    let path = env_of(&inputs.env, "PATH")
        .map(str::to_owned)
        .or_else(|| inputs.host_path.clone())
        .unwrap_or_default();
    for entry in std::env::split_paths(&path) {
        let Some(e) = canon(&entry) else { continue };
        let in_system = SYSTEM_DIRS
            .iter()
            .any(|d| e.starts_with(Path::new("/").join(d)));
        let in_home = host_home.as_deref().is_some_and(|h| e.starts_with(h));
        let in_repo = repo.as_deref().is_some_and(|r| e.starts_with(r));
        if !in_system && !in_home && !in_repo {
            automatic.push(e);
        }
    }
    if let Some(program) = inputs.program.as_deref().and_then(canon) {
        automatic.extend(install_dir(&program));
    }
    if let Some(bin) = inputs.overseer_bin.as_deref().and_then(canon) {
        automatic.extend(bin.parent().map(Path::to_owned));
    }
    for p in automatic {
        if check(&p, &allowed_inside).is_ok() && p.is_dir() {
            readable.push(p);
        } else {
            tracing::debug!("not bound into the sandbox: {}", p.display());
        }
    }

    for h in &hidden {
        if h.exists() {
            mounts.push(Mount::Tmpfs(h.clone()));
        }
    }
    for p in readable {
        mounts.push(Mount::Bind {
            source: p.clone(),
            target: p,
            writable: false,
        });
    }
    for p in writable {
        mounts.push(Mount::Bind {
            source: p.clone(),
            target: p,
            writable: true,
        });
    }
    mounts.push(Mount::Bind {
        source: worktree.clone(),
        target: worktree.clone(),
        writable: true,
    });
    // The run's own socket, where its MCP server asks (nothing else is
    // served there). In the private /tmp, so it hides nothing of the host.
    if let Some(sock) = &inputs.agent_socket {
        mounts.push(Mount::Bind {
            source: sock.clone(),
            target: PathBuf::from(AGENT_SOCKET),
            writable: true,
        });
    }
    // The run's repository metadata: read-only, never missing.
    let git = worktree.join(".git");
    match std::fs::symlink_metadata(&git) {
        Ok(m) if m.is_dir() || m.is_file() => mounts.push(Mount::Bind {
            source: git.clone(),
            target: git,
            writable: false,
        }),
        _ => covers.push(git),
    }
    mounts.extend(covers.into_iter().map(Mount::Cover));
    if let (NetworkMode::Private, Some(conf)) = (inputs.network, &inputs.resolv_conf) {
        mounts.push(Mount::Bind {
            source: conf.clone(),
            target: PathBuf::from("/etc/resolv.conf"),
            writable: false,
        });
    }

    let mut mounts = order(mounts);
    if let Some(repo) = &repo {
        mounts = unname(mounts, repo);
    }
    Ok(SandboxPlan {
        bwrap: inputs.bwrap.clone(),
        mounts,
        network: inputs.network,
        chdir: worktree,
        env,
    })
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
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    impl Fixture {
        fn new() -> Fixture {
            // Not under /tmp (the private /tmp hides it as a whole, and the
            // plan then needs no hide of its own): each hide must show. A
            // checkout may itself live under /tmp (CI clones there), so
            // prefer /var/tmp.
            let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/unit-tmp");
            let base = [PathBuf::from("/var/tmp/overseer-unit-tests"), target]
                .into_iter()
                .find(|b| !b.starts_with("/tmp") && std::fs::create_dir_all(b).is_ok())
                .expect("a temp dir outside /tmp");
            let dir = tempfile::tempdir_in(&base).expect("tempdir");
            let root = dir.path().canonicalize().expect("canon");
            for d in [
                "home/.cargo/bin",
                "home/.local/bin",
                "home/bin",
                "data/worktrees/w/run-1/.git/hooks",
                "data/agent-homes/claude",
                "config",
                "repo/.git/objects",
                "runtime",
                "codex-home",
                "tools/lib/node_modules/pkg/node_modules/dep/bin",
            ] {
                std::fs::create_dir_all(root.join(d)).expect("mkdir");
            }
            std::fs::write(root.join("home/.cargo/credentials.toml"), "token").expect("write");
            Fixture { _dir: dir, root }
        }

        fn p(&self, s: &str) -> PathBuf {
            self.root.join(s)
        }

        fn inputs(&self) -> SandboxInputs {
            SandboxInputs {
                bwrap: "/usr/bin/bwrap".into(),
                data_dir: self.p("data"),
                config_dir: self.p("config"),
                runtime_dir: Some(self.p("runtime")),
                host_home: Some(self.p("home")),
                host_path: Some(format!(
                    "{}:/usr/bin:{}",
                    self.p("home/bin").display(),
                    self.p("home/.cargo/bin").display()
                )),
                repo: Some(self.p("repo")),
                worktree: self.p("data/worktrees/w/run-1"),
                private_home: Some(self.p("data/agent-homes/claude")),
                program: Some(self.p("tools/lib/node_modules/pkg/node_modules/dep/bin")),
                network: NetworkMode::Host,
                ..SandboxInputs::default()
            }
        }
    }

    fn bind(m: &[Mount], target: &Path) -> Option<(PathBuf, bool)> {
        m.iter().find_map(|x| match x {
            Mount::Bind {
                source,
                target: t,
                writable,
            } if t == target => Some((source.clone(), *writable)),
            _ => None,
        })
    }

    fn position(m: &[Mount], target: &Path) -> usize {
        m.iter()
            .position(|x| x.target() == target)
            .unwrap_or_else(|| panic!("no mount at {}", target.display()))
    }

    /// Whether any mount of the plan (as bwrap gets it) names `p` or a
    /// path inside it.
    fn names(plan: &SandboxPlan, p: &Path) -> bool {
        plan.args().iter().any(|a| Path::new(a).starts_with(p))
    }

    #[test]
    fn a_data_dir_under_tmp_stays_hidden_and_read_only_and_a_checkout_there_is_not_named() {
        // CI clones under /tmp: the private /tmp must not stand in for the
        // data dir's and config dir's hides (the worktree is bound inside
        // the data dir). The checkout needs none: it is not in the private
        // /tmp, and a hide would name its path in /proc/self/mountinfo.
        let dir = tempfile::Builder::new()
            .prefix("overseer-plan-")
            .tempdir_in("/tmp")
            .expect("tempdir in /tmp");
        let root = dir.path().canonicalize().expect("canon");
        for d in ["repo/.git/objects", "data/worktrees/w/run-1/.git", "config"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        let plan = plan(&SandboxInputs {
            bwrap: "/usr/bin/bwrap".into(),
            data_dir: root.join("data"),
            config_dir: root.join("config"),
            repo: Some(root.join("repo")),
            worktree: root.join("data/worktrees/w/run-1"),
            network: NetworkMode::Host,
            ..SandboxInputs::default()
        })
        .expect("plan");
        let args: Vec<String> = plan
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        for hidden in ["data", "config"] {
            let p = root.join(hidden);
            assert!(
                plan.mounts.contains(&Mount::Tmpfs(p.clone())),
                "{hidden} has its own hide: {:#?}",
                plan.mounts
            );
            let p = p.to_string_lossy().into_owned();
            assert!(
                args.windows(2).any(|w| w[0] == "--remount-ro" && w[1] == p),
                "{hidden} is read-only: {args:?}"
            );
        }
        let repo = root.join("repo");
        assert!(!names(&plan, &repo), "the checkout is named: {args:?}");
        assert!(plan.hides(&repo.join("README.md")));
        assert!(!plan.writable(&repo.join("README.md")));
        assert!(plan.writable(&root.join("data/worktrees/w/run-1/src")));
    }

    #[test]
    fn a_checkout_inside_a_system_directory_is_left_out_of_its_bind_not_hidden_at_its_path() {
        // Directories every system has stand in for a checkout there (the
        // plan only lists them): /usr/share beside /usr/bin, and one in /var
        // beside /var/tmp, a hidden place.
        let f = Fixture::new();
        let in_var = ["/var/lib", "/var/cache", "/var/log"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| canon(p).as_ref() == Some(p) && Path::new(VAR_TMP).is_dir())
            .expect("a directory in /var beside /var/tmp");
        for checkout in [PathBuf::from("/usr/share"), in_var] {
            let mut inputs = f.inputs();
            inputs.repo = Some(checkout.clone());
            let plan = plan(&inputs).expect("plan");
            let m = &plan.mounts;
            let parent = checkout.parent().expect("parent");
            assert!(!names(&plan, &checkout), "{}: {m:#?}", checkout.display());
            assert!(plan.hides(&checkout.join("x")), "{m:#?}");
            assert!(!plan.writable(&checkout.join("x")));
            assert!(bind(m, parent).is_none(), "{m:#?}");
            // Everything else of the system directory is there, as the
            // host has it.
            for entry in std::fs::read_dir(parent).expect("list") {
                let p = entry.expect("entry").path();
                if p == checkout || p == Path::new(VAR_TMP) {
                    continue;
                }
                let kept = m.iter().any(|x| match x {
                    Mount::Entry {
                        path,
                        writable: false,
                    } => path == &p,
                    Mount::Symlink { link, .. } => link == &p,
                    _ => false,
                });
                assert!(kept, "{} is bound: {m:#?}", p.display());
                if !std::fs::symlink_metadata(&p).is_ok_and(|t| t.is_symlink()) {
                    let arg = p.to_string_lossy().into_owned();
                    let args: Vec<String> = plan
                        .args()
                        .iter()
                        .map(|a| a.to_string_lossy().into_owned())
                        .collect();
                    assert!(
                        args.windows(3)
                            .any(|w| w[0] == "--ro-bind-try" && w[1] == arg && w[2] == arg),
                        "{arg}: an entry gone by the time the sandbox is made is skipped"
                    );
                }
            }
            // The hidden place beside it stays out of sight (absent now).
            assert!(plan.hides(&Path::new(VAR_TMP).join("x")), "{m:#?}");
            assert!(bind(m, Path::new(VAR_TMP)).is_none(), "{m:#?}");
        }
        // A directory the profile binds shows whole: the hide stays there.
        let dir = f.p("srv/src/app");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut inputs = f.inputs();
        inputs.repo = Some(dir.clone());
        inputs.read_paths = vec![f.p("srv")];
        let plan = plan(&inputs).expect("plan");
        assert!(plan.mounts.contains(&Mount::Tmpfs(dir.clone())));
        assert!(plan.hides(&dir.join("x")));
    }

    #[test]
    fn the_plan_hides_the_engine_and_the_user_and_binds_back_only_the_run() {
        let f = Fixture::new();
        let plan = plan(&f.inputs()).expect("plan");
        let m = &plan.mounts;
        for hidden in [
            "data/overseer.sock",
            "data/worktrees/w/run-2",
            "config/key",
            "runtime/bus",
            "repo/src",
            "repo/.git/hooks",
            "home/.bashrc",
        ] {
            assert!(plan.hides(&f.p(hidden)), "{hidden} is hidden: {m:#?}");
        }
        assert!(plan.hides(Path::new("/tmp/x")));
        assert!(
            m.contains(&Mount::Tmpfs(PathBuf::from("/tmp"))),
            "a private /tmp"
        );
        assert!(!plan.writable(&f.p("data/overseer.sock")));
        assert!(!plan.writable(&f.p("repo/x")));
        let args: Vec<String> = plan
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let ro = args
            .iter()
            .position(|a| a == "--remount-ro")
            .expect("hides are read-only");
        assert!(
            args[..ro].iter().all(|a| a != "--remount-ro")
                && args[ro..]
                    .iter()
                    .step_by(2)
                    .take_while(|a| *a == "--remount-ro")
                    .count()
                    > 0,
            "{args:?}"
        );
        assert!(!args
            .windows(2)
            .any(|w| w[0] == "--remount-ro" && w[1] == "/tmp"));
        assert!(!plan.hides(Path::new("/usr/bin/git")));
        // The agent's own home stands in for the user's HOME (no tmpfs
        // needed there: the bind replaces it).
        assert_eq!(
            bind(m, &f.p("home")),
            Some((f.p("data/agent-homes/claude"), true))
        );
        assert!(plan
            .env
            .contains(&("HOME".into(), f.p("home").to_string_lossy().into_owned())));
        assert!(plan.env.contains(&("TMPDIR".into(), "/tmp".into())));
        // The working copy is writable, its .git read-only, after it.
        let wt = f.p("data/worktrees/w/run-1");
        assert_eq!(bind(m, &wt), Some((wt.clone(), true)));
        assert_eq!(bind(m, &wt.join(".git")), Some((wt.join(".git"), false)));
        assert!(!plan.hides(&wt.join("src")));
        assert!(position(m, &wt.join(".git")) > position(m, &wt));
        assert!(plan.writable(&wt.join("src/x")));
        assert!(!plan.writable(&wt.join(".git/hooks/x")));
        // Read-only: toolchains and PATH entries under HOME, the program's
        // top-most node_modules. Nothing of the user's repository (its
        // objects included) is bound.
        assert_eq!(bind(m, &f.p("repo/.git/objects")), None);
        assert!(plan.hides(&f.p("repo/.git/objects/x")));
        for ro in [
            "home/.cargo",
            "home/.local/bin",
            "home/bin",
            "home/.cargo/bin",
            "tools/lib/node_modules",
        ] {
            assert_eq!(bind(m, &f.p(ro)), Some((f.p(ro), false)), "{ro}");
            assert!(!plan.writable(&f.p(ro).join("x")), "{ro}");
            assert!(!plan.hides(&f.p(ro).join("x")), "{ro}");
        }
        assert!(m.contains(&Mount::Cover(f.p("home/.cargo/credentials.toml"))));
        assert!(plan.hides(&f.p("home/.cargo/credentials.toml")));
        assert!(position(m, &f.p("home/.cargo")) > position(m, &f.p("home")));
        assert_eq!(plan.chdir, wt);
        assert!(!plan.args().contains(&OsString::from("--unshare-net")));
        let args: Vec<String> = plan
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.starts_with(&["--unshare-user".to_owned(), "--unshare-pid".to_owned()]));
        assert_eq!(args.last().map(String::as_str), Some("--"));
    }

    #[test]
    fn profile_dirs_are_writable_and_may_not_expose_what_is_hidden() {
        let f = Fixture::new();
        let mut inputs = f.inputs();
        inputs.env = vec![
            ("HOME".into(), f.p("codex-home").to_string_lossy().into()),
            (
                "CODEX_HOME".into(),
                f.p("codex-home").to_string_lossy().into(),
            ),
            ("API_KEY".into(), "/".into()),
        ];
        inputs.network = NetworkMode::None;
        let plan = plan(&inputs).expect("plan");
        assert_eq!(
            bind(&plan.mounts, &f.p("codex-home")),
            Some((f.p("codex-home"), true))
        );
        // The profile's HOME: the user's HOME is hidden (a tmpfs).
        assert!(plan.hides(&f.p("home/.bashrc")));
        assert!(!plan.writable(&f.p("home/.bashrc")) || plan.hides(&f.p("home/.bashrc")));
        assert!(!plan.env.iter().any(|(k, _)| k == "HOME"));
        assert!(plan.args().contains(&OsString::from("--unshare-net")));

        for (k, v, why) in [
            ("HOME", f.p("home"), "your HOME"),
            ("CARGO_HOME", f.p("config"), "signing key"),
            (
                "X_HOME",
                f.p("data/worktrees"),
                "inside Overseer's data dir",
            ),
        ] {
            let mut inputs = f.inputs();
            inputs.env = vec![(k.into(), v.to_string_lossy().into())];
            let err = super::plan(&inputs).expect_err("refused");
            assert!(err.0.contains(why), "{err}");
            assert!(err.0.contains(k), "{err}");
        }
        let mut inputs = f.inputs();
        inputs.write_paths = vec!["relative".into()];
        assert!(super::plan(&inputs)
            .expect_err("relative")
            .0
            .contains("absolute"));
        inputs.write_paths = vec![f.p("data")];
        assert!(super::plan(&inputs).is_err());
        inputs.write_paths = vec![];
        inputs.read_paths = vec![f.p("config")];
        assert!(super::plan(&inputs).is_err());
        // A bind above a hidden place is fine: the hide is applied after it.
        inputs.read_paths = vec![f.root.clone()];
        let plan = super::plan(&inputs).expect("plan");
        assert!(!plan.hides(&f.p("script.json")));
        assert!(plan.hides(&f.p("config/key")));
        assert!(plan.hides(&f.p("data/overseer.sock")));
    }

    #[test]
    fn a_missing_or_symlinked_git_is_covered() {
        let f = Fixture::new();
        let wt = f.p("data/worktrees/w/run-1");
        std::fs::remove_dir_all(wt.join(".git")).expect("rm");
        let p = plan(&f.inputs()).expect("plan");
        assert!(p.mounts.contains(&Mount::Cover(wt.join(".git"))));
        std::os::unix::fs::symlink(f.p("repo/.git"), wt.join(".git")).expect("symlink");
        let p = plan(&f.inputs()).expect("plan");
        assert!(p.mounts.contains(&Mount::Cover(wt.join(".git"))));
        std::fs::remove_file(wt.join(".git")).expect("rm");
        std::fs::write(wt.join(".git"), "gitdir: /elsewhere\n").expect("write");
        let p = plan(&f.inputs()).expect("plan");
        assert_eq!(
            bind(&p.mounts, &wt.join(".git")),
            Some((wt.join(".git"), false))
        );
    }

    #[test]
    fn install_dirs() {
        assert_eq!(
            install_dir(Path::new("/a/node_modules/b/node_modules/c/dist/x.js")),
            Some(PathBuf::from("/a/node_modules"))
        );
        assert_eq!(
            install_dir(Path::new("/usr/local/bin/agent")),
            Some(PathBuf::from("/usr/local/bin"))
        );
    }
}
