//! What the CLI's integration tests share: a home (data and config dirs in
//! a temp dir) for the real `overseer` binary, `overseer serve` as a child,
//! the demo agent, and waiting for what the engine does by itself.
#![allow(dead_code)] // each test file uses its own part

pub mod remote;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Home {
    pub dir: tempfile::TempDir,
    /// The `overseer` binary this home runs (the one cargo built, unless a
    /// test runs a copy of its own).
    pub bin: PathBuf,
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("tempdir"),
            bin: PathBuf::from(env!("CARGO_BIN_EXE_overseer")),
        }
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args)
            .env("OVERSEER_DATA_DIR", self.data())
            .env("OVERSEER_CONFIG_DIR", self.dir.path().join("config"))
            .env_remove("OVERSEER_LOG");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run overseer")
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "overseer {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    }

    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "overseer {args:?} should fail");
        String::from_utf8(out.stderr).expect("utf8")
    }

    pub fn run_state(&self, id: i64) -> String {
        let v: serde_json::Value =
            serde_json::from_str(&self.ok(&["runs", "show", &id.to_string(), "--json"]))
                .expect("json");
        match v["state"]["reason"].as_str() {
            Some(reason) => format!("released:{reason}"),
            None => v["state"]["state"].as_str().expect("state").to_owned(),
        }
    }
}

/// A git repository with one empty commit, in the home's temp dir.
pub fn empty_repo(h: &Home) -> PathBuf {
    overseer_test_support::repo_with(&h.dir.path().join("repo"), &[])
}

pub fn wait_for(path: &Path) {
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

pub struct Serve(pub Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The demo agent, next to `overseer` in this test's profile.
pub fn demo_agent() -> PathBuf {
    overseer_test_support::demo_agent().to_owned()
}

/// Pids of live processes whose environment holds `needle` and whose working
/// directory lies under `root` (the test's own data: another test's or app's
/// agents may carry the same run number).
pub fn procs_with(root: &Path, needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let live = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    !s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(false);
            live && std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| String::from_utf8_lossy(&env).contains(needle))
                .unwrap_or(false)
                && std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .is_ok_and(|cwd| cwd.starts_with(root))
        })
        .collect()
}

pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    overseer_test_support::eventually(what, Duration::from_secs(60), || f().then_some(()));
}

/// Waits for the run's plan gate and approves it.
pub fn approve_plan(h: &Home, run: i64) {
    eventually("the plan gate, approved", || {
        let gates: Vec<serde_json::Value> =
            serde_json::from_str(&h.ok(&["gates", "list", "--json"])).expect("json");
        let Some(g) = gates
            .iter()
            .find(|g| g["run_id"] == run && g["kind"] == "plan")
        else {
            return false;
        };
        h.ok(&[
            "gates",
            "decide",
            &g["id"].to_string(),
            "--option",
            "approve",
        ]);
        true
    });
}

/// A home with the demo agent configured and a workspace `r` on an empty repository.
pub fn demo_home() -> Home {
    let h = Home::new();
    let cfg = h.dir.path().join("config");
    std::fs::create_dir_all(&cfg).expect("cfg");
    std::fs::write(
        cfg.join("overseer.toml"),
        format!(
            "[agents.demo]\ncommand = {:?}\nmode = \"default\"\n",
            demo_agent().to_string_lossy()
        ),
    )
    .expect("config");
    let repo = empty_repo(&h);
    h.ok(&["workspace", "add", &repo.to_string_lossy(), "--name", "r"]);
    h
}

impl Home {
    /// `overseer serve`, started and answering on its socket.
    pub fn serve(&self) -> Serve {
        let socket = self.data().join("overseer.sock");
        let _ = std::fs::remove_file(&socket);
        let serve = Serve(
            self.cmd(&["serve"])
                .env("OVERSEER_DEMO_STEP_MS", "0")
                .stderr(Stdio::null())
                .spawn()
                .expect("serve"),
        );
        wait_for(&socket);
        serve
    }

    pub fn start_demo(&self, scenario: &str) -> i64 {
        self.ok(&[
            "task",
            "start",
            "--workspace",
            "r",
            "--agent",
            "demo",
            "--prompt",
            "update the greeting",
            "--scenario",
            scenario,
        ])
        .trim()
        .parse()
        .expect("run id")
    }

    pub fn gates(&self) -> Vec<serde_json::Value> {
        serde_json::from_str(&self.ok(&["gates", "list", "--all", "--json"])).expect("json")
    }

    /// The run's pending gate of `kind`, once there is one.
    pub fn pending(&self, run: i64, kind: &str) -> serde_json::Value {
        let mut found = None;
        eventually(&format!("a pending {kind} gate of run {run}"), || {
            found = self
                .gates()
                .into_iter()
                .find(|g| g["run_id"] == run && g["kind"] == kind && g["status"] == "pending");
            found.is_some()
        });
        found.expect("found")
    }

    pub fn activity_kinds(&self, run: i64) -> Vec<String> {
        let v: Vec<serde_json::Value> =
            serde_json::from_str(&self.ok(&["runs", "activity", &run.to_string(), "--json"]))
                .expect("json");
        v.iter()
            .filter_map(|a| a["kind"].as_str().map(str::to_owned))
            .collect()
    }
}

/// kill -9 of the engine process itself, then reaped.
pub fn kill_9(serve: Serve) {
    let mut serve = serve;
    serve.0.kill().expect("kill -9");
    serve.0.wait().expect("reap");
}
