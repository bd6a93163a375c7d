//! The real ACP adapters, driven end to end by the engine: claude-agent-acp
//! 0.101.0 and codex-acp 0.16.0 from `tests/real-agents/node_modules`, each
//! pointed at `tests/real-agents/model-server.mjs` (a scripted, offline model
//! server started here with a script from `tests/real-agents/scripts/`). A real
//! engine on a temp dir, a real git repository, the orchestrator started, the
//! gates decided as a user; checked on disk, in the database and in the model
//! server's request log. Install the adapters with `scripts/setup.sh`.
//!
//! Every per-run directory (the engine's data, the agents' HOME, TMPDIR and
//! CODEX_HOME) is under the target dir, not /tmp: Codex refuses to put its
//! sandbox helper under /tmp.

mod common;

use common::{git, World};
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, GateKind, GateView, ReleaseReason, RunState};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock, TaskStart};
use overseer_store::{TaskSettings, WorkspaceSettings};
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long any one wait may take before the test fails with a dump.
const WAIT: Duration = Duration::from_secs(90);

fn real_agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real-agents")
}

/// An adapter's binary; a missing install fails the test (never a skip).
fn adapter(name: &str) -> PathBuf {
    let dir = real_agents_dir();
    let bin = dir.join("node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: the real adapters are not installed. Run `scripts/setup.sh` \
         (or `cd tests/real-agents && npm ci`) and run the tests again",
        bin.display()
    );
    std::fs::canonicalize(&bin).expect("adapter path")
}

