//! A cgroup (v2) per run: every process a run starts, setsid and double
//! forks included, is in it and cannot leave (the sandbox sees the cgroup
//! tree read-only), so stopping a run is one write to `cgroup.kill`, and
//! the engine can tell exactly whether a socket peer belongs to a run.
//!
//! Layout: `<base>/overseer-<db id>/run-<id>` (and `run-<id>-sensors`),
//! where `<base>` is the cgroup v2 mount (found in `/proc/self/mountinfo`,
//! never assumed) when this user may write there, else the engine's own
//! cgroup when it is delegated to this user (a systemd scope with
//! `Delegate=yes`). One directory per database: engines on other data dirs
//! never touch each other's runs.
//!
//! The hybrid hierarchy some machines have (v1 controllers, v2 mounted at
//! `/sys/fs/cgroup/unified`) has no controllers on v2: tracking and kill
//! only, which is all this needs.

use super::CgroupStatus;
use overseer_core::RunId;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(20);

/// The cgroup v2 mount: where it is, and which cgroup is at its top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Mount {
    pub mount: PathBuf,
    /// The cgroup path at the mount point (`/` unless mounted from inside
    /// a cgroup namespace or a bind of a subtree).
    pub root: String,
}

impl V2Mount {
    /// The directory of a cgroup path as `/proc/PID/cgroup` shows it.
    pub fn dir_of(&self, cgroup: &str) -> Option<PathBuf> {
        let cgroup = cgroup.trim_end_matches(" (deleted)");
        let rest = if self.root == "/" {
            cgroup
        } else {
            let r = cgroup.strip_prefix(self.root.as_str())?;
            if !(r.is_empty() || r.starts_with('/')) {
                return None;
            }
            r
        };
        let rest = rest.trim_start_matches('/');
        if rest.split('/').any(|c| c == "..") {
            return None;
        }
        Some(if rest.is_empty() {
            self.mount.clone()
        } else {
            self.mount.join(rest)
        })
    }
}

/// Octal escapes of mountinfo (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = |c: &u8| (b'0'..=b'7').contains(c);
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(octal) {
            let n = u32::from(b[i + 1] - b'0') * 64
                + u32::from(b[i + 2] - b'0') * 8
                + u32::from(b[i + 3] - b'0');
            out.push(u8::try_from(n).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first cgroup2 mount in a mountinfo text.
pub fn parse_mountinfo(text: &str) -> Option<V2Mount> {
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = left.split_whitespace().collect();
        Some(V2Mount {
            root: unescape(fields.get(3)?),
            mount: PathBuf::from(unescape(fields.get(4)?)),
        })
    })
}

/// This process's view of the cgroup v2 mount.
pub fn v2() -> Option<&'static V2Mount> {
    static V2: OnceLock<Option<V2Mount>> = OnceLock::new();
    V2.get_or_init(|| {
        std::fs::read_to_string("/proc/self/mountinfo")
            .ok()
            .and_then(|t| parse_mountinfo(&t))
    })
    .as_ref()
}

/// The v2 cgroup of a process (`0::/path` in `/proc/PID/cgroup`).
pub fn cgroup_of(pid: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_owned)
}

fn writable_file(p: &Path) -> bool {
    std::fs::OpenOptions::new().write(true).open(p).is_ok()
}

/// Whether run cgroups can be made under `base` and this process's
/// children moved into them (write access to `cgroup.procs` of the common
/// ancestor of where they start and where they go).
fn usable(base: &Path, own: &Path) -> Result<(), String> {
    let probe = base.join(format!("overseer-probe-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&probe) {
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(format!("cannot create a cgroup in {}: {e}", base.display()));
        }
    }
    let common = own
        .ancestors()
        .find(|a| probe.starts_with(a))
        .map(Path::to_owned)
        .unwrap_or_else(|| base.to_owned());
    let ok =
        writable_file(&probe.join("cgroup.procs")) && writable_file(&common.join("cgroup.procs"));
    let _ = std::fs::remove_dir(&probe);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "processes cannot be moved into cgroups under {} (no write access to {})",
            base.display(),
            common.join("cgroup.procs").display()
        ))
    }
}

/// Whether this machine gives each run a cgroup, and where.
pub fn probe() -> CgroupStatus {
    let Some(v2) = v2() else {
        return CgroupStatus::Missing {
            why: "no cgroup v2 mount in /proc/self/mountinfo".to_owned(),
        };
    };
    let Some(own) = cgroup_of("self").and_then(|c| v2.dir_of(&c)) else {
        return CgroupStatus::Missing {
            why: format!(
                "this process's cgroup is not under the cgroup v2 mount at {}",
                v2.mount.display()
            ),
        };
    };
    let mut reasons = Vec::new();
    for base in [v2.mount.clone(), own.clone()] {
        match usable(&base, &own) {
            Ok(()) => {
                remove_stale(&base);
                return CgroupStatus::Available {
                    root: base.to_string_lossy().into_owned(),
                };
            }
            Err(why) => reasons.push(why),
        }
    }
    reasons.dedup();
    CgroupStatus::Missing {
        why: format!(
            "{}; start Overseer in a cgroup delegated to you (for example \
             `systemd-run --user --scope -p Delegate=yes overseer ...`)",
            reasons.join("; ")
        ),
    }
}

