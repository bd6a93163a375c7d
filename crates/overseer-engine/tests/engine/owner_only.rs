//! Issue 37: files are the owner's alone at every start (item 6), and a
//! run never silently shares this machine's network (item 9).

use crate::common;
use common::{start_as, until, world_with, Captured};
use overseer_core::{ReleaseReason, RunState};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use overseer_store::{TaskSettings, WorkspaceSettings};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn chmod(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod");
}

#[test]
fn the_dirs_database_and_key_are_made_owner_only_at_every_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    // What `hosts add` run first left (and an older Overseer's files): the
    // dirs 0755, an empty database 0644.
    for d in [&paths.data_dir, &paths.config_dir] {
        std::fs::create_dir_all(d).expect("mkdir");
        chmod(d, 0o755);
    }
    std::fs::write(paths.db(), "").expect("db");
    chmod(&paths.db(), 0o644);
    let open = || {
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
            .expect("the engine starts")
    };
    let check = |when: &str| {
        for d in [&paths.data_dir, &paths.config_dir] {
            assert_eq!(mode(d), 0o700, "{when}: {}", d.display());
        }
        let db = paths.db();
        let key = overseer_store::Keyring::key_path(&paths.config_dir);
        for f in [
            db.clone(),
            db.with_extension("db-wal"),
            db.with_extension("db-shm"),
            key,
        ] {
            assert_eq!(mode(&f), 0o600, "{when}: {}", f.display());
        }
    };
    let engine = open();
    check("first start over open dirs");
    drop(engine);

    // Everything opened up again (a restore, a careless chmod -R): the next
    // start closes it.
    for d in [&paths.data_dir, &paths.config_dir] {
        chmod(d, 0o755);
    }
    let db = paths.db();
    for f in [
        db.clone(),
        db.with_extension("db-wal"),
        db.with_extension("db-shm"),
        overseer_store::Keyring::key_path(&paths.config_dir),
    ] {
        if f.exists() {
            chmod(&f, 0o644);
        }
    }
    let engine = open();
    check("a later start");
    drop(engine);
}

/// Without slirp4netns a run that wants a private network (the default)
/// does not start, and says how to install it; a profile that chose the
/// machine's network (`network = "host"`) still starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_slirp4netns_a_private_run_does_not_start_unless_its_profile_shares_the_network() {
    let demo = common::demo_agent();
    let w = world_with(
        WorkspaceSettings::default(),
        Arc::new(Captured::default()),
        &format!(
            "[agents.shared]\ncommand = {:?}\nmode = \"default\"\nnetwork = \"host\"\n",
            demo.to_string_lossy()
        ),
    )
    .await;
    w.engine
        .use_slirp4netns(Path::new("/nonexistent/slirp4netns"));
    let refused = start_as(&w, "demo", "happy", TaskSettings::default());
    let state = until(&w, "the private run to end", |e| {
        let s = e.run(refused).ok()?.state;
        s.is_released().then_some(s)
    })
    .await;
    assert_eq!(
        state,
        RunState::Released {
            reason: ReleaseReason::Failed
        }
    );
    let said: Vec<String> = w
        .engine
        .activity(refused, 0)
        .expect("activity")
        .iter()
        .map(|a| format!("{a:?}"))
        .collect();
    assert!(
        said.iter()
            .any(|t| t.contains("apt-get install slirp4netns")
                && t.contains("network = \\\"host\\\"")),
        "the run says how to install slirp4netns: {said:#?}"
    );

    let shared = start_as(&w, "shared", "happy", TaskSettings::default());
    let state = until(&w, "the shared-network run to get past its launch", |e| {
        let s = e.run(shared).ok()?.state;
        (s != RunState::Queued && s != RunState::Claimed).then_some(s)
    })
    .await;
    assert_ne!(
        state,
        RunState::Released {
            reason: ReleaseReason::Failed
        },
        "{:#?}",
        w.engine.activity(shared, 0)
    );
}
