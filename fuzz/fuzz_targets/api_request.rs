//! The local API: request lines written raw to the engine's real Unix socket
//! (an in-process `Engine` on a temporary data dir with the demo fleet,
//! served by `server::serve`), and `serde_json::from_slice::<Call>` itself.
//!
//! The input is split into lines. A line that parses as a call that would
//! change something, wait for a decision or subscribe is not sent (the
//! fleet must stay the same from one input to the next, and a subscription
//! never answers); every other line is: garbage, malformed calls and the
//! read-only requests (ping, runs, gates, workspaces, activity, stories,
//! supervisor status, notifications, messages).
//!
//! Properties: the engine answers every line sent with exactly one line,
//! a JSON `ServerLine` carrying the call's id (for a malformed line, the id it
//! names, else none),
//! within 10 s, and keeps serving; a parsed call serializes and parses back
//! to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use overseer_core::Actor;
use overseer_server::api::{Call, Request, ServerLine};
use overseer_server::server;
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct World {
    runtime: tokio::runtime::Runtime,
    socket: PathBuf,
    _dir: tempfile::TempDir,
    _engine: Arc<Engine>,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths {
            data_dir: dir.path().join("data"),
            config_dir: dir.path().join("config"),
        };
        let engine = Arc::new(
            Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
                .expect("engine"),
        );
        engine
            .seed_demo(&Actor::cli(), true)
            .expect("seed the demo fleet");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = server::bind(&paths.socket()).expect("bind");
        runtime.spawn(server::serve(engine.clone(), listener));
        World {
            runtime,
            socket: paths.socket(),
            _dir: dir,
            _engine: engine,
        }
    })
}

fn read_only(request: &Request) -> bool {
    matches!(
        request,
        Request::Ping
            | Request::ListRuns
            | Request::ShowRun { .. }
            | Request::ListGates { .. }
            | Request::ShowGate { .. }
            | Request::ListWorkspaces
            | Request::RunActivity { .. }
            | Request::GateStory { .. }
            | Request::SupervisorStatus { .. }
            | Request::Notifications
            | Request::ListMessages { .. }
    )
}

fuzz_target!(|data: &[u8]| {
    // The parser alone, on the whole input.
    if let Ok(call) = serde_json::from_slice::<Call>(data) {
        let text = serde_json::to_vec(&call).expect("a call serializes");
        let back: Call = serde_json::from_slice(&text).expect("a serialized call parses");
        assert_eq!(back.id, call.id);
        assert_eq!(back.request, call.request);
    }

    // What is sent, and the id each answer must carry.
    let mut sent = Vec::new();
    let mut expected: Vec<Option<u64>> = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        match serde_json::from_slice::<Call>(line.trim_ascii_end()) {
            Ok(call) if !read_only(&call.request) => continue,
            Ok(call) => expected.push(Some(call.id)),
            // A line that is no call is answered on the id it names, if
            // it names one a client could wait on; else with none.
            Err(_) => expected.push(
                serde_json::from_slice::<serde_json::Value>(line.trim_ascii_end())
                    .ok()
                    .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64)),
            ),
        }
        sent.extend_from_slice(line);
        sent.push(b'\n');
    }

    let w = world();
    w.runtime.block_on(async {
        let stream = tokio::net::UnixStream::connect(&w.socket)
            .await
            .expect("the engine still accepts connections");
        let (read, mut write) = stream.into_split();
        let writer = tokio::spawn(async move {
            // The server may close first (it never should here); that is
            // caught by the answers below.
            let _ = write.write_all(&sent).await;
            write
        });
        let mut lines = BufReader::new(read).lines();
        for (i, id) in expected.iter().enumerate() {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("no answer to line {i} within 10 s"))
                .expect("reading an answer")
                .unwrap_or_else(|| {
                    panic!("the engine closed the connection before answering line {i}")
                });
            let answer: ServerLine = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("answer {i} is not a ServerLine ({e}): {line}"));
            let got = match answer {
                ServerLine::Result { id, .. } | ServerLine::Error { id, .. } => id,
                ServerLine::Event { .. } => panic!("an event without a subscription: {line}"),
            };
            assert_eq!(got, *id, "answer {i} carries the wrong id: {line}");
        }
        drop(writer.await.expect("writer"));
    });
});
