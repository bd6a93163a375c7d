//! Group commit: concurrent writers share one `BEGIN IMMEDIATE` transaction.
//!
//! Every write runs its closure on its own thread (closures borrow their
//! caller's data, so none has to be `Send` or `'static`), one at a time
//! under the writer's lock, each inside its own savepoint. The first writer
//! to find no transaction open begins one and leads the batch: after its own
//! closure, if writers are waiting for the lock, it lets go of it for a
//! moment so they add theirs, then commits them all at once and tells each
//! follower the outcome. Nobody waits for a batch to fill: a lone writer
//! commits at once, and a batch only forms when writers actually overlap.
//!
//! What each caller can rely on:
//! - `write` returns only once its changes are committed (or not at all):
//!   an effect taken after `Ok` is backed by a committed record;
//! - a closure that fails is rolled back to its savepoint: the others'
//!   writes in the batch stand, and the error goes to that caller only;
//! - a failed commit reaches every caller of the batch as its error;
//! - audit records are sealed in the order their closures ran, each signed
//!   and chained to the one before (the chain's head is carried through the
//!   batch), exactly as if each write had had its own transaction;
//! - a closure that panics is rolled back to its savepoint, and its batch is
//!   still committed for the others;
//! - what a write changed ([`crate::Changes`]: the events it causes) reaches
//!   its caller only with `Ok`, that is once committed: nothing is told of
//!   a write that was rolled back. The gates a batch changed are told to the
//!   watcher set with [`Writer::on_gates_changed`] right after its commit,
//!   whichever way the write was made.

use crate::audit;
use crate::write::WriteTx;
use crate::{Changes, Keyring, StoreError};
use overseer_core::GateId;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// The one write connection of a [`crate::Store`], shared by every writer.
pub struct Writer {
    state: Mutex<State>,
    /// Batches committed, and the writes they held (for tests and benches).
    batches: AtomicU64,
    writes: AtomicU64,
    /// Writers waiting for the lock: a leader lets them join its batch.
    arriving: AtomicUsize,
    committed: Condvar,
    keyring: Arc<Keyring>,
    path: PathBuf,
    /// Asks the checkpointer to copy the WAL back; None when it could not
    /// start (SQLite's own automatic checkpoint is left on then).
    checkpointer: Option<std::sync::mpsc::SyncSender<()>>,
    /// Checkpoints the checkpointer ran (for tests and benches).
    checkpoints: Arc<AtomicU64>,
    /// Called when a write failed because the disk is full (the engine
    /// frees its reserve there, so the caller's retry finds room).
    on_full: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Told, after each commit, which gates' rows the batch changed.
    on_gates: std::sync::OnceLock<GatesWatcher>,
    /// SQLite's `data_version` of this connection at the last
    /// [`Writer::written_elsewhere`] (-1: never read).
    data_version: std::sync::atomic::AtomicI64,
}

/// What [`Writer::on_gates_changed`] calls.
type GatesWatcher = Box<dyn Fn(&[GateId]) + Send + Sync>;

/// Committed batches between two requests to the checkpointer.
const CHECKPOINT_EVERY: u64 = 64;

/// A WAL larger than this is checkpointed by the writer itself, as SQLite
/// would (its default is 1,000 pages, about 4 MB): under a write load with
/// no pause, the checkpointer never catches up with the last frame, so the
/// WAL would never start over and would grow without end.
const WAL_LIMIT: u64 = 8 * 1024 * 1024;

struct State {
    conn: Connection,
    /// The batch whose transaction is open, if any.
    open: Option<Batch>,
    next_batch: u64,
    /// Outcomes of committed batches that followers have yet to collect:
    /// batch id -> (followers still to collect, the commit's error if any).
    outcomes: HashMap<u64, (usize, Option<CommitFailure>)>,
}

struct Batch {
    id: u64,
    head_seq: i64,
    head_hash: String,
    /// Writers other than the leader whose changes are in the batch.
    followers: usize,
    /// Writes kept in the batch (released savepoints), the leader's too.
    kept: u64,
    /// The gates whose rows the kept writes changed.
    gates: Vec<GateId>,
}

/// Why a batch's commit failed, kept so every follower gets its own error.
#[derive(Clone)]
struct CommitFailure {
    code: Option<i32>,
    message: String,
}

