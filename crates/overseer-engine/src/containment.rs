//! The engine's side of containment: the sandbox inputs, cgroup and limits
//! of each run's processes, chosen from this engine's dirs, config and
//! profiles, and the watch that reports a run's limit hits. What contains
//! is `overseer_contain`; this module only decides what to ask of it.

use crate::Runs;
use overseer_contain::{
    bwrap, cgroup_dir_name, limits, net, probe, require_sandbox, NetStatus, RunCgroup, RunLimits,
    SandboxInputs, SandboxPlan,
};
use overseer_core::RunId;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

impl Runs {
    /// A process of `run` connected: a signed security event, a `security`
    /// entry on the run, and the user is told.
    pub fn refused_socket_from_run(&self, run: RunId, pid: i32, attempts: u64) {
        tracing::warn!(run = %run, pid, "refused a connection from inside run {run}");
        self.audit(
            &overseer_core::Actor::Engine,
            overseer_core::audit::AuditPayload::SecurityEvent(
                overseer_core::audit::SecurityPayload::SocketFromRun {
                    run_id: run,
                    pid: i64::from(pid),
                    attempts,
                },
            ),
        );
        if run == 0 {
            return;
        }
        let text = format!(
            "a process of this run (pid {pid}) connected to Overseer's socket; the connection was refused{}",
            if attempts > 1 { format!(" ({attempts} attempts in the last minute)") } else { String::new() }
        );
        self.record_activity_or_warn(
            run,
            overseer_core::Activity::Security(overseer_core::activity::SecurityEntry {
                text: text.clone(),
                pid: Some(i64::from(pid)),
                ..overseer_core::activity::SecurityEntry::default()
            }),
        );
        self.notify_user(
            crate::NotificationKind::SecurityEvent,
            run,
            format!("Run {run} tried to reach Overseer"),
            text,
        );
    }

    /// This engine's runs use the slirp4netns at `path` (a path that is not
    /// an executable: private networks are missing) instead of the one the
    /// machine has: set once, before runs start (tests of a machine without
    /// it; `OVERSEER_SLIRP4NETNS` does this for the whole process).
    pub fn use_slirp4netns(&self, path: &Path) {
        let _ = self.slirp.set(path.to_owned());
    }

