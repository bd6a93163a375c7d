//! The supervisor's command, contained like a run's checks (issue 37, item
//! 2): the engine's [`Launcher`] for `overseer_evaluate`'s command
//! evaluator. Each evaluation gets the run's worktree, a fresh home and a
//! cgroup of its own, and only the variables the owner named; it never
//! runs with the engine's environment nor sees the rest of the machine.

use crate::Runs;
use futures::future::BoxFuture;
use overseer_contain::process::{spawn, AgentProcess, AgentSpec};
use overseer_core::RunId;
use overseer_evaluate::{EvaluatorError, Launched, Launcher, Reviewer};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Tells one evaluation's home and cgroup from another's of the same run.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// One evaluation's launcher: its sandbox and cgroup are made when it is
/// built (a run that cannot be contained refuses here, with why), used by
/// its one launch.
pub(crate) struct ContainedLauncher {
    prepared: Mutex<Option<Prepared>>,
    refused: Option<String>,
    grace: Duration,
}

struct Prepared {
    contained: crate::containment::Contained,
    home: PathBuf,
    cwd: PathBuf,
    marker: String,
}

impl Runs {
    /// The launcher of the supervisor's command judging `run`.
    pub(crate) fn evaluator_launcher(&self, run: RunId) -> Arc<dyn Launcher> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let grace = self.config.abort_timeout();
        let (prepared, refused) = match self.contain_evaluator(run, n) {
            Ok((contained, home, cwd)) => (
                Some(Prepared {
                    contained,
                    home,
                    cwd,
                    marker: format!("{}-eval-{n}", self.agent_marker(run)),
                }),
                None,
            ),
            Err(why) => (None, Some(why)),
        };
        Arc::new(ContainedLauncher {
            prepared: Mutex::new(prepared),
            refused,
            grace,
        })
    }
}

impl Drop for ContainedLauncher {
    fn drop(&mut self) {
        // Never launched (the evaluation was given up before): what was
        // made for it goes.
        let left = self
            .prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(p) = left {
            if let Some(cg) = p.contained.cgroup {
                let _ = cg.remove();
            }
            let _ = std::fs::remove_dir_all(&p.home);
        }
    }
}

impl Launcher for ContainedLauncher {
    fn launch<'a>(
        &'a self,
        command: &'a str,
        args: &'a [String],
        env: &'a [(String, String)],
    ) -> BoxFuture<'a, Result<Launched, EvaluatorError>> {
        Box::pin(async move {
            if let Some(why) = &self.refused {
                return Err(EvaluatorError::Spawn(format!(
                    "'{command}' is not run uncontained: {why}"
                )));
            }
            let taken = self
                .prepared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            let Some(p) = taken else {
                return Err(EvaluatorError::Spawn(format!(
                    "'{command}': this evaluation's sandbox was used already"
                )));
            };
            let cgroup_dir = p.contained.cgroup.as_ref().map(|c| c.path().to_owned());
            let spec = AgentSpec {
                program: PathBuf::from(command),
                args: args.to_vec(),
                env: env.to_vec(),
                cwd: p.cwd.clone(),
                marker: p.marker.clone(),
                sandbox: p.contained.sandbox,
                cgroup: p.contained.cgroup,
            };
            let (process, stdin, stdout, stderr) = match spawn(&spec).await {
                Ok(started) => started,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&p.home);
                    return Err(EvaluatorError::Spawn(format!("'{command}': {e}")));
                }
            };
            let pid = process.pid();
            Ok(Launched {
                stdin: Box::new(stdin),
                stdout: Box::new(stdout),
                stderr: Box::new(stderr),
                process: Box::new(ContainedReviewer {
                    process,
                    pid,
                    cgroup_dir,
                    home: p.home,
                    grace: self.grace,
                }),
            })
        })
    }
}

struct ContainedReviewer {
    process: AgentProcess,
    pid: u32,
    cgroup_dir: Option<PathBuf>,
    home: PathBuf,
    grace: Duration,
}

impl Drop for ContainedReviewer {
    /// Given up on (its evaluation's deadline passed first): the process
    /// and its cgroup go with `AgentProcess`'s own drop; its home here.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

impl Reviewer for ContainedReviewer {
    fn kill(&self) {
        // The whole cgroup at once; its process group too (no cgroup here).
        if let Some(dir) = &self.cgroup_dir {
            let _ = overseer_contain::cgroup::kill_dir(dir);
        }
        if let Some(pg) = i32::try_from(self.pid)
            .ok()
            .filter(|p| *p > 1)
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pg, rustix::process::Signal::KILL);
        }
    }

    fn wait(&mut self) -> BoxFuture<'_, std::io::Result<std::process::ExitStatus>> {
        Box::pin(async move {
            self.process
                .wait()
                .await
                .map_err(|e| std::io::Error::other(e.to_string()))
        })
    }

    fn finish(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // What it left behind (a daemon) is stopped; its cgroup removed.
            if let Err(e) = self.process.terminate(self.grace).await {
                tracing::warn!("cannot stop what the supervisor's command left: {e}");
            }
            let _ = std::fs::remove_dir_all(&self.home);
        })
    }
}
