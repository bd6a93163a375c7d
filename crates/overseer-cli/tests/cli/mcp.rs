//! `overseer mcp` driven by the official MCP TypeScript SDK client (pinned in
//! tests/real-agents/package.json; tests/real-agents/mcp-client.mjs), against
//! a real engine (`overseer serve` on a private data dir). The answers are
//! decided through the engine's API, as the window decides them.

use overseer_server::api::Request;
use overseer_server::client::Client;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CLIENT_NAME: &str = "overseer-test-client";

fn real_agents() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real-agents");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json")
            .exists(),
        "the MCP TypeScript SDK is not installed in {}: run scripts/setup.sh",
        dir.display()
    );
    dir
}

struct Home {
    dir: tempfile::TempDir,
}

/// A child killed when the test ends, however it ends.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    fn socket(&self) -> PathBuf {
        self.data().join("overseer.sock")
    }

    /// Where the MCP client "works" (its fleet row's cwd).
    fn project(&self) -> PathBuf {
        let p = self.dir.path().join("project");
        std::fs::create_dir_all(&p).expect("project dir");
        p
    }

    fn serve(&self) -> Kill {
        let child = Command::new(env!("CARGO_BIN_EXE_overseer"))
            .arg("--data-dir")
            .arg(self.data())
            .arg("--config-dir")
            .arg(self.config())
            .arg("serve")
            .env_remove("OVERSEER_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("overseer serve");
        let start = Instant::now();
        while !self.socket().exists() || self.api_try(Request::Ping).is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the engine never answered on {}",
                self.socket().display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Kill(child)
    }

    fn api_try(&self, request: Request) -> Option<Result<Value, String>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut client = Client::connect(&self.socket()).await.ok()??;
            Some(client.call(request).await.map_err(|e| e.message))
        })
    }

    fn api(&self, request: Request) -> Value {
        match self.api_try(request.clone()) {
            Some(Ok(v)) => v,
            Some(Err(e)) => panic!("{request:?} failed: {e}"),
            None => panic!("no engine for {request:?}"),
        }
    }

    /// Runs the SDK client with `calls`; `mcp_args` go after `overseer mcp`.
    fn client(&self, calls: Value, mcp_args: &[&str]) -> McpClient {
        let mut args = vec![
            "--data-dir".to_owned(),
            self.data().display().to_string(),
            "--config-dir".to_owned(),
            self.config().display().to_string(),
            "mcp".to_owned(),
        ];
        args.extend(mcp_args.iter().map(|s| s.to_string()));
        let spec = json!({
            "command": env!("CARGO_BIN_EXE_overseer"),
            "args": args,
            "cwd": self.project(),
            "clientName": CLIENT_NAME,
            "calls": calls,
        });
        let mut child = Command::new("node")
            .arg(real_agents().join("mcp-client.mjs"))
            .arg(spec.to_string())
            .current_dir(real_agents())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node (Node.js 20+ must be on PATH: run scripts/setup.sh)");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if tx.send(v).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("mcp-client: {line}"),
                }
            }
        });
        McpClient {
            _child: Kill(child),
            stdin,
            events: rx,
        }
    }

    /// The pending gate of `kind` on an `mcp` fleet row, once it is there.
    fn wait_gate(&self, kind: &str, not: &[i64]) -> Value {
        let start = Instant::now();
        loop {
            let gates = self.api(Request::ListGates {
                pending_only: true,
                limit: None,
                after: None,
            })["gates"]
                .clone();
            let runs = self.api(Request::ListRuns);
            let mcp_run = |id: &Value| {
                runs.as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| &r["id"] == id && r["origin"] == "mcp")
            };
            if let Some(g) = gates.as_array().into_iter().flatten().find(|g| {
                g["kind"] == kind
                    && mcp_run(&g["run_id"])
                    && !not.contains(&g["id"].as_i64().unwrap_or(-1))
            }) {
                return g.clone();
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "no pending {kind} gate on an mcp row; gates: {gates}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn gate(&self, id: i64) -> Value {
        self.api(Request::ShowGate {
            gate: overseer_core::GateId(id),
        })
    }

    fn run(&self, id: &Value) -> Value {
        self.api(Request::ShowRun {
            run: overseer_core::RunId(id.as_i64().expect("run id")),
        })
    }

    fn decide(&self, gate: &Value, option: &str, context: Option<&str>) {
        let kind = gate["kind"]
            .as_str()
            .and_then(overseer_core::GateKind::parse)
            .expect("gate kind");
        self.api(Request::DecideGate {
            gate: overseer_core::GateId(gate["id"].as_i64().expect("gate id")),
            option: overseer_core::GateChoice::parse(kind, option)
                .expect("one of the kind's choices")
                .into(),
            context: context.map(str::to_owned),
        });
    }
}

