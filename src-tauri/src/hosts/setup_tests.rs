//! Adding, upgrading and removing hosts from the app, and following the
//! changes a terminal makes, against real OpenSSH: each test host an sshd in
//! its own network namespace for a Unix user of its own
//! (`overseer_test_support::ssh_host`; needs root and openssh-server), the
//! `overseer` binary cargo built installed there by the app's own setup.
//! The links' news are recorded by a [`Recorder`] in place of the window.

use super::tests::{Heard, Recorder};
use super::*;
use overseer_test_support::ssh_host::TestHost;
use serde_json::json;
use std::process::Command;
use std::time::Instant;

/// Quick to notice a cut and to retry, so the tests run in seconds.
const LINK: LinkOptions = LinkOptions {
    heartbeat: Duration::from_millis(250),
    silence: Duration::from_secs(2),
    first_retry: Duration::from_millis(500),
    max_retry: Duration::from_secs(2),
    confirm_within: Duration::from_secs(10),
    surface: overseer_core::OwnerSurface::App,
};

/// This machine's data and config dirs, in `dir`.
fn paths_in(dir: &tempfile::TempDir) -> Paths {
    Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    }
}

/// The app's setup options for `host`: the `overseer` cargo built, the
/// test host's ssh config.
fn options(host: &TestHost) -> SetupOptions {
    SetupOptions {
        exe: Some(overseer_test_support::overseer_cli().to_owned()),
        ssh_config: Some(host.ssh_config()),
        link: LINK,
    }
}

