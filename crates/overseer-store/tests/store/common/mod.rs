#![allow(dead_code)]
use overseer_core::{Actor, RunEvent, RunId};
use overseer_store::{Keyring, Store, DB_FILE};
use std::path::PathBuf;

/// A store on a real file in a temp dir, with its config dir beside it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: Store,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(&dir);
        Fixture { dir, store }
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("data").join(DB_FILE)
    }

    pub fn config_dir(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    /// Opens a second, independent connection to the same files.
    pub fn reopen(&self) -> Store {
        open(&self.dir)
    }

    /// A run, moved to `pending_review` through the real transitions.
    pub fn pending_review_run(&mut self, now: i64) -> RunId {
        let a = Actor::Engine;
        self.store
            .write(|tx| {
                let ws = tx.ensure_workspace("demo", "/tmp/demo", &a, now)?;
                let task = tx.create_task(ws, "Fix the flaky test", "make it pass", &a, now)?;
                let run = tx.create_run(task, "demo", &a, now)?;
                tx.transition(run, RunEvent::Claim, None, &a, now)?;
                tx.transition(run, RunEvent::Start, None, &a, now)?;
                tx.transition(
                    run,
                    RunEvent::Finish {
                        auto_advance: false,
                    },
                    None,
                    &a,
                    now,
                )?;
                Ok(run)
            })
            .expect("seed run")
    }
}

pub fn open(dir: &tempfile::TempDir) -> Store {
    try_open(dir).expect("open store")
}

/// Loads (or makes) the keyring and opens the store, as every process does.
pub fn try_open(dir: &tempfile::TempDir) -> Result<Store, String> {
    let keyring = Keyring::load_or_create(&dir.path().join("config")).map_err(|e| e.to_string())?;
    Store::open(&dir.path().join("data").join(DB_FILE), keyring).map_err(|e| e.to_string())
}
