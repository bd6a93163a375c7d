//! Inbound ACP: arbitrary bytes as an agent's stdout, through the real
//! driver (`AgentConnection::start` over in-memory pipes, then a prompt).
//!
//! A scripted agent answers `initialize` and `session/new` (the first input
//! byte picks: bit 0 offers session modes, bit 1 makes the run allow only
//! `default`, bit 2 makes it read-only), then writes the rest of the input
//! as its stdout, then ends the prompt's turn and closes its output. Every
//! permission request is answered with its first option, every question
//! declined.
//!
//! Properties: nothing panics; the prompt returns (with an answer or an
//! error) within 10 s of the agent finishing; `settle` returns; and file
//! requests never create anything outside the worktree (its parent folder
//! holds only the worktree afterwards).
#![no_main]

use libfuzzer_sys::fuzz_target;
use overseer_acp::{AgentConnection, AgentSignal, PermissionReply, QuestionReply};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const LIMIT: Duration = Duration::from_secs(10);

fuzz_target!(|data: &[u8]| {
    let Some((&flags, agent_bytes)) = data.split_first() else {
        return;
    };
    let agent_bytes = agent_bytes.to_vec();
    let dir = tempfile::tempdir().expect("tempdir");
    let worktree = dir.path().join("wt");
    std::fs::create_dir(&worktree).expect("worktree");
    std::fs::write(worktree.join("README.md"), "A demo project.\n").expect("a file");

    // One runtime for every input (its blocking threads stay warm); each
    // input's tasks all end before block_on returns.
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    });
    runtime.block_on(async {
        let (driver_side, agent_side) = tokio::io::duplex(1 << 20);
        let (from_driver, mut to_driver) = tokio::io::split(agent_side);
        let (driver_reads, driver_writes) = tokio::io::split(driver_side);

        let agent = tokio::spawn(async move {
            let mut lines = BufReader::new(from_driver).lines();
            for _ in 0..2 {
                let Ok(Some(line)) = lines.next_line().await else {
                    return;
                };
                let msg: Value = serde_json::from_str(&line).expect("the driver writes JSON");
                let result = match msg["method"].as_str() {
                    Some("initialize") => json!({ "protocolVersion": 1, "agentCapabilities": {} }),
                    Some("session/new") if flags & 1 == 1 => json!({
                        "sessionId": "s",
                        "modes": {"currentModeId": "default", "availableModes": [
                            {"id": "default", "name": "Default"},
                            {"id": "plan", "name": "Plan"},
                        ]},
                    }),
                    Some("session/new") => json!({ "sessionId": "s" }),
                    other => panic!("the driver sent {other:?} during the handshake"),
                };
                let reply = json!({ "jsonrpc": "2.0", "id": msg["id"], "result": result });
                if to_driver
                    .write_all(format!("{reply}\n").as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
            }
            // From here on: read what the driver sends, note the prompt's id.
            let (prompt_tx, prompt_rx) = tokio::sync::oneshot::channel::<Value>();
            let drain = tokio::spawn(async move {
                let mut prompt_tx = Some(prompt_tx);
                while let Ok(Some(line)) = lines.next_line().await {
                    let msg: Value = serde_json::from_str(&line).expect("the driver writes JSON");
                    if msg["method"] == "session/prompt" {
                        if let Some(tx) = prompt_tx.take() {
                            let _ = tx.send(msg["id"].clone());
                        }
                    }
                }
            });
            let _ = to_driver.write_all(&agent_bytes).await;
            let _ = to_driver.write_all(b"\n").await;
            if let Ok(Ok(id)) = tokio::time::timeout(LIMIT, prompt_rx).await {
                let done =
                    json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}});
                let _ = to_driver.write_all(format!("{done}\n").as_bytes()).await;
            }
            let _ = to_driver.shutdown().await;
            drop(to_driver);
            let _ = drain.await;
        });

        let started = tokio::time::timeout(
            LIMIT,
            AgentConnection::start(driver_reads, driver_writes, worktree.clone(), "fuzz"),
        )
        .await
        .expect("the handshake ends in time");
        let Ok((conn, mut signals)) = started else {
            return;
        };
        if flags & 2 == 2 {
            conn.allow_modes(vec!["default".to_owned()]);
        }
        conn.set_read_only(flags & 4 == 4);
        let consumer = tokio::spawn(async move {
            while let Some(signal) = signals.recv().await {
                match signal {
                    AgentSignal::Permission { options, reply, .. } => {
                        let answer = match options.first() {
                            Some(o) => PermissionReply::Selected {
                                option_id: o.option_id.clone(),
                            },
                            None => PermissionReply::Cancelled,
                        };
                        let _ = reply.send(answer);
                    }
                    AgentSignal::Question { reply, .. } => {
                        let _ = reply.send(QuestionReply::Decline);
                    }
                    AgentSignal::Settled(done) => {
                        let _ = done.send(());
                    }
                    _ => {}
                }
            }
        });
        let _ = tokio::time::timeout(LIMIT, conn.prompt("go"))
            .await
            .expect("the prompt returns once the agent is done");
        tokio::time::timeout(LIMIT, conn.settle())
            .await
            .expect("settle returns");
        let _ = conn.tool_call("x");
        drop(conn);
        let _ = tokio::time::timeout(LIMIT, agent)
            .await
            .expect("the agent ends");
        consumer.abort();
        let _ = consumer.await;
    });

    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read the worktree's parent")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("wt")],
        "a file request escaped the worktree"
    );
});
