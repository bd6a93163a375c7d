//! Resource limits per run: how many processes (and threads) a run may
//! have, how much memory, and how much CPU it gets against the engine.
//!
//! Every run's cgroup gets `pids.max`, `memory.max`, `memory.high` and a CPU
//! weight; the engine's directory of run cgroups gets a low CPU weight, so
//! the engine (outside it) outranks every run together, and each run's
//! processes are the OOM killer's first choice (`oom_score_adj` 1000, set in
//! process.rs before exec), never the engine.
//!
//! Where: the cgroup v2 controllers when v2 has them (a pure v2 system, its
//! controllers enabled in `cgroup.subtree_control` down to each run), else
//! the v1 hierarchies of a hybrid system (this project's test machines: v2
//! at `/sys/fs/cgroup/unified` has no controllers, `pids`, `memory` and `cpu`
//! are v1), below this process's own cgroup in each, so a run stays inside
//! whatever limits the engine itself was given.
//!
//! Defaults, sized from the machine ([`RunLimits::for_machine`]):
//! - processes and threads: 512 per CPU, at least 1,024, at most 16,384 and
//!   a quarter of `kernel.pid_max`;
//! - memory: `memory.max` half the machine's RAM, at least 2 GiB (and never
//!   more than all of it); `memory.high` (reclaim and throttle) at 3/4 of it;
//! - CPU weight 100 (cgroup v2's default; v1 `cpu.shares` 1024) among runs,
//!   the runs' directory 25 (v1: 256) against the engine's 100.
//!
//! Overridden in `overseer.toml`: `[limits]` for every run, `[agents.NAME.limits]`
//! for a profile's runs (`pids_max`, `memory_max`, `memory_high` as bytes or
//! "512M" / "8G", `cpu_weight` 1-10000).

use super::{CgroupStatus, LimitsStatus};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The controllers a run's limits need.
pub const CONTROLLERS: [&str; 3] = ["pids", "memory", "cpu"];

/// The CPU weight of the directory that holds every run (cgroup v2 scale;
/// the engine's own cgroup has the default, 100).
const RUNS_CPU_WEIGHT: u64 = 25;

/// One run's limits, in bytes and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunLimits {
    /// Processes and threads (`pids.max`).
    #[ts(type = "number")]
    pub pids_max: u64,
    /// Memory above which the run's processes are OOM-killed (`memory.max`).
    #[ts(type = "number")]
    pub memory_max: u64,
    /// Memory above which the run is throttled and reclaimed (`memory.high`).
    #[ts(type = "number")]
    pub memory_high: u64,
    /// CPU weight among runs (1-10000, cgroup v2's scale; 100 is the default).
    #[ts(type = "number")]
    pub cpu_weight: u64,
}

/// `[limits]` / `[agents.NAME.limits]` in `overseer.toml`: each field
/// overrides the machine's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub pids_max: Option<u64>,
    pub memory_max: Option<ByteSize>,
    pub memory_high: Option<ByteSize>,
    pub cpu_weight: Option<u64>,
}

/// A size in bytes, written as a number or "512M" / "8G" / "1.5G".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value", into = "u64")]
pub struct ByteSize(pub u64);

impl From<ByteSize> for u64 {
    fn from(b: ByteSize) -> u64 {
        b.0
    }
}

impl TryFrom<toml::Value> for ByteSize {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Self, String> {
        match v {
            toml::Value::Integer(n) => u64::try_from(n)
                .map(ByteSize)
                .map_err(|_| format!("a size cannot be negative: {n}")),
            toml::Value::String(s) => parse_size(&s).map(ByteSize),
            other => Err(format!(
                "a size is a number of bytes or a string like \"512M\" or \"8G\", not {other}"
            )),
        }
    }
}

/// "512M", "8G", "1.5G", "1024" (bytes), "64K", "1T".
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, unit) = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((t, ""), |i| t.split_at(i));
    let mult: u64 = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => {
            return Err(format!(
                "`{s}` is not a size: write bytes or a number with K, M, G or T (\"512M\", \"8G\")"
            ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size: write bytes or a number with K, M, G or T"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("`{s}` is not a size above zero"));
    }
    // Rounded down to whole bytes; sizes beyond u64 saturate.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let bytes = (n * mult as f64) as u64;
    Ok(bytes)
}

fn read_u64(path: &str, key: Option<&str>) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    match key {
        None => text.trim().parse().ok(),
        Some(k) => text.lines().find_map(|l| {
            let rest = l.strip_prefix(k)?;
            rest.split_whitespace().next()?.parse().ok()
        }),
    }
}

