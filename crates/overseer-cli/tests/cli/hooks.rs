//! `overseer hook` with the real agents, offline: the pinned Claude Code CLI
//! (print mode) and Codex CLI (`codex exec`) run in a temporary git repository
//! with our hooks installed by `overseer hook install`, their model endpoint
//! pointed at the scripted model server (tests/real-agents), and a real
//! `overseer serve` beside them. What is asserted is what a user relies on:
//! the ask appears in Overseer, the decision made there is what the agent
//! does, and without Overseer the agent decides on its own, never allowing.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn real_agents() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real-agents")
}

fn agent_bin(name: &str) -> PathBuf {
    let bin = real_agents().join("node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: run scripts/setup.sh (or `cd tests/real-agents && npm ci`)",
        bin.display()
    );
    bin
}

/// A child killed when the test ends, however it ends.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One test's world, under the target dir (Codex refuses a sandbox helper
/// under /tmp, and both agents get the same layout).
struct World {
    dir: tempfile::TempDir,
    _serve: Option<Kid>,
}

impl World {
    fn new() -> World {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hooks");
        std::fs::create_dir_all(&base).expect("target tmp");
        let dir = tempfile::tempdir_in(base).expect("tempdir");
        for d in ["home", "tmp", "codex-home", "proj"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("dir");
        }
        let proj = dir.path().join("proj");
        overseer_test_support::git(&proj, &["init", "-q"]);
        std::fs::write(proj.join("README.md"), "# Demo\n").expect("readme");
        World { dir, _serve: None }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn proj(&self) -> PathBuf {
        self.path("proj")
    }

    fn overseer(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_overseer"));
        c.arg("--data-dir")
            .arg(self.path("data"))
            .arg("--config-dir")
            .arg(self.path("config"))
            .args(args)
            .env("HOME", self.path("home"))
            .env("CODEX_HOME", self.path("codex-home"))
            .env_remove("OVERSEER_LOG");
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.overseer(args).output().expect("run overseer");
        assert!(
            out.status.success(),
            "overseer {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).expect("json")
    }

    fn serve(&mut self) {
        let kid = Kid(self
            .overseer(&["serve"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("overseer serve"));
        let socket = self.path("data/overseer.sock");
        eventually("the engine's socket", Duration::from_secs(20), || {
            socket.exists()
        });
        self._serve = Some(kid);
    }

    fn pending_gates(&self) -> Vec<Value> {
        match self.json(&["gates", "list", "--json"]) {
            Value::Array(gates) => gates,
            other => panic!("gates list: {other}"),
        }
    }
}

fn eventually(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct ModelServer {
    _kid: Kid,
    port: u16,
    log: PathBuf,
}

impl ModelServer {
    fn start(w: &World, script: &str) -> ModelServer {
        let log = w.path("model.jsonl");
        let mut child = Command::new("node")
            .arg(real_agents().join("model-server.mjs"))
            .arg("--script")
            .arg(real_agents().join("scripts").join(script))
            .arg("--log")
            .arg(&log)
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node model-server.mjs (is node installed?)");
        let mut first = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("model server's first line");
        let port = first
            .strip_prefix("listening ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("model server said {first:?}"));
        ModelServer {
            _kid: Kid(child),
            port,
            log,
        }
    }

    /// The main requests' latest inputs (what the model read), in order.
    fn latest_inputs(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["main"] == true)
            .filter_map(|v| v["latest"].as_str().map(str::to_owned))
            .collect()
    }
}

/// `claude -p PROMPT` in the project, started in the background.
fn claude(w: &World, model: &ModelServer, prompt: &str) -> Kid {
    let mut c = Command::new(agent_bin("claude"));
    c.args([
        "-p",
        prompt,
        "--permission-mode",
        "manual",
        "--output-format",
        "json",
    ])
    .current_dir(w.proj())
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", w.path("home"))
    .env("TMPDIR", w.path("tmp"))
    .env(
        "ANTHROPIC_BASE_URL",
        format!("http://127.0.0.1:{}", model.port),
    )
    .env("ANTHROPIC_API_KEY", "dummy")
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    Kid(c.spawn().expect("claude"))
}

/// Waits for the agent to finish (30 s at most) and returns its output.
fn finish(mut kid: Kid, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if kid.0.try_wait().expect("try_wait").is_some() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} did not finish within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    if let Some(mut s) = kid.0.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = kid.0.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    let status = kid.0.wait().expect("wait");
    Output {
        status,
        stdout: out.into_bytes(),
        stderr: err.into_bytes(),
    }
}

fn claude_result(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "claude's output is not its JSON result ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn install_claude(w: &World) {
    let out = w.ok(&[
        "hook",
        "install",
        "claude",
        "--project",
        &w.proj().to_string_lossy(),
    ]);
    assert!(out.contains("added PreToolUse"), "{out}");
}

/// The one pending gate, once it appears.
fn wait_for_gate(w: &World) -> Value {
    let mut found = None;
    eventually("a pending gate", Duration::from_secs(20), || {
        found = w.pending_gates().into_iter().next();
        found.is_some()
    });
    found.expect("gate")
}

#[test]
fn a_claude_tool_call_waits_for_the_decision_made_in_overseer() {
    let mut w = World::new();
    w.serve();
    install_claude(&w);
    let model = ModelServer::start(&w, "hook-bash.json");

    // Yes: Claude runs it.
    let t0 = Instant::now();
    let run = claude(&w, &model, "Make the file made-by-claude");
    let gate = wait_for_gate(&w);
    assert_eq!(gate["kind"], "tool_call");
    assert_eq!(gate["title"], "Bash: touch made-by-claude");
    let runs = w.json(&["runs", "list", "--json"]);
    let row = runs
        .as_array()
        .and_then(|r| r.iter().find(|r| r["id"] == gate["run_id"]))
        .cloned()
        .expect("the session's fleet row");
    assert_eq!(row["origin"], "claude_code", "{row}");
    assert_eq!(row["needs_you"], true, "{row}");
    assert_eq!(
        row["session"]["cwd"],
        w.proj().to_string_lossy().as_ref(),
        "{row}"
    );
    assert!(
        !w.proj().join("made-by-claude").exists(),
        "ran before the decision"
    );
    let asked = t0.elapsed();
    let gate_id = gate["id"].to_string();
    w.ok(&["gates", "decide", &gate_id, "--option", "yes"]);
    let out = finish(run, "claude (yes)");
    let result = claude_result(&out);
    assert_eq!(result["result"], "Done. SCRIPT-DONE", "{result}");
    assert!(
        w.proj().join("made-by-claude").exists(),
        "yes did not run it"
    );
    eprintln!(
        "claude: gate shown {asked:?} after start, whole run {:?}",
        t0.elapsed()
    );

    // No, with a reason: Claude does not run it and the model reads why.
    let run = claude(&w, &model, "Make the file refused-file");
    let gate = wait_for_gate(&w);
    assert_eq!(gate["title"], "Bash: touch refused-file");
    let gate_id = gate["id"].to_string();
    w.ok(&[
        "gates",
        "decide",
        &gate_id,
        "--option",
        "no",
        "--context",
        "not in this repository, please",
    ]);
    let out = finish(run, "claude (no)");
    let result = claude_result(&out);
    assert_eq!(result["result"], "Done. SCRIPT-DONE", "{result}");
    assert!(!w.proj().join("refused-file").exists(), "no ran it anyway");
    let inputs = model.latest_inputs();
    assert!(
        inputs
            .iter()
            .any(|i| i.contains("not in this repository, please")),
        "the reason never reached the model: {inputs:#?}"
    );
}

#[test]
fn without_overseer_claude_decides_alone_and_never_runs_the_tool_unasked() {
    let w = World::new();
    install_claude(&w);
    let model = ModelServer::start(&w, "hook-bash.json");
    let t0 = Instant::now();
    let out = finish(claude(&w, &model, "Make the file made-by-claude"), "claude");
    let took = t0.elapsed();
    let result = claude_result(&out);
    // `ask` in print mode (no one to ask) denies: the turn still completes.
    assert_eq!(result["result"], "Done. SCRIPT-DONE", "{result}");
    assert_eq!(
        result["permission_denials"][0]["tool_input"]["command"], "touch made-by-claude",
        "{result}"
    );
    assert!(!w.proj().join("made-by-claude").exists());
    assert!(took < Duration::from_secs(15), "fallback took {took:?}");
    eprintln!("claude without Overseer: whole run {took:?}");

    // Nothing was written anywhere by the hook: the data dir does not exist.
    assert!(!w.path("data/overseer.db").exists());

    // The same hook, fed by hand, says why on stderr and asks Claude's user.
    let mut hook = w
        .overseer(&["hook", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hook");
    let input = serde_json::json!({
        "session_id": "s-down", "cwd": w.proj(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1",
    });
    hook.stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("write");
    let out = hook.wait_with_output().expect("hook");
    assert!(out.status.success());
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "ask");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Overseer is not running"), "{err}");
    assert!(err.contains("overseer serve"), "{err}");
}

#[test]
fn a_deny_rule_of_the_workspace_refuses_without_a_gate() {
    let mut w = World::new();
    w.serve();
    let proj = w.proj().to_string_lossy().into_owned();
    w.ok(&["workspace", "add", &proj, "--name", "proj"]);
    w.ok(&[
        "workspace",
        "rules",
        "--workspace",
        "proj",
        "--deny",
        "Bash(touch:*)",
    ]);
    install_claude(&w);
    let model = ModelServer::start(&w, "hook-bash.json");
    let out = finish(claude(&w, &model, "Make the file made-by-claude"), "claude");
    let result = claude_result(&out);
    assert_eq!(result["result"], "Done. SCRIPT-DONE", "{result}");
    assert!(!w.proj().join("made-by-claude").exists());
    // No tool-call gate, pending or decided (the Stop notice is an info item).
    let all = w.json(&["gates", "list", "--all", "--json"]);
    let tool_gates = all
        .as_array()
        .map(|g| g.iter().filter(|g| g["kind"] == "tool_call").count());
    assert_eq!(tool_gates, Some(0), "a tool-call gate was opened: {all}");
    let inputs = model.latest_inputs();
    assert!(
        inputs.iter().any(|i| i.contains("Bash(touch:*)")),
        "the rule never reached the model: {inputs:#?}"
    );
    let runs = w.json(&["runs", "list", "--json"]);
    assert_eq!(runs[0]["origin"], "claude_code", "{runs}");
    assert_eq!(runs[0]["workspace"], "proj", "{runs}");

    // An allow rule: Overseer lets Claude's own flow go on before the tool
    // runs, and answers Claude's permission request itself: no gate either.
    w.ok(&[
        "workspace",
        "rules",
        "--workspace",
        "proj",
        "--allow",
        "Bash(touch:*)",
    ]);
    let out = finish(claude(&w, &model, "Make the file refused-file"), "claude");
    let result = claude_result(&out);
    assert_eq!(result["result"], "Done. SCRIPT-DONE", "{result}");
    assert!(
        w.proj().join("refused-file").exists(),
        "the allow rule did not let it run"
    );
    let all = w.json(&["gates", "list", "--all", "--json"]);
    let tool_gates = all
        .as_array()
        .map(|g| g.iter().filter(|g| g["kind"] == "tool_call").count());
    assert_eq!(tool_gates, Some(0), "a tool-call gate was opened: {all}");
}

#[test]
fn steering_queued_in_overseer_comes_back_once_as_a_stop_block() {
    let mut w = World::new();
    w.serve();
    install_claude(&w);
    let model = ModelServer::start(&w, "hook-bash.json");
    let run = claude(&w, &model, "Make the file made-by-claude");
    let gate = wait_for_gate(&w);
    let run_id = gate["run_id"].to_string();
    w.ok(&[
        "runs",
        "steer",
        &run_id,
        "STEERING: add a line to the README too",
    ]);
    w.ok(&[
        "gates",
        "decide",
        &gate["id"].to_string(),
        "--option",
        "yes",
    ]);
    let out = finish(run, "claude");
    let result = claude_result(&out);
    assert_eq!(
        result["result"], "Following your steering. STEERED-DONE",
        "{result}"
    );
    let inputs = model.latest_inputs();
    let steered = inputs
        .iter()
        .filter(|i| i.contains("STEERING: add a line to the README too"))
        .count();
    assert_eq!(
        steered, 1,
        "steering delivered {steered} times: {inputs:#?}"
    );
}

fn codex_config(w: &World, model: &ModelServer) {
    let config = format!(
        r#"model = "gpt-5.5"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:{}/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"#,
        model.port
    );
    std::fs::write(w.path("codex-home/config.toml"), config).expect("config.toml");
}

/// `codex exec PROMPT` in the project (workspace-write: a command it is
/// let run can write there), started in the background.
fn codex(w: &World, prompt: &str) -> Kid {
    let mut c = Command::new(agent_bin("codex"));
    c.args([
        "exec",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        prompt,
    ])
    .current_dir(w.proj())
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", w.path("home"))
    .env("TMPDIR", w.path("tmp"))
    .env("CODEX_HOME", w.path("codex-home"))
    .env("MOCK_API_KEY", "dummy")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    Kid(c.spawn().expect("codex"))
}

#[test]
fn a_codex_shell_command_waits_for_overseer_once_its_hooks_are_trusted() {
    let mut w = World::new();
    w.serve();
    let model = ModelServer::start(&w, "hook-codex.json");
    codex_config(&w, &model);
    let codex_bin = agent_bin("codex");
    let out = w
        .overseer(&["hook", "install", "codex", "--user", "--codex"])
        .arg(&codex_bin)
        .current_dir(w.proj())
        .output()
        .expect("install");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("Codex trusts them (4 hooks"), "{said}");
    let config = std::fs::read_to_string(w.path("codex-home/config.toml")).expect("config");
    assert!(config.contains("trusted_hash"), "{config}");
    assert!(
        config.contains("[model_providers.mock]"),
        "the user's config kept: {config}"
    );

    // No, with a reason: Codex blocks the command and the model reads why.
    let run = codex(&w, "Write the notes");
    let gate = wait_for_gate(&w);
    assert_eq!(gate["kind"], "tool_call");
    assert_eq!(gate["title"], "Bash: echo hi > codex-notes.txt");
    let runs = w.json(&["runs", "list", "--json"]);
    assert_eq!(runs[0]["origin"], "codex", "{runs}");
    w.ok(&[
        "gates",
        "decide",
        &gate["id"].to_string(),
        "--option",
        "no",
        "--context",
        "no notes today",
    ]);
    let out = finish(run, "codex exec (no)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !w.proj().join("codex-notes.txt").exists(),
        "no ran it anyway"
    );
    let inputs = model.latest_inputs();
    assert!(
        inputs.iter().any(|i| i.contains("no notes today")),
        "the reason never reached the model: {inputs:#?}"
    );

    // Yes: Codex runs it (in its own sandbox, which lets it write here).
    let run = codex(&w, "Write the notes");
    let gate = wait_for_gate(&w);
    w.ok(&[
        "gates",
        "decide",
        &gate["id"].to_string(),
        "--option",
        "yes",
    ]);
    let out = finish(run, "codex exec (yes)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        w.proj().join("codex-notes.txt").exists(),
        "yes did not run it"
    );

    // Uninstall takes exactly our entries out of hooks.json.
    let said = w.ok(&["hook", "uninstall", "codex", "--user"]);
    assert!(said.contains("removed Overseer's Codex hooks"), "{said}");
    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(w.path("codex-home/hooks.json")).expect("hooks.json"),
    )
    .expect("json");
    assert_eq!(hooks, serde_json::json!({}));

    // A project's hooks: Codex lists them only in a project the user
    // trusted, and install says how instead of pretending.
    let proj = w.proj().to_string_lossy().into_owned();
    let install_project = || {
        w.overseer(&["hook", "install", "codex", "--project", &proj, "--codex"])
            .arg(&codex_bin)
            .output()
            .expect("install")
    };
    let out = install_project();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("trust_level = \"trusted\""), "{err}");
    let mut config = std::fs::read_to_string(w.path("codex-home/config.toml")).expect("config");
    config.push_str(&format!(
        "\n[projects.\"{proj}\"]\ntrust_level = \"trusted\"\n"
    ));
    std::fs::write(w.path("codex-home/config.toml"), config).expect("config");
    let out = install_project();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("Codex trusts them (4 hooks"), "{said}");
}

#[test]
fn a_hook_waiting_through_an_engine_restart_gets_the_decision_of_the_same_gate() {
    let mut w = World::new();
    w.serve();
    let input = serde_json::json!({
        "session_id": "s-restart", "cwd": w.proj(), "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build"}, "tool_use_id": "toolu_1",
    });
    let hook = hook_process(&w, &[], &input.to_string());
    let gate = wait_for_gate(&w);

    // The engine dies under the waiting hook and comes back.
    w._serve = None;
    let _ = std::fs::remove_file(w.path("data/overseer.sock"));
    std::thread::sleep(Duration::from_millis(300));
    w.serve();
    // The hook asked again with the same key: still that one gate.
    std::thread::sleep(Duration::from_millis(1500));
    let pending = w.pending_gates();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["id"], gate["id"]);
    let t0 = Instant::now();
    w.ok(&[
        "gates",
        "decide",
        &gate["id"].to_string(),
        "--option",
        "yes",
    ]);
    let out = finish(hook, "the hook");
    eprintln!(
        "decision to the hook's answer after a restart: {:?}",
        t0.elapsed()
    );
    assert!(out.status.success());
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"],
        "allow",
        "{answer}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = w.json(&["gates", "list", "--all", "--json"]);
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
}

