//! The harness for driving the real ACP adapters end to end (shared by
//! `real_agents.rs` and `security.rs`): claude-agent-acp and codex-acp from
//! `tests/real-agents/node_modules`, each pointed at
//! `tests/real-agents/model-server.mjs`, a scripted offline model server.
//!
//! Every per-run directory (the engine's data, the agents' HOME, TMPDIR and
//! CODEX_HOME) is under the target dir, not /tmp: Codex refuses to put its
//! sandbox helper under /tmp.
use crate::common::{repo_with, World};
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, GateKind, GateView, RunState};
use overseer_engine::{Engine, LogNotifier, Notifier, Paths, SystemClock, TaskStart};
use overseer_store::{TaskSettings, WorkspaceSettings};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long any one wait may take before the test fails with a dump.
pub const WAIT: Duration = Duration::from_secs(90);

pub use overseer_test_support::model_server::{adapter, real_agents_dir, ModelServer};

/// What the tests read from the model server's log of requests.
pub trait Logged {
    /// Every logged request, in order.
    fn entries(&self) -> Vec<Value>;

    /// The agent's main model requests (those that carry its tools).
    fn main_entries(&self) -> Vec<Value> {
        self.entries()
            .into_iter()
            .filter(|e| e["main"] == true)
            .collect()
    }

    /// The latest inputs of the main requests.
    fn latest(&self) -> Vec<String> {
        self.main_entries()
            .iter()
            .map(|e| e["latest"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The whole text of each main request's latest user input (the log's
    /// `latest` is cut at 2000 characters; Claude prefixes system reminders).
    fn inputs(&self) -> Vec<String> {
        self.main_entries()
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
        self.main_entries()
            .iter()
            .any(|e| e["body"].to_string().contains(text))
    }
}

impl Logged for ModelServer {
    fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    Claude,
    Codex,
    /// Qwen Code (`qwen --acp`), on the OpenAI Responses API; its profile
    /// names no mode (Overseer picks one that asks).
    Qwen,
}

impl Adapter {
    pub fn name(self) -> &'static str {
        match self {
            Adapter::Claude => "claude",
            Adapter::Codex => "codex",
            Adapter::Qwen => "qwen",
        }
    }
}

/// One engine, one repository, one model server, one adapter profile.
pub struct Real {
    /// The data dir's own small filesystem ([`Setup::small_disk`]), first
    /// to go: lazily unmounted, so the temp dir under it can be removed.
    /// Held only to be dropped.
    pub _disk: Option<crate::common::disk::Mounted>,
    pub w: World,
    pub server: ModelServer,
    pub paths: Paths,
    pub agent: Adapter,
    pub started: Instant,
    pub name: &'static str,
}

/// Whether a `.jsonl` file under `dir` (an agent's session transcript)
/// holds `text`.
fn transcript_names(dir: &Path, text: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => transcript_names(&p, text),
            Ok(t) if t.is_file() && p.extension().is_some_and(|x| x == "jsonl") => {
                // The prompt as an entry of the agent's own transcript (a
                // user message in its conversation tree), not the scripted
                // server's request log beside it, which names the prompt at
                // once and let the wait end before the agent wrote anything
                // (a session resumed then found no message, seen under load).
                std::fs::read_to_string(&p).is_ok_and(|t| {
                    t.lines().any(|l| {
                        l.contains(text)
                            && l.contains("\"type\":\"user\"")
                            && l.contains("\"parentUuid\"")
                    })
                })
            }
            _ => false,
        }
    })
}

/// `overseer.toml` text for a TOML string (paths, URLs: no control characters).
pub fn toml_str(s: impl AsRef<str>) -> String {
    format!("{:?}", s.as_ref())
}

/// What a test adds to the standard world: extra profile environment, files
/// committed in the repository, and the workspace's settings.
#[derive(Default)]
pub struct Setup<'a> {
    pub env: &'a [(&'a str, &'a str)],
    pub files: Vec<(String, String)>,
    pub workspace: WorkspaceSettings,
    /// More lines of the agent's profile in `overseer.toml` (`limits = ...`).
    pub profile: &'a str,
    /// Who hears the engine's notifications (else the log).
    pub notifier: Option<Arc<dyn Notifier>>,
    /// More tables of `overseer.toml` (`[disk]`), after the profile.
    pub config: &'a str,
    /// The data dir on a tmpfs of this size of its own (the full-disk
    /// attack; call `common::disk::may_mount` first).
    pub small_disk: Option<&'a str>,
    /// The run gets the default private network (its own namespace: the
    /// host's loopback and this machine's own addresses out of reach)
    /// instead of the host's: the scripted model server then runs on
    /// "another machine" (a network namespace joined by a veth pair; root),
    /// which the run reaches as any outside server.
    pub private_network: bool,
}

pub async fn real_world(
    name: &'static str,
    agent: Adapter,
    script: &str,
    extra_env: &[(&str, &str)],
) -> Real {
    real_world_with(
        name,
        agent,
        script,
        Setup {
            env: extra_env,
            ..Default::default()
        },
    )
    .await
}

