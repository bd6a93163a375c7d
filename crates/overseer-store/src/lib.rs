//! Durable state of Overseer in one SQLite file.
//!
//! - WAL journal, foreign keys on, a busy timeout, and every write inside
//!   `BEGIN IMMEDIATE` so that writers queue instead of failing half-way.
//! - Run state changes are compare-and-set (`UPDATE ... WHERE state = old`) in the
//!   same transaction as their audit record; gate decisions likewise
//!   (`pending -> decided`). Nothing is ever decided twice.
//! - The audit log ([`audit`]) is hash-chained and Ed25519-signed; the signing key
//!   lives in the config dir ([`keys`]), never in the database.
//!
//! Reads go through `&Store` on their own connection, so they never wait
//! behind a writer (WAL: a reader sees the last commit). Every mutation goes
//! through [`Store::write`] (or the shared [`Writer`] behind it), which hands
//! out a [`WriteTx`] and commits it only if the closure succeeded; concurrent
//! writers share one transaction ([`writer`]: group commit), each in its own
//! savepoint, each of their audit records signed and chained in order.

mod attest;
pub mod audit;
mod batch;
mod chain;
pub mod changes;
mod decision;
pub mod devices;
mod error;
mod grant;
pub mod keys;
mod messages;
pub mod people;
mod progress;
mod read;
mod schema;
mod session;
pub mod snapshot;
mod snooze;
mod supervise;
mod verify;
pub mod webhooks;
mod work;
mod write;
pub mod writer;

pub use attest::{DecisionMismatch, DecisionProblem, DecisionTable};
pub use audit::{
    AuditProblem, AuditRecord, CheckedRecord, Checkpoint, VerifyFailure, VerifyReport,
};
pub use changes::Changes;
pub use decision::DecisionInput;
pub use devices::{IssuedCode, Redeemed, Refusal};
pub use error::StoreError;
pub use keys::Keyring;
pub use messages::NewMessage;
pub use read::{GatePage, RunOrderKey};
pub use schema::SCHEMA_VERSION;
pub use session::NewSession;
pub use supervise::{verdict_of_choice, GateSpec, VoteOutcome};
pub use verify::AuditFailure;
pub use work::{MergeRecord, RunEventRecord, RunWork, TaskSettings, Workspace, WorkspaceSettings};
pub use write::WriteTx;
pub use writer::Writer;

use overseer_core::GateId;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a writer waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Makes the database at `path` and its `-wal` and `-shm` files 0600,
/// whoever created them: they hold webhook secrets and pairing-code hashes.
/// The file is created empty (0600) when missing, so SQLite's own creation
/// never leaves it open for a moment.
fn owner_only(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |p: &Path| {
        let p = p.to_owned();
        move |source| StoreError::Io { path: p, source }
    };
    // Never open (and so close) a descriptor on a database that may be
    // open: closing any descriptor drops every POSIX lock this process
    // holds on the file, SQLite's included, and another process could then
    // write beside ours ("disk I/O error", or worse). Created only when it
    // is not there yet (no connection can hold it then); chmod by path.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(path)(e)),
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        let meta = match std::fs::metadata(&file) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&file)(e)),
        };
        if meta.permissions().mode() & 0o7177 != 0 {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                .map_err(io(&file))?;
        }
    }
    Ok(())
}

/// The database file name inside the data dir.
pub const DB_FILE: &str = "overseer.db";

