//! One persistent link per host (`overseer_server::remote::Link`) against
//! real OpenSSH: each test host an sshd in its own network namespace for a
//! Unix user of its own (`overseer_test_support::ssh_host`), its engine
//! installed and started by the real `overseer hosts add`. The link carries
//! the window's calls (read from the window's command names and arguments)
//! and the host engine's events on one connection, says when it is down
//! and why, refuses calls then, and comes back by itself.

use crate::common;

use common::Home;
use overseer_core::{EngineEvent, ErrorCode, OwnerSurface};
use overseer_engine::Paths;
use overseer_server::remote::{registry, HostLinkState, Link, LinkOptions};
use overseer_server::window;
use overseer_test_support::ssh_host::TestHost;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Quick to notice a cut and to retry, so the tests run in seconds.
const OPTIONS: LinkOptions = LinkOptions {
    heartbeat: Duration::from_millis(250),
    silence: Duration::from_secs(2),
    first_retry: Duration::from_millis(500),
    max_retry: Duration::from_secs(2),
    confirm_within: Duration::from_secs(30),
    surface: OwnerSurface::App,
};

fn overseer(home: &Home, host: &TestHost, args: &[&str]) -> String {
    let out = home
        .cmd(args)
        .env("OVERSEER_SSH_CONFIG", host.ssh_config())
        .output()
        .expect("run overseer");
    assert!(
        out.status.success(),
        "overseer {args:?} failed: {}\nsshd log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        host.sshd_log()
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// `hosts add NAME` and its demo fleet, and a link to it.
fn linked(home: &Home, host: &TestHost, name: &str) -> Link {
    overseer(home, host, &["hosts", "add", name, &host.url()]);
    overseer(home, host, &["--host", name, "demo", "seed"]);
    let paths = Paths {
        data_dir: home.data(),
        config_dir: home.dir.path().join("config"),
    };
    let file = registry::load(&paths).expect("hosts.json");
    let entry = file.find(name).expect("the added host").clone();
    Link::start(entry, OPTIONS)
}

/// The link's state once `pred` holds (within `within`).
async fn until(
    link: &Link,
    within: Duration,
    what: &str,
    pred: impl Fn(&HostLinkState) -> bool,
) -> HostLinkState {
    let mut rx = link.watch();
    let started = Instant::now();
    loop {
        let now = rx.borrow_and_update().clone();
        if pred(&now) {
            return now;
        }
        let left = within.saturating_sub(started.elapsed());
        if left.is_zero() || tokio::time::timeout(left, rx.changed()).await.is_err() {
            panic!("the link never became {what}; it is {now:?}");
        }
    }
}

async fn live(link: &Link, resync: u64) -> (String, String) {
    match until(
        link,
        Duration::from_secs(30),
        "live",
        |s| matches!(s, HostLinkState::Live { resync: r, .. } if *r == resync),
    )
    .await
    {
        HostLinkState::Live {
            engine, version, ..
        } => (engine, version),
        _ => unreachable!("waited for live"),
    }
}

/// Calls the window's `command` with its `args` on the host.
async fn call(link: &Link, command: &str, args: Value) -> Result<Value, overseer_core::ApiError> {
    let request = window::request(command, &args)?;
    link.call(request).await
}

/// The host's pending gates, each with a choice that needs no text
/// (`{"kind", "choice"}`), from its engine.
async fn pending_gates(link: &Link) -> Vec<(i64, Value)> {
    let page = call(link, "list_gates", json!({"pendingOnly": true}))
        .await
        .expect("list_gates");
    page["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .filter_map(|g| {
            let option = g["options"]
                .as_array()?
                .iter()
                .find(|o| o["requires_context"] != json!(true))?;
            Some((
                g["id"].as_i64()?,
                json!({"kind": g["kind"], "choice": option["id"]}),
            ))
        })
        .collect()
}

/// The next event of gate `gate` being decided.
async fn decided_event(rx: &mut overseer_server::remote::HostEvents, gate: i64) {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(EngineEvent::GateDecided { gate_id, .. }) if gate_id.0 == gate => return,
                Ok(_) => {}
                Err(e) => panic!("the link's events ended: {e}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the host's gate_decided event arrived over the link");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_link_carries_calls_and_events_goes_down_when_cut_and_comes_back() {
    let host = TestHost::start();
    let home = Home::new();
    let link = Arc::new(linked(&home, &host, "lk"));
    let (engine, version) = live(&link, 0).await;
    assert!(!engine.is_empty(), "the engine's instance is named");
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert!(link.view().fingerprint.starts_with("SHA256:"));

    // A decision through the link lands on the host's engine, and the
    // host's event comes back on the same connection.
    let mut events = link.events();
    let pending = pending_gates(&link).await;
    assert!(pending.len() >= 2, "the demo fleet has gates: {pending:?}");
    let gates: Vec<i64> = pending.iter().map(|(id, _)| *id).collect();
    let t = Instant::now();
    let decided = call(
        &link,
        "decide_gate",
        json!({"gateId": gates[0], "option": pending[0].1, "context": null}),
    )
    .await
    .expect("decide_gate");
    let answered = t.elapsed();
    assert_eq!(decided["status"], "decided", "{decided}");
    decided_event(&mut events, gates[0]).await;
    // Recorded on the host as the owner's window, not as a terminal: what
    // "Why?" and the host's audit log show.
    assert_eq!(
        decided["decision"]["actor"],
        json!({"kind": "user", "name": "app"}),
        "{decided}"
    );
    let id = gates[0].to_string();
    let shown = overseer(
        &home,
        &host,
        &["--host", "lk", "gates", "show", &id, "--json"],
    );
    let shown: Value = serde_json::from_str(&shown).expect("gates show --json");
    assert_eq!(
        shown["decision"]["actor"],
        json!({"kind": "user", "name": "app"})
    );
    eprintln!(
        "measured: a decision over the link answered in {answered:?}, its event back after {:?}",
        t.elapsed()
    );
    let mut pings = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        link.call(overseer_server::api::Request::Ping)
            .await
            .expect("ping");
        pings.push(t.elapsed());
    }
    pings.sort();
    eprintln!(
        "measured: 50 pings over the link: p50 {:?}, p99 {:?}",
        pings[24], pings[49]
    );
    // The head of the fleet is carried too.
    let head = call(&link, "list_runs_head", json!({"limit": 3}))
        .await
        .expect("list_runs_head");
    assert_eq!(head["rows"].as_array().map(Vec::len), Some(3), "{head}");

    // Many calls at once on the one connection, each answered on its own id.
    let runs = call(&link, "list_runs", json!({}))
        .await
        .expect("list_runs");
    let ids: Vec<i64> = runs
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["id"].as_i64())
        .collect();
    assert!(ids.len() >= 10, "{runs}");
    let mut set = tokio::task::JoinSet::new();
    for id in ids.iter().copied() {
        for command in ["run_story", "run_activity"] {
            let link = link.clone();
            set.spawn(async move {
                let args = if command == "run_story" {
                    json!({"runId": id})
                } else {
                    json!({"runId": id, "after": 0})
                };
                (id, command, call(&link, command, args).await)
            });
        }
    }
    let mut answered = 0;
    while let Some(done) = set.join_next().await {
        let (id, command, answer) = done.expect("task");
        let answer = answer.unwrap_or_else(|e| panic!("{command} {id}: {e:?}"));
        if command == "run_story" {
            assert_eq!(answer["run"]["id"], json!(id), "{command} {id}: {answer}");
        } else {
            for entry in answer.as_array().expect("activity") {
                assert_eq!(entry["run_id"], json!(id), "{command} {id}: {entry}");
            }
        }
        answered += 1;
    }
    assert_eq!(answered, ids.len() * 2);

    // The link is cut: a call already in flight is reported as possibly
    // applied and is not sent again; the link says it is down, since when
    // and why.
    let cut_at = registry_now();
    host.cut();
    // A decision sent as the link drops: once the link is back, the gate is
    // looked up and the decision reported as not applied (never resent).
    let deciding = {
        let link = link.clone();
        let (gate, option) = pending[1].clone();
        tokio::spawn(async move {
            call(
                &link,
                "decide_gate",
                json!({"gateId": gate, "option": option, "context": null}),
            )
            .await
        })
    };
    let in_flight = call(&link, "list_runs", json!({})).await;
    let lost = in_flight.expect_err("no answer through a cut link");
    assert_eq!(lost.code, ErrorCode::EngineUnavailable);
    assert!(
        lost.message.contains("may or may not have been applied"),
        "{}",
        lost.message
    );
    let down = until(&link, Duration::from_secs(15), "down", |s| {
        matches!(s, HostLinkState::Down { .. })
    })
    .await;
    let HostLinkState::Down {
        since_ms,
        retry_at_ms,
        reason,
    } = down
    else {
        unreachable!()
    };
    assert!(
        since_ms >= cut_at && retry_at_ms >= since_ms,
        "{since_ms} {retry_at_ms}"
    );
    assert!(!reason.is_empty());
    // A decision now is refused at once with that reason; nothing is sent.
    let t = Instant::now();
    let refused = call(
        &link,
        "decide_gate",
        json!({"gateId": gates[1], "option": pending[1].1, "context": null}),
    )
    .await
    .expect_err("refused while down");
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(refused.code, ErrorCode::EngineUnavailable);
    assert!(
        refused.message.starts_with("lk is unreachable since")
            && refused.message.contains("nothing was sent")
            && refused.message.contains("retrying"),
        "{}",
        refused.message
    );

    // Back on the network: live again by itself, the reconnection counted;
    // the refused decision never reached the host.
    host.restore();
    let (again, _) = live(&link, 1).await;
    assert_eq!(again, engine, "the same engine process answers");
    // The decision written as the link dropped: what the link reports is
    // what the host holds, now and later. The cut connection's bytes are
    // still in this machine's kernel, resent once the network is back; the
    // new bridge ended the old one on the host first, so they reach no
    // engine. Given time to arrive, nothing changes.
    let report = deciding.await.expect("task");
    tokio::time::sleep(Duration::from_secs(6)).await;
    let gate = call(&link, "show_gate", json!({"gateId": gates[1]}))
        .await
        .expect("show_gate");
    match report {
        Err(lost) => {
            assert_eq!(lost.code, ErrorCode::EngineUnavailable);
            assert!(
                lost.message.contains("it was not applied")
                    && lost.message.contains("still pending on lk"),
                "{}",
                lost.message
            );
            assert_eq!(gate["status"], "pending", "reported not applied: {gate}");
            let mut events = link.events();
            call(
                &link,
                "decide_gate",
                json!({"gateId": gates[1], "option": pending[1].1, "context": null}),
            )
            .await
            .expect("decided after the link came back");
            decided_event(&mut events, gates[1]).await;
        }
        // It reached the host before the cut took hold: reported as made.
        Ok(decided) => {
            assert_eq!(decided["status"], "decided", "{decided}");
            assert_eq!(gate["status"], "decided", "{gate}");
        }
    }

    // The host's engine is killed outright, then started again: the link
    // is down meanwhile and comes back to the new engine by itself.
    let pid = std::fs::read_to_string(host.home.join(".local/share/overseer/serve.pid"))
        .expect("serve.pid");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .expect("kill");
    assert!(killed.success());
    until(&link, Duration::from_secs(15), "down", |s| {
        matches!(s, HostLinkState::Down { .. })
    })
    .await;
    let refused = call(&link, "list_runs", json!({}))
        .await
        .expect_err("refused while the engine is gone");
    assert_eq!(refused.code, ErrorCode::EngineUnavailable);
    overseer(&home, &host, &["hosts", "upgrade", "lk"]);
    link.retry_now();
    let (restarted, _) = live(&link, 2).await;
    assert_ne!(restarted, engine, "another engine process answers");
    let gate = call(&link, "show_gate", json!({"gateId": gates[1]}))
        .await
        .expect("show_gate on the restarted engine");
    assert_eq!(gate["status"], "decided", "{gate}");
}

fn registry_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