impl CommitFailure {
    fn of(e: &rusqlite::Error) -> Self {
        let code = match e {
            rusqlite::Error::SqliteFailure(f, _) => Some(f.extended_code),
            _ => None,
        };
        CommitFailure {
            code,
            message: e.to_string(),
        }
    }

    fn error(&self, path: &Path) -> StoreError {
        let source = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(self.code.unwrap_or(rusqlite::ffi::SQLITE_ERROR)),
            Some(format!("the group commit failed: {}", self.message)),
        );
        StoreError::from_sqlite(source, path)
    }
}

impl Writer {
    pub(crate) fn new(conn: Connection, keyring: Arc<Keyring>, path: &Path) -> Self {
        let checkpoints = Arc::new(AtomicU64::new(0));
        let checkpointer = start_checkpointer(path, checkpoints.clone());
        if checkpointer.is_some() {
            if let Err(e) = conn.pragma_update(None, "wal_autocheckpoint", 0) {
                eprintln!("overseer-store: automatic checkpoints stay on: {e}");
            }
        }
        Writer {
            state: Mutex::new(State {
                conn,
                open: None,
                next_batch: 0,
                outcomes: HashMap::new(),
            }),
            batches: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            arriving: AtomicUsize::new(0),
            committed: Condvar::new(),
            keyring,
            path: path.to_owned(),
            checkpointer,
            checkpoints,
            on_full: std::sync::OnceLock::new(),
            on_gates: std::sync::OnceLock::new(),
            data_version: std::sync::atomic::AtomicI64::new(-1),
        }
    }

    /// Whether another connection to the database (another process with
    /// the file: someone editing it by hand, say) committed since the last
    /// call; true at the first. This writer's own commits do not count
    /// (SQLite's `data_version` of this connection moves only for others'),
    /// so a check of the database against what the engine wrote can be
    /// skipped while nothing else wrote.
    pub fn written_elsewhere(&self) -> Result<bool, StoreError> {
        let version: i64 = self
            .lock()
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        Ok(self.data_version.swap(version, Ordering::SeqCst) != version)
    }

    /// Sets what is told, right after each commit, the gates whose rows it
    /// changed (once; later calls are ignored): a waiter on a gate wakes
    /// when that gate changed, whoever wrote it. Called on the committing
    /// thread with no lock of the store held: it must not block.
    pub fn on_gates_changed(&self, f: GatesWatcher) {
        let _ = self.on_gates.set(f);
    }

    /// Sets what is done each time a write fails because the disk holding
    /// the database is full (once; later calls are ignored). Nothing of
    /// that write was kept: it can be retried as it was.
    pub fn on_disk_full(&self, f: Box<dyn Fn() + Send + Sync>) {
        let _ = self.on_full.set(f);
    }

