//! A full disk pauses runs; it never strands one.
//!
//! The database, the runs' repositories and their worktrees share the data
//! dir's filesystem, so one run's test script can fill it. Three things keep
//! the engine's record whole when it does:
//!
//! - **A reserve.** A preallocated file (`space-reserve`, [`DiskConfig`]'s
//!   `reserve`) in the data dir. When a write fails because the disk is
//!   full, the store calls back here ([`Writer::on_disk_full`]) and the
//!   reserve is deleted at once: the retry (the user's, or the engine's own
//!   for its transitions) finds that much room. It is allocated again once
//!   the disk has room (above the floor with the reserve's size to spare).
//!   A reserve file, not a filesystem of the database's own: it works on
//!   any machine without a mount, and a desktop user never has to size one.
//! - **A floor.** Every second the engine reads the free space of the data
//!   dir's filesystem (`statvfs`), and again at the moment a run would take
//!   new work (a launch, a prompt, a tool call's answer, a check, the
//!   weighing of a check's result, a deviation gate), so a disk filled a
//!   moment ago is never missed. Below `floor` (or when a write failed
//!   full) runs stop taking new work: no queued run is launched, no prompt
//!   is sent, an agent's tool call waits for its answer (its timeline says
//!   so), a check's result waits to be recorded and weighed; each active
//!   run says so on its timeline and the user is notified once. Above the
//!   floor again they carry on by themselves, each timeline saying so
//!   before anything else is written.
//! - **Retried transitions.** A run's end that cannot be written (its
//!   failure, the `cannot mark failed` path) is retried until it is
//!   written, once there is room; a rule's allow that cannot be recorded is
//!   not given, and waits for room to be recorded and given (see
//!   `orchestrator`).
//!
//! [`Writer::on_disk_full`]: overseer_store::Writer::on_disk_full

mod watch;

pub use overseer_config::disk::DiskConfig;
use overseer_core::{Activity, RunId};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The reserve's file name in the data dir.
pub const RESERVE_FILE: &str = "space-reserve";

/// How often the free space is read.
const DISK_WATCH: Duration = Duration::from_secs(1);

/// The data dir's filesystem, as the engine watches it.
pub(crate) struct Disk {
    dir: PathBuf,
    floor: u64,
    reserve_size: u64,
    /// A write failed full since the last time there was room.
    full: AtomicBool,
    /// The pause was told (timelines, notification).
    announced: AtomicBool,
    /// True while runs may take new work.
    room: tokio::sync::watch::Sender<bool>,
    /// The runs told they are paused (told again when they resume).
    paused: Mutex<Vec<RunId>>,
    /// Held while the free space is read and acted on (the watcher's
    /// tick, or a read at the moment a run takes new work): one pause, one
    /// resume, never two.
    tick: Mutex<()>,
}

/// What a read of the free space found.
pub(crate) enum Found {
    /// Below the floor: runs pause now (new work is held already).
    Pause(u64),
    /// Room again: runs resume once told ([`Disk::open_room`]).
    Resume(u64),
}

/// Free bytes for an unprivileged writer on the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(dir)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Deletes the reserve in the data dir `dir` (true if there was one).
pub(crate) fn release_reserve_in(dir: &Path) -> bool {
    std::fs::remove_file(dir.join(RESERVE_FILE)).is_ok()
}

/// `n` bytes in MiB, as the timeline says them.
fn mib(n: u64) -> String {
    format!("{} MiB", n >> 20)
}

impl Disk {
    pub(crate) fn new(dir: &Path, config: &DiskConfig) -> Arc<Disk> {
        let (room, _) = tokio::sync::watch::channel(true);
        let disk = Arc::new(Disk {
            dir: dir.to_owned(),
            floor: config.floor(),
            reserve_size: config.reserve(),
            full: AtomicBool::new(false),
            announced: AtomicBool::new(false),
            room,
            paused: Mutex::new(Vec::new()),
            tick: Mutex::new(()),
        });
        disk.keep_reserve();
        disk
    }

    fn reserve_path(&self) -> PathBuf {
        self.dir.join(RESERVE_FILE)
    }