/// The scripted model server, stopped when dropped.
struct ModelServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl ModelServer {
    fn start(script: &str, dir: &Path) -> ModelServer {
        let base = real_agents_dir();
        let script = base.join("scripts").join(script);
        assert!(script.exists(), "no script {}", script.display());
        let log = dir.join("model.jsonl");
        let mut child = Command::new("node")
            .arg(base.join("model-server.mjs"))
            .arg("--script")
            .arg(&script)
            .arg("--log")
            .arg(&log)
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node model-server.mjs (is node installed?)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("model server did not start: {line:?}"));
        ModelServer { child, port, log }
    }

    /// Every logged request, in order.
    fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The agent's main model requests (those that carry its tools).
    fn main_requests(&self) -> Vec<Value> {
        self.entries()
            .into_iter()
            .filter(|e| e["main"] == true)
            .collect()
    }

    /// The latest inputs of the main requests.
    fn latest(&self) -> Vec<String> {
        self.main_requests()
            .iter()
            .map(|e| e["latest"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The whole text of each main request's latest user input (the log's
    /// `latest` is cut at 2000 characters; Claude prefixes system reminders).
    fn inputs(&self) -> Vec<String> {
        self.main_requests()
            .iter()
            .map(|e| {
                let body = &e["body"];
                if let Some(msgs) = body["messages"].as_array() {
                    let last = msgs.iter().rev().find(|m| m["role"] == "user");
                    last.map(|m| text_of(&m["content"])).unwrap_or_default()
                } else {
                    text_of(&body["input"])
                }
            })
            .collect()
    }

    /// True when some main request's whole body contains `text`.
    fn sent(&self, text: &str) -> bool {
        self.main_requests()
            .iter()
            .any(|e| e["body"].to_string().contains(text))
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Adapter {
    Claude,
    Codex,
}

impl Adapter {
    fn name(self) -> &'static str {
        match self {
            Adapter::Claude => "claude",
            Adapter::Codex => "codex",
        }
    }
}

/// One engine, one repository, one model server, one adapter profile.
struct Real {
    w: World,
    server: ModelServer,
    paths: Paths,
    agent: Adapter,
    started: Instant,
    name: &'static str,
}

/// `overseer.toml` text for a TOML string (paths, URLs: no control characters).
fn toml_str(s: impl AsRef<str>) -> String {
    format!("{:?}", s.as_ref())
}

async fn real_world(
    name: &'static str,
    agent: Adapter,
    script: &str,
    extra_env: &[(&str, &str)],
) -> Real {
    let started = Instant::now();
    let bin = adapter(match agent {
        Adapter::Claude => "claude-agent-acp",
        Adapter::Codex => "codex-acp",
    });
    let dir = tempfile::Builder::new()
        .prefix("real-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("tempdir under the target dir");
    let root = dir.path().to_owned();
    let server = ModelServer::start(script, &root);

    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join("build")).expect("mkdir");
    std::fs::write(repo.join("README.md"), "# Demo\n\nA demo project.\n").expect("write");
    std::fs::write(repo.join("build/out.txt"), "x\n").expect("write");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);

    let (home, tmp) = (root.join("home"), root.join("tmp"));
    for d in [&home, &tmp] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let mut env: Vec<(String, String)> = vec![
        ("HOME".into(), home.to_string_lossy().into_owned()),
        ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
    ];
    match agent {
        Adapter::Claude => {
            env.extend(
                [
                    (
                        "ANTHROPIC_BASE_URL",
                        format!("http://127.0.0.1:{}", server.port),
                    ),
                    ("ANTHROPIC_API_KEY", "dummy".to_owned()),
                    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
                    ("CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false".to_owned()),
                ]
                .map(|(k, v)| (k.to_owned(), v)),
            );
        }
        Adapter::Codex => {
            let codex_home = root.join("codex-home");
            std::fs::create_dir_all(&codex_home).expect("mkdir");
            std::fs::write(
                codex_home.join("config.toml"),
                format!(
                    "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
                     name = \"mock\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nenv_key = \"MOCK_API_KEY\"\n\
                     wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
                    server.port
                ),
            )
            .expect("codex config");
            env.push((
                "CODEX_HOME".into(),
                codex_home.to_string_lossy().into_owned(),
            ));
            env.push(("MOCK_API_KEY".into(), "dummy".into()));
        }
    }
    for (k, v) in extra_env {
        env.push(((*k).to_owned(), (*v).to_owned()));
    }
    let env_toml = env
        .iter()
        .map(|(k, v)| format!("{k} = {}", toml_str(v)))
        .collect::<Vec<_>>()
        .join(", ");
    let mode = match agent {
        Adapter::Claude => "default",
        Adapter::Codex => "read-only",
    };
    let config = root.join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("overseer.toml"),
        format!(
            "abort_timeout_seconds = 2\n\n[agents.{}]\ncommand = {}\nmode = \"{mode}\"\nenv = {{ {env_toml} }}\n",
            agent.name(),
            toml_str(bin.to_string_lossy()),
        ),
    )
    .expect("overseer.toml");
    let paths = Paths {
        data_dir: root.join("data"),
        config_dir: config,
    };
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine"),
    );
    engine
        .add_workspace(
            &repo,
            Some("proj"),
            WorkspaceSettings::default(),
            &Actor::cli(),
        )
        .expect("workspace");
    engine.start_orchestrator();
    Real {
        w: World {
            _dir: dir,
            repo,
            engine,
        },
        server,
        paths,
        agent,
        started,
        name,
    }
}

impl Real {
    fn engine(&self) -> &Engine {
        &self.w.engine
    }

    /// Starts a task without a plan whose first model request the script
    /// leaves unanswered, and returns once that request is out.
    async fn start_hanging(&self, prompt: &str) -> i64 {
        let run = self.start(prompt, Some(PlanStrategy::Skip));
        self.until(run, "the hanging model request", |_| {
            self.server
                .main_requests()
                .iter()
                .any(|e| e["reply"]["hang"] == true)
                .then_some(())
        })
        .await;
        run
    }

    fn start(&self, prompt: &str, plan: Option<PlanStrategy>) -> i64 {
        self.engine()
            .start_task(
                &TaskStart {
                    workspace: "proj".into(),
                    agent: self.agent.name().into(),
                    prompt: prompt.into(),
                    title: None,
                    scenario: None,
                    settings: TaskSettings {
                        plan,
                        ..Default::default()
                    },
                },
                &Actor::cli(),
            )
            .expect("start")
            .run_id
    }

    fn worktree(&self, run: i64) -> PathBuf {
        self.engine().worktree_path("proj", run)
    }