struct McpClient {
    _child: Kill,
    stdin: std::process::ChildStdin,
    events: mpsc::Receiver<Value>,
}

impl McpClient {
    /// Lets a call with `waitForGo` go, with `args` merged into its arguments.
    fn go(&mut self, args: Value) {
        use std::io::Write;
        writeln!(self.stdin, "{args}").expect("write to the client");
        self.stdin.flush().expect("flush");
    }

    fn next(&self, event: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(v) if v["event"] == event => return v,
                Ok(v) if v["event"] == "error" => panic!("the client failed: {v}"),
                Ok(_) => {}
                Err(e) => panic!("no {event} from the MCP client within {within:?}: {e}"),
            }
        }
    }

    /// The next call's outcome: the CallToolResult (or a thrown error).
    fn outcome(&self, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(v) if v["event"] == "result" || v["event"] == "error" => return v,
                Ok(_) => {}
                Err(e) => panic!("no tool result within {within:?}: {e}"),
            }
        }
    }
}

fn text(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn questions() -> Value {
    json!({"questions": [
        {"header": "Tone", "question": "Which tone should the greeting have?",
         "options": [{"label": "Formal", "description": "Good day"}, {"label": "Friendly"}]},
        {"header": "Pages", "question": "Which pages get it?", "multiple": true,
         "options": [{"label": "Home"}, {"label": "About"}, {"label": "FAQ"}]}
    ]})
}

#[test]
fn tools_are_listed_with_schemas_and_bad_calls_are_tool_errors_even_without_an_engine() {
    let h = Home::new();
    let c = h.client(
        json!([
            {"tool": "ask_user", "arguments": {"questions": [
                {"header": "A header far longer than thirty characters", "question": "Q?"}]}},
            {"tool": "request_plan_approval", "arguments": {"goal": "x"}},
            {"tool": "ask_user", "arguments": questions()},
            {"tool": "read_messages", "arguments": {}},
            {"tool": "no_such_tool", "arguments": {}}
        ]),
        &[],
    );
    let init = c.next("initialized", Duration::from_secs(15));
    assert_eq!(
        init["protocolVersion"], "2025-11-25",
        "the SDK's newest revision with initialize"
    );
    assert_eq!(init["server"]["name"], "overseer");
    let tools = c.next("tools", Duration::from_secs(5))["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "ask_user",
            "request_plan_approval",
            "report_step",
            "send_message",
            "read_messages",
            "consult"
        ]
    );
    for t in tools.as_array().expect("tools") {
        assert!(
            t["description"].as_str().is_some_and(|d| d.len() > 100),
            "{t}"
        );
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
    }
    let header =
        &tools[0]["inputSchema"]["properties"]["questions"]["items"]["properties"]["header"];
    assert_eq!(header["maxLength"], 30);
    assert_eq!(
        tools[1]["inputSchema"]["required"],
        json!(["goal", "steps"])
    );
    assert_eq!(tools[4]["annotations"]["readOnlyHint"], true);
    // consult's schemas come from its Rust types.
    let consult = &tools[5];
    assert_eq!(
        consult["inputSchema"]["required"],
        json!(["profile", "question"])
    );
    let timeout = &consult["inputSchema"]["properties"]["timeout_seconds"];
    assert_eq!(
        (&timeout["minimum"], &timeout["maximum"]),
        (&json!(5), &json!(3600))
    );
    let output = &consult["outputSchema"]["properties"];
    for field in ["text", "run", "cost", "timed_out"] {
        assert!(output.get(field).is_some(), "{consult}");
    }

    let r = c.outcome(Duration::from_secs(5));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("at most 30 characters"), "{r}");
    let r = c.outcome(Duration::from_secs(5));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("missing field `steps`"), "{r}");

    // No engine: an error at once that says so and what to do instead.
    for _ in 0..2 {
        let r = c.outcome(Duration::from_secs(5));
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert!(text(&r).starts_with("Overseer is not running"), "{r}");
        assert!(text(&r).contains("directly"), "{r}");
        assert!(r["ms"].as_u64().expect("ms") < 3000, "slow: {r}");
    }
    // An unknown tool is a protocol error (the SDK throws).
    let r = c.outcome(Duration::from_secs(5));
    assert_eq!(r["event"], "error", "{r}");
    assert!(
        r["message"]
            .as_str()
            .expect("message")
            .contains("no tool named"),
        "{r}"
    );
    c.next("done", Duration::from_secs(5));
    // Nothing was opened anywhere: no engine, no database, no gate.
    assert!(
        !h.data().exists(),
        "overseer mcp created {}",
        h.data().display()
    );
}

