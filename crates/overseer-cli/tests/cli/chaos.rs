//! `make chaos`: the engine (`overseer serve`) killed with SIGKILL at random
//! points while demo agents work and decisions are made: before, during and
//! right after a decision, during a merge, while agents work; decisions made
//! from the CLI while no engine runs; then the engine started again. At the
//! end every decision the CLI acknowledged (exit 0) must be in the database
//! as made, none twice, the audit log must verify, every run must finish or
//! wait on a gate, and nothing an agent started may outlive a clean stop.
//!
//! `OVERSEER_CHAOS_ITERATIONS` (default 12: the short run `cargo test` does)
//! and `OVERSEER_CHAOS_SEED` (printed; the same seed makes the same choices,
//! though the timing of a kill against the engine's work never repeats
//! exactly). `OVERSEER_CHAOS_KEEP=1` keeps the data dir for a post-mortem.

use crate::common;

use common::{demo_agent, procs_with, Home, Serve};
use rusqlite::OptionalExtension;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// xorshift64*: enough randomness to pick moments and gates, replayable.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, never zero (xorshift's fixed point).
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len() as u64) as usize)
        }
    }
}

/// How long one CLI command may take before the campaign calls the engine
/// hung (a command waits on the engine, or on the database it holds).
const HANG: Duration = Duration::from_secs(60);

const SCENARIOS: [&str; 5] = ["happy", "flaky", "questions", "destructive", "drift"];
const ANSWER: &str = r#"{"framework": "svelte", "add_tests": false, "notes": "chaos"}"#;

/// A decision the CLI acknowledged (exit 0), and how it was made.
#[derive(Debug, Clone)]
struct Ack {
    gate: i64,
    run: i64,
    kind: String,
    option: String,
    how: How,
    iteration: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum How {
    /// Through the running engine, nothing killed meanwhile.
    Engine,
    /// Spawned, then the engine killed 0-30 ms later.
    Racing,
    /// With no engine running (the CLI's own transaction).
    Offline,
    /// While the next engine was starting.
    AtStart,
}

/// A gate waiting on a decision, as the database has it.
#[derive(Debug, Clone)]
struct Pending {
    id: i64,
    run: i64,
    kind: String,
    options: Vec<String>,
}

/// What the campaign did, for its report.
#[derive(Default)]
struct Tally {
    kills: usize,
    runs_started: usize,
    racing_failed: usize,
    merges_acked: usize,
    verify_runs: usize,
    audit_failures: Vec<String>,
    serve_starts: usize,
}

struct Chaos {
    seed: u64,
    home: Home,
    rng: Rng,
    db: Option<rusqlite::Connection>,
    serve: Option<Serve>,
    log: PathBuf,
    acks: Vec<Ack>,
    /// `runs approve RUN` acknowledged: the run must end merged.
    approved_runs: BTreeMap<i64, usize>,
    workspaces: usize,
    tally: Tally,
    iteration: usize,
}

/// The binaries under test, linked (or copied) into the campaign's own dir:
/// a rebuild of `target/debug` during a long campaign does not swap the
/// engine under it.
fn snapshot(from: &Path, dir: &Path) -> PathBuf {
    let to = dir.join(from.file_name().expect("a file name"));
    if std::fs::hard_link(from, &to).is_err() {
        std::fs::copy(from, &to).expect("copy the binary");
    }
    to
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

impl Chaos {
    fn new(seed: u64) -> Chaos {
        let mut home = Home::new();
        // Kept when the campaign fails, however it fails (a panic too).
        home.dir.disable_cleanup(true);
        let bin_dir = home.dir.path().join("bin");
        std::fs::create_dir_all(&bin_dir).expect("bin dir");
        home.bin = snapshot(&home.bin, &bin_dir);
        let agent = snapshot(&demo_agent(), &bin_dir);
        let cfg = home.dir.path().join("config");
        std::fs::create_dir_all(&cfg).expect("cfg");
        std::fs::write(
            cfg.join("overseer.toml"),
            format!(
                "[agents.demo]\ncommand = {:?}\nmode = \"default\"\n",
                agent.to_string_lossy()
            ),
        )
        .expect("config");
        let log = home.dir.path().join("serve.log");
        Chaos {
            seed,
            home,
            rng: Rng::new(seed),
            db: None,
            serve: None,
            log,
            acks: Vec::new(),
            approved_runs: BTreeMap::new(),
            workspaces: 0,
            tally: Tally::default(),
            iteration: 0,
        }
    }

    /// Waits for a CLI command, for at most [`HANG`]: a command that gets
    /// no answer ends the campaign, saying which and where.
    fn finish(&self, child: std::io::Result<Child>, what: &str) -> Option<Output> {
        self.finish_within(child, what, HANG)
    }

    fn finish_within(
        &self,
        child: std::io::Result<Child>,
        what: &str,
        limit: Duration,
    ) -> Option<Output> {
        let mut child = child.ok()?;
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return child.wait_with_output().ok(),
                Ok(None) if start.elapsed() > limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let serve = self.serve.as_ref().map(|s| s.0.id());
                    panic!(
                        "iteration {}: `overseer {what}` got no answer within {} s: the engine (pid {serve:?}) or the database is hung (seed {}; data kept in {}, the engine's log in serve.log)",
                        self.iteration,
                        limit.as_secs(),
                        self.seed,
                        self.home.dir.path().display()
                    );
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => return None,
            }
        }
    }