/// The run a process belongs to when its cgroup is one of the `run-*`
/// cgroups under `root`.
pub fn run_of(pid: u32, root: &Path) -> Option<RunId> {
    let dir = v2()?.dir_of(&cgroup_of(&pid.to_string())?)?;
    let rest = dir.strip_prefix(root).ok()?;
    let first = rest.components().next()?;
    super::parse_run_name(&first.as_os_str().to_string_lossy())
}

/// One run's cgroup (or its sensors').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCgroup {
    path: PathBuf,
    /// Its directories in the v1 hierarchies that hold its limits (a
    /// hybrid system), each with the controller it is for.
    v1: Vec<(&'static str, PathBuf)>,
    /// The limits set on it (None: none).
    limits: Option<super::limits::RunLimits>,
}

/// `<v1 base>/<root's name>`: this engine's directory in a v1 hierarchy.
fn v1_root(base: &Path, root: &Path) -> Option<PathBuf> {
    Some(base.join(root.file_name()?))
}

impl RunCgroup {
    /// Creates (or takes over) `<root>/<name>` with `limits` (see
    /// [`super::limits`]); whatever an earlier holder left in it is killed
    /// first.
    pub fn create(
        root: &Path,
        name: &str,
        limits: Option<&super::limits::RunLimits>,
    ) -> std::io::Result<RunCgroup> {
        let cg = Self::create_tracking(root, name)?;
        match limits {
            Some(l) => cg.with_limits(root, name, l),
            None => Ok(cg),
        }
    }

    /// Sets `limits` on it: in its own directory for the controllers cgroup
    /// v2 has, in a directory of the same name in each v1 hierarchy for the
    /// others.
    fn with_limits(
        mut self,
        root: &Path,
        name: &str,
        limits: &super::limits::RunLimits,
    ) -> std::io::Result<RunCgroup> {
        use super::limits::{apply, apply_runs_dir, controllers, enable_v2, Place};
        let found = controllers();
        let v2: Vec<&str> = found
            .places
            .iter()
            .filter(|(_, p)| *p == Place::V2)
            .map(|(c, _)| *c)
            .collect();
        if !v2.is_empty() {
            enable_v2(root, &v2);
        }
        for (c, place) in &found.places {
            let dir = match place {
                Place::V2 => {
                    apply_runs_dir(c, place, root);
                    self.path.clone()
                }
                Place::V1(base) => {
                    let Some(engine_dir) = v1_root(base, root) else {
                        continue;
                    };
                    let dir = engine_dir.join(name);
                    std::fs::create_dir_all(&dir).map_err(|e| {
                        std::io::Error::new(
                            e.kind(),
                            format!("cannot create the cgroup {}: {e}", dir.display()),
                        )
                    })?;
                    apply_runs_dir(c, place, &engine_dir);
                    self.v1.push((c, dir.clone()));
                    dir
                }
            };
            apply(c, place, &dir, limits)?;
        }
        self.limits = Some(*limits);
        Ok(self)
    }

    /// The limits set on it.
    pub fn limits(&self) -> Option<&super::limits::RunLimits> {
        self.limits.as_ref()
    }

    /// How often it has hit each of its limits so far.
    pub fn limit_hits(&self) -> super::limits::LimitHits {
        use super::limits::{controllers, hits, Place};
        let mut out = super::limits::LimitHits::default();
        for (c, place) in &controllers().places {
            let dir = match place {
                Place::V2 => Some(&self.path),
                Place::V1(_) => self.v1.iter().find(|(vc, _)| vc == c).map(|(_, d)| d),
            };
            if let Some(d) = dir {
                let h = hits(c, place, d);
                out.pids += h.pids;
                out.memory_high += h.memory_high;
                out.oom_kills += h.oom_kills;
            }
        }
        out
    }