#[test]
fn questions_and_plans_wait_in_the_inbox_and_the_decision_is_the_tool_result() {
    let h = Home::new();
    let _engine = h.serve();
    let c = h.client(
        json!([
            {"tool": "ask_user", "arguments": questions(), "progress": true},
            {"tool": "request_plan_approval", "arguments": {
                "goal": "Add a greeting to the home page",
                "steps": [{"title": "Write the greeting"}, {"title": "Test it", "agent": "tester"}],
                "files": ["src/home.rs"], "risks": ["none"]}},
            {"tool": "request_plan_approval", "arguments": {
                "goal": "Add a short greeting to the home page",
                "steps": [{"title": "Write the greeting"}]}},
            {"tool": "report_step", "arguments": {
                "step": "Write the greeting", "status": "done", "summary": "wrote it",
                "files_touched": ["src/home.rs"]}}
        ]),
        &["--progress-seconds", "1"],
    );
    c.next("tools", Duration::from_secs(15));

    let gate = h.wait_gate("question", &[]);
    let run = h.run(&gate["run_id"]);
    assert_eq!(run["origin"], "mcp", "{run}");
    assert_eq!(run["agent"], CLIENT_NAME, "{run}");
    assert!(run["needs_you"] == true, "{run}");
    let cwd = run["session"]["cwd"].as_str().expect("cwd").to_owned();
    assert_eq!(Path::new(&cwd), h.project().as_path());
    // Waiting a little shows progress to a client that asked for it.
    c.next("progress", Duration::from_secs(5));
    h.decide(
        &gate,
        "answer",
        Some(
            &json!({"question_0": "Friendly", "question_0_custom": "but short",
                    "question_1": ["Home", "FAQ"]})
            .to_string(),
        ),
    );
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(r["event"], "result", "{r}");
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"action": "answered", "answers": [
            {"header": "Tone", "question": "Which tone should the greeting have?",
             "selected": ["Friendly"], "custom": "but short"},
            {"header": "Pages", "question": "Which pages get it?",
             "selected": ["Home", "FAQ"], "custom": null}
        ]})
    );
    assert!(
        text(&r).contains("chose \"Friendly\"; wrote \"but short\""),
        "{r}"
    );

    let plan = h.wait_gate("plan", &[]);
    assert_eq!(plan["run_id"], gate["run_id"], "one fleet row per session");
    h.decide(&plan, "request_changes", Some("one step is enough"));
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "changes_requested", "feedback": "one step is enough"}),
        "{r}"
    );
    assert!(text(&r).contains("Revise the plan"), "{r}");

    let plan2 = h.wait_gate("plan", &[plan["id"].as_i64().expect("id")]);
    h.decide(&plan2, "approve", None);
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "approved"}),
        "{r}"
    );
    // No supervisor and no steering: a reported step goes on at once.
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "CONTINUE"}),
        "{r}"
    );
    c.next("done", Duration::from_secs(10));
}

