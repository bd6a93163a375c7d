//! The engine's side of the disk floor: the watch that pauses runs below
//! the floor and resumes them above it, and what a full disk does to a
//! transition that could not be written.
use super::*;
use crate::Runs;
impl Runs {
    /// Follows the data dir's free space (see the module's doc): below the
    /// floor runs pause, with a timeline entry each and one notification;
    /// above it again they resume.
    pub(crate) async fn watch_disk(self: Arc<Self>) {
        loop {
            self.disk_tick();
            tokio::time::sleep(DISK_WATCH).await;
        }
    }

    /// Reads the free space and acts on it: a pause is told (new work is
    /// held from the read on), a resume is told on each paused run's
    /// timeline before any run may take new work again.
    fn disk_tick(&self) {
        let _one = self.disk.tick.lock().unwrap_or_else(|p| p.into_inner());
        match self.disk.check() {
            Some(Found::Pause(free)) => self.pause_for_disk(free),
            Some(Found::Resume(free)) => {
                self.resume_after_disk(free);
                self.disk.open_room();
            }
            None => self.reclaim_from_frozen(),
        }
    }

    /// The cgroup directories of `run` (its agent's, its sensors') that
    /// exist, when cgroups work here.
    fn run_cgroup_dirs(&self, run: RunId) -> Vec<std::path::PathBuf> {
        let Some(root) = self.run_cgroup_root() else {
            return Vec::new();
        };
        [format!("run-{run}"), format!("run-{run}-sensors")]
            .into_iter()
            .map(|n| root.join(n))
            .filter(|d| d.is_dir())
            .collect()
    }

    /// Freezes (or thaws) everything `run` has running: a run paused for
    /// the disk writes nothing more. Where freezing is not possible (no
    /// cgroups, cgroup v1 only) the run is paused as before: its commands
    /// keep running. Returns whether it is frozen.
    fn freeze_run(&self, run: RunId, frozen: bool) -> bool {
        let dirs = self.run_cgroup_dirs(run);
        let mut all = !dirs.is_empty();
        for d in dirs {
            if let Err(e) = overseer_contain::cgroup::set_frozen(&d, frozen) {
                all = false;
                tracing::warn!(run = %run, "cannot {} {}: {e}", if frozen { "freeze" } else { "thaw" }, d.display());
            }
        }
        all
    }

    /// While runs are paused for the disk: a frozen process that holds a
    /// deleted file of the data dir's filesystem open keeps its space
    /// taken for as long as it is frozen (deleting the file the user found
    /// frees nothing), so it is killed (it can write nothing more anyway)
    /// and the run's timeline says so.
    fn reclaim_from_frozen(&self) {
        use std::os::unix::fs::MetadataExt;
        let paused = self
            .disk
            .paused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if paused.is_empty() {
            return;
        }
        let Ok(dev) = std::fs::metadata(&self.paths().data_dir).map(|m| m.dev()) else {
            return;
        };
        for run in paused {
            for dir in self.run_cgroup_dirs(run) {
                if !overseer_contain::cgroup::is_frozen(&dir) {
                    continue;
                }
                for pid in overseer_contain::cgroup::holding_deleted(&dir, dev) {
                    let Some(p) = i32::try_from(pid)
                        .ok()
                        .and_then(rustix::process::Pid::from_raw)
                    else {
                        continue;
                    };
                    if rustix::process::kill_process(p, rustix::process::Signal::KILL).is_ok() {
                        self.record_activity_or_warn(
                            run,
                            Activity::Security(overseer_core::activity::SecurityEntry {
                                text: format!(
                                    "process {pid} of this run, frozen while the disk was full, \
                                     held a deleted file open (its space could not come back): \
                                     it was killed"
                                ),
                                pid: Some(i64::from(pid)),
                                ..overseer_core::activity::SecurityEntry::default()
                            }),
                        );
                    }
                }
            }
        }
    }

    /// Whether runs may take new work, read now (not at the watcher's last
    /// tick): a disk filled a moment ago pauses the runs here.
    pub(crate) fn disk_room_now(&self) -> bool {
        self.disk_tick();
        self.disk.has_room()
    }

    /// Returns once runs may take new work, read now. While it waits, the
    /// run's timeline says what waits (`what`: "Write notes.txt: its
    /// answer").
    pub(crate) async fn wait_for_disk_room(&self, run: RunId, what: &str) {
        if self.disk_room_now() {
            return;
        }
        self.record_activity_or_warn(
            run,
            Activity::Notice {
                text: format!(
                    "{what} waits until the disk has room again (the run is paused: the disk \
                     is nearly full)"
                ),
                title: Some("Waiting for room on the disk".to_owned()),
            },
        );
        self.disk.wait_for_room().await;
    }

    /// Runs this engine drives that are taking work.
    fn active_runs(&self) -> Vec<RunId> {
        self.runs()
            .unwrap_or_default()
            .into_iter()
            .filter(crate::orchestrator::takes_work)
            .map(|r| r.id)
            .collect()
    }

    fn pause_for_disk(&self, free: u64) {
        let dir = self.paths().data_dir.display().to_string();
        let text = format!(
            "paused: the disk holding {dir} has {} free, below the floor of {} ([disk] floor in \
             overseer.toml); the run takes no new work (no prompt, no tool call answered) until \
             there is room again, then carries on by itself. Its processes are frozen meanwhile \
             (they write nothing more); Stop (abort) still ends it at once. Free some space (a \
             run's repository or worktree under {dir}/worktrees may be what filled it).",
            mib(free),
            mib(self.disk.floor)
        );
        tracing::warn!("{text}");
        let runs = self.active_runs();
        for run in &runs {
            // Frozen first: nothing of the run writes while its pause is told.
            self.freeze_run(*run, true);
            let entry = || Activity::Notice {
                text: text.clone(),
                title: Some("Paused: the disk is nearly full".to_owned()),
            };
            // A first attempt that found the disk full freed the reserve:
            // the second has room.
            if let Err(e) = self
                .record_activity(*run, entry())
                .or_else(|_| self.record_activity(*run, entry()))
            {
                tracing::warn!(run = %run, "cannot note the pause on the timeline: {e}");
            }
        }
        if let Some(first) = runs.first() {
            let body = if runs.len() == 1 {
                format!("Run {first} is paused. {text}")
            } else {
                format!("{} runs are paused. {text}", runs.len())
            };
            self.notify_user(
                crate::NotificationKind::DiskFull,
                *first,
                "Runs paused: the disk is nearly full".to_owned(),
                body,
            );
        }
        *self.disk.paused.lock().unwrap_or_else(|p| p.into_inner()) = runs;
    }

    fn resume_after_disk(&self, free: u64) {
        let runs = std::mem::take(&mut *self.disk.paused.lock().unwrap_or_else(|p| p.into_inner()));
        let text = format!(
            "resumed: the disk has {} free again (floor {})",
            mib(free),
            mib(self.disk.floor)
        );
        tracing::info!("{text}");
        for run in runs {
            self.freeze_run(run, false);
            let entry = Activity::Notice {
                text: text.clone(),
                title: Some("Resumed: the disk has room again".to_owned()),
            };
            if let Err(e) = self.record_activity(run, entry) {
                tracing::warn!(run = %run, "cannot note the resume on the timeline: {e}");
            }
        }
    }
}