/// `overseer args` in a terminal on this machine (the same data dir as the
/// app's), off the async runtime; its stdout, or a panic with its stderr.
async fn terminal(paths: &Paths, host: &TestHost, args: &[&str]) -> String {
    let mut cmd = Command::new(overseer_test_support::overseer_cli());
    cmd.args(args)
        .env("OVERSEER_DATA_DIR", &paths.data_dir)
        .env("OVERSEER_CONFIG_DIR", &paths.config_dir)
        .env("OVERSEER_SSH_CONFIG", host.ssh_config())
        .env_remove("OVERSEER_LOG");
    let shown = format!("{args:?}");
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("the command's thread")
        .expect("run overseer");
    assert!(
        out.status.success(),
        "overseer {shown} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits up to 30 s for `what` to hold.
async fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not happen within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The lines of host `name`'s setups, as told.
fn steps(rec: &Recorder, name: &str) -> Vec<String> {
    rec.all()
        .into_iter()
        .filter_map(|t| match t {
            Heard::Setup(s) if s.host == name => Some(s.line),
            _ => None,
        })
        .collect()
}

/// The hosts told removed, in order.
fn removals(rec: &Recorder) -> Vec<String> {
    rec.all()
        .into_iter()
        .filter_map(|t| match t {
            Heard::Removed(r) => Some(r.host),
            _ => None,
        })
        .collect()
}

/// The engine process answering on host `name`'s link once it is live.
async fn live_engine(links: &HostLinks, name: &str) -> String {
    until(&format!("{name}'s link live"), || {
        match links.get(name)?.state() {
            HostLinkState::Live { engine, .. } => Some(engine),
            _ => None,
        }
    })
    .await
}

fn engine_running(host: &TestHost) -> bool {
    host.command_lines()
        .iter()
        .any(|c| c.ends_with("/overseer serve"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_host_added_from_the_window_is_linked_upgraded_and_removed_each_step_told() {
    let host = TestHost::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = paths_in(&dir);
    let rec = Arc::new(Recorder::default());
    let links = HostLinks::start(&paths, options(&host), rec.clone());
    assert!(links.host_links().await.expect("links").is_empty());

    // Two adds of one host at once: the second is refused at once, the
    // first goes on.
    let t = Instant::now();
    let (first, second) = tokio::join!(
        links.host_add("w1".into(), host.url(), None),
        links.host_add("w1".into(), host.url(), None)
    );
    eprintln!(
        "measured: host_add from the window to its link live took {:?}",
        t.elapsed()
    );
    let refused = second.expect_err("a second setup of w1 at once");
    assert_eq!(refused.code, ErrorCode::Conflict, "{refused:?}");
    assert!(
        refused.message.contains("being set up already"),
        "{}",
        refused.message
    );
    let view = first.expect("w1 added");
    let HostLinkState::Live { engine, .. } = &view.state else {
        panic!("the new host's link is not live: {view:?}");
    };
    let engine = engine.clone();
    assert_eq!(view.url, host.url());
    assert!(engine_running(&host), "{:?}", host.command_lines());

    // Every step told, as the CLI prints them; the key pinned is the one
    // the live link checked the engine's against.
    let lines = steps(&rec, "w1");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("copied overseer") && l.contains("verified there")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("engine signing key pinned: SHA256:")),
        "{lines:?}"
    );
    assert_eq!(
        lines.last().map(String::as_str),
        Some("host w1 ready: `overseer --host w1 runs list`")
    );
    let entry = registry::load(&paths)
        .expect("hosts.json")
        .find("w1")
        .expect("w1 recorded")
        .clone();
    assert_eq!(view.fingerprint, entry.fingerprint());
    assert!(
        lines.iter().any(|l| l.contains(&entry.fingerprint())),
        "{lines:?}"
    );
    // Its link was pushed to the window, and is the only one: the watcher,
    // which saw hosts.json change, did not start another.
    until("w1's live link pushed to the window", || {
        rec.all()
            .iter()
            .any(|t| {
                matches!(t, Heard::Link(v)
                    if v.name == "w1" && matches!(v.state, HostLinkState::Live { .. }))
            })
            .then_some(())
    })
    .await;
    let link = links.get("w1").expect("w1's link");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(Arc::ptr_eq(&link, &links.get("w1").expect("w1's link")));
    assert_eq!(links.started(), 1, "w1 was linked more than once");
    assert_eq!(links.host_links().await.expect("links").len(), 1);

    // Its engine's calls and events reach the window through it.
    let runs = links
        .host_call("w1".into(), "list_runs".into(), json!({}))
        .await
        .expect("list_runs on w1");
    assert_eq!(runs, json!([]));
    terminal(&paths, &host, &["--host", "w1", "demo", "seed"]).await;
    until("w1's events pushed to the window", || {
        rec.all()
            .iter()
            .any(|t| matches!(t, Heard::Event(e) if e.host == "w1"))
            .then_some(())
    })
    .await;
    // What the demo fleet's asks and failures call for is notified here,
    // naming the host.
    until("w1's notifications told", || {
        rec.all()
            .iter()
            .any(|t| matches!(t, Heard::Notify(n) if n.starts_with("w1: ")))
            .then_some(())
    })
    .await;

    // Upgraded: told, its engine restarted, and the link live on the new one.
    let t = Instant::now();
    let upgraded = links.host_upgrade("w1".into()).await.expect("w1 upgraded");
    eprintln!(
        "measured: host_upgrade (the same binary kept) to its link live on the restarted \
         engine took {:?}",
        t.elapsed()
    );
    match &upgraded.state {
        HostLinkState::Live { engine: now, .. } => {
            assert_ne!(now, &engine, "the link is on the restarted engine")
        }
        other => panic!("not live after the upgrade: {other:?}"),
    }
    // Its entry the same (this version, detached): the same link, reconnected.
    assert!(Arc::ptr_eq(&link, &links.get("w1").expect("w1's link")));
    assert_eq!(links.started(), 1);
    assert!(
        steps(&rec, "w1")
            .iter()
            .any(|l| l.starts_with("host w1: overseer") && l.ends_with("unchanged")),
        "{:?}",
        steps(&rec, "w1")
    );

    // Removed: its engine stopped there, its link closed, its removal told
    // once (the watcher, seeing hosts.json change, tells nothing more).
    links.host_remove("w1".into()).await.expect("w1 removed");
    assert!(!engine_running(&host), "{:?}", host.command_lines());
    assert!(links.host_links().await.expect("links").is_empty());
    assert!(registry::load(&paths).expect("hosts.json").hosts.is_empty());
    let old = links.get("w1");
    assert!(old.is_none());
    assert!(
        steps(&rec, "w1")
            .iter()
            .any(|l| l.starts_with("left on the host:")),
        "{:?}",
        steps(&rec, "w1")
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(removals(&rec), ["w1"]);
    let closed = links
        .host_call("w1".into(), "list_runs".into(), json!({}))
        .await
        .expect_err("no such host any more");
    assert_eq!(closed.code, ErrorCode::InvalidInput);
    let link_ended = link
        .call(overseer_server::api::Request::Ping)
        .await
        .expect_err("the removed host's link is closed");
    assert!(
        link.is_stopped() && link_ended.message.contains("is closed"),
        "{}",
        link_ended.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hosts_added_changed_and_removed_from_a_terminal_are_followed_by_the_running_app() {
    let host = TestHost::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = paths_in(&dir);
    let rec = Arc::new(Recorder::default());
    let links = HostLinks::start(&paths, options(&host), rec.clone());

    // Added in a terminal: linked, live, pushed to the window.
    let printed = terminal(&paths, &host, &["hosts", "add", "t1", &host.url()]).await;
    live_engine(&links, "t1").await;
    assert_eq!(links.started(), 1);
    // Its steps shown in the window as the terminal printed them.
    let printed: Vec<String> = printed.lines().map(str::to_owned).collect();
    until("t1's terminal steps pushed to the window", || {
        (steps(&rec, "t1") == printed).then_some(())
    })
    .await;
    assert!(
        printed
            .iter()
            .any(|l| l.contains("engine signing key pinned: SHA256:")),
        "{printed:?}"
    );
    until("t1's live link pushed to the window", || {
        rec.all()
            .iter()
            .any(|t| {
                matches!(t, Heard::Link(v)
                    if v.name == "t1" && matches!(v.state, HostLinkState::Live { .. }))
            })
            .then_some(())
    })
    .await;

    // Its entry changed (as an upgrade to another version changes it): the
    // link is replaced by one for the new entry.
    let before = links.get("t1").expect("t1's link");
    let mut file = registry::load(&paths).expect("hosts.json");
    file.hosts[0].added_at += 1;
    registry::save(&paths, &file).expect("hosts.json written");
    let after = until("t1's link replaced", || {
        links.get("t1").filter(|l| !Arc::ptr_eq(l, &before))
    })
    .await;
    assert!(before.is_stopped());
    assert_eq!(after.host(), &file.hosts[0]);
    assert_eq!(links.started(), 2);
    live_engine(&links, "t1").await;

    // Removed in a terminal: its link closed, its removal pushed, and the
    // steps of this setup (another file) shown, not the add's again.
    let t = Instant::now();
    let removed = terminal(&paths, &host, &["hosts", "remove", "t1"]).await;
    until("t1's removal pushed", || {
        (removals(&rec) == ["t1"]).then_some(())
    })
    .await;
    eprintln!(
        "measured: overseer hosts remove in a terminal to the window told took {:?}",
        t.elapsed()
    );
    let both: Vec<String> = printed
        .iter()
        .cloned()
        .chain(removed.lines().map(str::to_owned))
        .collect();
    until("t1's removal steps pushed to the window", || {
        (steps(&rec, "t1") == both).then_some(())
    })
    .await;
    assert!(links.get("t1").is_none());
    assert!(after.is_stopped());
    assert!(!engine_running(&host), "{:?}", host.command_lines());

    // A setup a terminal holds refuses the window's of the same host.
    let _terminals = setup::lock(&paths, "t1").expect("the terminal's setup");
    let refused = links
        .host_add("t1".into(), host.url(), None)
        .await
        .expect_err("refused while the terminal sets t1 up");
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert_eq!(steps(&rec, "t1"), both, "the refused add told no step");
}