    /// After a commit: the checkpointer is asked to copy the WAL back; a WAL
    /// past [`WAL_LIMIT`] is copied back here, holding the writer's lock (no
    /// writer can add frames meanwhile, so it completes and the next
    /// transaction starts the WAL over).
    fn checkpoint(&self, conn: &Connection) {
        let mut wal = self.path.as_os_str().to_owned();
        wal.push("-wal");
        let oversized = std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_LIMIT);
        match &self.checkpointer {
            Some(ask) if !oversized => {
                // Full: one is asked for already.
                let _ = ask.try_send(());
            }
            Some(_) | None => {
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    eprintln!("overseer-store: a WAL checkpoint failed: {e}");
                }
            }
        }
    }

    /// How many WAL checkpoints the checkpointer ran.
    pub fn checkpoints(&self) -> u64 {
        self.checkpoints.load(Ordering::Relaxed)
    }

    /// How many batches were committed, and how many writes they held: a
    /// ratio above 1 means writers shared transactions.
    pub fn committed(&self) -> (u64, u64) {
        (
            self.batches.load(Ordering::Relaxed),
            self.writes.load(Ordering::Relaxed),
        )
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A writer that panicked left nothing half-done behind: its savepoint
        // was rolled back on the way out (see `Member`).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(e, &self.path)
    }

    /// Runs `f` inside the current batch (beginning one if none is open) and
    /// returns once the batch is committed: `f`'s result, or the commit's
    /// error. A failing `f` changes nothing and does not hold others back.
    pub fn write<T>(
        &self,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_once(f, false).map(|(v, _)| v)
    }

    /// [`Writer::write`], also returning what `f` changed: the events to
    /// push, now that they are committed.
    pub fn write_changes<T>(
        &self,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
    ) -> Result<(T, Changes), StoreError> {
        self.write_once(f, true)
    }

    /// `events`: whether the caller wants the events (each changed run's
    /// row is read for them); the changed gates are always collected.
    fn write_once<T>(
        &self,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
        events: bool,
    ) -> Result<(T, Changes), StoreError> {
        let out = self.write_batched(f, events);
        if let (Err(StoreError::DiskFull { .. }), Some(full)) = (&out, self.on_full.get()) {
            full();
        }
        out
    }

    fn write_batched<T>(
        &self,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
        events: bool,
    ) -> Result<(T, Changes), StoreError> {
        // Declared before the lock's guard, so that on a panic the guard is
        // dropped (the lock let go) before the leader ends its batch.
        let finish: Option<Finish<'_>>;
        self.arriving.fetch_add(1, Ordering::SeqCst);
        let mut st = self.lock();
        self.arriving.fetch_sub(1, Ordering::SeqCst);
        let (batch, leader) = match &st.open {
            Some(b) => (b.id, false),
            None => {
                st.conn
                    .execute_batch("BEGIN IMMEDIATE")
                    .map_err(|e| self.sql(e))?;
                // Read the head inside the IMMEDIATE transaction: no other
                // process can append between here and the commit.
                let head = match audit::head(&st.conn) {
                    Ok(h) => h,
                    Err(e) => {
                        let _ = st.conn.execute_batch("ROLLBACK");
                        return Err(self.sql(e));
                    }
                };
                st.next_batch += 1;
                let id = st.next_batch;
                st.open = Some(Batch {
                    id,
                    head_seq: head.0,
                    head_hash: head.1,
                    followers: 0,
                    kept: 0,
                    gates: Vec::new(),
                });
                (id, true)
            }
        };
        // From here the leader must finish the batch whatever happens, or
        // its followers would wait forever.
        // Lazily: a `Finish` made and dropped here would end the batch.
        finish = leader.then(|| Finish {
            writer: self,
            batch,
        });
        let out = self.run_member(&mut st, f, events);
        if !leader {
            let Ok(out) = out else {
                // Rolled back to its savepoint: nothing of ours to wait for.
                return out;
            };
            if let Some(b) = st.open.as_mut() {
                b.followers += 1;
            }
            loop {
                if let Some((left, failure)) = st.outcomes.get_mut(&batch) {
                    *left -= 1;
                    let failure = failure.clone();
                    if *left == 0 {
                        st.outcomes.remove(&batch);
                    }
                    return match failure {
                        None => Ok(out),
                        Some(f) => Err(f.error(&self.path)),
                    };
                }
                st = self
                    .committed
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        // The leader: let writers waiting on the lock join, then commit.
        // Only when there are some: yielding hands the core to whatever else
        // is runnable (on a loaded machine, for a whole time slice), which a
        // lone writer need not wait for.
        drop(st);
        if self.arriving.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
        let committed = finish.map_or(Ok(()), Finish::commit);
        match (out, committed) {
            (Ok(v), Ok(())) => Ok(v),
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        }
    }

    /// One writer's closure in its own savepoint: released on success,
    /// rolled back (also on a panic) otherwise. The batch's audit head moves
    /// only with a released savepoint.
    fn run_member<T>(
        &self,
        st: &mut State,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
        events: bool,
    ) -> Result<(T, Changes), StoreError> {
        let State { conn, open, .. } = st;
        let Some(batch) = open.as_mut() else {
            return Err(StoreError::InvalidInput(
                "internal: a write outside its batch".to_owned(),
            ));
        };
        conn.execute_batch("SAVEPOINT member")
            .map_err(|e| self.sql(e))?;
        let member = Member { conn, done: false };
        let mut tx = WriteTx::new(
            member.conn,
            &self.keyring,
            &self.path,
            batch.head_seq,
            batch.head_hash.clone(),
        );
        // What it changed is read inside its savepoint: a failure to read
        // it rolls the write back like any other failure.
        let out = f(&mut tx).and_then(|v| Ok((v, tx.changes(events)?)));
        let head = tx.into_head();
        match out {
            Ok((v, changes)) => {
                member.release().map_err(|e| self.sql(e))?;
                (batch.head_seq, batch.head_hash) = head;
                batch.kept += 1;
                for g in changes.gates() {
                    if !batch.gates.contains(g) {
                        batch.gates.push(*g);
                    }
                }
                Ok((v, changes))
            }
            // Dropping `member` rolls the savepoint back.
            Err(e) => Err(e),
        }
    }
}

/// A writer's savepoint: rolled back on drop unless released.
struct Member<'c> {
    conn: &'c Connection,
    done: bool,
}