/// The asker's expiry and defaults: out of range or a default that is not
/// an option is a tool error saying what to give; an expired question takes
/// the defaults, and the engine (not a person) is recorded as having
/// applied them, naming them.
#[test]
fn an_expired_question_takes_the_askers_default_and_the_audit_says_so() {
    let h = Home::new();
    let _engine = h.serve();
    let mut asked = questions();
    asked["expires_in_seconds"] = json!(10);
    asked["questions"][0]["default"] = json!("Friendly");
    let mut too_short = questions();
    too_short["expires_in_seconds"] = json!(5);
    let mut not_an_option = questions();
    not_an_option["questions"][0]["default"] = json!("Rude");
    let c = h.client(
        json!([
            {"tool": "ask_user", "arguments": too_short},
            {"tool": "ask_user", "arguments": not_an_option},
            {"tool": "ask_user", "arguments": asked}
        ]),
        &[],
    );
    let tools = c.next("tools", Duration::from_secs(15))["tools"].clone();
    let schema = &tools[0]["inputSchema"]["properties"];
    assert_eq!(schema["expires_in_seconds"]["minimum"], 10, "{schema}");
    assert_eq!(schema["expires_in_seconds"]["maximum"], 604800, "{schema}");
    assert!(
        schema["questions"]["items"]["properties"]["default"].is_object(),
        "{schema}"
    );
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("10 to 604800 seconds"), "{r}");
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("not one of its options"), "{r}");

    let gate = h.wait_gate("question", &[]);
    assert_eq!(gate["ask_kind"], "question", "{gate}");
    let opened = gate["opened_at"].as_i64().expect("opened_at");
    let auto_at = gate["auto_at"].as_i64().expect("a timer: {gate}");
    assert!((9_000..=11_000).contains(&(auto_at - opened)), "{gate}");
    assert!(
        gate["options"]
            .as_array()
            .expect("options")
            .iter()
            .any(|o| o["id"] == "default"),
        "the user can take the defaults too: {gate}"
    );
    // Nobody answers: after 10 s the default is the answer.
    let r = c.outcome(Duration::from_secs(20));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"action": "defaulted", "answers": [
            {"header": "Tone", "question": "Which tone should the greeting have?",
             "selected": ["Friendly"], "custom": null},
            {"header": "Pages", "question": "Which pages get it?",
             "selected": [], "custom": null}
        ]})
    );
    assert!(text(&r).contains("defaults apply"), "{r}");
    let decided = h.gate(gate["id"].as_i64().expect("id"));
    let d = &decided["decision"];
    assert_eq!(d["option"], "default", "{decided}");
    assert_eq!(
        d["actor"]["kind"], "engine",
        "the system, not a person: {decided}"
    );
    assert!(
        d["context"]
            .as_str()
            .is_some_and(|c| c.contains("expired") && c.contains("default applied: Tone: Friendly")),
        "{decided}"
    );
}

/// Without an expiry from the asker, `[questions] expiry_seconds` applies
/// (here 1 s; unset it is a day): the question expires and, with no
/// default, is declined.
#[test]
fn a_question_without_an_expiry_takes_the_global_one_and_is_declined() {
    let h = Home::new();
    std::fs::create_dir_all(h.config()).expect("config dir");
    std::fs::write(
        h.config().join("overseer.toml"),
        "[questions]\nexpiry_seconds = 1\n",
    )
    .expect("overseer.toml");
    let _engine = h.serve();
    let c = h.client(json!([{"tool": "ask_user", "arguments": questions()}]), &[]);
    let gate = h.wait_gate("question", &[]);
    assert!(gate["auto_at"].is_i64(), "{gate}");
    let r = c.outcome(Duration::from_secs(15));
    assert_eq!(
        r["result"]["structuredContent"]["action"], "declined",
        "{r}"
    );
    let decided = h.gate(gate["id"].as_i64().expect("id"));
    assert_eq!(decided["decision"]["actor"]["kind"], "engine", "{decided}");
    assert!(
        decided["decision"]["context"]
            .as_str()
            .is_some_and(|c| c.contains("declined (no default was set)")),
        "{decided}"
    );
}

/// With no `[questions]` at all, an MCP question expires after a day.
#[test]
fn an_mcp_question_expires_after_a_day_by_default() {
    let h = Home::new();
    let _engine = h.serve();
    let _c = h.client(json!([{"tool": "ask_user", "arguments": questions()}]), &[]);
    let gate = h.wait_gate("question", &[]);
    let opened = gate["opened_at"].as_i64().expect("opened_at");
    // The deadline is set from the clock read just before the gate is
    // written: within a second of a day after it opened.
    let after = gate["auto_at"].as_i64().map(|a| a - opened);
    assert!(
        after.is_some_and(|ms| (86_399_000..=86_400_000).contains(&ms)),
        "{after:?}: {gate}"
    );
}