    /// `overseer args`, which must succeed.
    fn cli_ok(&self, args: &[&str]) {
        let child = self
            .home
            .cmd(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let out = self.finish(child, &args.join(" ")).expect("run overseer");
        assert!(
            out.status.success(),
            "iteration {}: overseer {args:?} failed: {}",
            self.iteration,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn db(&mut self) -> &rusqlite::Connection {
        if self.db.is_none() {
            let c = rusqlite::Connection::open(self.home.data().join("overseer.db"))
                .expect("open the database");
            c.busy_timeout(Duration::from_secs(10)).expect("busy");
            self.db = Some(c);
        }
        self.db.as_ref().expect("db")
    }

    // ---- the engine ----

    /// `overseer serve`, its stderr appended to `serve.log`, answering.
    fn start_serve(&mut self) {
        assert!(self.serve.is_none(), "an engine is already running");
        let socket = self.home.data().join("overseer.sock");
        let _ = std::fs::remove_file(&socket);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("serve.log");
        let child = self
            .home
            .cmd(&["serve"])
            .env("OVERSEER_DEMO_STEP_MS", "0")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("serve");
        self.tally.serve_starts += 1;
        let mut serve = Serve(child);
        let start = Instant::now();
        while !socket.exists() {
            if let Ok(Some(status)) = serve.0.try_wait() {
                panic!(
                    "iteration {}: overseer serve exited with {status} before answering; see {}",
                    self.iteration,
                    self.log.display()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "iteration {}: overseer serve never opened its socket",
                self.iteration
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        self.serve = Some(serve);
    }

    fn kill_serve(&mut self) {
        if let Some(mut serve) = self.serve.take() {
            serve.0.kill().expect("kill -9");
            serve.0.wait().expect("reap");
            self.tally.kills += 1;
        }
    }

    /// SIGTERM and wait: a clean stop.
    fn stop_serve(&mut self) -> Result<(), String> {
        let Some(mut serve) = self.serve.take() else {
            return Ok(());
        };
        let pid = serve.0.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| format!("kill -TERM: {e}"))?;
        if !sent.success() {
            return Err(format!("kill -TERM {pid} failed"));
        }
        let start = Instant::now();
        loop {
            match serve.0.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("serve exited with {status} on SIGTERM")),
                Ok(None) if start.elapsed() > Duration::from_secs(60) => {
                    return Err("serve did not stop within 60 s of SIGTERM".into())
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => return Err(format!("waiting for serve: {e}")),
            }
        }
    }

    // ---- runs and gates ----

    /// A run of a random scenario on a workspace of its own (its own
    /// repository: runs never conflict on merge).
    fn start_run(&mut self) {
        self.workspaces += 1;
        let name = format!("w{}", self.workspaces);
        let repo =
            overseer_test_support::repo_with(&self.home.dir.path().join("repos").join(&name), &[]);
        self.cli_ok(&["workspace", "add", &repo.to_string_lossy(), "--name", &name]);
        let scenario = *self.rng.pick(&SCENARIOS).expect("a scenario");
        self.cli_ok(&[
            "task",
            "start",
            "--workspace",
            &name,
            "--agent",
            "demo",
            "--prompt",
            "update the greeting",
            "--scenario",
            scenario,
        ]);
        self.tally.runs_started += 1;
    }

    fn unreleased(&mut self) -> Vec<(i64, String)> {
        let mut s = self
            .db()
            .prepare("SELECT id, state FROM runs WHERE state NOT LIKE 'released%' ORDER BY id")
            .expect("prepare");
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("runs")
            .collect::<Result<_, _>>()
            .expect("runs")
    }

    fn pending(&mut self) -> Vec<Pending> {
        let mut s = self
            .db()
            .prepare(
                "SELECT id, run_id, kind, options FROM gates WHERE status = 'pending' ORDER BY id",
            )
            .expect("prepare");
        s.query_map([], |r| {
            let options: String = r.get(3)?;
            Ok(Pending {
                id: r.get(0)?,
                run: r.get(1)?,
                kind: r.get(2)?,
                options: option_ids(&options),
            })
        })
        .expect("gates")
        .collect::<Result<_, _>>()
        .expect("gates")
    }

    /// The option a user keeping things moving picks (yes, approve, retry,
    /// answer), now and then another one.
    fn choose(&mut self, g: &Pending) -> Option<(String, Option<&'static str>)> {
        let has = |o: &str| g.options.iter().any(|x| x == o);
        let pick = |o: &str| Some((o.to_owned(), None));
        match g.kind.as_str() {
            "plan" if has("approve") => pick("approve"),
            "tool_call" if has("always") && self.rng.percent(15) => pick("always"),
            "tool_call" if has("no") && self.rng.percent(5) => {
                Some(("no".into(), Some("chaos says no")))
            }
            "tool_call" if has("yes") => pick("yes"),
            "step_review" | "supervisor_pause" if has("proceed") => pick("proceed"),
            "deviation" if has("retry") => pick("retry"),
            "deviation" if has("replan") => pick("replan"),
            "merge_review" if has("reject") && self.rng.percent(5) => {
                Some(("reject".into(), Some("chaos says no")))
            }
            "merge_review" if has("approve") => pick("approve"),
            "question" if has("answer") => Some(("answer".into(), Some(ANSWER))),
            _ => g
                .options
                .iter()
                .find(|o| ["stop", "default", "decline", "abort"].contains(&o.as_str()))
                .map(|o| (o.clone(), None)),
        }
    }

    fn decide_cmd(&mut self, g: &Pending) -> Option<(Command, String)> {
        let (option, context) = self.choose(g)?;
        let id = g.id.to_string();
        let mut args = vec!["gates", "decide", &id, "--option", &option];
        if let Some(c) = context {
            args.extend(["--context", c]);
        }
        let mut cmd = self.home.cmd(&args);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        Some((cmd, option))
    }

    fn ack(&mut self, g: &Pending, option: String, how: How) {
        self.acks.push(Ack {
            gate: g.id,
            run: g.run,
            kind: g.kind.clone(),
            option,
            how,
            iteration: self.iteration,
        });
    }

    /// Decides `g` and waits for the CLI; an exit 0 is acknowledged.
    fn decide(&mut self, g: &Pending, how: How) -> bool {
        let Some((mut cmd, option)) = self.decide_cmd(g) else {
            return false;
        };
        let what = format!("gates decide {} --option {option}", g.id);
        let ok = self
            .finish(cmd.spawn(), &what)
            .is_some_and(|out| out.status.success());
        if ok {
            self.ack(g, option, how);
        }
        ok
    }

    /// A run pending review approved with `runs approve` (it merges).
    fn approve_cmd(&mut self, run: i64) -> Command {
        let mut cmd = self.home.cmd(&["runs", "approve", &run.to_string()]);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        cmd
    }

    fn racing_result(&mut self, child: Child, what: Racing) {
        let command = match &what {
            Racing::Gate(g, option, _) => format!("gates decide {} --option {option}", g.id),
            Racing::Approve(g) => format!("runs approve {}", g.run),
        };
        let ok = self
            .finish(Ok(child), &command)
            .is_some_and(|out| out.status.success());
        if !ok {
            self.tally.racing_failed += 1;
            return;
        }
        match what {
            Racing::Gate(g, option, how) => self.ack(&g, option, how),
            Racing::Approve(g) => {
                self.approved_runs.insert(g.run, self.iteration);
                self.tally.merges_acked += 1;
                self.ack(&g, "approve".into(), How::Racing);
            }
        }
    }

    fn random_pending(&mut self, prefer_merge: bool) -> Option<Pending> {
        let pending = self.pending();
        if prefer_merge {
            let merges: Vec<Pending> = pending
                .iter()
                .filter(|g| g.kind == "merge_review")
                .cloned()
                .collect();
            if let Some(g) = self.rng.pick(&merges) {
                return Some(g.clone());
            }
        }
        self.rng.pick(&pending).cloned()
    }

    // ---- one iteration ----

    fn iterate(&mut self) {
        // Keep 3-5 runs going.
        let target = 3 + self.rng.below(3) as usize;
        while self.unreleased().len() < target {
            self.start_run();
        }
        // Agents work and decisions are made for a while (up to ~0.8 s).
        let work = Duration::from_millis(100 + self.rng.below(700));
        let start = Instant::now();
        while start.elapsed() < work {
            match self.random_pending(false) {
                Some(g) if self.rng.percent(70) => {
                    self.decide(&g, How::Engine);
                }
                _ => std::thread::sleep(Duration::from_millis(10 + self.rng.below(40))),
            }
        }
        // The kill, at one of these moments.
        let mut racing: Option<(Child, Racing)> = None;
        match self.rng.below(5) {
            // During a decision, or during a merge (a run pending review
            // approved, by its gate or by `runs approve`).
            0..=2 => {
                let prefer_merge = self.rng.percent(40);
                if let Some(g) = self.random_pending(prefer_merge) {
                    let spawned = if g.kind == "merge_review" && self.rng.percent(50) {
                        self.approve_cmd(g.run)
                            .spawn()
                            .ok()
                            .map(|c| (c, Racing::Approve(g.clone())))
                    } else {
                        self.decide_cmd(&g).and_then(|(mut cmd, option)| {
                            let racing = Racing::Gate(g.clone(), option, How::Racing);
                            cmd.spawn().ok().map(|c| (c, racing))
                        })
                    };
                    racing = spawned;
                    // A decision is killed 0-30 ms after it is sent; a
                    // merge (git, then its records) at any point of it.
                    let within = if g.kind == "merge_review" { 300 } else { 31 };
                    std::thread::sleep(Duration::from_millis(self.rng.below(within)));
                }
            }
            // Right after a decision was acknowledged.
            3 => {
                let prefer_merge = self.rng.percent(30);
                if let Some(g) = self.random_pending(prefer_merge) {
                    self.decide(&g, How::Engine);
                }
            }
            // While agents work, nothing being decided.
            _ => std::thread::sleep(Duration::from_millis(self.rng.below(100))),
        }
        self.kill_serve();
        if let Some((child, what)) = racing {
            self.racing_result(child, what);
        }
        // Decisions and new runs while no engine runs.
        for _ in 0..self.rng.below(4) {
            let prefer_merge = self.rng.percent(30);
            if let Some(g) = self.random_pending(prefer_merge) {
                self.decide(&g, How::Offline);
            }
        }
        // (never more than 5 going: an engine killed faster than it can
        // carry 20 runs on gets nothing done, and tests nothing)
        if self.rng.percent(15) && self.unreleased().len() < 5 {
            self.start_run();
        }
        // Sometimes a decision races the next engine's start.
        let at_start = if self.rng.percent(30) {
            let prefer_merge = self.rng.percent(30);
            self.random_pending(prefer_merge).and_then(|g| {
                let (mut cmd, option) = self.decide_cmd(&g)?;
                let child = cmd.spawn().ok()?;
                Some((child, Racing::Gate(g, option, How::AtStart)))
            })
        } else {
            None
        };
        self.start_serve();
        if let Some((child, what)) = at_start {
            self.racing_result(child, what);
        }
    }

    fn verify_audit(&mut self, when: &str) {
        self.tally.verify_runs += 1;
        let child = self
            .home
            .cmd(&["audit", "verify"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        // Every record's signature checked in a debug build: minutes on a
        // long campaign's log.
        let start = Instant::now();
        let out = self
            .finish_within(child, "audit verify", Duration::from_secs(900))
            .expect("audit verify");
        println!(
            "chaos: audit verify {when}: {} in {:.1} s",
            if out.status.success() { "OK" } else { "FAILED" },
            start.elapsed().as_secs_f64()
        );
        if !out.status.success() {
            self.tally.audit_failures.push(format!(
                "{when}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }

    // ---- after the killing stops ----

    /// Keeps deciding until every run is released, for at most `limit`;
    /// returns the runs still going with no pending gate that made no
    /// progress in the last `quiet`.
    fn settle(&mut self, limit: Duration, quiet: Duration) -> (Vec<String>, Vec<String>) {
        let start = Instant::now();
        // run -> (its state, its last event, its pending gates), since when.
        let mut seen: BTreeMap<i64, (Progress, Instant)> = BTreeMap::new();
        loop {
            let pending = self.pending();
            for g in &pending {
                if g.kind == "merge_review" {
                    // Settling approves merges (no rejects).
                    let child = self
                        .home
                        .cmd(&["gates", "decide", &g.id.to_string(), "--option", "approve"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn();
                    let what = format!("gates decide {} --option approve", g.id);
                    let ok = self
                        .finish(child, &what)
                        .is_some_and(|out| out.status.success());
                    if ok {
                        self.ack(g, "approve".into(), How::Engine);
                    }
                } else {
                    self.decide(g, How::Engine);
                }
            }
            let runs = self.unreleased();
            let now = Instant::now();
            let pending = self.pending();
            let mut all_quiet = true;
            for (run, state) in &runs {
                let last: i64 = self
                    .db()
                    .query_row(
                        "SELECT coalesce(max(id), 0) FROM run_events WHERE run_id = ?1",
                        [run],
                        |r| r.get(0),
                    )
                    .expect("events");
                let gates: Vec<i64> = pending
                    .iter()
                    .filter(|g| g.run == *run)
                    .map(|g| g.id)
                    .collect();
                let sig = (state.clone(), last, gates);
                let since = match seen.get(run) {
                    Some((old, since)) if *old == sig => *since,
                    _ => now,
                };
                if now.duration_since(since) < quiet || !sig.2.is_empty() {
                    all_quiet = false;
                }
                seen.insert(*run, (sig, since));
            }
            if runs.is_empty() || all_quiet || start.elapsed() > limit {
                let mut stuck = Vec::new();
                let mut unfinished = Vec::new();
                for (run, state) in &runs {
                    let ((_, last, gates), since) = &seen[run];
                    let idle = now.duration_since(*since);
                    let line = format!(
                        "run {run}: {state}, pending gates {gates:?}, last event {last}, no change for {:.1} s",
                        idle.as_secs_f64()
                    );
                    if gates.is_empty() && idle >= quiet {
                        stuck.push(line);
                    } else {
                        unfinished.push(line);
                    }
                }
                return (stuck, unfinished);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    // ---- the checks ----

    /// Every acknowledged decision, as the database has it now.
    fn check_acks(&mut self) -> (Vec<String>, Vec<String>) {
        let mut lost = Vec::new();
        let mut changed = Vec::new();
        let acks = self.acks.clone();
        for a in &acks {
            let row: Option<(String, Option<String>, Option<String>)> = self
                .db()
                .query_row(
                    "SELECT status, decided_option, decided_by FROM gates WHERE id = ?1",
                    [a.gate],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .expect("gate");
            let what = format!(
                "gate {} ({}) of run {}: {:?} decided '{}' at iteration {}",
                a.gate, a.kind, a.run, a.how, a.option, a.iteration
            );
            match row {
                None => lost.push(format!("{what}: the gate is gone")),
                Some((status, _, _)) if status != "decided" => {
                    lost.push(format!("{what}: the gate is {status}"))
                }
                Some((_, option, by)) => {
                    let by = by.unwrap_or_default();
                    let option = option.unwrap_or_default();
                    if !by.starts_with("user:") {
                        lost.push(format!("{what}: closed by {by} as '{option}'"));
                    } else if option != a.option {
                        changed.push(format!("{what}: the database says '{option}' by {by}"));
                    }
                }
            }
        }
        for (run, iteration) in self.approved_runs.clone() {
            let state: String = self
                .db()
                .query_row("SELECT state FROM runs WHERE id = ?1", [run], |r| r.get(0))
                .expect("run");
            let merge: Option<String> = self
                .db()
                .query_row("SELECT status FROM merges WHERE run_id = ?1", [run], |r| {
                    r.get(0)
                })
                .optional()
                .expect("merge");
            if state != "released:merged" || merge.as_deref() != Some("done") {
                lost.push(format!(
                    "run {run}: `runs approve` acknowledged at iteration {iteration}, but the run is {state}, its merge {merge:?}"
                ));
            }
        }
        (lost, changed)
    }

    /// Gates decided twice, merges recorded twice.
    fn check_doubles(&mut self) -> Vec<String> {
        let mut doubled = Vec::new();
        let queries = [
            (
                "gate_decided audit records",
                "SELECT json_extract(payload, '$.gate_id'), count(*) FROM audit_log
                 WHERE json_extract(payload, '$.type') = 'gate_decided'
                 GROUP BY 1 HAVING count(*) > 1",
            ),
            (
                "gate_decisions rows",
                "SELECT gate_id, count(*) FROM gate_decisions GROUP BY 1 HAVING count(*) > 1",
            ),
            (
                "human decision rows",
                "SELECT gate_id, count(*) FROM decisions
                 WHERE gate_id IS NOT NULL AND actor LIKE 'user:%'
                 GROUP BY 1 HAVING count(*) > 1",
            ),
        ];
        for (what, sql) in queries {
            let rows: Vec<(i64, i64)> = {
                let mut s = self.db().prepare(sql).expect("prepare");
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                    .expect("query")
                    .collect::<Result<_, _>>()
                    .expect("rows")
            };
            for (gate, n) in rows {
                doubled.push(format!("gate {gate}: {n} {what}"));
            }
        }
        let merges: Vec<(i64, i64)> = {
            let mut s = self
                .db()
                .prepare(
                    "SELECT json_extract(payload, '$.run_id'), count(*) FROM audit_log
                     WHERE json_extract(payload, '$.type') = 'merge_done'
                     GROUP BY 1 HAVING count(*) > 1",
                )
                .expect("prepare");
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows")
        };
        for (run, n) in merges {
            doubled.push(format!("run {run}: {n} merge_done records"));
        }
        // In git: each workspace holds one run, so its main has at most one
        // merge commit, and one more commit than `init` only through it.
        let workspaces: Vec<(String, String)> = {
            let mut s = self
                .db()
                .prepare("SELECT name, path FROM workspaces")
                .expect("prepare");
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows")
        };
        for (name, path) in workspaces {
            let out = Command::new("git")
                .args(["-C", &path, "rev-list", "--merges", "--count", "main"])
                .output()
                .expect("git rev-list");
            let n: u64 = String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .unwrap_or(0);
            if n > 1 {
                doubled.push(format!("workspace {name}: main has {n} merge commits"));
            }
        }
        doubled
    }

    fn db_id(&mut self) -> String {
        self.db()
            .query_row("SELECT value FROM meta WHERE key = 'db_id'", [], |r| {
                r.get(0)
            })
            .expect("db_id")
    }

    /// Every run's timeline, for a failure's post-mortem.
    fn timelines(&self, runs: &BTreeSet<i64>) -> String {
        let mut out = String::new();
        for run in runs {
            let a = self.home.run(&["runs", "activity", &run.to_string()]);
            let _ = writeln!(
                out,
                "--- overseer runs activity {run}\n{}",
                String::from_utf8_lossy(&a.stdout)
            );
        }
        out
    }
}

/// Where a run is: its state, its latest timeline event, its pending gates.
type Progress = (String, i64, Vec<i64>);

enum Racing {
    Gate(Pending, String, How),
    Approve(Pending),
}

fn option_ids(json: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            o.get("id")
                .and_then(|i| i.as_str())
                .or_else(|| o.as_str())
                .map(str::to_owned)
        })
        .collect()
}

/// Run numbers named in problem lines ("run 12", "of run 12").
fn runs_named(lines: &[String]) -> BTreeSet<i64> {
    let mut runs = BTreeSet::new();
    for l in lines {
        let mut words = l.split(|c: char| !c.is_ascii_alphanumeric());
        while let Some(w) = words.next() {
            if w == "run" {
                if let Some(n) = words.next().and_then(|n| n.parse().ok()) {
                    runs.insert(n);
                }
            }
        }
    }
    runs
}

#[test]
fn chaos_kill_9_of_the_engine_loses_changes_and_doubles_no_decision() {
    let iterations = env_u64("OVERSEER_CHAOS_ITERATIONS").unwrap_or(12) as usize;
    let seed = env_u64("OVERSEER_CHAOS_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    println!(
        "chaos: seed {seed}, {iterations} iterations (replay: OVERSEER_CHAOS_SEED={seed} OVERSEER_CHAOS_ITERATIONS={iterations})"
    );
    let mut c = Chaos::new(seed);
    println!("chaos: data in {}", c.home.dir.path().display());
    let began = Instant::now();
    c.start_serve();
    for i in 0..iterations {
        c.iteration = i;
        c.iterate();
        if (i + 1) % 50 == 0 {
            if (i + 1) % 200 == 0 {
                c.verify_audit(&format!("after iteration {i}"));
            }
            println!(
                "chaos: {} iterations, {:.0} s, {} decisions acknowledged, {} runs",
                i + 1,
                began.elapsed().as_secs_f64(),
                c.acks.len(),
                c.tally.runs_started
            );
        }
    }
    let chaos_time = began.elapsed();

    // The killing stops: keep deciding until every run is done.
    let (stuck, unfinished) = c.settle(Duration::from_secs(90), Duration::from_secs(15));
    // A clean stop: nothing an agent started outlives it.
    let stop = c.stop_serve();
    let marker = format!("overseer-{}-run-", c.db_id());
    let mut orphans = procs_with(Path::new("/"), &marker);
    let start = Instant::now();
    while !orphans.is_empty() && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(100));
        orphans = procs_with(Path::new("/"), &marker);
    }
    let orphans: Vec<String> = orphans
        .iter()
        .map(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let env = String::from_utf8_lossy(&env);
            let which = env
                .split('\0')
                .find_map(|kv| kv.split_once('=').filter(|(_, v)| v.contains(&marker)))
                .map(|(_, v)| v.to_owned())
                .unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "pid {pid} ({which}): {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect();
    c.verify_audit("after the final stop");
    let (lost, changed) = c.check_acks();
    let doubled = c.check_doubles();

    let merged: i64 = c
        .db()
        .query_row(
            "SELECT count(*) FROM runs WHERE state = 'released:merged'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    let mut by_how: BTreeMap<How, usize> = BTreeMap::new();
    for a in &c.acks {
        *by_how.entry(a.how).or_default() += 1;
    }
    println!(
        "chaos: {iterations} iterations in {:.0} s ({:.0} s in all), seed {seed}: {} kill -9, {} engine starts, {} runs ({merged} merged, {} by `runs approve` racing a kill), {} decisions acknowledged {:?}, {} racing decisions not acknowledged",
        chaos_time.as_secs_f64(),
        began.elapsed().as_secs_f64(),
        c.tally.kills,
        c.tally.serve_starts,
        c.tally.runs_started,
        c.tally.merges_acked,
        c.acks.len(),
        by_how,
        c.tally.racing_failed,
    );
    for line in &unfinished {
        println!("chaos: still working at the end (not counted as stuck): {line}");
    }
    let figures: [(&str, &[String]); 6] = [
        ("lost decisions", &lost),
        ("changed decisions", &changed),
        ("doubled decisions", &doubled),
        ("audit failures", &c.tally.audit_failures),
        ("stuck runs", &stuck),
        ("orphaned processes", &orphans),
    ];
    let mut failed = String::new();
    for (what, problems) in figures {
        println!("chaos: {what}: {}", problems.len());
        for p in problems {
            let _ = writeln!(failed, "{what}: {p}");
        }
    }
    if let Err(e) = &stop {
        let _ = writeln!(failed, "clean stop: {e}");
    }
    if !failed.is_empty() {
        let problems: Vec<String> = failed.lines().map(str::to_owned).collect();
        let timelines = c.timelines(&runs_named(&problems));
        panic!(
            "chaos found problems (seed {seed}; data kept in {}, the engine's log in serve.log):\n{failed}\n{timelines}",
            c.home.dir.path().display()
        );
    }
    if std::env::var_os("OVERSEER_CHAOS_KEEP").is_some() {
        println!("chaos: data kept in {}", c.home.dir.path().display());
    } else {
        c.home.dir.disable_cleanup(false);
    }
}
