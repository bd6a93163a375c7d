//! `overseer hosts` and `--host` against real OpenSSH: each test host is an
//! sshd in its own network namespace for a Unix user of its own
//! (`overseer_test_support::ssh_host`), reached only with the system
//! `ssh`/`scp` and an `-F` config. The binary under test is the one cargo
//! built; `hosts add` copies it to the host, whose engine then runs there as
//! that user.

use crate::common;

use common::remote::{engine_running, fails, json, ok, pending_on, DIR};
use common::Home;
use overseer_test_support::ssh_host::TestHost;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `hosts add NAME` for the test host, with how long it took.
fn add(home: &Home, host: &TestHost, name: &str) -> (String, Duration) {
    let started = Instant::now();
    let out = ok(home, host, &["hosts", "add", name, &host.url()]);
    (out, started.elapsed())
}

fn sha256(path: &std::path::Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .expect("a checksum")
        .to_owned()
}

/// The host's engine's public key, from its own key file.
fn engine_key_on(host: &TestHost) -> String {
    let secret = host.ssh_ok("cat .config/overseer/audit-signing.key");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("c");
    std::fs::create_dir(&config).expect("mkdir");
    let key = overseer_store::Keyring::key_path(&config);
    std::fs::write(&key, secret).expect("write key");
    Command::new("chmod")
        .arg("600")
        .arg(&key)
        .status()
        .expect("chmod");
    overseer_store::Keyring::load_or_create(&config)
        .expect("the host's key")
        .public_key_hex()
}

#[test]
fn a_host_is_added_reached_with_host_and_removed() {
    let host = TestHost::start();
    let home = Home::new();
    let (out, took) = add(&home, &host, "box");
    eprintln!("measured: hosts add (108 MB debug binary copied) took {took:?}");

    // The same binary, checked on the host, behind an atomic `current` link.
    let version = env!("CARGO_PKG_VERSION");
    let sum = sha256(&home.bin);
    assert!(out.contains(&format!("SHA-256 {sum} verified")), "{out}");
    let there = host.ssh_ok(&format!("sha256sum {DIR}/versions/{version}/overseer"));
    assert!(there.starts_with(&sum), "{there} vs {sum}");
    assert_eq!(
        host.ssh_ok(&format!("readlink {DIR}/current")),
        format!("versions/{version}")
    );
    // Its engine runs there, as the host's user, detached (no systemd here).
    assert!(engine_running(&host), "{:?}", host.command_lines());
    assert!(out.contains("runs detached"), "{out}");

    // Its key is pinned, and it is the engine's own.
    let listed = json(&ok(&home, &host, &["hosts", "list", "--json"]));
    let pinned = listed[0]["engine_key"].as_str().expect("a key").to_owned();
    assert_eq!(pinned, engine_key_on(&host));
    let table = ok(&home, &host, &["hosts", "list"]);
    assert!(
        table.contains("box") && table.contains(&host.url()),
        "{table}"
    );
    assert!(out.contains("engine signing key pinned: SHA256:"), "{out}");

    // A second add under the same name is refused.
    let again = fails(&home, &host, &["hosts", "add", "box", &host.url()]);
    assert!(again.contains("already added"), "{again}");

    // --host reaches that engine, not this machine's.
    ok(&home, &host, &["--host", "box", "demo", "seed"]);
    let remote = json(&ok(
        &home,
        &host,
        &["--host", "box", "runs", "list", "--json"],
    ));
    assert_eq!(remote.as_array().map(Vec::len), Some(15), "{remote}");
    let local = json(&ok(&home, &host, &["runs", "list", "--json"]));
    assert_eq!(local.as_array().map(Vec::len), Some(0), "{local}");
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        ok(&home, &host, &["--host", "box", "runs", "list"]);
        times.push(t.elapsed());
    }
    times.sort();
    eprintln!("measured: `--host box runs list` round trips {times:?}");
    let mut bare = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        host.ssh_ok("true");
        bare.push(t.elapsed());
    }
    bare.sort();
    eprintln!("measured: a bare `ssh -F config host true` for comparison {bare:?}");

    // A decision through --host lands on the host's engine.
    let gates = json(&ok(
        &home,
        &host,
        &["--host", "box", "gates", "list", "--json"],
    ));
    let tool = gates
        .as_array()
        .expect("gates")
        .iter()
        .find(|g| g["kind"] == "tool_call")
        .expect("a pending tool call in the demo fleet");
    let id = tool["id"].to_string();
    let decided = ok(
        &home,
        &host,
        &[
            "--host",
            "box",
            "gates",
            "decide",
            &id,
            "--option",
            "no",
            "--context",
            "not here",
        ],
    );
    assert!(decided.contains("not here"), "{decided}");
    let shown = json(&ok(
        &home,
        &host,
        &["--host", "box", "gates", "show", &id, "--json"],
    ));
    assert_eq!(shown["status"], "decided", "{shown}");
    let questions = ok(&home, &host, &["--host", "box", "questions", "list"]);
    assert!(!questions.contains(&format!(" {id} ")), "{questions}");

    // Commands that do not act through the engine refuse --host.
    let refused = fails(&home, &host, &["--host", "box", "audit", "verify"]);
    assert!(refused.contains("--host works with"), "{refused}");

    // Remove stops the engine there and forgets the host.
    let removed = ok(&home, &host, &["hosts", "remove", "box"]);
    assert!(removed.contains("left on the host"), "{removed}");
    assert!(!engine_running(&host), "{:?}", host.command_lines());
    let after = json(&ok(&home, &host, &["hosts", "list", "--json"]));
    assert_eq!(after.as_array().map(Vec::len), Some(0));
    let gone = fails(&home, &host, &["--host", "box", "runs", "list"]);
    assert!(gone.contains("no host named"), "{gone}");
}