/// `overseer inbox snooze GATE DURATION`: the item leaves the engine's
/// inbox list and its row's "needs you" until then (the agent still
/// waits); a duration it cannot read says how to write one.
#[test]
fn the_cli_snoozes_an_inbox_item_out_of_the_inbox() {
    let h = Home::new();
    let _engine = h.serve();
    let _c = h.client(json!([{"tool": "ask_user", "arguments": questions()}]), &[]);
    let gate = h.wait_gate("question", &[]);
    let id = gate["id"].as_i64().expect("id");
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_overseer"))
            .arg("--data-dir")
            .arg(h.data())
            .arg("--config-dir")
            .arg(h.config())
            .args(args)
            .output()
            .expect("overseer")
    };
    let bad = cli(&["inbox", "snooze", &id.to_string(), "soon"]);
    assert!(!bad.status.success(), "{bad:?}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("e.g. 15m"),
        "{bad:?}"
    );
    assert_eq!(h.run(&gate["run_id"])["needs_you"], true);

    let ok = cli(&["inbox", "snooze", &id.to_string(), "1h"]);
    assert!(ok.status.success(), "{ok:?}");
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("snoozed until"),
        "{ok:?}"
    );
    let listed = h.api(Request::ListGates {
        pending_only: true,
        limit: None,
        after: None,
    });
    assert_eq!(listed["gates"], json!([]), "{listed}");
    assert_eq!(h.run(&gate["run_id"])["needs_you"], false);
    let g = h.gate(id);
    assert_eq!(g["status"], "pending", "snoozing decides nothing: {g}");
    let ahead = g["snoozed_until"].as_i64().expect("snoozed_until") - now_ms();
    assert!(
        (3_500_000..=3_600_000).contains(&ahead),
        "an hour from now: {g}"
    );
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[test]
fn an_engine_restart_while_a_call_waits_loses_nothing() {
    let h = Home::new();
    let mut engine = h.serve();
    let c = h.client(json!([{"tool": "ask_user", "arguments": questions()}]), &[]);
    let gate = h.wait_gate("question", &[]);

    // kill -9: no clean shutdown, the client's connection just drops.
    engine.0.kill().expect("kill the engine");
    engine.0.wait().expect("reap");
    std::thread::sleep(Duration::from_millis(500));
    let _engine = h.serve();
    // The asker comes back with its key: the same gate, and no second one.
    let again = h.wait_gate("question", &[]);
    assert_eq!(again["id"], gate["id"], "{again}");
    // The answer can only reach the client if it asked again on the new
    // engine: the connection it first asked on died with the old one.
    let pending = h.api(Request::ListGates {
        pending_only: true,
        limit: None,
        after: None,
    })["gates"]
        .clone();
    assert_eq!(pending.as_array().map(Vec::len), Some(1), "{pending}");
    h.decide(
        &gate,
        "answer",
        Some(&json!({"question_0": "Formal"}).to_string()),
    );
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"]["answers"][0]["selected"],
        json!(["Formal"]),
        "{r}"
    );
}

#[test]
fn an_engine_that_does_not_come_back_ends_the_call_with_an_error() {
    let h = Home::new();
    let mut engine = h.serve();
    let c = h.client(
        json!([{"tool": "request_plan_approval", "arguments": {
            "goal": "g", "steps": [{"title": "t"}]}}]),
        &["--reconnect-seconds", "2"],
    );
    h.wait_gate("plan", &[]);
    engine.0.kill().expect("kill the engine");
    engine.0.wait().expect("reap");
    let started = Instant::now();
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("Overseer stopped answering"), "{r}");
    assert!(text(&r).contains("directly"), "{r}");
    assert!(started.elapsed() < Duration::from_secs(6), "{r}");
}

#[test]
fn a_cancelled_call_withdraws_its_gate() {
    let h = Home::new();
    let _engine = h.serve();
    let c = h.client(
        json!([{"tool": "ask_user", "arguments": questions(), "cancelAfterMs": 2500}]),
        &[],
    );
    let gate = h.wait_gate("question", &[]);
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(r["event"], "error", "the SDK rejects an aborted call: {r}");
    // The engine saw the asker leave; after its grace the gate is gone.
    let id = gate["id"].as_i64().expect("id");
    let start = Instant::now();
    loop {
        let g = h.gate(id);
        if g["status"] != "pending" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the gate of a cancelled call is still pending: {g}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A client of the 2026-07-28 revision sends no `initialize`: each request
/// carries the protocol version and the client's name in `_meta`. rmcp
/// serves it; the name still names the fleet row.
#[test]
fn a_stateless_2026_07_28_client_is_served_and_named_from_its_meta() {
    use std::io::Write;
    let h = Home::new();
    let _engine = h.serve();
    let mut child = Command::new(env!("CARGO_BIN_EXE_overseer"))
        .arg("--data-dir")
        .arg(h.data())
        .arg("--config-dir")
        .arg(h.config())
        .arg("mcp")
        .current_dir(h.project())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("overseer mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let _child = Kill(child);
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str(&line) {
                if tx.send(v).is_err() {
                    break;
                }
            }
        }
    });
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-client", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    let reply = |id: i64| loop {
        let v = rx
            .recv_timeout(Duration::from_secs(15))
            .expect("a reply from overseer mcp");
        if v["id"] == id {
            return v;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    );
    let discovered = reply(1);
    assert!(
        discovered["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{discovered}"
    );
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": meta, "name": "request_plan_approval",
        "arguments": {"goal": "g", "steps": [{"title": "t"}]}}}),
    );
    let gate = h.wait_gate("plan", &[]);
    assert_eq!(h.run(&gate["run_id"])["agent"], "stateless-client");
    h.decide(&gate, "reject", Some("not now"));
    let r = reply(2);
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "rejected", "reason": "not now"}),
        "{r}"
    );
    // A client may use an answered request's id again: that is a new call,
    // with a gate of its own, not the old answer.
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": meta, "name": "request_plan_approval",
        "arguments": {"goal": "g2", "steps": [{"title": "t"}]}}}),
    );
    let again = h.wait_gate("plan", &[gate["id"].as_i64().expect("id")]);
    h.decide(&again, "approve", None);
    let r = reply(2);
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "approved"}),
        "{r}"
    );
}