    fn create_tracking(root: &Path, name: &str) -> std::io::Result<RunCgroup> {
        let path = root.join(name);
        let mut attempt = 0;
        loop {
            match std::fs::create_dir_all(&path) {
                Ok(()) => break,
                // The root was removed by another run's cleanup between
                // its creation and ours: again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempt < 3 => {
                    attempt += 1;
                }
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot create the cgroup {}: {e}", path.display()),
                    ))
                }
            }
        }
        let cg = RunCgroup {
            path,
            v1: Vec::new(),
            limits: None,
        };
        if !cg.live_pids().is_empty() {
            let left = cg.kill_blocking(Duration::from_secs(5));
            if !left.is_empty() {
                tracing::error!(?left, "processes left in {} survived", cg.path.display());
            }
        }
        Ok(cg)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every `cgroup.procs` it has (v2, then each v1 directory of its
    /// limits), opened write-only (and close-on-exec): a child writes `0`
    /// to each before exec to join.
    pub fn procs_files(&self) -> std::io::Result<Vec<std::fs::File>> {
        std::iter::once(&self.path)
            .chain(self.v1.iter().map(|(_, d)| d))
            .map(|d| {
                let p = d.join("cgroup.procs");
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))
            })
            .collect()
    }

    /// Every process in it (and in any cgroup below it).
    pub fn pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut dirs = vec![self.path.clone()];
        while let Some(d) = dirs.pop() {
            if let Ok(text) = std::fs::read_to_string(d.join("cgroup.procs")) {
                out.extend(text.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
            }
            if let Ok(entries) = std::fs::read_dir(&d) {
                dirs.extend(
                    entries
                        .filter_map(|e| e.ok())
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// SIGKILL to everything in it at once (`cgroup.kill`; on kernels
    /// before 5.14, to each process it lists).
    pub fn kill(&self) {
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.kill"))
            .and_then(|mut f| f.write_all(b"1"));
        if written.is_err() {
            for p in self.pids() {
                if let Some(pid) = i32::try_from(p)
                    .ok()
                    .filter(|&p| p > 1 && p as u32 != std::process::id())
                    .and_then(rustix::process::Pid::from_raw)
                {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
    }

    /// Removes it and every cgroup below it (they must be empty), and its
    /// v1 directories.
    pub fn remove(&self) -> std::io::Result<()> {
        for (_, d) in &self.v1 {
            let _ = std::fs::remove_dir(d);
        }
        Self::remove_tree(&self.path)
    }

    fn remove_tree(path: &Path) -> std::io::Result<()> {
        fn rm(d: &Path) -> std::io::Result<()> {
            if let Ok(entries) = std::fs::read_dir(d) {
                for e in entries.filter_map(|e| e.ok()) {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        rm(&e.path())?;
                    }
                }
            }
            match std::fs::remove_dir(d) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        }
        rm(path)
    }

    /// Its live processes (a zombie waits only for its parent to reap it:
    /// it runs nothing and does not keep the cgroup from being removed).
    pub fn live_pids(&self) -> Vec<u32> {
        self.pids().into_iter().filter(|p| !is_zombie(*p)).collect()
    }

    /// Kills everything in it and waits up to `wait` for it to be empty;
    /// returns the pids still alive (empty: all gone).
    pub fn kill_blocking(&self, wait: Duration) -> Vec<u32> {
        let deadline = Instant::now() + wait;
        loop {
            self.kill();
            let left = self.live_pids();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(POLL);
        }
    }

    /// [`RunCgroup::kill_blocking`] for async callers.
    pub async fn kill_all(&self, wait: Duration) -> Vec<u32> {
        let deadline = Instant::now() + wait;
        loop {
            self.kill();
            let left = self.live_pids();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Freezes (`true`) or thaws every process of the cgroup v2 directory
/// `dir` and below (`cgroup.freeze`): a frozen process runs nothing and
/// writes nothing more until thawed; SIGKILL (`cgroup.kill`) still ends it.
pub fn set_frozen(dir: &Path, frozen: bool) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.freeze"))
        .and_then(|mut f| f.write_all(if frozen { b"1" } else { b"0" }))
}

/// Whether the cgroup v2 directory `dir` is frozen (asked: its
/// `cgroup.freeze` is 1).
pub fn is_frozen(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.freeze")).is_ok_and(|t| t.trim() == "1")
}

/// SIGKILL to every process of the cgroup v2 directory `dir` at once,
/// frozen ones included (`cgroup.kill`, Linux 5.14+).
pub fn kill_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.kill"))
        .and_then(|mut f| f.write_all(b"1"))
}

/// The processes of the cgroup `dir` (and below) that hold open a deleted
/// regular file of the filesystem `dev`: its space comes back only when
/// they close it, which a frozen process never does.
pub fn holding_deleted(dir: &Path, dev: u64) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let mut pids = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        if let Ok(text) = std::fs::read_to_string(d.join("cgroup.procs")) {
            pids.extend(text.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        if let Ok(entries) = std::fs::read_dir(&d) {
            dirs.extend(
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    pids.into_iter()
        .filter(|pid| {
            let fds = format!("/proc/{pid}/fd");
            std::fs::read_dir(&fds).is_ok_and(|entries| {
                entries.filter_map(Result::ok).any(|e| {
                    std::fs::read_link(e.path()).is_ok_and(|t| {
                        t.to_string_lossy().ends_with(" (deleted)")
                            && std::fs::metadata(e.path())
                                .is_ok_and(|m| m.is_file() && m.dev() == dev && m.nlink() == 0)
                    })
                })
            })
        })
        .collect()
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .is_none_or(|s| s == "Z" || s == "X")
    })
}

/// After a crash: kills what is left in every `run-*` cgroup under `root`
/// and removes them. Returns the pids that were still there.
pub fn sweep(root: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut killed = Vec::new();
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !e.file_type().is_ok_and(|t| t.is_dir()) || super::parse_run_name(&name).is_none() {
            continue;
        }
        let cg = RunCgroup {
            path: e.path(),
            v1: v1_dirs(root, &name),
            limits: None,
        };
        killed.extend(cg.live_pids());
        let left = cg.kill_blocking(Duration::from_secs(5));
        if !left.is_empty() {
            tracing::error!(
                ?left,
                "processes in {} survived cgroup.kill",
                cg.path.display()
            );
            continue;
        }
        if let Err(err) = cg.remove() {
            tracing::warn!("cannot remove {}: {err}", cg.path.display());
        }
    }
    remove_if_empty(root);
    killed
}

/// How old an empty run cgroup must be before any engine may remove it.
const STALE: Duration = Duration::from_secs(600);

/// Removes empty `run-*` cgroups older than ten minutes under every
/// `overseer-*` directory of `base`, and those directories once empty:
/// what engines that vanished left (a data dir deleted after a crash, a
/// test's temp dir). Nothing with a live process in it is touched, and an
/// engine whose run cgroup is removed under it only finds it gone.
pub fn remove_stale(base: &Path) {
    let Ok(roots) = std::fs::read_dir(base) else {
        return;
    };
    for root in roots.filter_map(|e| e.ok()) {
        let name = root.file_name().to_string_lossy().into_owned();
        if !name.starts_with("overseer-") || name.starts_with("overseer-probe-") {
            continue;
        }
        if let Ok(runs) = std::fs::read_dir(root.path()) {
            for run in runs.filter_map(|e| e.ok()) {
                let old = run
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > STALE);
                // v2 only: this runs inside the containment probe, before
                // the v1 hierarchies are known (their directories of a
                // vanished engine stay, empty, until an engine of that
                // database sweeps them).
                let cg = RunCgroup {
                    path: run.path(),
                    v1: Vec::new(),
                    limits: None,
                };
                if old && run.file_type().is_ok_and(|t| t.is_dir()) && cg.live_pids().is_empty() {
                    let _ = cg.remove();
                }
            }
        }
        let _ = std::fs::remove_dir(root.path());
    }
}

/// The v1 directories a run cgroup `name` of `root` has (or had).
fn v1_dirs(root: &Path, name: &str) -> Vec<(&'static str, PathBuf)> {
    super::limits::controllers()
        .places
        .iter()
        .filter_map(|(c, p)| match p {
            super::limits::Place::V1(base) => Some((*c, v1_root(base, root)?.join(name))),
            super::limits::Place::V2 => None,
        })
        .filter(|(_, d)| d.is_dir())
        .collect()
}

/// Removes an engine's cgroup directory once no run uses it (it is made
/// again for the next run), and its directories in v1 hierarchies.
pub fn remove_if_empty(root: &Path) {
    let _ = std::fs::remove_dir(root);
    for base in super::limits::controllers().v1_bases() {
        if let Some(d) = v1_root(&base, root) {
            let _ = std::fs::remove_dir(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_mount_is_read_from_mountinfo() {
        let text = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let m = parse_mountinfo(text).expect("v2");
        assert_eq!(m.mount, PathBuf::from("/sys/fs/cgroup/unified"));
        assert_eq!(
            m.dir_of("/overseer-x/run-1"),
            Some(PathBuf::from("/sys/fs/cgroup/unified/overseer-x/run-1"))
        );
        assert_eq!(m.dir_of("/"), Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(m.dir_of("/a/../b"), None);
        let pure = "29 1 0:26 /user.slice /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw\n";
        let m = parse_mountinfo(pure).expect("v2");
        assert_eq!(m.mount, PathBuf::from("/sys/fs/cgroup x"));
        assert_eq!(
            m.dir_of("/user.slice/app (deleted)"),
            Some(PathBuf::from("/sys/fs/cgroup x/app"))
        );
        assert_eq!(m.dir_of("/system.slice/x"), None);
        assert_eq!(m.dir_of("/user.slicex"), None);
        assert!(parse_mountinfo("1 0 0:1 / / rw - ext4 /dev/sda rw\n").is_none());
    }
}