    fn activity(&self, run: i64) -> Vec<overseer_core::ActivityView> {
        self.engine().activity(run, 0).expect("activity")
    }

    /// What went on, for a failure message.
    fn dump(&self, run: i64) -> String {
        let activity: Vec<String> = self
            .activity(run)
            .iter()
            .map(|a| {
                let mut p = a.payload.to_string();
                if p.len() > 600 {
                    p = format!("{}…", p.chars().take(600).collect::<String>());
                }
                format!("  {} {p}", a.kind)
            })
            .collect();
        let requests: Vec<String> = self
            .server
            .entries()
            .iter()
            .map(|e| {
                format!(
                    "  #{} main={} rule={} latest={:?} reply={}",
                    e["seq"],
                    e["main"],
                    e["rule"],
                    e["latest"]
                        .as_str()
                        .unwrap_or_default()
                        .chars()
                        .take(160)
                        .collect::<String>(),
                    e["reply"].to_string().chars().take(160).collect::<String>()
                )
            })
            .collect();
        format!(
            "run {run}: {:?}\npending gates: {:?}\nactivity:\n{}\nmodel requests:\n{}",
            self.engine().run(run).map(|r| r.state),
            self.engine()
                .gates(true)
                .unwrap_or_default()
                .iter()
                .map(|g| (g.kind, g.title.clone()))
                .collect::<Vec<_>>(),
            activity.join("\n"),
            requests.join("\n")
        )
    }

