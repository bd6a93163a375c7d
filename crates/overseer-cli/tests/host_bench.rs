//! `make bench-hosts` (not part of `cargo test`: `test = false`): a
//! decision's round trip to an agent on a host over real OpenSSH, from the
//! client's `overseer --host NAME gates decide` starting to the demo agent on
//! the host holding the answer, over the host's direct link and over the
//! same link with 50 ms added to every byte going to the host (one way, as
//! `tc netem delay 50ms` on the test's end of the veth; this relay stands in
//! where the kernel has no netem). p50/p99 over OVERSEER_BENCH_DECISIONS
//! decisions each (default 20), printed, and written to
//! target/bench/hosts.json.
//!
//! Each CLI call opens its own ssh connection (no multiplexed link yet), so
//! the figure includes ssh's handshake: several round trips of the link.
//! The agent stamps when it got each answer (`OVERSEER_DEMO_LATENCY_FILE`);
//! the host shares this machine's clock (only its network is its own).

// The tests' shared module, of which this bench uses a part.
#[allow(dead_code)]
#[path = "cli/common/mod.rs"]
mod common;

use common::remote::{add_with_workspace, ok, pending_on, prepare_demo, start_demo};
use common::Home;
use overseer_test_support::ssh_host::TestHost;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ADDED_DELAY: Duration = Duration::from_millis(50);

fn unix_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// The latency file's answered-at stamps, one per answered request.
fn answered(file: &Path) -> Vec<i64> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("finished"))
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `decisions` tool calls of one demo run on host `name`, each decided
/// with `--host name`: the round trips (ms) to the agent, and the CLI's.
fn measure(
    home: &Home,
    host: &TestHost,
    name: &str,
    latency: &Path,
    decisions: usize,
) -> (Vec<f64>, Vec<f64>) {
    let run = start_demo(home, host, name, "permissions");
    let plan = pending_on(home, host, name, &run, "plan");
    ok(
        home,
        host,
        &[
            "--host", name, "gates", "decide", &plan, "--option", "approve",
        ],
    );
    let (mut to_agent, mut cli) = (Vec::new(), Vec::new());
    for _ in 0..decisions {
        let gate = pending_on(home, host, name, &run, "tool_call");
        let before = answered(latency).len();
        let t0 = unix_micros();
        let started = Instant::now();
        ok(
            home,
            host,
            &["--host", name, "gates", "decide", &gate, "--option", "yes"],
        );
        cli.push(started.elapsed().as_secs_f64() * 1000.0);
        let at = loop {
            if let Some(at) = answered(latency).get(before) {
                break *at;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the agent never got the answer to gate {gate}"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        to_agent.push((at - t0) as f64 / 1000.0);
    }
    ok(home, host, &["--host", name, "runs", "abort", &run]);
    (to_agent, cli)
}

/// p50 (ms) of `ssh host true` to `addr:port`, for what ssh alone costs.
fn bare_ssh_p50(host: &TestHost, addr: &str, port: u16) -> f64 {
    let mut times: Vec<f64> = (0..10)
        .map(|_| {
            let started = Instant::now();
            let out = std::process::Command::new("ssh")
                .arg("-F")
                .arg(host.ssh_config())
                .args(["-p", &port.to_string()])
                .arg(format!("{}@{addr}", host.user))
                .arg("true")
                .output()
                .expect("ssh");
            assert!(out.status.success(), "{out:?}");
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    percentile(&times, 50.0)
}

fn main() {
    let decisions: usize = std::env::var("OVERSEER_BENCH_DECISIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let host = TestHost::start();
    let home = Home::new();
    let lat_dir = host.home.join("lat");
    let latency = lat_dir.join("latency.txt");
    host.ssh_ok(&format!("mkdir -p {}", lat_dir.display()));
    // Reads and edits alternate, each asked: twice the decisions is enough.
    prepare_demo(
        &host,
        &format!(
            "OVERSEER_DEMO_STEP_MS = \"0\", OVERSEER_DEMO_PERMISSIONS = \"{}\", \
             OVERSEER_DEMO_LATENCY_FILE = \"{}\", BENCH_LATENCY_HOME = \"{}\"",
            decisions * 2 + 2,
            latency.display(),
            lat_dir.display()
        ),
    );
    add_with_workspace(&home, &host, "direct");
    // The same host and engine, reached through the delaying relay.
    let link = host.delayed_link(ADDED_DELAY);
    ok(&home, &host, &["hosts", "add", "delayed", &link.url()]);

    let mut figures = serde_json::Map::new();
    let mut bare = Vec::new();
    for (label, addr, port) in [
        ("direct", host.addr.as_str(), 22),
        ("plus_50ms", host.client_addr.as_str(), link.port),
    ] {
        let p50 = bare_ssh_p50(&host, addr, port);
        println!("hosts bench: a bare `ssh host true`, {label}: p50 {p50:.1} ms");
        figures.insert(format!("host_bare_ssh_p50_ms_{label}"), p50.into());
    }
    for (name, label) in [("direct", "direct"), ("delayed", "plus_50ms")] {
        let (mut to_agent, mut cli) = measure(&home, &host, name, &latency, decisions);
        to_agent.sort_by(f64::total_cmp);
        cli.sort_by(f64::total_cmp);
        let (p50, p99) = (percentile(&to_agent, 50.0), percentile(&to_agent, 99.0));
        println!(
            "hosts bench: decision to the remote agent over ssh, {label}: p50 {p50:.1} ms, \
             p99 {p99:.1} ms (min {:.1}, max {:.1}, n={}); the CLI call itself p50 {:.1} ms",
            to_agent[0],
            to_agent[to_agent.len() - 1],
            to_agent.len(),
            percentile(&cli, 50.0)
        );
        figures.insert(
            format!("host_decision_round_trip_p50_ms_{label}"),
            p50.into(),
        );
        figures.insert(
            format!("host_decision_round_trip_p99_ms_{label}"),
            p99.into(),
        );
        bare.push(p50);
    }
    if let [direct, delayed] = bare[..] {
        println!(
            "hosts bench: 50 ms of one-way delay added {:.0} ms to the median ({:.1} link \
             round trips: ssh's handshake and the decision)",
            delayed - direct,
            (delayed - direct) / 50.0
        );
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).expect("target/bench");
    std::fs::write(
        dir.join("hosts.json"),
        serde_json::to_vec_pretty(&figures).expect("json"),
    )
    .expect("write target/bench/hosts.json");
    drop(link);
}