#[test]
fn a_changed_host_key_is_refused() {
    let host = TestHost::start();
    let home = Home::new();
    add(&home, &host, "b2");
    let pinned = json(&ok(&home, &host, &["hosts", "list", "--json"]))[0]["engine_key"]
        .as_str()
        .expect("a key")
        .to_owned();
    // The host's engine is replaced by another one (its key and data gone):
    // stopped, wiped, started again by `hosts upgrade`, which refuses it.
    host.ssh_ok(&format!(
        "p=$(cat {DIR}/serve.pid); kill $p; while kill -0 $p 2>/dev/null; do sleep 0.1; done; \
         rm -rf .config/overseer {DIR}/overseer.db*"
    ));
    let upgrade = fails(&home, &host, &["hosts", "upgrade", "b2"]);
    assert!(upgrade.contains("HOST KEY CHANGED"), "{upgrade}");
    assert_ne!(engine_key_on(&host), pinned);
    let refused = fails(&home, &host, &["--host", "b2", "runs", "list"]);
    assert!(refused.contains("HOST KEY CHANGED"), "{refused}");
    assert!(refused.contains("overseer hosts remove b2"), "{refused}");
    // The pin is unchanged: only remove and add again accept the new key.
    let still = json(&ok(&home, &host, &["hosts", "list", "--json"]));
    assert_eq!(still[0]["engine_key"], pinned.as_str());
    ok(&home, &host, &["hosts", "remove", "b2"]);
    ok(&home, &host, &["hosts", "add", "b2", &host.url()]);
    ok(&home, &host, &["--host", "b2", "runs", "list"]);
}