    /// Waits until `pred` holds, re-checking on every engine event.
    async fn until<T>(
        &self,
        run: i64,
        what: &str,
        mut pred: impl FnMut(&Engine) -> Option<T>,
    ) -> T {
        let mut rx = self.engine().subscribe();
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(v) = pred(self.engine()) {
                return v;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "[{}] timed out waiting for {what}\n{}",
                self.name,
                self.dump(run)
            );
            let _ = tokio::time::timeout(left.min(Duration::from_millis(200)), rx.recv()).await;
        }
    }

    /// The next pending gate of `run` of one of `kinds`. Step reviews (a
    /// destructive step always stops for one) are proceeded on the way
    /// unless asked for; any other gate on the way fails the test.
    async fn gate(&self, run: i64, kinds: &[GateKind]) -> GateView {
        let what = format!("a {kinds:?} gate");
        self.until(run, &what, |e| {
            for g in e.gates(true).ok()?.into_iter().filter(|g| g.run_id == run) {
                if kinds.contains(&g.kind) {
                    return Some(g);
                }
                if g.kind == GateKind::StepReview {
                    e.decide_gate(g.id, "proceed", None, &Actor::cli())
                        .expect("proceed");
                    continue;
                }
                panic!(
                    "[{}] unexpected {:?} gate `{}` while waiting for {what}: {}\n{}",
                    self.name,
                    g.kind,
                    g.title,
                    g.payload,
                    self.dump(run)
                );
            }
            None
        })
        .await
    }

    fn decide(&self, gate: &GateView, option: &str, context: Option<&str>) {
        self.engine()
            .decide_gate(gate.id, option, context, &Actor::cli())
            .unwrap_or_else(|e| panic!("decide {option} on {:?}: {}", gate.kind, e.message));
    }

    async fn state(&self, run: i64, want: RunState) {
        self.until(run, &format!("run {run} to be {want}"), |e| {
            (e.run(run).ok()?.state == want).then_some(())
        })
        .await;
    }

    /// The run's agent processes (by the engine's marker), not zombies.
    fn agent_pids(&self, run: i64) -> Vec<u32> {
        let marker = format!(
            "OVERSEER_AGENT_MARKER={}\0",
            self.engine().agent_marker(run)
        );
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let env = std::fs::read(e.path().join("environ")).ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let zombie = stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
                (String::from_utf8_lossy(&env).contains(&marker) && !zombie).then_some(pid)
            })
            .collect()
    }

    /// Checks what every run of a real adapter must show: the session was
    /// put in its supervised mode before any tool ran, no mode breach, and
    /// every tool call that changes something and completed was asked and
    /// answered yes.
    fn assert_supervised(&self, run: i64, mode: &str) {
        let activity = self.activity(run);
        let set = activity
            .iter()
            .find(|a| {
                a.kind == "mode"
                    && a.payload["mode"] == mode
                    && a.payload["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("works in mode"))
            })
            .unwrap_or_else(|| panic!("mode `{mode}` was never set\n{}", self.dump(run)));
        if let Some(first_tool) = activity.iter().find(|a| a.kind == "tool_call") {
            assert!(set.id < first_tool.id, "a tool ran before the mode was set");
        }
        assert!(
            !activity.iter().any(|a| a.kind == "security"),
            "{}",
            self.dump(run)
        );
        assert!(
            !audit_payloads(&self.paths)
                .iter()
                .any(|p| p["type"] == "security_event" && p["run_id"] == run),
            "a security event was audited\n{}",
            self.dump(run)
        );
        let yes: Vec<String> = self
            .engine()
            .gates(false)
            .expect("gates")
            .into_iter()
            .filter(|g| g.run_id == run && g.kind == GateKind::ToolCall)
            .filter(|g| g.decision.as_ref().is_some_and(|d| d.option == "yes"))
            .filter_map(|g| g.payload["tool_call"]["id"].as_str().map(str::to_owned))
            .collect();
        for a in &activity {
            let p = &a.payload;
            let changes = matches!(
                p["kind"].as_str(),
                Some("edit" | "delete" | "move" | "execute")
            );
            if a.kind == "tool_call" && changes && p["status"] == "completed" {
                let id = p["id"].as_str().unwrap_or_default();
                assert!(
                    yes.iter().any(|y| y == id),
                    "tool call {id} ran without a yes: {p}\n{}",
                    self.dump(run)
                );
            }
        }
    }

    fn done(&self) {
        eprintln!(
            "[{}] passed in {:.1} s",
            self.name,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// Every audit record's payload, read through a second connection.
fn audit_payloads(paths: &Paths) -> Vec<Value> {
    let keyring = overseer_store::Keyring::load_or_create(&paths.config_dir).expect("keys");
    let store = overseer_store::Store::open(&paths.db(), keyring).expect("store");
    store
        .audit_records(0, 100_000)
        .expect("audit")
        .into_iter()
        .filter_map(|r| serde_json::from_str(&r.payload).ok())
        .collect()
}

/// Every string inside a JSON value, joined.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(text_of).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => o.values().map(text_of).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ------------------------------------------------------------------ Claude

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_plans_in_its_plan_mode_edits_when_asked_and_merges() {
    let r = real_world(
        "claude plan+edit",
        Adapter::Claude,
        "engine-plan-edit.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    let run = r.start("Describe the project better", None);

    // The model ignores Overseer's plan block and calls ExitPlanMode: that
    // request is the plan gate, with its markdown.
    let plan = r.gate(run, &[GateKind::Plan]).await;
    assert_eq!(plan.payload["source"], "agent_mode", "{}", plan.payload);
    assert!(
        plan.payload["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("# README plan") && m.contains("description is too short")),
        "{}",
        plan.payload
    );
    let steps: Vec<&str> = plan.payload["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["title"].as_str())
        .collect();
    assert_eq!(
        steps,
        [
            "Edit README.md: make the description longer",
            "Check the result"
        ]
    );
    // The planning turn was in Claude's plan mode.
    let first = r.server.main_requests();
    assert!(
        first[0]["latest"]
            .as_str()
            .is_some_and(|l| l.contains("Plan this task before changing anything")),
        "{}",
        first[0]["latest"]
    );
    r.decide(&plan, "approve", None);

    // Step 1: Read (no ask), then Edit asks.
    let edit = r.gate(run, &[GateKind::ToolCall]).await;
    assert_eq!(
        edit.payload["tool_call"]["kind"], "edit",
        "{}",
        edit.payload
    );
    assert!(edit.options.iter().any(|o| o.id == "always"));
    let worktree = r.worktree(run);
    assert_eq!(
        read(&worktree.join("README.md")),
        "# Demo\n\nA demo project.\n",
        "nothing changed before the yes"
    );
    r.decide(&edit, "yes", None);

    r.gate(run, &[GateKind::MergeReview]).await;
    r.state(run, RunState::PendingReview).await;
    assert!(
        read(&worktree.join("README.md")).contains("described better by the plan"),
        "the edit is on disk in the run's worktree"
    );
    // Each plan step was its own prompt turn.
    let latest = r.server.inputs();
    for step in ["Carry out step 1 of 2", "Carry out step 2 of 2"] {
        assert!(
            latest.iter().any(|l| l.contains(step)),
            "{step}: {latest:?}"
        );
    }
    // The exit-plan request was answered with the option that keeps edits
    // asked (not `exit-plan-auto`).
    let activity = r.activity(run);
    assert!(
        activity.iter().any(|a| a.kind == "plan_answer"
            && a.payload["text"]
                .as_str()
                .is_some_and(|t| t.contains("exit-plan-default"))),
        "{}",
        r.dump(run)
    );
    r.assert_supervised(run, "default");

    r.engine().approve_run(run, &Actor::app()).expect("approve");
    assert_eq!(
        r.engine().run(run).expect("run").state,
        RunState::Released {
            reason: ReleaseReason::Merged
        }
    );
    let log = git(&r.w.repo, &["log", "--oneline", "main"]);
    assert!(log.contains(&format!("Merge run {run}")), "{log}");
    assert!(read(&r.w.repo.join("README.md")).contains("described better by the plan"));
    assert!(r.engine().verify_audit().expect("read").is_ok());
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_revises_its_plan_on_request_and_the_feedback_reaches_the_model() {
    let r = real_world(
        "claude plan changes",
        Adapter::Claude,
        "engine-plan-changes.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    let run = r.start("Improve the README wording", None);
    let first = r.gate(run, &[GateKind::Plan]).await;
    assert!(
        first.payload["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("Reword README.md")),
        "{}",
        first.payload
    );
    r.decide(
        &first,
        "request_changes",
        Some("Please mention the license too."),
    );
    let second = r
        .until(run, "the revised plan's gate", |e| {
            e.gates(true)
                .ok()?
                .into_iter()
                .find(|g| g.run_id == run && g.kind == GateKind::Plan && g.id != first.id)
        })
        .await;
    assert!(
        second.payload["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("mention the license")),
        "{}",
        second.payload
    );
    assert!(
        r.server.latest().iter().any(|l| l
            .contains("The user asked for changes to the plan: Please mention the license too.")),
        "the feedback reached the model: {:?}",
        r.server.latest()
    );
    r.decide(&second, "approve", None);
    r.gate(run, &[GateKind::MergeReview]).await;
    r.state(run, RunState::PendingReview).await;
    assert!(r.server.latest().iter().any(|l| l.contains(
        "Carry out step 1 of 1 of the approved plan: Reword README.md and mention the license"
    )));
    r.assert_supervised(run, "default");
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_rm_rf_is_always_asked_and_a_no_with_a_reason_keeps_the_directory() {
    let r = real_world(
        "claude rm refused",
        Adapter::Claude,
        "engine-rm-refused.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    let run = r.start("Clean the build output", None);
    let plan = r.gate(run, &[GateKind::Plan]).await;
    r.decide(&plan, "approve", None);
    let rm = r.gate(run, &[GateKind::ToolCall]).await;
    assert_eq!(rm.payload["tool_call"]["kind"], "execute", "{}", rm.payload);
    assert_eq!(
        rm.payload["always_gated"], "destructive_shell",
        "{}",
        rm.payload
    );
    assert!(
        !rm.options.iter().any(|o| o.id == "always"),
        "{:?}",
        rm.options
    );
    r.decide(&rm, "no", Some("CI still reads build/, keep it"));
    // The destructive step stops for a review (proceeded by `gate`).
    r.gate(run, &[GateKind::MergeReview]).await;
    r.state(run, RunState::PendingReview).await;
    let worktree = r.worktree(run);
    assert_eq!(read(&worktree.join("build/out.txt")), "x\n");
    let latest = r.server.latest();
    assert!(
        latest
            .iter()
            .any(|l| l == "User refused permission to run tool"),
        "{latest:?}"
    );
    // The reason reaches the model in a follow-up on the same step, before
    // step 2 begins.
    let inputs = r.server.inputs();
    let reason = inputs
        .iter()
        .position(|l| {
            l.contains(
                "The user rejected a tool call: rm -rf build: CI still reads build/, keep it",
            )
        })
        .unwrap_or_else(|| panic!("the reason never reached the model: {inputs:?}"));
    let step2 = inputs
        .iter()
        .position(|l| l.contains("Carry out step 2 of 2"))
        .unwrap_or_else(|| panic!("no step 2 prompt: {inputs:?}"));
    assert!(reason < step2, "{inputs:?}");
    r.assert_supervised(run, "default");
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_retries_an_overloaded_api_by_itself_and_the_run_gets_through() {
    // Claude Code's own retry count (the default): one 529, then a retry.
    let r = real_world(
        "claude 529 once",
        Adapter::Claude,
        "overloaded-once.json",
        &[],
    )
    .await;
    let run = r.start("Say hello", Some(PlanStrategy::Skip));
    r.gate(run, &[GateKind::MergeReview]).await;
    r.state(run, RunState::PendingReview).await;
    let main = r.server.main_requests();
    assert!(main.len() >= 2, "{}", r.dump(run));
    assert_eq!(main[0]["reply"]["status"], 529);
    assert!(main[1]["reply"]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Recovered")));
    let activity = r.activity(run);
    assert!(
        !activity.iter().any(|a| a.kind == "deviation"),
        "{}",
        r.dump(run)
    );
    assert!(activity.iter().any(|a| a.kind == "message"
        && a.payload["text"]
            .as_str()
            .is_some_and(|t| t.contains("Recovered after the overload"))));
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_engine_restart_a_resumed_run_continues_claudes_session_in_its_supervised_mode() {
    let mut r = real_world(
        "claude resume",
        Adapter::Claude,
        "engine-resume.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    // The model request hangs: the turn is under way.
    let run = r.start_hanging("hang once").await;
    // The engine stops (its agents with it) and a new one starts on the
    // same data: the run is interrupted, and resuming it continues the
    // agent's own session.
    r.engine().stop_agents().await;
    let engine = Arc::new(
        Engine::open(
            r.paths.clone(),
            Arc::new(SystemClock),
            Arc::new(LogNotifier),
        )
        .expect("engine"),
    );
    engine.start_orchestrator();
    r.w.engine = engine;
    r.state(
        run,
        RunState::Released {
            reason: ReleaseReason::Interrupted,
        },
    )
    .await;
    let resumed = r
        .engine()
        .resume_run(run, &Actor::cli())
        .expect("resume")
        .run_id;
    r.state(resumed, RunState::PendingReview).await;
    let activity = r.activity(resumed);
    let session = activity
        .iter()
        .find(|a| a.kind == "session")
        .unwrap_or_else(|| panic!("{}", r.dump(resumed)));
    assert!(
        session.payload["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("resumed the agent's session")),
        "{}",
        r.dump(resumed)
    );
    let first_mode = activity
        .iter()
        .position(|a| a.kind == "mode")
        .expect("the mode is set");
    let first_prompt = activity
        .iter()
        .position(|a| a.kind == "message")
        .unwrap_or(usize::MAX);
    assert!(first_mode < first_prompt, "{}", r.dump(resumed));
    assert_eq!(activity[first_mode].payload["mode"], "default");
    r.assert_supervised(resumed, "default");
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_claude_mid_turn_cancels_the_turn_and_stops_its_whole_tree() {
    let r = real_world(
        "claude abort",
        Adapter::Claude,
        "resume.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    // The model request hangs: the turn is under way.
    let run = r.start_hanging("hang prompt").await;
    assert!(!r.agent_pids(run).is_empty(), "the adapter runs");
    r.engine().abort_run(run, &Actor::cli()).expect("abort");
    r.state(
        run,
        RunState::Released {
            reason: ReleaseReason::AbortedByUser,
        },
    )
    .await;
    r.until(run, "the adapter's whole tree to be gone", |_| {
        r.agent_pids(run).is_empty().then_some(())
    })
    .await;
    assert!(
        !r.activity(run).iter().any(|a| a.kind == "deviation"),
        "an abort is no failure: {}",
        r.dump(run)
    );
    let head = git(&r.w.repo, &["rev-list", "--count", "main"]);
    assert_eq!(head, "1", "nothing merged");
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_crashing_mid_turn_opens_a_deviation_and_nothing_is_merged() {
    let r = real_world(
        "claude crash",
        Adapter::Claude,
        "resume.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    // The model request hangs: the turn is under way.
    let run = r.start_hanging("hang prompt").await;
    let pids = r.agent_pids(run);
    assert!(!pids.is_empty(), "the adapter runs");
    let status = Command::new("kill")
        .arg("-9")
        .args(pids.iter().map(u32::to_string))
        .status()
        .expect("kill");
    assert!(status.success());
    let deviation = r.gate(run, &[GateKind::Deviation]).await;
    assert_eq!(
        deviation.payload["cause"], "turn_failed",
        "{}",
        deviation.payload
    );
    assert!(
        deviation.payload["error"]
            .as_str()
            .is_some_and(|e| e.contains("exited or crashed") || e.contains("connection")),
        "{}",
        deviation.payload
    );
    r.decide(&deviation, "stop", Some("the agent crashed"));
    r.state(
        run,
        RunState::Released {
            reason: ReleaseReason::Failed,
        },
    )
    .await;
    let log = git(&r.w.repo, &["log", "--oneline", "main"]);
    assert_eq!(log.lines().count(), 1, "nothing merged: {log}");
    assert_eq!(
        read(&r.w.repo.join("README.md")),
        "# Demo\n\nA demo project.\n"
    );
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_is_in_default_mode_before_its_first_tool_so_nothing_runs_unasked() {
    // claude-agent-acp 0.101 opens sessions in `auto`, where this Write would
    // run unasked. Overseer sets `default` first: the Write asks.
    let r = real_world(
        "claude default mode",
        Adapter::Claude,
        "engine-unasked-write.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    let run = r.start("Create the notes file", Some(PlanStrategy::Skip));
    let write = r.gate(run, &[GateKind::ToolCall]).await;
    assert_eq!(
        write.payload["tool_call"]["kind"], "edit",
        "{}",
        write.payload
    );
    let activity = r.activity(run);
    let session = activity
        .iter()
        .find(|a| a.kind == "session")
        .expect("session entry");
    let modes: Vec<&str> = session.payload["modes"]
        .as_array()
        .expect("modes")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(
        modes.contains(&"auto") && modes.contains(&"default"),
        "{modes:?}"
    );
    let worktree = r.worktree(run);
    assert!(!worktree.join("NOTES.md").exists());
    r.decide(&write, "no", None);
    r.gate(run, &[GateKind::MergeReview]).await;
    assert!(!worktree.join("NOTES.md").exists(), "refused, not written");
    r.assert_supervised(run, "default");
    // The model saw the refusal, so the tool never ran.
    assert!(r.server.sent("User refused permission to run tool"));
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_ask_user_question_is_a_question_gate_and_the_answer_reaches_the_model() {
    let r = real_world(
        "claude question",
        Adapter::Claude,
        "ask.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    let run = r.start("Ask me about the README", Some(PlanStrategy::Skip));
    let q = r.gate(run, &[GateKind::Question]).await;
    let props = &q.payload["schema"]["properties"];
    assert_eq!(props["question_0"]["title"], "Tone", "{}", q.payload);
    assert!(props["question_1"].is_object(), "{}", q.payload);
    r.decide(
        &q,
        "answer",
        Some(r#"{"question_0": "Friendly", "question_1": ["Install", "License"]}"#),
    );
    r.gate(run, &[GateKind::MergeReview]).await;
    assert!(
        r.server.latest().iter().any(|l| l
            .contains(r#""Which tone should the README take?"="Friendly""#)
            && l.contains("Install, License")),
        "{}",
        r.dump(run)
    );
    r.done();
}

// ------------------------------------------------------------------ Codex

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_in_read_only_asks_for_an_escalated_command_and_a_patch_and_a_no_keeps_the_file() {
    let r = real_world(
        "codex read-only",
        Adapter::Codex,
        "engine-codex-refuse.json",
        &[],
    )
    .await;
    let run = r.start("Write the notes and patch the README", None);
    // No plan mode in Codex: the plain-words planning prompt, a prose plan.
    let plan = r.gate(run, &[GateKind::Plan]).await;
    assert_eq!(plan.payload["source"], "prose", "{}", plan.payload);
    r.decide(&plan, "approve", None);

    let shell = r.gate(run, &[GateKind::ToolCall]).await;
    assert_eq!(
        shell.payload["tool_call"]["kind"], "execute",
        "{}",
        shell.payload
    );
    let worktree = r.worktree(run);
    assert!(!worktree.join("notes.txt").exists());
    r.decide(&shell, "yes", None);

    let patch = r
        .until(run, "the patch's gate", |e| {
            e.gates(true)
                .ok()?
                .into_iter()
                .find(|g| g.run_id == run && g.kind == GateKind::ToolCall && g.id != shell.id)
        })
        .await;
    assert_eq!(
        patch.payload["tool_call"]["kind"], "edit",
        "{}",
        patch.payload
    );
    assert_eq!(read(&worktree.join("notes.txt")), "hi\n");
    r.decide(&patch, "no", Some("leave the README alone"));
    // Codex ends its turn on a refusal (`abort`): that is the user's no, not
    // a failure. Overseer tells it why in a follow-up turn on the same step.
    r.state(run, RunState::PendingReview).await;
    assert!(
        r.server.sent("leave the README alone"),
        "the reason reached the model"
    );
    assert!(
        !r.activity(run).iter().any(|a| a.kind == "deviation"),
        "{}",
        r.dump(run)
    );
    assert_eq!(
        read(&worktree.join("README.md")),
        "# Demo\n\nA demo project.\n"
    );
    r.assert_supervised(run, "read-only");
    r.done();
}

// ------------------------------------------------------------------ demo

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_agent_that_switches_itself_to_auto_is_stopped_and_audited() {
    let started = Instant::now();
    let w = common::world(vec![]).await;
    let run = common::start(&w, "hijack");
    let plan = common::pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let gate = common::until(&w, "the mode breach gate", |e| {
        let gates = e.gates(true).ok()?;
        if let Some(g) = gates
            .iter()
            .find(|g| g.run_id == run && g.kind == GateKind::ToolCall)
        {
            panic!("the hijacked agent got a tool call gate: {}", g.title);
        }
        gates
            .into_iter()
            .find(|g| g.run_id == run && g.kind == GateKind::Deviation)
    })
    .await;
    assert_eq!(gate.payload["cause"], "mode_breach", "{}", gate.payload);
    assert_eq!(gate.payload["mode"], "auto", "{}", gate.payload);
    let ids: Vec<&str> = gate.options.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["retry", "stop"]);
    let worktree = w.engine.worktree_path("demo", run);
    assert_eq!(read(&worktree.join("src/greeting.txt")), "hello\n");
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity.iter().any(|a| a.kind == "security"),
        "{activity:?}"
    );
    // The audit log has the security event.
    let paths = Paths {
        data_dir: w._dir.path().join("data"),
        config_dir: w._dir.path().join("config"),
    };
    let events: Vec<Value> = audit_payloads(&paths)
        .into_iter()
        .filter(|p| p["type"] == "security_event")
        .collect();
    assert!(
        events.iter().any(|e| e["run_id"] == run
            && e["mode"] == "auto"
            && e["event"] == "unsupervised_mode"),
        "{events:?}"
    );
    w.engine
        .decide_gate(gate.id, "stop", None, &Actor::cli())
        .expect("stop");
    common::state(
        &w,
        run,
        RunState::Released {
            reason: ReleaseReason::Failed,
        },
    )
    .await;
    assert_eq!(read(&worktree.join("src/greeting.txt")), "hello\n");
    assert!(w.engine.verify_audit().expect("read").is_ok());
    eprintln!(
        "[demo hijack] passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