#[test]
fn install_keeps_the_users_own_hooks_and_uninstall_removes_exactly_ours() {
    let w = World::new();
    let settings = w.path("home/.claude/settings.json");
    std::fs::create_dir_all(w.path("home/.claude")).expect("dir");
    let users = serde_json::json!({
        "permissions": {"deny": ["Read(.env)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
        }
    });
    std::fs::write(
        &settings,
        serde_json::to_string_pretty(&users).expect("json"),
    )
    .expect("write");

    let said = w.ok(&["hook", "install", "claude", "--user"]);
    assert!(said.contains(&*settings.to_string_lossy()), "{said}");
    let installed: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("json");
    assert_eq!(
        installed["hooks"]["PreToolUse"][0],
        users["hooks"]["PreToolUse"][0]
    );
    assert_eq!(installed["hooks"]["Stop"][0], users["hooks"]["Stop"][0]);
    let ours = installed["hooks"]["PreToolUse"][1]["hooks"][0]["command"]
        .as_str()
        .expect("our command")
        .to_owned();
    let words = shlex_words(&ours);
    assert_eq!(
        words,
        vec![
            std::fs::canonicalize(env!("CARGO_BIN_EXE_overseer"))
                .expect("exe")
                .to_string_lossy()
                .into_owned(),
            "--data-dir".into(),
            w.path("data").to_string_lossy().into_owned(),
            "hook".into(),
            "claude".into()
        ]
    );
    assert!(installed["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"]
        .as_u64()
        .is_some_and(|t| t > 3000));

    let said = w.ok(&["hook", "install", "claude", "--user"]);
    assert!(said.contains("nothing changed"), "{said}");

    let said = w.ok(&["hook", "uninstall", "claude", "--user"]);
    assert!(
        said.contains("removed Overseer's Claude Code hooks"),
        "{said}"
    );
    let back: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("json");
    assert_eq!(back, users);

    // Where to install must be said; a broken file is refused untouched.
    let out = w
        .overseer(&["hook", "install", "claude"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--project DIR") && err.contains("--user"),
        "{err}"
    );
    std::fs::write(&settings, "{ broken").expect("write");
    let out = w
        .overseer(&["hook", "install", "claude", "--user"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not valid JSON"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&settings).expect("read"),
        "{ broken"
    );
}

/// Splits a command line the way the agent's `sh -c` does.
fn shlex_words(cmd: &str) -> Vec<String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg("eval \"set -- $0\"; for w; do printf '%s\\n' \"$w\"; done")
        .arg(cmd)
        .output()
        .expect("sh");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs `overseer hook claude` under a parent of its own (see below) with
/// `input` on stdin.
fn hook_process(w: &World, extra: &[&str], input: &str) -> Kid {
    // The engine takes the hook's parent (past any `sh -c`) for the
    // session's agent and refuses decisions from what that agent started,
    // which the test itself must not look like: `timeout` is that parent.
    let mut args = vec!["hook", "claude"];
    args.extend_from_slice(extra);
    let hook = w.overseer(&args);
    let mut child = Command::new("timeout")
        .arg("60")
        .arg(hook.get_program())
        .args(hook.get_args())
        .env("HOME", w.path("home"))
        .env_remove("OVERSEER_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hook");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    Kid(child)
}

#[test]
fn a_hook_not_answered_in_time_asks_claudes_user_and_its_gate_is_withdrawn() {
    let mut w = World::new();
    w.serve();
    let input = serde_json::json!({
        "session_id": "s-slow", "cwd": w.proj(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "make deploy"}, "tool_use_id": "toolu_9",
    });
    let t0 = Instant::now();
    let out = finish(
        hook_process(&w, &["--wait", "1"], &input.to_string()),
        "the hook",
    );
    let took = t0.elapsed();
    assert!(out.status.success());
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "ask");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not answer within 1 s"), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Nobody waits on it any more: it leaves the inbox by itself.
    eventually(
        "the abandoned gate withdrawn",
        Duration::from_secs(20),
        || w.pending_gates().is_empty(),
    );

    // Garbage in: the safe answer, a word on stderr, exit 0.
    let out = finish(hook_process(&w, &[], "this is not JSON"), "the hook");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read the Claude Code hook input"),
        "{err}"
    );
}