impl RunLimits {
    /// The defaults for this machine (see the module's doc).
    pub fn for_machine() -> RunLimits {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        let pid_max = read_u64("/proc/sys/kernel/pid_max", None).unwrap_or(32_768);
        let pids_max = (512 * cpus).clamp(1_024, 16_384).min((pid_max / 4).max(64));
        let ram = read_u64("/proc/meminfo", Some("MemTotal:")).map_or(8 << 30, |kb| kb * 1024);
        let memory_max = (ram / 2).max(2 << 30).min(ram.max(1 << 30));
        RunLimits {
            pids_max,
            memory_max,
            memory_high: memory_max / 4 * 3,
            cpu_weight: 100,
        }
    }

    /// These limits with `over`'s fields in their place; `memory_high`
    /// follows a new `memory_max` unless set itself, and never exceeds it.
    pub fn with(self, over: &LimitsConfig) -> Result<RunLimits, String> {
        let memory_max = over.memory_max.map_or(self.memory_max, |b| b.0);
        let memory_high = over
            .memory_high
            .map_or(
                if over.memory_max.is_some() {
                    memory_max / 4 * 3
                } else {
                    self.memory_high
                },
                |b| b.0,
            )
            .min(memory_max);
        let cpu_weight = over.cpu_weight.unwrap_or(self.cpu_weight);
        if !(1..=10_000).contains(&cpu_weight) {
            return Err(format!(
                "cpu_weight = {cpu_weight} is out of range: it is 1 to 10000 (100 is the default)"
            ));
        }
        let pids_max = over.pids_max.unwrap_or(self.pids_max);
        if pids_max < 8 {
            return Err(format!(
                "pids_max = {pids_max} is too low for any agent to start: give it at least 8"
            ));
        }
        if memory_max < 64 << 20 {
            return Err(format!(
                "memory_max = {memory_max} bytes is too low for any agent to start: give it at least 64M"
            ));
        }
        Ok(RunLimits {
            pids_max,
            memory_max,
            memory_high,
            cpu_weight,
        })
    }
}

/// Where one controller lives for runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In each run's cgroup v2 directory (enabled down to it).
    V2,
    /// In a v1 hierarchy: run directories go below this one (this
    /// process's own cgroup in that hierarchy).
    V1(PathBuf),
}

/// Where each controller a run's limits need lives on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Controllers {
    pub places: Vec<(&'static str, Place)>,
}

impl Controllers {
    /// The v1 bases runs go below (one per hierarchy, each once).
    pub fn v1_bases(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for (_, p) in &self.places {
            if let Place::V1(b) = p {
                if !out.contains(b) {
                    out.push(b.clone());
                }
            }
        }
        out
    }
}

/// The v1 hierarchies in a mountinfo text: (mount point, its controllers).
fn v1_mounts(mountinfo: &str) -> Vec<(PathBuf, Vec<String>)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split_whitespace();
            if r.next()? != "cgroup" {
                return None;
            }
            let opts = r.nth(1)?;
            let mount = left.split_whitespace().nth(4)?;
            Some((
                PathBuf::from(mount),
                opts.split(',').map(str::to_owned).collect(),
            ))
        })
        .collect()
}

/// This process's cgroup in the v1 hierarchy that has `controller`
/// (`4:memory:/path` in `/proc/self/cgroup`).
fn own_v1(cgroups: &str, controller: &str) -> Option<String> {
    cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let list = parts.next()?;
        let path = parts.next()?;
        list.split(',')
            .any(|c| c == controller)
            .then(|| path.to_owned())
    })
}

/// Whether runs' directories can be made below `base` and joined.
fn v1_usable(base: &Path) -> bool {
    let probe = base.join(format!("overseer-probe-{}", std::process::id()));
    if std::fs::create_dir(&probe).is_err() && !probe.is_dir() {
        return false;
    }
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .open(probe.join("cgroup.procs"))
        .is_ok();
    let _ = std::fs::remove_dir(&probe);
    ok
}

