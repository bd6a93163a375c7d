use overseer_core::{ApiError, DecisionError, ErrorCode, GateId, InvalidTransition, RunId};
use std::path::{Path, PathBuf};

/// Everything that can go wrong in the store, each with a message that says
/// what to do next.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{what} {id} does not exist: list them with `overseer {what}s list`")]
    NotFound { what: &'static str, id: i64 },
    #[error("run {run_id}: {source}")]
    InvalidTransition {
        run_id: RunId,
        #[source]
        source: InvalidTransition,
    },
    #[error("gate {gate_id} was already decided ({option} by {by}); nothing was changed")]
    AlreadyDecided {
        gate_id: GateId,
        option: String,
        by: String,
    },
    #[error("gate {gate_id}: {source}")]
    InvalidDecision {
        gate_id: GateId,
        #[source]
        source: DecisionError,
    },
    #[error("{0}")]
    InvalidInput(String),
    #[error(
        "run {run_id} changed while this action was being applied; look at it again and retry"
    )]
    Conflict { run_id: RunId },
    #[error("the database {path} was written by a newer Overseer (schema {found}, this build knows up to {supported}); upgrade Overseer, or use another --data-dir. Nothing was changed.")]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("the database {path} is locked by another process; close the other Overseer (or wait) and retry")]
    Busy { path: PathBuf },
    #[error("the disk holding {path} is full; free some space and retry. Nothing was changed.")]
    DiskFull { path: PathBuf },
    #[error("the audit log of {db} was signed with key {expected}, but the config dir holds key {found}; use the config dir this database was created with (--config-dir)")]
    KeyMismatch {
        db: PathBuf,
        expected: String,
        found: String,
    },
    #[error("signing key {path}: {problem}")]
    Key { path: PathBuf, problem: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the database {path} holds data this build cannot read ({detail}); run `overseer audit verify` and report it")]
    Corrupt { path: PathBuf, detail: String },
    #[error("database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

impl StoreError {
    pub(crate) fn from_sqlite(e: rusqlite::Error, path: &Path) -> Self {
        use rusqlite::ErrorCode as C;
        let path = path.to_owned();
        match e.sqlite_error_code() {
            Some(C::DatabaseBusy | C::DatabaseLocked) => StoreError::Busy { path },
            Some(C::DiskFull) => StoreError::DiskFull { path },
            _ => StoreError::Sqlite { path, source: e },
        }
    }

    /// The stable code clients match on.
    pub fn code(&self) -> ErrorCode {
        match self {
            StoreError::NotFound { .. } => ErrorCode::NotFound,
            StoreError::InvalidTransition { .. } | StoreError::Conflict { .. } => {
                ErrorCode::InvalidTransition
            }
            StoreError::AlreadyDecided { .. } => ErrorCode::AlreadyDecided,
            StoreError::InvalidDecision { .. } | StoreError::InvalidInput(_) => {
                ErrorCode::InvalidInput
            }
            StoreError::NewerSchema { .. }
            | StoreError::Busy { .. }
            | StoreError::DiskFull { .. }
            | StoreError::KeyMismatch { .. }
            | StoreError::Key { .. }
            | StoreError::Io { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Sqlite { .. } => ErrorCode::Storage,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::new(e.code(), e.to_string())
    }
}
