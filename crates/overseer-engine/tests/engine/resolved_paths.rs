//! Paths resolved for real.
//!
//! - The engine's own file I/O for an agent (`fs/write_text_file`,
//!   `fs/read_text_file`) cannot be raced out of the worktree: a thread swaps
//!   `sub` between a real directory and a symlink to a directory outside
//!   (atomically, `renameat2(RENAME_EXCHANGE)`) while an agent on a real ACP
//!   connection sends 1,500 writes into `sub/` and reads `sub/secret`. Not
//!   one file lands outside, not one read returns the outside secret.
//! - Permission rules match where a path leads: with `src` a symlink out of
//!   the worktree, an `Edit(src/**)` rule does not allow the demo agent's
//!   edit of `src/greeting.txt`; it asks, saying the path leaves the
//!   worktree, with no "always" to offer.

use crate::common;

use common::{git, pending_gate, start, world_with};
use overseer_acp::{AgentConnection, AgentSignal, StopReason};
use overseer_core::rules::RuleSet;
use overseer_core::{Actor, GateKind};
use overseer_engine::LogNotifier;
use overseer_store::WorkspaceSettings;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const WRITES: usize = 1_500;
const READS: usize = 500;

/// Swaps `a` and `b` (a directory and a symlink) atomically, over and over,
/// until `stop`; returns how many swaps it made.
fn flipper(a: PathBuf, b: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut flips = 0;
        while !stop.load(Ordering::Relaxed) {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                &a,
                rustix::fs::CWD,
                &b,
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .expect("exchange");
            flips += 1;
        }
        flips
    })
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let entry = entry.expect("entry");
        let meta = std::fs::symlink_metadata(entry.path()).expect("meta");
        if meta.is_dir() {
            out.extend(files_under(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out
}

/// An agent played by hand over a duplex pipe: it answers the handshake,
/// then on the prompt sends `requests` one at a time (each waits for its
/// answer) and ends the turn. Returns each request's answer.
async fn hand_agent(
    root: PathBuf,
    requests: Vec<serde_json::Value>,
) -> (
    AgentConnection,
    tokio::sync::mpsc::Receiver<AgentSignal>,
    tokio::sync::oneshot::Receiver<Vec<serde_json::Value>>,
) {
    let (driver_side, agent_side) = tokio::io::duplex(1 << 20);
    let (from_driver, mut to_driver) = tokio::io::split(agent_side);
    let (driver_reads, driver_writes) = tokio::io::split(driver_side);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(from_driver).lines();
        let mut answers = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: serde_json::Value = serde_json::from_str(&line).expect("JSON");
            let id = msg["id"].clone();
            let result = match msg["method"].as_str() {
                Some("initialize") => serde_json::json!({
                    "protocolVersion": 1, "agentCapabilities": {}
                }),
                Some("session/new") => serde_json::json!({ "sessionId": "race-1" }),
                Some("session/prompt") => {
                    for (i, req) in requests.iter().enumerate() {
                        let call = serde_json::json!({
                            "jsonrpc": "2.0", "id": 10_000 + i, "method": req["method"], "params": req["params"],
                        });
                        to_driver
                            .write_all(format!("{call}\n").as_bytes())
                            .await
                            .expect("send");
                        // The answer to this request (the driver sends
                        // nothing else meanwhile).
                        loop {
                            let Ok(Some(reply)) = lines.next_line().await else {
                                panic!("the driver closed the pipe");
                            };
                            let reply: serde_json::Value =
                                serde_json::from_str(&reply).expect("JSON");
                            if reply["id"] == 10_000 + i {
                                answers.push(reply);
                                break;
                            }
                        }
                    }
                    serde_json::json!({ "stopReason": "end_turn" })
                }
                Some(_) => serde_json::json!({}),
                None => continue,
            };
            let reply = serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result });
            to_driver
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .expect("write");
            if msg["method"] == "session/prompt" {
                break;
            }
        }
        let _ = done_tx.send(answers);
        // Keep the pipe open: the connection ends when the test drops it.
        std::future::pending::<()>().await;
    });
    let (conn, signals) = tokio::time::timeout(
        Duration::from_secs(30),
        AgentConnection::start(driver_reads, driver_writes, root, "race-test"),
    )
    .await
    .expect("in time")
    .expect("start");
    (conn, signals, done_rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_never_leads_writes_or_reads_out() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = std::fs::canonicalize(tmp.path()).expect("canonical");
    let root = base.join("worktree");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("secret"), "OUTSIDE SECRET").expect("write");
    std::fs::write(root.join("sub/secret"), "inside").expect("write");
    std::os::unix::fs::symlink(&outside, root.join("sub-link")).expect("symlink");

    let mut requests: Vec<serde_json::Value> = (0..WRITES)
        .map(|i| {
            serde_json::json!({"method": "fs/write_text_file", "params": {
                "sessionId": "race-1",
                "path": root.join(format!("sub/f{i}.txt")),
                "content": format!("write {i}\n"),
            }})
        })
        .collect();
    requests.extend((0..READS).map(|_| {
        serde_json::json!({"method": "fs/read_text_file", "params": {
            "sessionId": "race-1", "path": root.join("sub/secret"),
        }})
    }));
    let (conn, mut signals, done) = hand_agent(root.clone(), requests).await;
    let refused = Arc::new(AtomicUsize::new(0));
    let seen = refused.clone();
    tokio::spawn(async move {
        while let Some(s) = signals.recv().await {
            if matches!(s, AgentSignal::FileRefused { .. }) {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        }
    });

    let stop = Arc::new(AtomicBool::new(false));
    let flips = flipper(root.join("sub"), root.join("sub-link"), stop.clone());
    let stop_reason = tokio::time::timeout(Duration::from_secs(300), conn.prompt("race"))
        .await
        .expect("the turn ends in time")
        .expect("prompt");
    stop.store(true, Ordering::Relaxed);
    let flips = flips.join().expect("flipper");
    assert_eq!(stop_reason, StopReason::EndTurn);
    let answers = tokio::time::timeout(Duration::from_secs(30), done)
        .await
        .expect("answers in time")
        .expect("answers");
    assert_eq!(answers.len(), WRITES + READS);

    // The outside directory holds only its own secret, untouched.
    let landed: Vec<PathBuf> = files_under(&outside)
        .into_iter()
        .filter(|p| p != &outside.join("secret"))
        .collect();
    assert!(
        landed.is_empty(),
        "{} of {WRITES} writes landed outside the worktree: {:?}",
        landed.len(),
        &landed[..landed.len().min(5)]
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("secret")).expect("read"),
        "OUTSIDE SECRET"
    );
    let leaked = answers[WRITES..]
        .iter()
        .filter(|a| a["result"]["content"] == "OUTSIDE SECRET")
        .count();
    assert_eq!(
        leaked, 0,
        "{leaked} of {READS} reads returned the file outside"
    );

    // The race was real: the swap ran throughout, some requests went
    // through and some were refused, each answered.
    let written = answers[..WRITES]
        .iter()
        .filter(|a| a.get("result").is_some())
        .count();
    let read_inside = answers[WRITES..]
        .iter()
        .filter(|a| a["result"]["content"] == "inside")
        .count();
    assert!(flips > 100, "only {flips} swaps");
    assert!(
        written > 0 && written < WRITES,
        "{written} of {WRITES} written"
    );
    assert!(read_inside > 0, "no read went through");
    assert!(refused.load(Ordering::Relaxed) > 0);
    // What went through is inside the worktree, in the real directory.
    let inside = files_under(&root)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('f'))
        })
        .count();
    assert_eq!(
        inside, written,
        "every accepted write is a file in the worktree"
    );
    eprintln!(
        "{flips} swaps; {written} of {WRITES} writes accepted (all inside), {read_inside} of {READS} reads (all inside); {} refused",
        refused.load(Ordering::Relaxed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_rule_does_not_allow_a_path_that_a_symlink_leads_out_of_the_worktree() {
    let settings = WorkspaceSettings {
        permissions: RuleSet::parse(&["Edit(src/**)".to_owned()], &[], &[]).expect("rules"),
        ..Default::default()
    };
    let w = world_with(settings, Arc::new(LogNotifier), "").await;
    // The repository's `src` is a symlink to a directory outside it.
    let outside = w._dir.path().join("outside-src");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("greeting.txt"), "mine\n").expect("write");
    git(&w.repo, &["rm", "-q", "-r", "src"]);
    std::os::unix::fs::symlink(&outside, w.repo.join("src")).expect("symlink");
    git(&w.repo, &["add", "src"]);
    git(&w.repo, &["commit", "-q", "-m", "src is elsewhere"]);

    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    // Without the symlink the rule would allow this edit silently; here it
    // asks, and says why.
    let gate = pending_gate(&w, run, GateKind::ToolCall).await;
    let payload = gate.body.payload_json();
    let reason = payload["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("greeting.txt")
            && reason.contains("leaves the run's worktree")
            && reason.contains(&outside.to_string_lossy().to_string()),
        "{}",
        gate.body.payload_json()
    );
    assert_eq!(gate.body.payload_json()["rule"], "confinement");
    assert_eq!(
        gate.body.payload_json()["request"]["resolved"][0]["leads"],
        "outside",
        "{}",
        gate.body.payload_json()
    );
    assert!(
        !gate.options.iter().any(|o| o.id == "always"),
        "no 'always' for a path that leaves the worktree: {:?}",
        gate.options
    );
    // Even a yes does not let the engine write there for the agent.
    w.engine
        .decide_gate(gate.id, "yes", None, &Actor::cli())
        .expect("yes");
    common::until(&w, "the refused write", |e| {
        e.activity(run, 0)
            .ok()?
            .into_iter()
            .find(|a| a.kind() == "file_refused" || a.kind() == "deviation")
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(outside.join("greeting.txt")).expect("read"),
        "mine\n"
    );
    let _ = w.engine.abort_run(run, &Actor::cli());
}