/// An open database plus the keys that sign its audit log: a connection for
/// reads, and the shared [`Writer`] (its own connection) for writes.
pub struct Store {
    conn: Connection,
    writer: Arc<Writer>,
    keyring: Arc<Keyring>,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, runs pending
    /// migrations, and refuses a database written by a newer Overseer.
    pub fn open(path: &Path, keyring: Keyring) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            // Owner-only: the database and the engine's socket live here.
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| StoreError::Io {
                    path: dir.to_owned(),
                    source,
                })?;
        }
        let open = || {
            let conn = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| StoreError::from_sqlite(e, path))?;
            Self::configure(&conn).map_err(|e| StoreError::from_sqlite(e, path))?;
            Ok::<_, StoreError>(conn)
        };
        // Owner-only before SQLite opens it: the -wal and -shm files it
        // makes take the database's mode.
        owner_only(path)?;
        let mut wconn = open()?;
        owner_only(path)?;
        schema::migrate(&mut wconn, path)?;
        Self::bind_key(&wconn, &keyring, path)?;
        let keyring = Arc::new(keyring);
        Ok(Store {
            conn: open()?,
            writer: Arc::new(Writer::new(wconn, keyring.clone(), path)),
            keyring,
            path: path.to_owned(),
        })
    }

    /// WAL, so that readers never wait behind the writer. Synchronous
    /// NORMAL: a commit is on disk in the WAL (safe from a crash or kill of
    /// the process, atomic and in order) without an fsync of its own; the
    /// WAL is synced at each checkpoint. An OS crash or power loss can lose
    /// the last commits before that sync (never corrupt the database nor
    /// break the audit chain). FULL would fsync every (group) commit: about
    /// 4 ms on a typical VM disk, on every decision's round trip.
    ///
    /// Switching a fresh database to WAL can fail at once with "database is
    /// locked" while another process does the same (SQLite does not call
    /// the busy handler there): retried, for as long as a busy write waits.
    fn configure(conn: &Connection) -> rusqlite::Result<()> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let since = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && since.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => break other?,
            }
        }
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(())
    }

    /// The first open records which public key signs this log; later opens must
    /// use the same key, or every signature would look forged.
    fn bind_key(conn: &Connection, keyring: &Keyring, path: &Path) -> Result<(), StoreError> {
        let ours = keyring.public_key_hex();
        let sql = |e| StoreError::from_sqlite(e, path);
        let read = || -> Result<Option<String>, StoreError> {
            conn.query_row(
                "SELECT value FROM meta WHERE key = 'audit_public_key'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)
        };
        let stored = match read()? {
            Some(key) => key,
            None => {
                // Another process opening the fresh database at the same
                // moment may bind first: its key wins, and is checked below
                // like any stored key.
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('audit_public_key', ?1)
                     ON CONFLICT(key) DO NOTHING",
                    [&ours],
                )
                .map_err(sql)?;
                read()?.ok_or_else(|| {
                    StoreError::InvalidInput(format!(
                        "database {}: the audit key was written but cannot be read back",
                        path.display()
                    ))
                })?
            }
        };
        if stored == ours {
            Ok(())
        } else {
            Err(StoreError::KeyMismatch {
                db: path.to_owned(),
                expected: stored,
                found: ours,
            })
        }
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction (shared with writers
    /// running at the same time: group commit) and returns once it is
    /// committed. Only a closure that returned `Ok` has its changes kept;
    /// audit records appended inside are committed with them.
    pub fn write<T>(
        &mut self,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.writer.write(f)
    }

    /// [`Store::write`], also returning what the write changed: the events
    /// to push now that it is committed ([`changes`]).
    pub fn write_changes<T>(
        &mut self,
        f: impl FnOnce(&mut WriteTx<'_>) -> Result<T, StoreError>,
    ) -> Result<(T, Changes), StoreError> {
        self.writer.write_changes(f)
    }

    /// The writer, to share with threads that write without this store's
    /// reads (it is `Sync`; the store, with its read connection, is not).
    pub fn writer(&self) -> Arc<Writer> {
        self.writer.clone()
    }

    /// Writes a signed checkpoint (record count + head hash) to the database and
    /// to the config dir, where a truncated database cannot take it back.
    pub fn checkpoint(&mut self, now: i64) -> Result<Checkpoint, StoreError> {
        let cp = self.write(|tx| tx.write_checkpoint(now))?;
        self.keyring
            .save_checkpoint(&self.db_id()?, &cp, &self.path)?;
        Ok(cp)
    }

    /// Every audit record about one gate (or run: `key = "run_id"`), each
    /// checked on its own: signature, hashes, and its link in the chain.
    pub fn audit_story(&self, key: &str, id: i64) -> Result<Vec<CheckedRecord>, StoreError> {
        if !matches!(key, "gate_id" | "run_id") {
            return Err(StoreError::InvalidInput(format!(
                "no audit story by '{key}'"
            )));
        }
        verify::story(&self.conn, &self.keyring, key, id)
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// Verifies the whole audit log against the keyring and every checkpoint,
    /// and every decision row against its signed record. The outer error is
    /// a failure to read; the inner one names the first bad record and every
    /// decision row its record does not back.
    pub fn verify_audit(&self) -> Result<Result<VerifyReport, AuditFailure>, StoreError> {
        // The checkpoint file first, then the log and its checkpoints in one
        // read transaction: an engine appending meanwhile can only make the
        // snapshot longer than what the file vouches for, never shorter (read
        // apart, a checkpoint written between the two reads looked like a
        // cut-off tail).
        let file_cp = self.keyring.load_checkpoint(&self.db_id()?)?;
        let sql = |e| StoreError::from_sqlite(e, &self.path);
        let snapshot = self.conn.unchecked_transaction().map_err(sql)?;
        let report = verify::verify(&snapshot, &self.keyring, file_cp.as_ref()).map_err(sql)?;
        snapshot.commit().map_err(sql)?;
        Ok(report)
    }

    /// Every decision row about one gate (its own decision, its history, its
    /// votes) that no verifying signed record backs. Empty when all is well.
    pub fn gate_decision_problems(
        &self,
        gate: GateId,
    ) -> Result<Vec<DecisionMismatch>, StoreError> {
        attest::check_one_gate(&self.conn, &self.keyring, gate.into())
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// Every decision row about one run (its gates' and its own) that no
    /// verifying signed record backs. Empty when all is well.
    pub fn run_decision_problems(
        &self,
        run: overseer_core::RunId,
    ) -> Result<Vec<DecisionMismatch>, StoreError> {
        attest::check_one_run(&self.conn, &self.keyring, run.into())
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// The identity of this database, used to name its checkpoint file.
    pub fn db_id(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = 'db_id'", [], |r| {
                r.get(0)
            })
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// The raw connection, for tests that tamper with the file on purpose.
    #[doc(hidden)]
    pub fn raw_connection(&self) -> &Connection {
        &self.conn
    }
}