    /// This engine's cgroup directory (the parent of every `run-*` cgroup),
    /// when cgroups work here. One per database: engines on other data dirs
    /// never touch it.
    pub fn run_cgroup_root(&self) -> Option<PathBuf> {
        let base = probe().cgroup_base()?;
        Some(base.join(cgroup_dir_name(&crate::engine::marker_prefix(self))))
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

impl Runs {
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
        let limits = self
            .config
            .run_limits(&work.workspace.name, &work.agent, profile)?;
        let mut out = Contained {
            cgroup: self.run_cgroup(&format!("run-{run}"), run, &limits),
            ..Contained::default()
        };
        if !contained {
            self.record_activity_or_warn(
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
        inputs.program = overseer_contain::process::resolve_program(
            Path::new(&profile.command),
            path.as_deref(),
        );
        inputs.env = env.to_vec();
        inputs.read_paths = profile.read_paths.clone();
        inputs.write_paths = profile.write_paths.clone();
        inputs.network = self.run_network(&work.agent, profile.network)?;
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
        self.contain_check(
            run,
            worktree,
            &format!("run-{run}-sensors"),
            self.sensor_home(run),
        )
    }

    /// Like [`Self::contain_sensor`], for the supervisor's command judging
    /// `run` (issue 37, item 2): the run's worktree, a fresh home and a
    /// cgroup of its own per evaluation (`n`), the engine's environment
    /// never (the caller gives the variables the owner named).
    pub(crate) fn contain_evaluator(
        &self,
        run: RunId,
        n: u64,
    ) -> Result<(Contained, PathBuf, PathBuf), String> {
        let work = self
            .store()
            .run_work(run)
            .map_err(|e| format!("cannot read the run: {e}"))?;
        let worktree = self.worktree_path(&work.workspace.name, run);
        let home = self
            .agent_home("_evaluators")
            .join(format!("run-{run}-{n}"));
        let cgroup = format!("run-{run}-eval-{n}");
        if self.config.profile(&work.agent).is_ok() && worktree.is_dir() {
            let contained = self.contain_check(run, &worktree, &cgroup, home.clone())?;
            return Ok((contained, home.clone(), worktree));
        }
        // An external session's run (no profile of Overseer's; its files
        // are the user's own checkout) or one whose worktree is gone: the
        // evaluator's fresh home is all it gets, on a private network where
        // one can be made (it may call a model's API), never uncontained.
        require_sandbox(probe(), "the supervisor's command", false)?;
        let _ = std::fs::remove_dir_all(&home);
        private_dir(&home)?;
        let mut inputs = self.sandbox_inputs(None, &home);
        inputs.private_home = Some(home.clone());
        inputs.network = match self.private_network() {
            NetStatus::Available { .. } => net::NetworkMode::Private,
            NetStatus::Missing { .. } => net::NetworkMode::Host,
        };
        inputs.resolv_conf = self.resolv_conf(inputs.network);
        let limits = RunLimits::for_machine();
        let contained = Contained {
            cgroup: self.run_cgroup(&cgroup, run, &limits),
            sandbox: Some(
                bwrap::plan(&inputs)
                    .map_err(|e| format!("the supervisor's sandbox cannot be built: {e}"))?,
            ),
        };
        Ok((contained, home.clone(), home))
    }

    fn contain_check(
        &self,
        run: RunId,
        worktree: &Path,
        cgroup: &str,
        home: PathBuf,
    ) -> Result<Contained, String> {
        let work = self
            .store()
            .run_work(run)
            .map_err(|e| format!("cannot read the run: {e}"))?;
        let profile = self
            .config
            .profile(&work.agent)
            .map_err(|e| e.to_string())?;
        let contained = require_sandbox(probe(), &work.agent, profile.allow_uncontained)?;
        let limits = self
            .config
            .run_limits(&work.workspace.name, &work.agent, &profile)?;
        let mut out = Contained {
            cgroup: self.run_cgroup(cgroup, run, &limits),
            ..Contained::default()
        };
        if !contained {
            return Ok(out);
        }
        let mut inputs = self.sandbox_inputs(Some(Path::new(&work.workspace.path)), worktree);
        let _ = std::fs::remove_dir_all(&home);
        private_dir(&home)?;
        inputs.private_home = Some(home);
        inputs.read_paths = profile.read_paths.clone();
        inputs.write_paths = profile.write_paths.clone();
        inputs.network = self.run_network(&work.agent, profile.network)?;
        inputs.resolv_conf = self.resolv_conf(inputs.network);
        out.sandbox = Some(bwrap::plan(&inputs).map_err(|e| {
            format!(
                "the checks' sandbox cannot be built: {e} (in [agents.{}] of overseer.toml)",
                work.agent
            )
        })?);
        Ok(out)
    }

    /// The network a run of `profile` gets: what the profile asks for. A
    /// private network that cannot be made here (no slirp4netns) is never
    /// traded for this machine's: the run does not start, with the install
    /// line (Err: the note it fails with). Sharing the machine's network is
    /// the owner's choice, per profile (`network = "host"`).
    fn run_network(
        &self,
        profile: &str,
        wanted: net::NetworkMode,
    ) -> Result<net::NetworkMode, String> {
        match (wanted, &self.private_network()) {
            (net::NetworkMode::Private, NetStatus::Missing { why, .. }) => Err(format!(
                "not started: the run's private network cannot be made here ({why}). Install \
                 slirp4netns (`apt-get install slirp4netns` on Debian/Ubuntu, `dnf install \
                 slirp4netns` on Fedora) and start the run again; or, to let profile \
                 `{profile}` share this machine's network (its loopback services, Overseer's \
                 web endpoint included, in reach), set network = \"host\" in \
                 [agents.{profile}] of overseer.toml, or network = \"none\" for no network"
            )),
            (mode, _) => Ok(mode),
        }
    }

    /// Whether private networks work for this engine's runs: the machine's
    /// ([`overseer_contain::net::probe`]), unless the engine was told which
    /// slirp4netns to use ([`crate::Runs::use_slirp4netns`], tests).
    pub(crate) fn private_network(&self) -> NetStatus {
        match self.slirp.get() {
            Some(path) => net::probe_at(path),
            None => probe().private_network.clone(),
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

impl Runs {
    /// Follows `run`'s cgroup while it exists: each time the run hits one
    /// of its limits again, a security entry on its timeline (how often,
    /// which limit, how to raise it), a signed security event, and the
    /// first time for each limit, one notification.
    pub(crate) async fn watch_limits(self: Arc<Self>, run: RunId, profile: String, cg: RunCgroup) {
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

#[cfg(test)]
mod tests {
    use super::safe_name;

    #[test]
    fn profile_names_become_one_file_name() {
        assert_eq!(safe_name("my agent/x"), "my_agent_x");
        assert_eq!(safe_name(""), "_");
    }
}