/// Enables `controllers` for the children of the v2 directory `dir`; the
/// ones now enabled there.
pub fn enable_v2(dir: &Path, controllers: &[&str]) -> Vec<String> {
    let file = dir.join("cgroup.subtree_control");
    for c in controllers {
        // One at a time: one the kernel refuses must not keep the others off.
        let _ = std::fs::write(&file, format!("+{c}"));
    }
    std::fs::read_to_string(&file)
        .map(|t| t.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn find_places(cgroups: &CgroupStatus) -> Result<Controllers, String> {
    let mut places = Vec::new();
    let mut why = Vec::new();
    if let CgroupStatus::Missing { why } = cgroups {
        return Err(format!("no cgroup per run ({why})"));
    }
    if let CgroupStatus::Available { root } = cgroups {
        let available =
            std::fs::read_to_string(Path::new(root).join("cgroup.controllers")).unwrap_or_default();
        let wanted: Vec<&str> = CONTROLLERS
            .into_iter()
            .filter(|c| available.split_whitespace().any(|a| a == *c))
            .collect();
        let enabled = enable_v2(Path::new(root), &wanted);
        for c in wanted {
            if enabled.iter().any(|e| e == c) {
                places.push((c, Place::V2));
            } else {
                why.push(format!(
                    "cgroup v2 has `{c}` but it cannot be enabled below {root} (a cgroup with \
                     processes in it cannot delegate controllers)"
                ));
            }
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    for c in CONTROLLERS {
        if places.iter().any(|(p, _)| *p == c) {
            continue;
        }
        let Some((mount, _)) = v1_mounts(&mountinfo)
            .into_iter()
            .find(|(_, opts)| opts.iter().any(|o| o == c))
        else {
            why.push(format!("no `{c}` controller on cgroup v2 or v1"));
            continue;
        };
        let Some(path) = own_v1(&own, c) else {
            why.push(format!("this process is in no `{c}` cgroup (v1)"));
            continue;
        };
        let rel = path.trim_start_matches('/');
        if rel.split('/').any(|p| p == "..") {
            continue;
        }
        let base = if rel.is_empty() {
            mount.clone()
        } else {
            mount.join(rel)
        };
        if v1_usable(&base) {
            places.push((c, Place::V1(base)));
        } else {
            why.push(format!(
                "cgroups cannot be made and joined below {} (v1 `{c}`)",
                base.display()
            ));
        }
    }
    if why.is_empty() {
        Ok(Controllers { places })
    } else {
        Err(why.join("; "))
    }
}

/// Where the limits go (None when some controller is missing: then the
/// ones found are still applied).
pub fn controllers() -> &'static Controllers {
    // The machine's probe first (it finds them, once), outside this lock.
    let cgroups = &super::probe().cgroups;
    &found(cgroups).0
}

/// Where the controllers are and why some are missing, found once per
/// process (the search makes and removes probe cgroups).
fn found(cgroups: &CgroupStatus) -> &'static (Controllers, Option<String>) {
    static FOUND: OnceLock<(Controllers, Option<String>)> = OnceLock::new();
    FOUND.get_or_init(|| places_and_why(cgroups))
}

fn places_and_why(cgroups: &CgroupStatus) -> (Controllers, Option<String>) {
    match find_places(cgroups) {
        Ok(c) => (c, None),
        Err(why) => {
            // What is there is still used: find it again without the
            // failing ones counted.
            let mut partial = Controllers::default();
            if let CgroupStatus::Available { root } = cgroups {
                let enabled =
                    std::fs::read_to_string(Path::new(root).join("cgroup.subtree_control"))
                        .unwrap_or_default();
                for c in CONTROLLERS {
                    if enabled.split_whitespace().any(|e| e == c) {
                        partial.places.push((c, Place::V2));
                    }
                }
            }
            (partial, Some(why))
        }
    }
}

/// What the probe says of limits on this machine.
pub fn probe(cgroups: &CgroupStatus) -> LimitsStatus {
    let (found, why) = found(cgroups);
    let v2 = found.places.iter().filter(|(_, p)| *p == Place::V2).count();
    let how = match (v2, found.places.len() - v2) {
        (_, 0) => "cgroup v2".to_owned(),
        (0, _) => "cgroup v1 controllers of a hybrid hierarchy".to_owned(),
        _ => "cgroup v2 and v1 controllers".to_owned(),
    };
    match why.clone() {
        None if found.places.len() == CONTROLLERS.len() => LimitsStatus::Available {
            controllers: found.places.iter().map(|(c, _)| (*c).to_owned()).collect(),
            how,
        },
        None => LimitsStatus::Missing {
            why: "the cgroup controllers could not be found".to_owned(),
            leaves_open: LEAVES_OPEN.to_owned(),
        },
        Some(why) => LimitsStatus::Missing {
            why: format!(
                "{why}; start Overseer in a cgroup delegated to you with these controllers \
                 (`systemd-run --user --scope -p Delegate=yes overseer ...`)"
            ),
            leaves_open: LEAVES_OPEN.to_owned(),
        },
    }
}

const LEAVES_OPEN: &str = "a run can fork without end, take all memory and slow every other \
     run and Overseer itself";

/// Writes `value` to `dir/file`, with the file's name in the error.
fn put(dir: &Path, file: &str, value: &str) -> std::io::Result<()> {
    std::fs::write(dir.join(file), value).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot set {} to {value}: {e}", dir.join(file).display()),
        )
    })
}

