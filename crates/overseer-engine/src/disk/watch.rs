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
            None => {}
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
             there is room again, then carries on by itself. Free some space (a run's repository \
             or worktree under {dir}/worktrees may be what filled it).",
            mib(free),
            mib(self.disk.floor)
        );
        tracing::warn!("{text}");
        let runs = self.active_runs();
        for run in &runs {
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