impl Member<'_> {
    fn release(mut self) -> rusqlite::Result<()> {
        self.done = true;
        let released = self.conn.execute_batch("RELEASE member");
        if released.is_err() {
            let _ = self
                .conn
                .execute_batch("ROLLBACK TO member; RELEASE member");
        }
        released
    }
}

impl Drop for Member<'_> {
    fn drop(&mut self) {
        if !self.done {
            // Undo this writer's changes only; the batch stays open.
            if let Err(e) = self
                .conn
                .execute_batch("ROLLBACK TO member; RELEASE member")
            {
                eprintln!("overseer-store: cannot roll back a failed write: {e}");
            }
        }
    }
}

/// The leader's duty to end its batch: commit it and tell the followers.
/// Done on drop too, so a leader that panics still ends its batch.
struct Finish<'w> {
    writer: &'w Writer,
    batch: u64,
}

impl Finish<'_> {
    fn commit(self) -> Result<(), StoreError> {
        let writer = self.writer;
        let batch = self.batch;
        std::mem::forget(self);
        writer.end_batch(batch)
    }
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.writer.end_batch(self.batch) {
            eprintln!("overseer-store: a batch whose leader failed did not commit: {e}");
        }
    }
}

impl Writer {
    fn end_batch(&self, batch: u64) -> Result<(), StoreError> {
        let mut st = self.lock();
        let Some(open) = st.open.take_if(|b| b.id == batch) else {
            return Ok(());
        };
        let committed = st.conn.execute_batch("COMMIT");
        if committed.is_err() {
            // Nothing of the batch is kept; every writer in it is told.
            let _ = st.conn.execute_batch("ROLLBACK");
        }
        if committed.is_ok() {
            let batches = self.batches.fetch_add(1, Ordering::Relaxed) + 1;
            self.writes.fetch_add(open.kept, Ordering::Relaxed);
            if batches.is_multiple_of(CHECKPOINT_EVERY) {
                self.checkpoint(&st.conn);
            }
        }
        if open.followers > 0 {
            let failure = committed.as_ref().err().map(CommitFailure::of);
            st.outcomes.insert(batch, (open.followers, failure));
        }
        drop(st);
        if let (Ok(()), Some(watcher), false) =
            (&committed, self.on_gates.get(), open.gates.is_empty())
        {
            watcher(&open.gates);
        }
        self.committed.notify_all();
        committed.map_err(|e| self.sql(e))
    }
}

/// Copies the WAL back into the database on a thread and connection of its
/// own (`PRAGMA wal_checkpoint(PASSIVE)`: it waits for no reader nor
/// writer), when asked after every [`CHECKPOINT_EVERY`] commits. SQLite's
/// automatic checkpoint ran inside whichever commit took the WAL past 1,000
/// pages, with the checkpoint's fsyncs, while every writer of that batch
/// (and the agents waiting for their answers) waited for it. The thread
/// ends with the writer. None if its connection cannot be opened.
fn start_checkpointer(
    path: &Path,
    done: Arc<AtomicU64>,
) -> Option<std::sync::mpsc::SyncSender<()>> {
    let conn = Connection::open(path).ok()?;
    conn.busy_timeout(std::time::Duration::from_secs(5)).ok()?;
    let (ask, asked) = std::sync::mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name("overseer-checkpoint".to_owned())
        .spawn(move || {
            while asked.recv().is_ok() {
                match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    Ok(()) => {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => eprintln!("overseer-store: a WAL checkpoint failed: {e}"),
                }
            }
        })
        .ok()?;
    Some(ask)
}