pub async fn real_world_with(
    name: &'static str,
    agent: Adapter,
    script: &str,
    setup: Setup<'_>,
) -> Real {
    let extra_env = setup.env;
    let started = Instant::now();
    let bin = adapter(match agent {
        Adapter::Claude => "claude-agent-acp",
        Adapter::Codex => "codex-acp",
        Adapter::Qwen => "qwen",
    });
    let dir = tempfile::Builder::new()
        .prefix("real-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("tempdir under the target dir");
    let root = dir.path().to_owned();
    // A script may name the test's temp root (`@ROOT@`): paths the agent
    // writes to are only known here.
    let text = std::fs::read_to_string(real_agents_dir().join("scripts").join(script))
        .unwrap_or_else(|e| panic!("script {script}: {e}"));
    let filled = root.join("script.json");
    std::fs::write(&filled, text.replace("@ROOT@", &root.to_string_lossy())).expect("script");
    // A run with its private network reaches no address of this machine:
    // its model is on "another machine", as a vendor's API is.
    let server = if setup.private_network {
        ModelServer::start_outside(&filled.to_string_lossy(), &root.join("model.jsonl"))
    } else {
        ModelServer::start(
            &filled.to_string_lossy(),
            &root.join("model.jsonl"),
            "127.0.0.1",
        )
    };
    let model_host = server.host.clone();

    let mut files = vec![
        ("README.md", "# Demo\n\nA demo project.\n"),
        ("build/out.txt", "x\n"),
    ];
    files.extend(setup.files.iter().map(|(p, t)| (p.as_ref(), t.as_ref())));
    let repo = repo_with(&root.join("repo"), &files);

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
                        format!("http://{model_host}:{}", server.port),
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
                     name = \"mock\"\nbase_url = \"http://{model_host}:{}/v1\"\nenv_key = \"MOCK_API_KEY\"\n\
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
        Adapter::Qwen => env.push(("OPENAI_API_KEY".into(), "dummy".into())),
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
        Adapter::Claude => "mode = \"default\"\n".to_owned(),
        Adapter::Codex => "mode = \"read-only\"\n".to_owned(),
        Adapter::Qwen => format!(
            "args = [\"--acp\", \"--auth-type\", \"openai-responses\", \"--openai-base-url\", \
             \"http://{model_host}:{}/v1\", \"--openai-api-key\", \"dummy\", \"--model\", \"gpt-4o\"]\n",
            server.port
        ),
    };
    let network = if setup.private_network {
        "private"
    } else {
        "host"
    };
    let config = root.join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("overseer.toml"),
        format!(
            // network = "host": the scripted model server listens on this
            // machine's loopback, as a model served locally would (unless
            // the run has its private network: see `Setup`).
            "abort_timeout_seconds = 2\n\n[agents.{}]\ncommand = {}\n{mode}network = {network:?}\nenv = {{ {env_toml} }}\n{}\n{}\n",
            agent.name(),
            toml_str(bin.to_string_lossy()),
            setup.profile,
            setup.config,
        ),
    )
    .expect("overseer.toml");
    let paths = Paths {
        data_dir: root.join("data"),
        config_dir: config,
    };
    let disk = setup
        .small_disk
        .map(|size| crate::common::disk::small_disk(&paths.data_dir, size));
    let engine = Arc::new(
        Engine::open(
            paths.clone(),
            Arc::new(SystemClock),
            setup.notifier.unwrap_or_else(|| Arc::new(LogNotifier)),
        )
        .expect("engine"),
    );
    engine
        .add_workspace(&repo, Some("proj"), setup.workspace, &Actor::cli())
        .expect("workspace");
    engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    Real {
        _disk: disk,
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
    pub fn engine(&self) -> &Engine {
        &self.w.engine
    }

    /// Starts a task without a plan whose first model request the script
    /// leaves unanswered, and returns once that request is out.
    pub async fn start_hanging(&self, prompt: &str) -> overseer_core::RunId {
        let run = self.start(prompt, Some(PlanStrategy::Skip));
        self.until(run, "the hanging model request", |_| {
            self.server
                .main_entries()
                .iter()
                .any(|e| e["reply"]["hang"] == true)
                .then_some(())
        })
        .await;
        // The agent writes its own transcript (what a resumed session reads)
        // on its own schedule, after it sent the request: a test that stops
        // the engine now must not race it (seen on a loaded machine: the
        // resumed session found no message and the agent started afresh).
        // Agents that keep none go on after 10 s.
        let root = self.paths.data_dir.parent().map(Path::to_owned);
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Some(root) = &root {
            if transcript_names(root, prompt) || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        run
    }

    pub fn start(&self, prompt: &str, plan: Option<PlanStrategy>) -> overseer_core::RunId {
        self.engine()
            .start_task(
                &TaskStart {
                    workspace: "proj".into(),
                    agent: self.agent.name().into(),
                    prompt: prompt.into(),
                    title: None,
                    scenario: None,
                    stage: None,
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

    pub fn worktree(&self, run: overseer_core::RunId) -> PathBuf {
        self.engine().worktree_path("proj", run)
    }

    pub fn activity(&self, run: overseer_core::RunId) -> Vec<overseer_core::ActivityView> {
        self.engine().activity(run, 0).expect("activity")
    }

    /// What went on, for a failure message.
    pub fn dump(&self, run: overseer_core::RunId) -> String {
        let activity: Vec<String> = self
            .activity(run)
            .iter()
            .map(|a| {
                let mut p = a.payload().to_string();
                if p.len() > 600 {
                    p = format!("{}…", p.chars().take(600).collect::<String>());
                }
                format!("  {} {p}", a.kind())
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
                .map(|g| (g.kind(), g.title.clone()))
                .collect::<Vec<_>>(),
            activity.join("\n"),
            requests.join("\n")
        )
    }

    /// Waits until `pred` holds, re-checking on every engine event.
    pub async fn until<T>(
        &self,
        run: overseer_core::RunId,
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
    pub async fn gate(&self, run: overseer_core::RunId, kinds: &[GateKind]) -> GateView {
        let what = format!("a {kinds:?} gate");
        self.until(run, &what, |e| {
            for g in e.gates(true).ok()?.into_iter().filter(|g| g.run_id == run) {
                if kinds.contains(&g.kind()) {
                    return Some(g);
                }
                if g.kind() == GateKind::StepReview {
                    e.decide_gate(g.id, "proceed", None, &Actor::cli())
                        .expect("proceed");
                    continue;
                }
                panic!(
                    "[{}] unexpected {:?} gate `{}` while waiting for {what}: {}\n{}",
                    self.name,
                    g.kind(),
                    g.title,
                    g.body.payload_json(),
                    self.dump(run)
                );
            }
            None
        })
        .await
    }

    pub fn decide(&self, gate: &GateView, option: &str, context: Option<&str>) {
        self.engine()
            .decide_gate(gate.id, option, context, &Actor::cli())
            .unwrap_or_else(|e| panic!("decide {option} on {:?}: {}", gate.kind(), e.message));
    }

    pub async fn state(&self, run: overseer_core::RunId, want: RunState) {
        self.until(run, &format!("run {run} to be {want}"), |e| {
            (e.run(run).ok()?.state == want).then_some(())
        })
        .await;
    }

    /// The run's agent processes (by the engine's marker), not zombies.
    pub fn agent_pids(&self, run: overseer_core::RunId) -> Vec<u32> {
        self.marked_pids(&self.engine().agent_marker(run))
    }

    /// The processes of the run's checks (sensors), not zombies.
    pub fn sensor_pids(&self, run: overseer_core::RunId) -> Vec<u32> {
        self.marked_pids(&format!("{}-sensors", self.engine().agent_marker(run)))
    }

    /// The processes whose environment carries exactly `marker`.
    fn marked_pids(&self, marker: &str) -> Vec<u32> {
        crate::common::marked_pids(marker)
    }

    /// Checks what every run of a real adapter must show: the session was
    /// put in its supervised mode before any tool ran, no mode breach, and
    /// every tool call that changes something and completed was asked and
    /// answered yes.
    pub fn assert_supervised(&self, run: overseer_core::RunId, mode: &str) {
        let activity = self.activity(run);
        let set = activity
            .iter()
            .find(|a| {
                a.kind() == "mode"
                    && a.payload()["mode"] == mode
                    && a.payload()["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("works in mode"))
            })
            .unwrap_or_else(|| panic!("mode `{mode}` was never set\n{}", self.dump(run)));
        if let Some(first_tool) = activity.iter().find(|a| a.kind() == "tool_call") {
            assert!(set.id < first_tool.id, "a tool ran before the mode was set");
        }
        assert!(
            !activity.iter().any(|a| a.kind() == "security"),
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
            .filter(|g| g.run_id == run && g.kind() == GateKind::ToolCall)
            .filter(|g| g.decision.as_ref().is_some_and(|d| d.option == "yes"))
            .filter_map(|g| {
                g.body.payload_json()["tool_call"]["id"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        for a in &activity {
            let p = &a.payload();
            let changes = matches!(
                p["kind"].as_str(),
                Some("edit" | "delete" | "move" | "execute")
            );
            if a.kind() == "tool_call" && changes && p["status"] == "completed" {
                let id = p["id"].as_str().unwrap_or_default();
                assert!(
                    yes.iter().any(|y| y == id),
                    "tool call {id} ran without a yes: {p}\n{}",
                    self.dump(run)
                );
            }
        }
    }

    pub fn done(&self) {
        eprintln!(
            "[{}] passed in {:.1} s",
            self.name,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// Every audit record's payload, read through a second connection.
pub fn audit_payloads(paths: &Paths) -> Vec<Value> {
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
pub fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(text_of).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => o.values().map(text_of).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
