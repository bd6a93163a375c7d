//! `overseer-demo-agent`: a scripted ACP agent for demos and tests.
//!
//! It speaks ACP v1 on stdin/stdout through the same crate as Overseer's
//! driver and behaves like the real adapters: it offers the session modes
//! `default` (asks before each edit), `plan` and `auto` (acts without asking),
//! and, like claude-agent-acp 0.101, it STARTS in `auto`, so a client that
//! does not set a supervised mode never sees its edits. In `plan` mode it
//! ends a planning turn the way Claude does, with an exit-plan permission
//! request (kind `switch_mode`, the plan as markdown in `rawInput.plan`, and
//! an auto-accepting option a client must not pick). Outside plan mode it
//! answers the planning prompt (`overseer_core::plan`) with a plan block, and
//! each "Carry out step N" prompt with that step's edits. Its edits are real:
//! files are written through the client's `fs/write_text_file` (so Overseer
//! sees and confines them), and after each step it commits them with git,
//! unless its `.git` is read-only (Overseer's containment: the engine commits).
//!
//! Environment:
//! - `OVERSEER_DEMO_SCENARIO`: `happy` (default), `questions`, `destructive`,
//!   `flaky`, `drift`, `drift_twice`, `stubborn`, `garbage`, `permissions`,
//!   `hijack`, `switch`, `unasked`, `lingering`, `fleeting`, `late_ask`, `dispatch`
//!   `costly` (reports its usage and cost after each tool call), or for a
//!   consulted agent (`consult`) `consult`, `consult_write` (tries to change
//!   a file first) or `consult_shell` (asks to run a command first)
//!   (see `script`).
//! - `OVERSEER_DEMO_STEP_MS`: the pause between steps, default 400 (tests use 0).
//! - `OVERSEER_DEMO_START_MODE`: the mode a session starts in (default `auto`).
//! - `OVERSEER_DEMO_MODES`: the modes it offers, comma-separated (default
//!   `default,plan,auto`); in any but `default` and `plan` it acts unasked.
//! - `OVERSEER_DEMO_PERMISSIONS`, `OVERSEER_DEMO_LATENCY_FILE`,
//!   `OVERSEER_DEMO_HOLD`, `OVERSEER_DEMO_BARRIER`, `OVERSEER_DEMO_THINK_MS`:
//!   the `permissions` scenario's settings (below).
//!
//! The `permissions` scenario is for benchmarks (`make bench`): once its plan
//! is approved it sends `OVERSEER_DEMO_PERMISSIONS` (default 20)
//! `session/request_permission` requests one after another, alternating a
//! read-kind tool call (a client's rules may allow it without a human) and an
//! edit-kind one (which asks the user). It times each round trip, from just
//! before the request is sent to its answer, and appends
//! `<kind> <micros> <answered at>` (`read 812 1764000000123456`, the time in
//! microseconds since the Unix epoch) to the file `OVERSEER_DEMO_LATENCY_FILE`
//! names, if set, and `finished <time>` after its last request. With `OVERSEER_DEMO_BARRIER=<count>:<dir>` it first waits until
//! `count` agents have left their mark in `dir` (so requests are timed once
//! every agent has started), and with `OVERSEER_DEMO_THINK_MS` it pauses
//! about that long before each request, as a real agent waits for its model.
//! Then it writes and commits the greeting like `happy`, so the run
//! ends normally. With `OVERSEER_DEMO_HOLD=1` (or a count of 0) it instead
//! asks for one edit and just waits for the answer: an agent idling on a gate.
//!
//! The `stubborn` scenario is for testing process supervision: it ignores
//! SIGTERM, starts `setsid sleep 600` (a grandchild outside its process
//! group, logged with its pid), never ends an execute turn unless cancelled,
//! and stays alive after its stdin closes.
//!
//! stdout is the protocol; logs go to stderr.

mod script;
mod state;
mod turn;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client};
use script::{PermissionSettings, Scenario};
use state::{log, modes, start_mode, Demo, Phase, Session, State};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use turn::Turn;

