//! Faults of a host over real OpenSSH (each test host an sshd in its own
//! network namespace for a Unix user of its own, `overseer_test_support::
//! ssh_host`): its engine killed with SIGKILL, or every process of its user
//! killed as in a reboot, then started again with `overseer hosts start`:
//! the run goes on, its pending gate is still answerable from here, and the
//! host's audit log neither lost nor doubled a record. And the host's audit
//! log verified here with the key pinned when it was added, never with the
//! key the host claims now.

use crate::common;

use common::remote::{
    add_with_workspace, audit_records, decided_records, engine_running, fails, json, ok,
    pending_on, prepare_demo, start_demo, went_on_after, DIR,
};
use common::Home;
use overseer_test_support::ssh_host::TestHost;
use std::process::Command;
use std::time::{Duration, Instant};

/// How a host loses its engine.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// `kill -9` of `overseer serve` alone.
    EngineKilled,
    /// `kill -9` of every process of the host's user (the engine, the
    /// agents, their sandboxes, ssh sessions): what a reboot leaves.
    Reboot,
}

fn kill_9(pids: &[u32]) {
    for pid in pids {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

fn inflict(host: &TestHost, fault: Fault) {
    match fault {
        Fault::EngineKilled => {
            let pid: u32 = std::fs::read_to_string(host.home.join(DIR).join("serve.pid"))
                .expect("serve.pid")
                .trim()
                .parse()
                .expect("a pid");
            kill_9(&[pid]);
        }
        Fault::Reboot => {
            let started = Instant::now();
            while !host.processes().is_empty() {
                kill_9(&host.processes());
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "the host user's processes outlived kill -9: {:?}",
                    host.command_lines()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let started = Instant::now();
    while engine_running(host) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "engine survived kill -9"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The host loses its engine (`fault`) and `hosts start` brings it back,
/// started once (a second start finds it running).
fn lose_and_restart(home: &Home, host: &TestHost, fault: Fault) {
    inflict(host, fault);
    let down = fails(home, host, &["--host", "f", "runs", "list"]);
    assert!(down.contains("no engine answers"), "{down}");
    let started = ok(home, host, &["hosts", "start", "f"]);
    assert!(started.contains("unchanged"), "{started}");
    assert!(engine_running(host), "{:?}", host.command_lines());
    let serve_pid = host.ssh_ok(&format!("cat {DIR}/serve.pid"));
    ok(home, host, &["hosts", "start", "f"]);
    assert_eq!(host.ssh_ok(&format!("cat {DIR}/serve.pid")), serve_pid);
}

fn gate(home: &Home, host: &TestHost, id: &str) -> serde_json::Value {
    json(&ok(
        home,
        host,
        &["--host", "f", "gates", "show", id, "--json"],
    ))
}

/// A demo run on a host waits on its plan; the host loses its engine
/// (`fault`); `hosts start` brings it back and the same plan gate waits,
/// answered with `--host`. Then it waits on a tool call and the host loses
/// its engine again: as on a local engine, the call is withdrawn (never
/// answered blindly) and the agent, carried on, asks it again; that ask is
/// answered with `--host` and the run goes on. The host's audit log kept
/// every record it had, holds one decision per gate, and verifies here
/// with the pinned key.
fn a_run_on_a_host_survives(fault: Fault) {
    let host = TestHost::start();
    let home = Home::new();
    prepare_demo(&host, "");
    add_with_workspace(&home, &host, "f");
    let run = start_demo(&home, &host, "f", "happy");
    let plan = pending_on(&home, &host, "f", &run, "plan");
    let before = audit_records(&host);

    lose_and_restart(&home, &host, fault);
    assert_eq!(gate(&home, &host, &plan)["status"], "pending", "{fault:?}");
    assert_eq!(pending_on(&home, &host, "f", &run, "plan"), plan);
    ok(
        &home,
        &host,
        &[
            "--host", "f", "gates", "decide", &plan, "--option", "approve",
        ],
    );
    let call = pending_on(&home, &host, "f", &run, "tool_call");
    let title = gate(&home, &host, &call)["title"].clone();

    lose_and_restart(&home, &host, fault);
    let withdrawn = gate(&home, &host, &call);
    assert_eq!(
        withdrawn["decision"]["actor"]["kind"], "engine",
        "{withdrawn}"
    );
    assert!(
        withdrawn["decision"]["context"]
            .as_str()
            .is_some_and(|c| c.contains("asks again")),
        "{withdrawn}"
    );
    let again = pending_on(&home, &host, "f", &run, "tool_call");
    assert_ne!(again, call);
    assert_eq!(gate(&home, &host, &again)["title"], title, "{fault:?}");
    // One ssh connection for the whole command (it asks the engine twice).
    let logins = || host.sshd_log().matches("Accepted publickey").count();
    let before_decide = logins();
    ok(
        &home,
        &host,
        &["--host", "f", "gates", "decide", &again, "--option", "yes"],
    );
    assert_eq!(
        logins() - before_decide,
        1,
        "ssh connections for one decision"
    );
    went_on_after(&home, &host, "f", &run, &again);
    assert_eq!(gate(&home, &host, &again)["decision"]["option"], "yes");

    // Nothing lost (every record from before is there, unchanged) and
    // nothing doubled (one decision record per gate).
    let after = audit_records(&host);
    assert!(
        after.len() > before.len() && after[..before.len()] == before[..],
        "{fault:?}: the host's audit log lost or changed records: before {before:?}, after {after:?}"
    );
    for g in [&plan, &call, &again] {
        assert_eq!(decided_records(&host, g), 1, "{fault:?}: gate {g}");
    }
    let verified = ok(&home, &host, &["hosts", "verify", "f"]);
    assert!(verified.contains("audit log OK"), "{verified}");
    ok(&home, &host, &["--host", "f", "runs", "abort", &run]);
}

#[test]
fn a_host_engine_killed_with_sigkill_carries_its_run_on() {
    a_run_on_a_host_survives(Fault::EngineKilled);
}

#[test]
fn a_host_rebooted_carries_its_run_on_after_hosts_start() {
    a_run_on_a_host_survives(Fault::Reboot);
}

#[test]
fn a_host_audit_log_is_verified_here_with_the_pinned_key() {
    let host = TestHost::start();
    let home = Home::new();
    ok(&home, &host, &["hosts", "add", "v", &host.url()]);
    ok(&home, &host, &["--host", "v", "demo", "seed"]);
    let pinned = json(&ok(&home, &host, &["hosts", "list", "--json"]))[0]["engine_key"]
        .as_str()
        .expect("a key")
        .to_owned();

    let pointed = fails(&home, &host, &["--host", "v", "audit", "verify"]);
    assert!(pointed.contains("overseer hosts verify v"), "{pointed}");
    let report = json(&ok(&home, &host, &["hosts", "verify", "v", "--json"]));
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["key_changed"], false, "{report}");
    let records = report["records"].as_i64().expect("records");
    assert_eq!(
        records,
        audit_records(&host).len() as i64,
        "the whole log was checked: {report}"
    );
    assert!(records > 10, "{report}");

    // A record edited on the host fails verification here.
    let conn = rusqlite::Connection::open(common::remote::host_db(&host)).expect("open");
    let tampered: String = conn
        .query_row("SELECT payload FROM audit_log WHERE seq = 3", [], |r| {
            r.get(0)
        })
        .expect("record 3");
    conn.execute(
        "UPDATE audit_log SET payload = ?1 WHERE seq = 3",
        [tampered.replacen('{', "{\"forged\":1,", 1)],
    )
    .expect("edit record 3");
    let err = fails(&home, &host, &["hosts", "verify", "v"]);
    assert!(err.contains("FAILED"), "{err}");
    conn.execute(
        "UPDATE audit_log SET payload = ?1 WHERE seq = 3",
        [&tampered],
    )
    .expect("restore record 3");
    drop(conn);
    ok(&home, &host, &["hosts", "verify", "v"]);

    // The host's key file is replaced (the engine signs with it from its
    // next start, and the bridge now reports it): verified with the pinned
    // key all the same, and refused loudly, naming both fingerprints.
    let other = tempfile::tempdir().expect("tempdir");
    let new_key = overseer_store::Keyring::load_or_create(other.path())
        .expect("a new key")
        .public_key_hex();
    let secret =
        std::fs::read_to_string(overseer_store::Keyring::key_path(other.path())).expect("key");
    let key_file = host.home.join(".config/overseer/audit-signing.key");
    std::fs::write(&key_file, secret).expect("replace the host's key file");
    let err = fails(&home, &host, &["hosts", "verify", "v"]);
    assert!(err.contains("HOST KEY CHANGED"), "{err}");
    let pinned_fp = fingerprint(&pinned);
    let new_fp = fingerprint(&new_key);
    assert!(
        err.contains(&pinned_fp),
        "{err} lacks the pinned {pinned_fp}"
    );
    assert!(err.contains(&new_fp), "{err} lacks the host's {new_fp}");
    // The log itself was checked with the pinned key (and still verifies:
    // nothing was signed with the new key yet).
    assert!(err.contains("verify with the pinned key"), "{err}");
    let report = json(
        &String::from_utf8(
            common::remote::overseer(&home, &host, &["hosts", "verify", "v", "--json"]).stdout,
        )
        .expect("utf8"),
    );
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(report["key_changed"], true, "{report}");
    assert_eq!(report["log_verifies_with_pinned_key"], true, "{report}");
    assert_eq!(report["host_key"], new_fp.as_str(), "{report}");
    assert_eq!(report["pinned_key"], pinned_fp.as_str(), "{report}");
}

/// `SHA256:<hex>` of a hex public key, as `overseer hosts` shows it.
fn fingerprint(key_hex: &str) -> String {
    use sha2::Digest;
    let bytes = hex::decode(key_hex).expect("a hex key");
    format!("SHA256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

#[test]
fn a_decision_to_a_cut_host_is_refused_and_applied_once_when_it_is_back() {
    let host = TestHost::start();
    let home = Home::new();
    ok(&home, &host, &["hosts", "add", "x", &host.url()]);
    ok(&home, &host, &["--host", "x", "demo", "seed"]);
    let gates = json(&ok(
        &home,
        &host,
        &["--host", "x", "gates", "list", "--json"],
    ));
    let call = gates
        .as_array()
        .and_then(|g| g.iter().find(|g| g["kind"] == "tool_call"))
        .map(|g| g["id"].to_string())
        .expect("a pending tool call in the demo fleet");

    // The link is cut: the decision is refused with the reason, not queued.
    host.cut();
    let err = fails(
        &home,
        &host,
        &["--host", "x", "gates", "decide", &call, "--option", "yes"],
    );
    assert!(err.contains("cannot reach host x"), "{err}");
    host.restore();
    let gate = json(&ok(
        &home,
        &host,
        &["--host", "x", "gates", "show", &call, "--json"],
    ));
    assert_eq!(gate["status"], "pending", "nothing was applied: {gate}");
    assert_eq!(decided_records(&host, &call), 0);

    // Back: decided once.
    ok(
        &home,
        &host,
        &["--host", "x", "gates", "decide", &call, "--option", "yes"],
    );
    assert_eq!(decided_records(&host, &call), 1);
    let again = fails(
        &home,
        &host,
        &["--host", "x", "gates", "decide", &call, "--option", "no"],
    );
    assert!(!again.is_empty());
    assert_eq!(decided_records(&host, &call), 1);
    let gate = json(&ok(
        &home,
        &host,
        &["--host", "x", "gates", "show", &call, "--json"],
    ));
    assert_eq!(gate["decision"]["option"], "yes", "{gate}");
}
