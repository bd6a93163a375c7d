//! What the tests of hosts over SSH share: the `overseer` CLI pointed at a
//! test host's ssh config, a host prepared with the demo agent and a
//! repository, its engine's database read from outside (the test runs as
//! root), and waiting for its gates.

use super::Home;
use overseer_test_support::ssh_host::TestHost;
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

/// Where `hosts add` installs on a host (relative to its HOME).
pub const DIR: &str = ".local/share/overseer";

pub fn overseer(home: &Home, host: &TestHost, args: &[&str]) -> Output {
    home.cmd(args)
        .env("OVERSEER_SSH_CONFIG", host.ssh_config())
        .output()
        .expect("run overseer")
}

pub fn ok(home: &Home, host: &TestHost, args: &[&str]) -> String {
    let out = overseer(home, host, args);
    assert!(
        out.status.success(),
        "overseer {args:?} failed: {}\n{}\nsshd log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout),
        host.sshd_log()
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// The command's stderr; it must fail.
pub fn fails(home: &Home, host: &TestHost, args: &[&str]) -> String {
    let out = overseer(home, host, args);
    assert!(
        !out.status.success(),
        "overseer {args:?} should fail: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).expect("utf8")
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The host's engine database (read here as root, only to check).
pub fn host_db(host: &TestHost) -> PathBuf {
    host.home.join(DIR).join("overseer.db")
}

/// `(seq, record_hash)` of every record of the host's audit log.
pub fn audit_records(host: &TestHost) -> Vec<(i64, String)> {
    let conn = rusqlite::Connection::open_with_flags(
        host_db(host),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the host's database");
    let mut stmt = conn
        .prepare("SELECT seq, record_hash FROM audit_log ORDER BY seq")
        .expect("prepare");
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query");
    rows.collect::<Result<_, _>>().expect("rows")
}

/// How many `gate_decided` records the host's audit log holds for `gate`.
pub fn decided_records(host: &TestHost, gate: &str) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(
        host_db(host),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the host's database");
    conn.query_row(
        "SELECT count(*) FROM audit_log WHERE json_extract(payload, '$.type') = 'gate_decided' \
         AND json_extract(payload, '$.gate_id') = ?1",
        [gate.parse::<i64>().expect("a gate id")],
        |r| r.get(0),
    )
    .expect("count")
}

/// Puts on the host (over ssh, as its user) the demo agent, a profile
/// `demo` for it with `env` (TOML inline-table entries, may be empty), and a
/// repository `~/repo`; its engine reads them when it starts. No network for
/// the sandbox: the demo agent needs none, and slirp4netns cannot run for a
/// user other than root where /dev/net/tun is root's only.
pub fn prepare_demo(host: &TestHost, env: &str) {
    host.ssh_ok("mkdir -p demo && mkdir -p -m 700 .config .config/overseer");
    host.copy_to(
        overseer_test_support::demo_agent(),
        "demo/overseer-demo-agent",
    );
    let agent = host.home.join("demo/overseer-demo-agent");
    host.ssh_ok(&format!(
        "printf '[agents.demo]\\ncommand = \"{}\"\\nmode = \"default\"\\nnetwork = \"none\"\\nenv = {{ {} }}\\n' > .config/overseer/overseer.toml && \
         git init -q -b main repo && git -C repo -c user.name=T -c user.email=t@t \
         commit -q --allow-empty -m init",
        agent.display(),
        env
    ));
}

/// `hosts add NAME` for the test host, then the workspace `r` (its `~/repo`).
pub fn add_with_workspace(home: &Home, host: &TestHost, name: &str) {
    ok(home, host, &["hosts", "add", name, &host.url()]);
    let repo = host.home.join("repo");
    ok(
        home,
        host,
        &[
            "--host",
            name,
            "workspace",
            "add",
            &repo.to_string_lossy(),
            "--name",
            "r",
        ],
    );
}

/// Starts the demo agent on host `name` with `scenario`; its run id.
pub fn start_demo(home: &Home, host: &TestHost, name: &str, scenario: &str) -> String {
    ok(
        home,
        host,
        &[
            "--host",
            name,
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
        ],
    )
    .trim()
    .to_owned()
}

/// The host's pending gates of `run`, as JSON.
pub fn pending_gates(
    home: &Home,
    host: &TestHost,
    name: &str,
    run: &str,
) -> Vec<serde_json::Value> {
    let gates = json(&ok(
        home,
        host,
        &["--host", name, "gates", "list", "--json"],
    ));
    gates
        .as_array()
        .map(|g| {
            g.iter()
                .filter(|g| g["run_id"].as_i64() == run.parse::<i64>().ok())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The host's pending gate of `kind` for `run`, once there is one.
pub fn pending_on(home: &Home, host: &TestHost, name: &str, run: &str, kind: &str) -> String {
    let started = Instant::now();
    loop {
        if let Some(g) = pending_gates(home, host, name, run)
            .iter()
            .find(|g| g["kind"] == kind)
        {
            return g["id"].to_string();
        }
        if started.elapsed() > Duration::from_secs(60) {
            panic!(
                "no pending {kind} gate of run {run} on the host: {}\n{}\nengine log:\n{}",
                ok(home, host, &["--host", name, "runs", "show", run]),
                ok(home, host, &["--host", name, "runs", "activity", run]),
                host.ssh_ok(&format!("tail -40 {DIR}/serve.log"))
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `run` has a gate after `gate` (pending or decided): the
/// agent went on past it.
pub fn went_on_after(home: &Home, host: &TestHost, name: &str, run: &str, gate: &str) {
    let started = Instant::now();
    loop {
        let all = json(&ok(
            home,
            host,
            &["--host", name, "gates", "list", "--all", "--json"],
        ));
        let after = all.as_array().is_some_and(|g| {
            g.iter()
                .filter(|g| g["run_id"].as_i64() == run.parse::<i64>().ok())
                .any(|g| g["id"].as_i64() > gate.parse::<i64>().ok())
        });
        if after {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "run {run} never went on after gate {gate}: {}\nengine log:\n{}",
            ok(home, host, &["--host", name, "runs", "activity", run]),
            host.ssh_ok(&format!("tail -40 {DIR}/serve.log"))
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether the host's engine (`overseer serve`) runs.
pub fn engine_running(host: &TestHost) -> bool {
    host.command_lines()
        .iter()
        .any(|c| c.ends_with("/overseer serve"))
}
