//! The `overseer` binary as a user runs it: real child processes, a real data
//! dir, and `overseer serve` as a real engine beside the CLI.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_overseer"));
        c.args(args)
            .env("OVERSEER_DATA_DIR", self.data())
            .env("OVERSEER_CONFIG_DIR", self.dir.path().join("config"))
            .env_remove("OVERSEER_LOG");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run overseer")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "overseer {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "overseer {args:?} should fail");
        String::from_utf8(out.stderr).expect("utf8")
    }

    fn run_state(&self, id: i64) -> String {
        let v: serde_json::Value =
            serde_json::from_str(&self.ok(&["runs", "show", &id.to_string(), "--json"]))
                .expect("json");
        match v["state"]["reason"].as_str() {
            Some(reason) => format!("released:{reason}"),
            None => v["state"]["state"].as_str().expect("state").to_owned(),
        }
    }
}

fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn without_an_engine_the_cli_acts_on_the_store_directly() {
    let h = Home::new();
    assert!(h.ok(&["demo", "seed"]).contains("seeded 15 demo runs"));
    let runs: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["runs", "list", "--json"])).expect("json");
    assert_eq!(runs.len(), 15);
    assert_eq!(runs.iter().filter(|r| r["needs_you"] == true).count(), 4);
    let table = h.ok(&["runs", "list"]);
    assert!(table.contains("NEEDS YOU"), "{table}");

    assert!(h
        .ok(&["runs", "approve", "1"])
        .contains("released (merged)"));
    assert_eq!(h.run_state(1), "released:merged");
    let err = h.fails(&["runs", "reject", "2", "--reason", "  "]);
    assert!(err.contains("needs a reason"), "{err}");
    assert_eq!(h.run_state(2), "pending_review");
    assert!(h
        .ok(&["runs", "reject", "2", "--reason", "wrong approach"])
        .contains("human_rejected"));
    assert!(h.ok(&["runs", "abort", "5"]).contains("aborted_by_user"));

    let err = h.fails(&["runs", "approve", "1"]);
    assert!(
        err.contains("cannot approve a run that is released:merged"),
        "{err}"
    );
    let err = h.fails(&["runs", "approve", "404"]);
    assert!(err.contains("run 404 does not exist"), "{err}");
    let err = h.fails(&["demo", "seed"]);
    assert!(err.contains("already has runs"), "{err}");

    let out = h.ok(&["audit", "verify"]);
    assert!(out.starts_with("audit log OK: "), "{out}");
}

#[test]
fn audit_verify_exits_non_zero_naming_the_first_bad_record() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let before = h.ok(&["audit", "verify", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&before).expect("json");
    assert_eq!(v["ok"], true);
    assert!(v["records"].as_i64().expect("count") > 50);

    let db = rusqlite::Connection::open(h.data().join("overseer.db")).expect("open");
    db.execute("UPDATE audit_log SET actor = 'user:app' WHERE seq = 17", [])
        .expect("tamper");
    let out = h.run(&["audit", "verify"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("seq 17"), "{err}");
    assert!(err.contains("edited"), "{err}");
}

#[test]
fn a_database_from_a_newer_version_is_refused_with_what_to_do() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let db = rusqlite::Connection::open(h.data().join("overseer.db")).expect("open");
    db.pragma_update(None, "user_version", 999).expect("bump");
    let err = h.fails(&["runs", "list"]);
    assert!(err.contains("written by a newer Overseer"), "{err}");
    assert!(err.contains("upgrade Overseer"), "{err}");
}

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn with_overseer_serve_running_the_cli_goes_through_it_and_shutdown_checkpoints() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let mut serve = Serve(
        h.cmd(&["serve"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    let socket = h.data().join("overseer.sock");
    wait_for(&socket);

    // A second engine on the same data dir is refused.
    let err = h.fails(&["serve"]);
    assert!(err.contains("already running"), "{err}");

    assert!(h.ok(&["runs", "approve", "3"]).contains("merged"));
    assert_eq!(h.run_state(3), "released:merged");

    // SIGTERM: a clean stop writes a checkpoint and removes the socket.
    let pid = serve.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = serve.0.wait().expect("wait");
    assert!(status.success(), "serve exited with {status}");
    assert!(!socket.exists(), "socket left behind");
    let v: serde_json::Value =
        serde_json::from_str(&h.ok(&["audit", "verify", "--json"])).expect("json");
    assert_eq!(v["ok"], true);
    assert!(v["checkpoints"].as_i64().expect("n") >= 2, "{v}");
}