#[test]
fn messages_go_through_the_hub_and_replies_are_read_back() {
    let h = Home::new();
    let _engine = h.serve();
    let mut c = h.client(
        json!([
            {"tool": "send_message", "arguments": {
                "to": "supervisor", "body": "Step 1 is done; shall I go on?", "correlation_id": "c-1"}},
            {"tool": "read_messages", "arguments": {}, "waitForGo": true},
            {"tool": "read_messages", "arguments": {}, "waitForGo": true}
        ]),
        &[],
    );
    let r = c.outcome(Duration::from_secs(15));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let sent = r["result"]["structuredContent"]["message"].clone();
    assert_eq!(sent["to"], json!({"to": "supervisor"}), "{r}");
    assert_eq!(sent["status"], "delivered", "{r}");
    assert_eq!(sent["correlation_id"], "c-1", "{r}");
    assert_eq!(sent["body"], "Step 1 is done; shall I go on?");
    let run = sent["from_run"].as_i64().expect("the session's run");
    assert_eq!(h.run(&json!(run))["origin"], "mcp");

    h.api(Request::SendMessage {
        to: overseer_core::message::MessageTo::Run {
            run: overseer_core::RunId(run),
        },
        body: "Yes, go on".into(),
        correlation_id: Some("c-1".into()),
    });
    h.api(Request::SendMessage {
        to: overseer_core::message::MessageTo::Broadcast,
        body: "Freeze at five".into(),
        correlation_id: None,
    });
    c.go(json!({}));
    let r = c.outcome(Duration::from_secs(10));
    let messages = r["result"]["structuredContent"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let bodies: Vec<&str> = messages.iter().filter_map(|m| m["body"].as_str()).collect();
    assert_eq!(bodies, ["Yes, go on", "Freeze at five"], "{r}");
    assert_eq!(messages[0]["correlation_id"], "c-1");
    let last = messages[1]["id"].as_i64().expect("id");
    assert!(text(&r).contains(&format!("pass after: {last}")), "{r}");
    c.go(json!({"after": last}));
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"messages": []}),
        "{r}"
    );
    assert_eq!(text(&r), "No new messages.");
}

/// The user steered the session from the window: the next reported step
/// comes back as a reorientation carrying their words, once.
#[test]
fn steering_left_for_the_session_comes_back_on_the_next_reported_step() {
    let h = Home::new();
    let _engine = h.serve();
    let step = json!({"step": "Write the greeting", "status": "done", "summary": "wrote it"});
    let mut c = h.client(
        json!([
            {"tool": "read_messages", "arguments": {}},
            {"tool": "report_step", "arguments": step, "waitForGo": true},
            {"tool": "report_step", "arguments": step}
        ]),
        &[],
    );
    let r = c.outcome(Duration::from_secs(15));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let runs = h.api(Request::ListRuns);
    let run = runs
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["origin"] == "mcp")
        .map(|r| r["id"].as_i64().expect("id"))
        .expect("the session's fleet row");
    h.api(Request::SteerRun {
        run: overseer_core::RunId(run),
        text: "keep the public API unchanged".into(),
    });
    c.go(json!({}));
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "REORIENT", "correction": "keep the public API unchanged"}),
        "{r}"
    );
    assert!(text(&r).starts_with("REORIENT: "), "{r}");
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "CONTINUE"}),
        "delivered once: {r}"
    );
}