/// Speaks the handshake to the host's bridge over ssh as a client of
/// `version` would; the bridge's answer line and whether it exited well.
fn handshake(host: &TestHost, hello: &str) -> (serde_json::Value, bool, String) {
    let mut child = Command::new("ssh")
        .arg("-F")
        .arg(host.ssh_config())
        .arg(format!("{}@{}", host.user, host.addr))
        .arg("--")
        .arg(format!("exec {DIR}/current/overseer bridge"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssh");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(hello.as_bytes()).expect("write hello");
    drop(stdin);
    let out = child.wait_with_output().expect("ssh output");
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default().to_owned();
    (
        json(&first),
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_bridge_refuses_a_different_major_with_the_fix() {
    let host = TestHost::start();
    let home = Home::new();
    add(&home, &host, "b3");
    let version = env!("CARGO_PKG_VERSION");

    let (welcome, _, _) = handshake(&host, &format!("{{\"overseer_bridge\":\"{version}\"}}\n"));
    assert_eq!(welcome["engine_version"], version);
    assert!(welcome["refused"].is_null(), "{welcome}");
    let pinned = json(&ok(&home, &host, &["hosts", "list", "--json"]))[0]["engine_key"].clone();
    assert_eq!(welcome["engine_key"], pinned);

    let (welcome, ok_exit, stderr) = handshake(&host, "{\"overseer_bridge\":\"99.0.0\"}\n");
    assert!(
        !ok_exit,
        "a mismatched major must end the bridge with a failure"
    );
    assert_eq!(welcome["refused"]["code"], "version_mismatch", "{welcome}");
    let message = welcome["refused"]["message"].as_str().expect("a message");
    assert!(
        message.contains("upgrade the host: overseer hosts upgrade"),
        "{message}"
    );
    assert!(
        message.contains("99.0.0") && message.contains(version),
        "{message}"
    );
    assert!(stderr.contains("overseer hosts upgrade"), "{stderr}");
    assert!(
        welcome["engine_key"].is_null(),
        "a refused client learns no key"
    );

    let (welcome, ok_exit, _) = handshake(&host, "{\"id\":1,\"op\":\"list_runs\"}\n");
    assert!(!ok_exit);
    assert_eq!(welcome["refused"]["code"], "bad_handshake", "{welcome}");

    // `hosts upgrade`, the fix named above, restarts the host's engine on
    // this version with its key unchanged.
    let pid = host.ssh_ok(&format!("cat {DIR}/serve.pid"));
    let upgraded = ok(&home, &host, &["hosts", "upgrade", "b3"]);
    assert!(upgraded.contains("unchanged"), "{upgraded}");
    assert_ne!(host.ssh_ok(&format!("cat {DIR}/serve.pid")), pid);
    assert!(engine_running(&host));
    ok(&home, &host, &["--host", "b3", "runs", "list"]);
}

#[test]
fn a_demo_agent_on_the_host_asks_and_is_answered_through_host() {
    let host = TestHost::start();
    let home = Home::new();
    // The host's own repository, agent and profile (read when its engine
    // starts): put there over ssh. No network for the sandbox: the demo
    // agent needs none, and slirp4netns cannot run for a user other than
    // root on machines where /dev/net/tun is root's only (CI's).
    host.ssh_ok("mkdir -p demo && mkdir -p -m 700 .config .config/overseer");
    host.copy_to(
        overseer_test_support::demo_agent(),
        "demo/overseer-demo-agent",
    );
    let agent = host.home.join("demo/overseer-demo-agent");
    host.ssh_ok(&format!(
        "printf '[agents.demo]\\ncommand = \"{}\"\\nmode = \"default\"\\nnetwork = \"none\"\\n' > .config/overseer/overseer.toml && \
         git init -q -b main repo && git -C repo -c user.name=T -c user.email=t@t \
         commit -q --allow-empty -m init",
        agent.display()
    ));
    add(&home, &host, "b4");
    let repo = host.home.join("repo");
    let refused = fails(&home, &host, &["--host", "b4", "workspace", "add", "repo"]);
    assert!(refused.contains("absolute path on the host"), "{refused}");
    ok(
        &home,
        &host,
        &[
            "--host",
            "b4",
            "workspace",
            "add",
            &repo.to_string_lossy(),
            "--name",
            "r",
        ],
    );
    let run = ok(
        &home,
        &host,
        &[
            "--host",
            "b4",
            "task",
            "start",
            "--workspace",
            "r",
            "--agent",
            "demo",
            "--prompt",
            "update the greeting",
            "--scenario",
            "happy",
        ],
    )
    .trim()
    .to_owned();
    let plan = pending_on(&home, &host, "b4", &run, "plan");
    // The agent asking runs on the host, as the host's user.
    assert!(
        host.command_lines()
            .iter()
            .any(|c| c.contains("overseer-demo-agent")),
        "{:?}",
        host.command_lines()
    );
    ok(
        &home,
        &host,
        &[
            "--host", "b4", "gates", "decide", &plan, "--option", "approve",
        ],
    );
    // Its first edit asks; the answer from here reaches the agent there.
    let call = pending_on(&home, &host, "b4", &run, "tool_call");
    let t = Instant::now();
    ok(
        &home,
        &host,
        &["--host", "b4", "gates", "decide", &call, "--option", "yes"],
    );
    eprintln!(
        "measured: a tool call decided with --host in {:?}",
        t.elapsed()
    );
    let started = Instant::now();
    loop {
        let activity = ok(
            &home,
            &host,
            &["--host", "b4", "runs", "activity", &run, "--json"],
        );
        let gate = json(&ok(
            &home,
            &host,
            &["--host", "b4", "gates", "show", &call, "--json"],
        ));
        assert_eq!(gate["status"], "decided", "{gate}");
        assert_eq!(gate["decision"]["option"], "yes", "{gate}");
        // The agent went on past the allowed edit: a later step or gate.
        let later = json(&ok(
            &home,
            &host,
            &["--host", "b4", "gates", "list", "--all", "--json"],
        ));
        let after = later
            .as_array()
            .map(|g| {
                g.iter()
                    .filter(|g| g["run_id"].as_i64() == run.parse::<i64>().ok())
                    .any(|g| g["id"].as_i64() > call.parse::<i64>().ok())
            })
            .unwrap_or(false);
        if after {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the agent never went on after its tool call was allowed: {activity}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Stopped there from here.
    ok(&home, &host, &["--host", "b4", "runs", "abort", &run]);
}

#[test]
fn a_host_lacking_bubblewrap_and_slirp4netns_is_told_what_to_install_and_nothing_is_installed() {
    let host = TestHost::start_hiding(&["bwrap", "slirp4netns"]);
    assert_eq!(host.ssh_ok("command -v bwrap || echo none"), "none");
    let home = Home::new();
    let err = fails(&home, &host, &["hosts", "add", "b5", &host.url()]);
    assert!(err.contains("nothing was installed"), "{err}");
    assert!(err.contains("bubblewrap"), "{err}");
    assert!(err.contains("sudo apt-get install bubblewrap"), "{err}");
    // What it can do without is said too, as such.
    assert!(err.contains("should have:"), "{err}");
    assert!(err.contains("sudo apt-get install slirp4netns"), "{err}");
    assert_eq!(
        host.ssh_ok(&format!("test -e {DIR} && echo there || echo absent")),
        "absent"
    );
    assert!(!engine_running(&host));
    let listed = json(&ok(&home, &host, &["hosts", "list", "--json"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
}

#[test]
fn an_unreachable_host_is_reported_and_not_forgotten() {
    let host = TestHost::start();
    let home = Home::new();
    add(&home, &host, "b6");
    host.cut();
    let err = fails(&home, &host, &["--host", "b6", "runs", "list"]);
    assert!(err.contains("cannot reach host b6"), "{err}");
    let err = fails(&home, &host, &["hosts", "remove", "b6"]);
    assert!(err.contains("was not forgotten"), "{err}");
    let listed = json(&ok(&home, &host, &["hosts", "list", "--json"]));
    assert_eq!(listed[0]["name"], "b6", "{listed}");
    // Back on the network: the same engine, still running, answers.
    host.restore();
    ok(&home, &host, &["--host", "b6", "runs", "list"]);
    ok(&home, &host, &["hosts", "remove", "b6"]);
    assert!(!engine_running(&host));
}