    /// Allocates the reserve if it is missing and the disk has room for it
    /// above the floor. A reserve cut short (the disk filled meanwhile) is
    /// deleted: half a reserve would only look like one.
    pub(crate) fn keep_reserve(&self) {
        let path = self.reserve_path();
        if self.reserve_size == 0
            || std::fs::metadata(&path).is_ok_and(|m| m.len() >= self.reserve_size)
        {
            return;
        }
        match free_bytes(&self.dir) {
            Ok(free) if free >= self.floor.saturating_add(self.reserve_size) => {}
            _ => return,
        }
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .and_then(|f| allocate(&f, self.reserve_size));
        if let Err(e) = made {
            let _ = std::fs::remove_file(&path);
            tracing::warn!("cannot keep a reserve of {}: {e}", mib(self.reserve_size));
        }
    }

    /// Deletes the reserve (true if there was one): the room it held is the
    /// engine's to write its records in.
    pub(crate) fn release_reserve(&self) -> bool {
        release_reserve_in(&self.dir)
    }

    /// A write failed because the disk is full: the reserve is freed for
    /// its retry, and runs stop taking new work until there is room.
    pub(crate) fn on_full(&self) {
        let freed = self.release_reserve();
        self.full.store(true, Ordering::SeqCst);
        self.room.send_replace(false);
        tracing::warn!(
            freed,
            "the disk holding {} is full: the engine's reserve was freed, runs pause",
            self.dir.display()
        );
    }

    /// True while runs may take new work.
    pub(crate) fn has_room(&self) -> bool {
        *self.room.borrow()
    }

    /// Returns once runs may take new work.
    pub(crate) async fn wait_for_room(&self) {
        let mut rx = self.room.subscribe();
        let _ = rx.wait_for(|room| *room).await;
    }

    /// Lets runs take new work again (after their timelines say so).
    fn open_room(&self) {
        self.room.send_replace(true);
    }

    /// Reads the free space: a pause to tell (new work is held from now),
    /// a resume to tell (new work waits until [`Disk::open_room`]), or None
    /// when nothing changed.
    fn check(&self) -> Option<Found> {
        let free = match free_bytes(&self.dir) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("cannot read the free space of {}: {e}", self.dir.display());
                return None;
            }
        };
        let has_reserve = self.reserve_size == 0 || self.reserve_path().exists();
        // Resuming needs room for the reserve too, or re-allocating it would
        // take the disk straight back under the floor.
        let needed = if has_reserve {
            self.floor
        } else {
            self.floor.saturating_add(self.reserve_size)
        };
        let announced = self.announced.load(Ordering::SeqCst);
        if !announced && (free < self.floor || self.full.load(Ordering::SeqCst)) {
            self.room.send_replace(false);
            self.announced.store(true, Ordering::SeqCst);
            return Some(Found::Pause(free));
        }
        if (announced || !self.has_room()) && free >= needed {
            self.keep_reserve();
            self.full.store(false, Ordering::SeqCst);
            self.announced.store(false, Ordering::SeqCst);
            return Some(Found::Resume(free));
        }
        if !announced && !has_reserve {
            // Not made at start (no room then): made once there is.
            self.keep_reserve();
        }
        None
    }
}

/// Allocates `len` bytes for `f` (blocks really taken, not a sparse file).
fn allocate(f: &std::fs::File, len: u64) -> std::io::Result<()> {
    use std::io::Write;
    match rustix::fs::fallocate(f, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        // A filesystem without fallocate: written out.
        Err(rustix::io::Errno::OPNOTSUPP) => {
            let chunk = vec![0x55u8; 1 << 16];
            let mut w = std::io::BufWriter::new(f);
            let mut left = len;
            while left > 0 {
                let n = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
                w.write_all(&chunk[..n])?;
                left -= n as u64;
            }
            w.flush()?;
            f.sync_all()
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn the_floor_and_the_reserve_are_read_from_overseer_toml_with_defaults() {
        let c = Config::parse("", "overseer.toml".into()).expect("defaults");
        assert_eq!((c.disk.floor(), c.disk.reserve()), (256 << 20, 32 << 20));
        let c = Config::parse(
            "[disk]\nfloor = \"1G\"\nreserve = 0\n",
            "overseer.toml".into(),
        )
        .expect("set");
        assert_eq!((c.disk.floor(), c.disk.reserve()), (1 << 30, 0));
        let e = Config::parse("[disk]\nflor = \"1G\"\n", "overseer.toml".into())
            .expect_err("a misspelt key");
        assert!(e.to_string().contains("flor"), "{e}");
    }
}