/// Sets `limits` on the run directory `dir` of `controller`, written as
/// that hierarchy (v2 or v1) spells them.
pub fn apply(
    controller: &str,
    place: &Place,
    dir: &Path,
    limits: &RunLimits,
) -> std::io::Result<()> {
    let v1 = matches!(place, Place::V1(_));
    match (controller, v1) {
        ("pids", _) => put(dir, "pids.max", &limits.pids_max.to_string()),
        ("memory", false) => {
            put(dir, "memory.high", &limits.memory_high.to_string())?;
            put(dir, "memory.max", &limits.memory_max.to_string())?;
            // The OOM killer takes the whole run, not one of its processes.
            put(dir, "memory.oom.group", "1")?;
            // Nor may it swap its way past the limit.
            let _ = put(dir, "memory.swap.max", "0");
            Ok(())
        }
        ("memory", true) => {
            put(dir, "memory.limit_in_bytes", &limits.memory_max.to_string())?;
            let _ = put(
                dir,
                "memory.memsw.limit_in_bytes",
                &limits.memory_max.to_string(),
            );
            let _ = put(
                dir,
                "memory.soft_limit_in_bytes",
                &limits.memory_high.to_string(),
            );
            Ok(())
        }
        ("cpu", false) => put(dir, "cpu.weight", &limits.cpu_weight.to_string()),
        ("cpu", true) => put(dir, "cpu.shares", &v1_shares(limits.cpu_weight).to_string()),
        _ => Ok(()),
    }
}

/// The CPU weight of the directory holding every run, below the engine's.
pub fn apply_runs_dir(controller: &str, place: &Place, dir: &Path) {
    let r = match (controller, place) {
        ("cpu", Place::V2) => put(dir, "cpu.weight", &RUNS_CPU_WEIGHT.to_string()),
        ("cpu", Place::V1(_)) => put(dir, "cpu.shares", &v1_shares(RUNS_CPU_WEIGHT).to_string()),
        _ => Ok(()),
    };
    if let Err(e) = r {
        tracing::warn!("runs' CPU weight: {e}");
    }
}

/// cgroup v2's weight (default 100) on v1's share scale (default 1024).
fn v1_shares(weight: u64) -> u64 {
    (weight * 1024 / 100).max(2)
}

/// How often a run has hit each of its limits so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitHits {
    /// A fork or clone refused at `pids.max`.
    pub pids: u64,
    /// Throttled above `memory.high` (v2 only).
    pub memory_high: u64,
    /// Processes OOM-killed at `memory.max`.
    pub oom_kills: u64,
}

/// `key N` of a cgroup events file.
fn count(dir: &Path, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(dir.join(file))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

/// What `controller`'s run directory `dir` says of limits hit.
pub fn hits(controller: &str, place: &Place, dir: &Path) -> LimitHits {
    let v1 = matches!(place, Place::V1(_));
    match (controller, v1) {
        ("pids", _) => LimitHits {
            pids: count(dir, "pids.events", "max"),
            ..LimitHits::default()
        },
        ("memory", false) => LimitHits {
            memory_high: count(dir, "memory.events", "high"),
            oom_kills: count(dir, "memory.events", "oom_kill"),
            ..LimitHits::default()
        },
        ("memory", true) => LimitHits {
            oom_kills: count(dir, "memory.oom_control", "oom_kill"),
            ..LimitHits::default()
        },
        _ => LimitHits::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_as_people_write_them() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("8G"), Ok(8 << 30));
        assert_eq!(parse_size("8GiB"), Ok(8 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn overrides_replace_the_machine_defaults_and_are_checked() {
        let base = RunLimits {
            pids_max: 1024,
            memory_max: 8 << 30,
            memory_high: 6 << 30,
            cpu_weight: 100,
        };
        let over = LimitsConfig {
            memory_max: Some(ByteSize(4 << 30)),
            pids_max: Some(200),
            ..LimitsConfig::default()
        };
        let l = base.with(&over).expect("valid");
        assert_eq!(
            (l.pids_max, l.memory_max, l.memory_high),
            (200, 4 << 30, 3 << 30)
        );
        let high_above = LimitsConfig {
            memory_high: Some(ByteSize(16 << 30)),
            ..LimitsConfig::default()
        };
        assert_eq!(base.with(&high_above).expect("valid").memory_high, 8 << 30);
        let err = base
            .with(&LimitsConfig {
                cpu_weight: Some(0),
                ..LimitsConfig::default()
            })
            .expect_err("0 is out of range");
        assert!(err.contains("1 to 10000"), "{err}");
        let m = RunLimits::for_machine();
        assert!(m.pids_max >= 64 && m.memory_high <= m.memory_max && m.cpu_weight == 100);
    }

    #[test]
    fn v1_hierarchies_are_found_in_mountinfo_and_proc_cgroup() {
        let mi = "\
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let m = v1_mounts(mi);
        assert_eq!(m.len(), 2);
        assert!(m[0].1.contains(&"cpu".to_owned()));
        let own = "4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/\n";
        assert_eq!(own_v1(own, "memory").as_deref(), Some("/process_api/abc"));
        assert_eq!(own_v1(own, "cpu").as_deref(), Some("/"));
        assert_eq!(own_v1(own, "pids"), None);
    }
}