struct Config {
    scenario: Scenario,
    step: Duration,
    permissions: PermissionSettings,
}

fn config() -> Result<Config, String> {
    let name = std::env::var("OVERSEER_DEMO_SCENARIO").unwrap_or_else(|_| "happy".to_owned());
    let scenario = Scenario::parse(name.trim()).ok_or_else(|| {
        format!(
            "unknown OVERSEER_DEMO_SCENARIO {name:?}; use one of: {}",
            Scenario::NAMES
        )
    })?;
    let step = match std::env::var("OVERSEER_DEMO_STEP_MS") {
        Ok(ms) => ms.trim().parse::<u64>().map_err(|_| {
            format!("OVERSEER_DEMO_STEP_MS must be a number of milliseconds, not {ms:?}")
        })?,
        Err(_) => 400,
    };
    Ok(Config {
        scenario,
        step: Duration::from_millis(step),
        permissions: permission_settings()?,
    })
}

fn permission_settings() -> Result<PermissionSettings, String> {
    let count = match std::env::var("OVERSEER_DEMO_PERMISSIONS") {
        Ok(n) => n.trim().parse::<usize>().map_err(|_| {
            format!("OVERSEER_DEMO_PERMISSIONS must be a number of requests, not {n:?}")
        })?,
        Err(_) => PermissionSettings::DEFAULT_COUNT,
    };
    let latency_file = std::env::var_os("OVERSEER_DEMO_LATENCY_FILE")
        .filter(|f| !f.is_empty())
        .map(PathBuf::from);
    let hold = std::env::var("OVERSEER_DEMO_HOLD").is_ok_and(|h| h.trim() == "1");
    let barrier = match std::env::var("OVERSEER_DEMO_BARRIER") {
        Ok(b) if !b.is_empty() => Some(
            b.split_once(':')
                .and_then(|(n, dir)| Some((n.trim().parse::<usize>().ok()?, PathBuf::from(dir))))
                .filter(|(_, dir)| dir.is_absolute())
                .ok_or_else(|| {
                    format!("OVERSEER_DEMO_BARRIER must be <count>:<absolute dir>, not {b:?}")
                })?,
        ),
        _ => None,
    };
    let think_ms = match std::env::var("OVERSEER_DEMO_THINK_MS") {
        Ok(n) => n.trim().parse::<u64>().map_err(|_| {
            format!("OVERSEER_DEMO_THINK_MS must be a number of milliseconds, not {n:?}")
        })?,
        Err(_) => 0,
    };
    Ok(PermissionSettings {
        count,
        latency_file,
        hold: hold || count == 0,
        barrier,
        think_ms,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let config = match config() {
        Ok(config) => config,
        Err(e) => {
            log!("{e}");
            return ExitCode::from(2);
        }
    };
    log!(
        "scenario {}, {:?} between steps",
        config.scenario,
        config.step
    );
    if config.scenario == Scenario::Stubborn {
        be_stubborn();
    }
    let (outgoing, incoming, raw_out) = stdio();
    let demo = Arc::new(Demo {
        scenario: config.scenario,
        step: config.step,
        permissions: config.permissions,
        raw_out,
        cancel: watch::Sender::new(0),
        state: Mutex::new(State::default()),
    });
    let scenario = config.scenario;
    let code = match serve(demo, agent_client_protocol::Lines::new(outgoing, incoming)).await {
        Ok(()) => {
            log!("client closed the connection");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log!("connection failed: {e}");
            ExitCode::FAILURE
        }
    };
    if scenario == Scenario::Stubborn {
        // A stubborn agent outlives its pipes too: only a kill stops it.
        log!("stubborn: staying alive after the connection closed");
        std::future::pending::<()>().await;
    }
    code
}

async fn serve(
    demo: Arc<Demo>,
    transport: impl agent_client_protocol::ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let d_init = demo.clone();
    let d_new = demo.clone();
    let d_load = demo.clone();
    let d_prompt = demo.clone();
    let d_mode = demo.clone();
    let d_cancel = demo;
    Agent
        .v1()
        .name("overseer-demo-agent")
        .on_receive_request(
            async move |r: acp::InitializeRequest,
                        responder: Responder<acp::InitializeResponse>,
                        _cx| {
                let caps = &r.client_capabilities;
                let mut state = d_init.state();
                state.client_reads = caps.fs.read_text_file;
                state.client_writes = caps.fs.write_text_file;
                state.client_forms = caps.elicitation.as_ref().is_some_and(|e| e.supports_form());
                drop(state);
                responder.respond(
                    acp::InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(acp::AgentCapabilities::new().load_session(true))
                        .agent_info(acp::Implementation::new(
                            "overseer-demo-agent",
                            env!("CARGO_PKG_VERSION"),
                        )),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: acp::NewSessionRequest,
                        responder: Responder<acp::NewSessionResponse>,
                        _cx| { new_session(&d_new, r, responder) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: acp::LoadSessionRequest,
                        responder: Responder<acp::LoadSessionResponse>,
                        cx: ConnectionTo<Client>| { load_session(&d_load, r, responder, cx) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: acp::PromptRequest, responder: Responder<acp::PromptResponse>, cx| {
                prompt(&d_prompt, r, responder, cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: acp::SetSessionModeRequest,
                        responder: Responder<acp::SetSessionModeResponse>,
                        _cx| {
                let mode = r.mode_id.0.to_string();
                let offered = modes();
                if !offered.contains(&mode) {
                    return responder.respond_with_error(agent_client_protocol::Error::invalid_params().data(
                        serde_json::json!({ "modeId": format!("unknown mode {mode:?}; offered: {}", offered.join(", ")) }),
                    ));
                }
                log!("mode set to {mode}");
                d_mode.with_session(|s| s.mode = mode);
                responder.respond(acp::SetSessionModeResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |_n: acp::CancelNotification, _cx: ConnectionTo<Client>| {
                log!("session/cancel received");
                d_cancel.cancel.send_modify(|epoch| *epoch += 1);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}

fn new_session(
    demo: &Demo,
    request: acp::NewSessionRequest,
    responder: Responder<acp::NewSessionResponse>,
) -> Result<(), agent_client_protocol::Error> {
    if !request.cwd.is_absolute() {
        return responder.respond_with_error(
            agent_client_protocol::Error::invalid_params()
                .data(serde_json::json!({ "cwd": "must be an absolute path" })),
        );
    }
    let id = acp::SessionId::new("demo-session-1");
    log!("session in {}", request.cwd.display());
    let modes = open_session(demo, id.clone(), request.cwd);
    responder.respond(acp::NewSessionResponse::new(id).modes(modes))
}

/// `session/load`: the demo keeps no history, but replays one line of it
/// (as real agents replay theirs) before answering, then works as in a new
/// session (a restarted Overseer tells it where it was).
fn load_session(
    demo: &Demo,
    request: acp::LoadSessionRequest,
    responder: Responder<acp::LoadSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    if !request.cwd.is_absolute() {
        return responder.respond_with_error(
            agent_client_protocol::Error::invalid_params()
                .data(serde_json::json!({ "cwd": "must be an absolute path" })),
        );
    }
    log!(
        "session {} loaded in {}",
        request.session_id.0,
        request.cwd.display()
    );
    let id = request.session_id.clone();
    let modes = open_session(demo, id.clone(), request.cwd);
    cx.send_notification(acp::SessionNotification::new(
        id,
        acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(acp::ContentBlock::Text(
            acp::TextContent::new(REPLAYED),
        ))),
    ))?;
    responder.respond(acp::LoadSessionResponse::new().modes(modes))
}

/// What `session/load` replays.
const REPLAYED: &str = "(replayed history: this line was said before the session was loaded)";

/// The session's state, fresh; its modes.
fn open_session(demo: &Demo, id: acp::SessionId, cwd: std::path::PathBuf) -> acp::SessionModeState {
    demo.state().session = Some(Session {
        id,
        cwd,
        phase: Phase::Idle,
        done: 0,
        always_allowed: false,
        flaky_failed: false,
        answers: None,
        tool_calls: 0,
        mode: start_mode(),
        step: 0,
        turn_running: false,
    });
    acp::SessionModeState::new(
        start_mode(),
        modes()
            .into_iter()
            .map(|id| {
                let (name, description) = match id.as_str() {
                    "default" => ("Default", "Asks before each edit"),
                    "plan" => ("Plan", "Plans only"),
                    "auto" => ("Auto", "Edits without asking"),
                    _ => ("Other", "Acts without asking"),
                };
                acp::SessionMode::new(id, name).description(description.to_owned())
            })
            .collect(),
    )
}

fn prompt(
    demo: &Arc<Demo>,
    request: acp::PromptRequest,
    responder: Responder<acp::PromptResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let text: String = request
        .prompt
        .iter()
        .filter_map(|block| match block {
            acp::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let admitted = {
        let mut state = demo.state();
        match state.session.as_mut() {
            Some(s) if s.id == request.session_id && !s.turn_running => {
                s.turn_running = true;
                Ok(s.cwd.clone())
            }
            Some(s) if s.id == request.session_id => Err(agent_client_protocol::Error::new(
                agent_client_protocol::ErrorCode::INVALID_REQUEST,
                "a turn is already running in this session; cancel it first",
            )),
            Some(_) | None => Err(acp::Error::session_not_found(request.session_id.clone()).into()),
        }
    };
    let cwd = match admitted {
        Ok(cwd) => cwd,
        Err(e) => return responder.respond_with_error(e),
    };
    log!("prompt: {}", text.lines().next().unwrap_or_default());
    let turn = Turn::new(demo.clone(), cx.clone(), request.session_id, cwd);
    let demo = demo.clone();
    // The turn sends requests and waits for answers: it must not hold the
    // dispatch loop.
    cx.spawn(async move {
        let result = turn.run(&text).await;
        demo.with_session(|s| s.turn_running = false);
        if let Err(e) = responder.respond_with_result(result.map(acp::PromptResponse::new)) {
            log!("could not answer the prompt: {e}");
        }
        Ok(())
    })
}

/// The lines of stdin, a sink for lines to stdout, and a sender for raw bytes
/// to stdout. Plain threads do the blocking I/O, one writer for everything.
fn stdio() -> (
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
    std::sync::mpsc::Sender<Vec<u8>>,
) {
    let (line_tx, line_rx) = futures::channel::mpsc::unbounded();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => {
                    let trimmed = line.trim_end_matches(['\n', '\r']).to_owned();
                    if line_tx.unbounded_send(Ok(trimmed)).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = line_tx.unbounded_send(Err(e));
                    break;
                }
            }
        }
    });
    let (out_tx, out_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        for bytes in out_rx {
            if stdout
                .write_all(&bytes)
                .and_then(|()| stdout.flush())
                .is_err()
            {
                break;
            }
        }
    });
    let sink = futures::sink::unfold(out_tx.clone(), |tx, line: String| async move {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        tx.send(bytes)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed"))?;
        Ok(tx)
    });
    (sink, line_rx, out_tx)
}

/// The stubborn scenario's setup: ignore SIGTERM, and leave a grandchild
/// behind in its own session, so only killing the whole tree (including what
/// left the process group) cleans up.
fn be_stubborn() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::spawn(async move {
                while term.recv().await.is_some() {
                    log!("SIGTERM received and ignored (stubborn scenario)");
                }
            });
        }
        Err(e) => log!("could not install the SIGTERM handler: {e}"),
    }
    match std::process::Command::new("setsid")
        .args(["sleep", "600"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            log!("stubborn: grandchild pid {} (setsid sleep 600)", child.id());
            // Reap it if it ends while we live; never wait for it otherwise.
            std::thread::spawn(move || child.wait());
        }
        Err(e) => log!("stubborn: could not start `setsid sleep 600`: {e}"),
    }
}