/// `claude -p PROMPT` (the pinned Claude Code CLI) in `dir`, offline: its
/// model is the scripted server at `port`, and its only MCP server is
/// `overseer mcp` on this home's data dir, its tools allowed.
fn claude_with_overseer_mcp(h: &Home, port: u16, prompt: &str) -> Kill {
    let bin = real_agents().join("node_modules/.bin/claude");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/setup.sh",
        bin.display()
    );
    let config = json!({"mcpServers": {"overseer": {
        "type": "stdio",
        "command": env!("CARGO_BIN_EXE_overseer"),
        "args": ["--data-dir", h.data(), "--config-dir", h.config(), "mcp"],
    }}});
    let home = h.dir.path().join("home");
    let tmp = h.dir.path().join("tmp");
    for d in [&home, &tmp] {
        std::fs::create_dir_all(d).expect("dir");
    }
    let child = Command::new(bin)
        .args([
            "-p",
            prompt,
            "--output-format",
            "json",
            "--strict-mcp-config",
        ])
        .arg("--mcp-config")
        .arg(config.to_string())
        .args(["--allowedTools", "mcp__overseer__ask_user"])
        .current_dir(h.project())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("claude");
    Kill(child)
}

/// Claude's final JSON (`result` is the model's last text), within 30 s.
fn claude_result(mut kid: Kill) -> Value {
    use std::io::Read;
    let start = Instant::now();
    while kid.0.try_wait().expect("try_wait").is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "claude did not finish within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut s) = kid.0.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = kid.0.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    serde_json::from_str(out.trim()).unwrap_or_else(|e| {
        panic!("claude's output is not its JSON result ({e}): {out}\nstderr: {err}")
    })
}

/// The scripted model server (tests/real-agents/model-server.mjs).
fn model_server(h: &Home, script: &str) -> (Kill, u16) {
    let mut child = Command::new("node")
        .arg(real_agents().join("model-server.mjs"))
        .arg("--script")
        .arg(real_agents().join("scripts").join(script))
        .arg("--log")
        .arg(h.dir.path().join("model.jsonl"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node model-server.mjs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the model server's first line");
    let port = first
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the model server said {first:?}"));
    (Kill(child), port)
}

/// The real Claude Code CLI in a terminal with `overseer mcp` as its MCP
/// server: without Overseer the model is told at once to ask directly; with
/// it the question waits on the session's fleet row (named by Claude Code's
/// client name) and the answer given in Overseer is what the model reads.
#[test]
fn claude_code_asks_through_overseer_mcp_and_the_model_reads_the_answer() {
    let h = Home::new();
    let (_model, port) = model_server(&h, "claude-mcp-ask.json");

    let result = claude_result(claude_with_overseer_mcp(
        &h,
        port,
        "Ask me through Overseer",
    ));
    let said = result["result"].as_str().unwrap_or_default().to_owned();
    assert!(said.contains("Overseer is not running"), "{result}");
    assert!(said.contains("SCRIPT-DONE"), "{result}");

    let _engine = h.serve();
    let started = Instant::now();
    let claude = claude_with_overseer_mcp(&h, port, "Ask me through Overseer");
    let gate = h.wait_gate("question", &[]);
    eprintln!(
        "claude: the question waited in Overseer {:?} after start",
        started.elapsed()
    );
    let run = h.run(&gate["run_id"]);
    assert_eq!(
        run["agent"], "claude-code",
        "Claude Code's client name: {run}"
    );
    h.decide(
        &gate,
        "answer",
        Some(&json!({"question_0": "Friendly", "question_0_custom": "keep it short"}).to_string()),
    );
    let result = claude_result(claude);
    let said = result["result"].as_str().unwrap_or_default().to_owned();
    // Claude Code hands the model the structured content (the JSON answer).
    assert!(said.contains("\"selected\":[\"Friendly\"]"), "{result}");
    assert!(said.contains("keep it short"), "{result}");
    assert!(said.contains("SCRIPT-DONE"), "{result}");
}

/// With a supervisor enabled for the session's workspace, a reported step
/// is weighed; when the supervisor cannot judge it (here its evaluator
/// command does not exist) it pauses the session for the user, and the
/// user's correction is the verdict.
#[test]
fn a_step_the_supervisor_cannot_judge_waits_for_the_user_and_their_correction_returns() {
    let h = Home::new();
    let _engine = h.serve();
    let mut c = h.client(
        json!([
            {"tool": "read_messages", "arguments": {}},
            {"tool": "report_step", "arguments": {
                "step": "Write the greeting", "status": "done", "summary": "wrote it"},
             "waitForGo": true}
        ]),
        &[],
    );
    c.outcome(Duration::from_secs(15));
    let set: Request = serde_json::from_value(json!({
        "method": "set_supervisor",
        "params": {"scope": {"workspace": "external"}, "policy": {
            "enabled": true, "always_supervise": true, "timeout_seconds": 5,
            "evaluator": {"type": "command", "command": "/nonexistent/evaluator"}}}
    }))
    .expect("a set_supervisor request");
    h.api(set);
    c.go(json!({}));
    let gate = h.wait_gate("supervisor_pause", &[]);
    h.decide(&gate, "modify", Some("test the greeting first"));
    let r = c.outcome(Duration::from_secs(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"verdict": "REORIENT", "correction": "test the greeting first"}),
        "{r}"
    );
}

/// An engine whose overseer.toml also has `expert` (the demo agent
/// answering consultations), and a launched run of the demo agent waiting
/// on its plan gate in a fresh workspace: the engine and the run's id.
fn launched_run_with_an_expert(h: &Home) -> (Kill, i64) {
    let demo = overseer_test_support::demo_agent()
        .to_string_lossy()
        .into_owned();
    std::fs::create_dir_all(h.config()).expect("config dir");
    std::fs::write(
        h.config().join("overseer.toml"),
        format!(
            "[agents.demo]\ncommand = {demo:?}\nmode = \"default\"\n\
             [agents.expert]\ncommand = {demo:?}\nmode = \"default\"\n\
             env = {{ OVERSEER_DEMO_SCENARIO = \"consult\" }}\n"
        ),
    )
    .expect("config");
    let engine = h.serve();
    let repo = overseer_test_support::repo_with(
        &h.dir.path().join("repo"),
        &[("README.md", "# the repository under consultation\n")],
    );
    h.api(Request::AddWorkspace {
        path: repo,
        name: Some("r".into()),
        settings: Default::default(),
    });
    let started = h.api(Request::StartTask {
        task: overseer_engine::TaskStart {
            workspace: "r".into(),
            agent: "demo".into(),
            prompt: "Update the greeting".into(),
            title: None,
            scenario: Some("happy".into()),
            stage: None,
            settings: Default::default(),
        },
    });
    let run = started["run_id"].as_i64().expect("run id");
    let start = Instant::now();
    loop {
        let gates = h.api(Request::ListGates {
            pending_only: true,
            limit: None,
            after: None,
        })["gates"]
            .clone();
        if gates
            .as_array()
            .into_iter()
            .flatten()
            .any(|g| g["run_id"] == run && g["kind"] == "plan")
        {
            return (engine, run);
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "run {run} never asked for its plan: {}",
            h.run(&json!(run))
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn consult_answers_a_launched_agent_with_a_read_only_child_run_and_refuses_other_sessions() {
    let h = Home::new();
    let (_engine, run) = launched_run_with_an_expert(&h);
    // `overseer mcp` as the run's agent starts it: on the run's own socket.
    let socket = h.data().join("run-sockets").join(format!("run-{run}.sock"));
    let socket = socket.to_string_lossy().into_owned();
    let c = h.client(
        json!([{"tool": "consult", "arguments": {
            "profile": "expert", "question": "What is this repository about?"
        }}]),
        &["--socket", &socket],
    );
    let r = c.outcome(Duration::from_secs(90));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let said = text(&r);
    assert!(said.contains("ANSWER"), "{said}");
    assert!(
        said.contains("# the repository under consultation"),
        "the answer came from the run's snapshot: {said}"
    );
    let answer = &r["result"]["structuredContent"];
    assert_eq!(answer["timed_out"], false, "{r}");
    assert_eq!(
        answer["cost"],
        json!({"amount": 0.05, "currency": "USD"}),
        "the cost its agent reported, checked against the output schema by the SDK: {r}"
    );
    let child = &answer["run"];
    assert_ne!(child, &json!(run));
    let child_view = h.run(child);
    assert_eq!(child_view["parent"], run, "{child_view}");
    assert_eq!(child_view["agent"], "expert", "{child_view}");
    // The same tool from a session outside Overseer's runs: refused, with why.
    let c = h.client(
        json!([{"tool": "consult", "arguments": {"profile": "expert", "question": "Hello?"}}]),
        &[],
    );
    let r = c.outcome(Duration::from_secs(30));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("not tied to a run"), "{r}");
}
