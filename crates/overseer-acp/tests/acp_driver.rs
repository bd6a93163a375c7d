//! The ACP driver against the scripted demo agent: real processes, real pipes,
//! real git repositories in temp dirs. A few cases that the demo agent cannot
//! produce on purpose (a 10 MB line, an agent dying mid-turn) use an
//! in-process fake agent over `tokio::io::duplex`.

use overseer_acp::{
    AgentConnection, AgentSignal, DriverError, PermissionChoice, PermissionReply, PlanEntry,
    QuestionReply, StopReason, ToolCallInfo,
};
use overseer_core::plan::{parse_plan, planning_prompt};
use overseer_test_support::{demo_agent, git, repo_with};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Generous: a turn takes milliseconds with OVERSEER_DEMO_STEP_MS=0, but the
/// machine may be busy.
const TURN: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- harness

/// A temp dir holding `repo/`, a git repository with one commit. The parent
/// is ours too, so escapes land somewhere we can check and clean.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = repo_with(&tmp.path().join("repo"), &[("README.md", "hello\n")]);
    (tmp, repo)
}

/// What the test saw, without the reply senders.
#[derive(Debug, Clone)]
enum Seen {
    Message(String),
    Thought(String),
    Plan(Vec<PlanEntry>),
    ToolCall(ToolCallInfo),
    Permission(ToolCallInfo, Vec<PermissionChoice>),
    Question(String, serde_json::Value),
    FileRead(PathBuf),
    FileWritten(PathBuf, usize),
    FileRefused(String, String),
    ProtocolError(String),
    Mode(String, Option<String>),
    Unasked(ToolCallInfo, String),
    Usage(u64, u64, Option<(f64, String)>),
}

/// How the test answers permission requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// Choose the option of kind `allow_once`.
    AllowOnce,
    /// Choose the option of kind `reject_once`.
    Reject,
    /// Never answer (the reply is kept so it is not dropped).
    Hold,
}

struct Agent {
    conn: AgentConnection,
    signals: mpsc::Receiver<AgentSignal>,
    child: tokio::process::Child,
    repo: PathBuf,
    _tmp: tempfile::TempDir,
    policy: Policy,
    question_reply: QuestionReply,
    held: Vec<tokio::sync::oneshot::Sender<PermissionReply>>,
}

async fn launch(scenario: &str) -> Agent {
    launch_with(scenario, std::process::Stdio::inherit()).await
}

async fn launch_with(scenario: &str, stderr: std::process::Stdio) -> Agent {
    let agent = launch_in_starting_mode(scenario, stderr).await;
    // As Overseer does: out of the demo's starting `auto`, into `default`.
    agent.conn.set_mode("default").await.expect("set mode");
    agent
}

/// The agent as it starts: in `auto`, like claude-agent-acp 0.101.
async fn launch_in_starting_mode(scenario: &str, stderr: std::process::Stdio) -> Agent {
    let (tmp, repo) = repo();
    let mut child = tokio::process::Command::new(demo_agent())
        .env("OVERSEER_DEMO_SCENARIO", scenario)
        .env("OVERSEER_DEMO_STEP_MS", "0")
        .current_dir(&repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn demo agent");
    let stdout = child.stdout.take().expect("stdout");
    let stdin = child.stdin.take().expect("stdin");
    let (conn, signals) = tokio::time::timeout(
        TURN,
        AgentConnection::start(stdout, stdin, repo.clone(), "overseer-tests"),
    )
    .await
    .expect("handshake in time")
    .expect("handshake");
    Agent {
        conn,
        signals,
        child,
        repo,
        _tmp: tmp,
        policy: Policy::AllowOnce,
        question_reply: QuestionReply::Decline,
        held: Vec::new(),
    }
}

impl Agent {
    /// Prompts and serves signals until the turn ends; returns both.
    async fn turn(&mut self, text: &str) -> (Result<StopReason, DriverError>, Vec<Seen>) {
        let mut seen = Vec::new();
        let prompt = self.conn.prompt(text);
        tokio::pin!(prompt);
        let result = tokio::time::timeout(TURN, async {
            loop {
                tokio::select! {
                    biased;
                    Some(signal) = self.signals.recv() => {
                        answer(signal, self.policy, &self.question_reply, &mut self.held, &mut seen);
                    }
                    result = &mut prompt => break result,
                }
            }
        })
        .await
        .expect("the turn ends in time");
        // Everything the agent sent before its answer is queued by now.
        while let Ok(signal) = self.signals.try_recv() {
            answer(
                signal,
                self.policy,
                &self.question_reply,
                &mut self.held,
                &mut seen,
            );
        }
        (result, seen)
    }

    async fn plan(&mut self) -> Vec<Seen> {
        let (result, seen) = self
            .turn(&planning_prompt("Add a greeting to the project", ""))
            .await;
        assert_eq!(result.expect("plan turn"), StopReason::EndTurn);
        seen
    }

    /// Both steps of the demo's two-step plans, one turn each, as Overseer
    /// prompts them; stops at the first turn that does not end normally.
    async fn execute(&mut self) -> (Result<StopReason, DriverError>, Vec<Seen>) {
        let mut all = Vec::new();
        let mut last = Ok(StopReason::EndTurn);
        for step in 1..=2 {
            let (result, seen) = self.turn(&step_text(step)).await;
            all.extend(seen);
            let ended = matches!(result, Ok(StopReason::EndTurn));
            last = result;
            if !ended {
                break;
            }
        }
        (last, all)
    }

    fn commits(&self) -> usize {
        git(&self.repo, &["rev-list", "--count", "HEAD"])
            .parse()
            .expect("count")
    }
}

fn answer(
    signal: AgentSignal,
    policy: Policy,
    question_reply: &QuestionReply,
    held: &mut Vec<tokio::sync::oneshot::Sender<PermissionReply>>,
    seen: &mut Vec<Seen>,
) {
    let entry = match signal {
        AgentSignal::Message { text } => Seen::Message(text),
        AgentSignal::Thought { text } => Seen::Thought(text),
        AgentSignal::Plan { entries } => Seen::Plan(entries),
        AgentSignal::ToolCall(call) => Seen::ToolCall(call),
        AgentSignal::Permission {
            tool_call,
            options,
            reply,
        } => {
            let kind = match policy {
                Policy::AllowOnce => Some("allow_once"),
                Policy::Reject => Some("reject_once"),
                Policy::Hold => None,
            };
            match kind.and_then(|k| options.iter().find(|o| o.kind == k)) {
                Some(option) => {
                    let _ = reply.send(PermissionReply::Selected {
                        option_id: option.option_id.clone(),
                    });
                }
                None => held.push(reply),
            }
            Seen::Permission(tool_call, options)
        }
        AgentSignal::Question {
            message,
            schema,
            reply,
        } => {
            let _ = reply.send(question_reply.clone());
            Seen::Question(message, schema)
        }
        AgentSignal::FileRead { path } => Seen::FileRead(path),
        AgentSignal::FileWritten { path, bytes } => Seen::FileWritten(path, bytes),
        AgentSignal::FileRefused { path, reason } => Seen::FileRefused(path, reason),
        AgentSignal::ProtocolError { detail } => Seen::ProtocolError(detail),
        AgentSignal::ModeChanged { mode, breach } => Seen::Mode(mode, breach),
        AgentSignal::Unasked { tool_call, why } => Seen::Unasked(tool_call, why),
        AgentSignal::Usage { used, size, cost } => Seen::Usage(used, size, cost),
        AgentSignal::Settled(done) => {
            let _ = done.send(());
            return;
        }
    };
    seen.push(entry);
}

/// The prompt of step `n` (1-based) of a two-step plan.
fn step_text(n: usize) -> String {
    format!("Carry out step {n} of 2 of the approved plan: go")
}

fn message(seen: &[Seen]) -> String {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Message(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn written(seen: &[Seen]) -> Vec<PathBuf> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::FileWritten(p, _) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

fn permissions(seen: &[Seen]) -> Vec<(ToolCallInfo, Vec<PermissionChoice>)> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Permission(t, o) => Some((t.clone(), o.clone())),
            _ => None,
        })
        .collect()
}

fn protocol_errors(seen: &[Seen]) -> Vec<String> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::ProtocolError(d) => Some(d.clone()),
            _ => None,
        })
        .collect()
}

fn last_plan(seen: &[Seen]) -> Vec<PlanEntry> {
    seen.iter()
        .rev()
        .find_map(|s| match s {
            Seen::Plan(e) => Some(e.clone()),
            _ => None,
        })
        .expect("a plan update")
}

// ---------------------------------------------------------------- demo agent

#[tokio::test]
async fn happy_run_plans_then_writes_through_the_client_and_commits() {
    let mut agent = launch("happy").await;
    assert!(!agent.conn.session_id().is_empty());
    assert_eq!(agent.conn.mode_ids(), ["default", "plan", "auto"]);
    assert_eq!(agent.conn.current_mode().as_deref(), Some("default"));

    let seen = agent.plan().await;
    let plan = parse_plan(&message(&seen)).expect("a plan block in the message");
    assert_eq!(plan.goal, "Add a greeting to the project");
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(plan.steps[0].agent.as_deref(), Some("demo"));
    assert_eq!(plan.files, ["src/greeting.txt", "NOTES.md"]);
    assert!(last_plan(&seen).iter().all(|e| e.status == "pending"));
    assert!(seen
        .iter()
        .any(|s| matches!(s, Seen::Thought(t) if t.contains("README"))));
    assert!(
        seen.iter()
            .any(|s| matches!(s, Seen::FileRead(p) if p == Path::new("README.md"))),
        "the agent read README.md through the client"
    );
    assert!(written(&seen).is_empty(), "planning edits nothing");

    let (result, seen) = agent.execute().await;
    assert_eq!(result.expect("execute turn"), StopReason::EndTurn);
    let asked = permissions(&seen);
    assert_eq!(asked.len(), 2, "one permission per edit");
    for (call, options) in &asked {
        assert_eq!(
            call.kind.map(|k| k.as_str()),
            Some("edit"),
            "kind joined from the tool_call update"
        );
        let kinds: Vec<&str> = options.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    }
    assert_eq!(
        written(&seen),
        [PathBuf::from("src/greeting.txt"), PathBuf::from("NOTES.md")]
    );
    let greeting = std::fs::read_to_string(agent.repo.join("src/greeting.txt")).expect("greeting");
    assert!(greeting.contains("Hello"));
    assert!(seen
        .iter()
        .any(|s| matches!(s, Seen::FileWritten(p, n) if p == Path::new("src/greeting.txt") && *n == greeting.len())));
    assert!(last_plan(&seen).iter().all(|e| e.status == "completed"));
    assert!(message(&seen).contains("Committed"));

    assert_eq!(agent.commits(), 3, "one commit per step");
    assert_eq!(
        git(&agent.repo, &["log", "-1", "--format=%an <%ae>"]),
        "Overseer Demo Agent <demo@overseer.invalid>"
    );
    assert_eq!(
        git(&agent.repo, &["status", "--porcelain"]),
        "",
        "everything committed"
    );
}

#[tokio::test]
async fn tool_call_updates_are_merged_by_id_into_one_state_each() {
    let mut agent = launch("happy").await;
    agent.plan().await;
    let (result, seen) = agent.execute().await;
    assert_eq!(result.expect("execute"), StopReason::EndTurn);

    let calls: Vec<&ToolCallInfo> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::ToolCall(c) => Some(c),
            _ => None,
        })
        .collect();
    let mut ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    ids.dedup();
    assert_eq!(
        ids.len(),
        2,
        "two tool calls, each announced and updated: {ids:?}"
    );

    for id in ids {
        let states: Vec<&&ToolCallInfo> = calls.iter().filter(|c| c.id == id).collect();
        // Announced with an empty input (nothing known yet), then complete,
        // then in progress, then done; a later empty input erases nothing.
        assert_eq!(states[0].raw_input, None);
        let last = states.last().expect("a state");
        assert_eq!(last.status.map(|s| s.as_str()), Some("completed"));
        assert_eq!(
            last.kind.map(|k| k.as_str()),
            Some("edit"),
            "a status update keeps the kind"
        );
        assert!(last
            .raw_input
            .as_ref()
            .is_some_and(|i| i.get("content").is_some()));
        assert_eq!(last.locations.len(), 1);
        assert!(last
            .title
            .as_deref()
            .is_some_and(|t| t.starts_with("Edit ")));
    }
}

#[tokio::test]
async fn a_rejected_permission_stops_the_turn_and_guidance_resumes_it() {
    let mut agent = launch("happy").await;
    agent.plan().await;

    agent.policy = Policy::Reject;
    let (result, seen) = agent.turn(&step_text(1)).await;
    assert_eq!(result.expect("execute"), StopReason::EndTurn);
    assert_eq!(
        permissions(&seen).len(),
        1,
        "no further asks after a rejection"
    );
    assert!(written(&seen).is_empty());
    assert!(message(&seen).contains("Stopped"));
    assert!(!agent.repo.join("src/greeting.txt").exists());
    assert_eq!(agent.commits(), 1, "nothing committed");

    // The reason goes in the next prompt; the agent picks up from there.
    agent.policy = Policy::AllowOnce;
    let (result, seen) = agent
        .turn("Rejected: please keep the greeting short.")
        .await;
    assert_eq!(result.expect("follow-up"), StopReason::EndTurn);
    assert!(message(&seen).starts_with("Understood: Rejected"));
    assert_eq!(
        written(&seen),
        [PathBuf::from("src/greeting.txt")],
        "the follow-up resumes the step it was in, no further"
    );
    assert_eq!(agent.commits(), 2);
}

#[tokio::test]
async fn writes_outside_the_worktree_are_refused_and_reported() {
    let mut agent = launch("escape").await;
    let (result, seen) = agent.turn(&step_text(1)).await;
    assert_eq!(result.expect("execute"), StopReason::EndTurn);

    let refused: Vec<(String, String)> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::FileRefused(p, r) => Some((p.clone(), r.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 3, "{refused:#?}");
    assert!(refused
        .iter()
        .all(|(_, reason)| reason.contains("outside the run's worktree")));
    assert!(written(&seen).is_empty());
    let outside = agent.repo.parent().expect("parent");
    for name in [
        "escaped-dotdot.txt",
        "escaped-absolute.txt",
        "escaped-via-link.txt",
    ] {
        assert!(!outside.join(name).exists(), "{name} was written");
    }
    // The agent got an error for each and said so.
    assert_eq!(
        message(&seen).matches("refused:").count(),
        3,
        "{}",
        message(&seen)
    );
}

#[tokio::test]
async fn a_flaky_step_fails_the_prompt_and_a_retry_succeeds() {
    let mut agent = launch("flaky").await;
    agent.plan().await;

    let (result, seen) = agent.execute().await;
    match result {
        Err(DriverError::Agent {
            method, message, ..
        }) => {
            assert_eq!(method, "session/prompt");
            assert_eq!(message, "step 2 failed: test timeout");
        }
        other => panic!("expected the prompt to fail, got {other:?}"),
    }
    assert_eq!(
        written(&seen),
        [PathBuf::from("src/greeting.txt")],
        "step 1 was written"
    );
    assert!(!agent.repo.join("NOTES.md").exists());

    let (result, seen) = agent
        .turn("Retry: the last attempt failed with \"step 2 failed: test timeout\".")
        .await;
    assert_eq!(result.expect("retry"), StopReason::EndTurn);
    assert_eq!(
        written(&seen),
        [PathBuf::from("NOTES.md")],
        "only the remaining step"
    );
    assert_eq!(agent.commits(), 3);
}

#[tokio::test]
async fn usage_updates_reach_the_client_as_sent() {
    let mut agent = launch("costly").await;
    agent.plan().await;
    let (result, seen) = agent.execute().await;
    assert_eq!(result.expect("execute"), StopReason::EndTurn);
    let usage: Vec<_> = seen
        .into_iter()
        .filter_map(|s| match s {
            Seen::Usage(used, size, cost) => Some((used, size, cost)),
            _ => None,
        })
        .collect();
    let usd = |amount: f64| Some((amount, "USD".to_owned()));
    // Unchecked at the wire: judging the figures is the engine's.
    assert_eq!(
        usage,
        [
            (10_000, 200_000, usd(0.25)),
            (10_000, 200_000, usd(-1.0)),
            (10_000, 200_000, usd(0.01)),
            (20_000, 200_000, usd(0.5)),
        ]
    );
}

#[tokio::test]
async fn garbage_on_stdout_is_reported_and_the_run_goes_on() {
    let mut agent = launch("garbage").await;
    agent.plan().await;
    let (result, seen) = agent.execute().await;
    assert_eq!(
        result.expect("execute despite garbage"),
        StopReason::EndTurn
    );
    let errors = protocol_errors(&seen);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(errors[0].contains("not JSON"));
    assert!(errors[1].contains("not UTF-8"));
    assert!(errors[2].contains("not JSON"), "the 2 MiB line");
    assert!(
        errors.iter().all(|e| e.len() < 400),
        "reports quote only a little"
    );
    assert_eq!(written(&seen).len(), 2);
    assert_eq!(agent.commits(), 3);
}

#[tokio::test]
async fn questions_round_trip_through_a_form_and_shape_the_plan() {
    let mut agent = launch("questions").await;
    agent.question_reply = QuestionReply::Accept {
        content: serde_json::json!({
            "framework": "react",
            "add_tests": true,
            "notes": "keep it short",
        }),
    };
    let seen = agent.plan().await;
    let (question, schema) = seen
        .iter()
        .find_map(|s| match s {
            Seen::Question(m, s) => Some((m.clone(), s.clone())),
            _ => None,
        })
        .expect("a question");
    assert!(question.contains("questions"));
    assert_eq!(
        schema["properties"]["framework"]["enum"],
        serde_json::json!(["svelte", "react", "vue"])
    );
    assert_eq!(schema["properties"]["add_tests"]["type"], "boolean");
    assert_eq!(schema["properties"]["notes"]["type"], "string");

    let plan = parse_plan(&message(&seen)).expect("plan");
    assert_eq!(
        plan.goal,
        "Add a react greeting, with tests (notes: keep it short)"
    );
}

#[tokio::test]
async fn a_declined_question_plans_with_defaults() {
    let mut agent = launch("questions").await;
    agent.question_reply = QuestionReply::Decline;
    let seen = agent.plan().await;
    let plan = parse_plan(&message(&seen)).expect("plan");
    assert!(plan.goal.contains("no answers given"), "{}", plan.goal);
}

#[tokio::test]
async fn drift_writes_a_file_the_plan_did_not_declare() {
    let mut agent = launch("drift").await;
    let plan = parse_plan(&message(&agent.plan().await)).expect("plan");
    let (result, seen) = agent.execute().await;
    assert_eq!(result.expect("execute"), StopReason::EndTurn);
    let undeclared: Vec<PathBuf> = written(&seen)
        .into_iter()
        .filter(|p| !plan.files.iter().any(|f| Path::new(f) == p))
        .collect();
    assert_eq!(undeclared, [PathBuf::from("config/settings.toml")]);
    assert!(agent.repo.join("config/settings.toml").exists());
}

#[tokio::test]
async fn destructive_asks_before_rm_rf_and_before_editing_env() {
    let mut agent = launch("destructive").await;
    std::fs::create_dir_all(agent.repo.join("build")).expect("mkdir");
    std::fs::write(agent.repo.join("build/out.o"), "x").expect("write");
    agent.plan().await;
    let (result, seen) = agent.execute().await;
    assert_eq!(result.expect("execute"), StopReason::EndTurn);
    let asked = permissions(&seen);
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].0.kind.map(|k| k.as_str()), Some("execute"));
    assert_eq!(
        asked[0].0.raw_input,
        Some(serde_json::json!({ "command": "rm -rf build/" }))
    );
    assert_eq!(asked[1].0.kind.map(|k| k.as_str()), Some("edit"));
    assert!(asked[1].0.locations.iter().any(|l| l.ends_with(".env")));
    assert!(!agent.repo.join("build").exists());
    assert_eq!(
        std::fs::read_to_string(agent.repo.join(".env")).expect(".env"),
        "DEMO_MODE=1\n"
    );
}

#[tokio::test]
async fn cancelling_answers_a_pending_permission_cancelled() {
    let mut agent = launch("happy").await;
    agent.plan().await;
    agent.policy = Policy::Hold;

    let conn = &agent.conn;
    let text = step_text(1);
    let prompt = conn.prompt(&text);
    tokio::pin!(prompt);
    let mut held = Vec::new();
    let result = tokio::time::timeout(TURN, async {
        loop {
            tokio::select! {
                Some(signal) = agent.signals.recv() => {
                    if let AgentSignal::Permission { reply, .. } = signal {
                        held.push(reply); // the human has not decided yet
                        conn.cancel().await.expect("cancel");
                    }
                }
                result = &mut prompt => break result,
            }
        }
    })
    .await
    .expect("the turn ends after cancel");
    assert_eq!(result.expect("prompt"), StopReason::Cancelled);
    assert_eq!(held.len(), 1);
    assert!(
        held[0].is_closed(),
        "the driver answered for us and let go of the reply"
    );
    assert!(!agent.repo.join("src/greeting.txt").exists());
}

#[tokio::test]
async fn without_a_listener_permissions_are_cancelled_never_allowed() {
    let mut agent = launch("happy").await;
    agent.plan().await;
    let (_, closed) = mpsc::channel(1);
    drop(std::mem::replace(&mut agent.signals, closed));
    let result = tokio::time::timeout(TURN, agent.conn.prompt(&step_text(1)))
        .await
        .expect("in time");
    assert_eq!(result.expect("prompt"), StopReason::Cancelled);
    assert!(!agent.repo.join("src/greeting.txt").exists());
    assert_eq!(agent.commits(), 1);
}

#[tokio::test]
async fn cancel_during_a_stubborn_turn_returns_promptly() {
    let mut agent = launch_with("stubborn", std::process::Stdio::piped()).await;
    // The agent names its grandchild on stderr; we must clean it up.
    let stderr = agent.child.stderr.take().expect("stderr");
    let (pid_tx, mut pid_rx) = mpsc::channel::<String>(1);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("grandchild pid ").nth(1) {
                let pid = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = pid_tx.send(pid).await;
            }
        }
    });
    agent.plan().await;

    let conn = Arc::new(agent.conn);
    let running = {
        let conn = conn.clone();
        tokio::spawn(async move { conn.prompt(&step_text(1)).await })
    };
    // Wait until the agent is stuck in its endless tool call.
    tokio::time::timeout(TURN, async {
        while let Some(signal) = agent.signals.recv().await {
            if matches!(&signal, AgentSignal::ToolCall(c) if c.id == "watch-tests") {
                break;
            }
        }
    })
    .await
    .expect("the stubborn turn starts");
    let started = std::time::Instant::now();
    conn.cancel().await.expect("cancel");
    let stop = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("prompt returns promptly after cancel")
        .expect("task")
        .expect("prompt");
    assert_eq!(stop, StopReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));

    // It still ignores SIGTERM...
    let pid = agent.child.id().expect("pid").to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        agent.child.try_wait().expect("try_wait").is_none(),
        "SIGTERM ignored"
    );
    // ...so clean up the hard way, grandchild included.
    agent.child.kill().await.expect("kill agent");
    let grandchild = tokio::time::timeout(Duration::from_secs(5), pid_rx.recv())
        .await
        .expect("grandchild pid logged")
        .expect("pid");
    Command::new("kill")
        .args(["-KILL", &grandchild])
        .status()
        .expect("kill grandchild");
}

#[tokio::test]
async fn dropping_the_connection_closes_the_agents_stdin() {
    let mut agent = launch("happy").await;
    agent.plan().await;
    drop(agent.conn);
    let status = tokio::time::timeout(Duration::from_secs(10), agent.child.wait())
        .await
        .expect("the agent sees EOF and exits")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}

// ---------------------------------------------------------------- fake agent

/// Plays the agent side by hand: answers `initialize` and `session/new`, then
/// hands every later request to `on_request` with a raw writer.
async fn fake_agent<F, Fut>(
    on_request: F,
) -> (
    AgentConnection,
    mpsc::Receiver<AgentSignal>,
    tempfile::TempDir,
)
where
    F: FnOnce(serde_json::Value, tokio::io::WriteHalf<tokio::io::DuplexStream>) -> Fut
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let dir = tempfile::tempdir().expect("tempdir");
    let (driver_side, agent_side) = tokio::io::duplex(64 * 1024);
    let (from_driver, to_driver) = tokio::io::split(agent_side);
    let (driver_reads, driver_writes) = tokio::io::split(driver_side);
    tokio::spawn(async move {
        let mut lines = BufReader::new(from_driver).lines();
        let mut out = to_driver;
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: serde_json::Value = serde_json::from_str(&line).expect("driver sends JSON");
            let id = msg["id"].clone();
            let result = match msg["method"].as_str() {
                Some("initialize") => {
                    serde_json::json!({ "protocolVersion": 1, "agentCapabilities": {} })
                }
                Some("session/new") => serde_json::json!({ "sessionId": "fake-1" }),
                Some(_) => {
                    on_request(msg, out).await;
                    return;
                }
                None => continue,
            };
            let reply = serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result });
            out.write_all(format!("{reply}\n").as_bytes())
                .await
                .expect("write");
        }
    });
    let (conn, signals) = tokio::time::timeout(
        TURN,
        AgentConnection::start(driver_reads, driver_writes, dir.path().to_path_buf(), "t"),
    )
    .await
    .expect("in time")
    .expect("start");
    (conn, signals, dir)
}

#[tokio::test]
async fn a_ten_megabyte_line_is_skipped_and_the_turn_still_ends() {
    let (conn, mut signals, _dir) = fake_agent(|prompt, mut out| async move {
        let mut huge = vec![b'{'; 10_000_000];
        huge.push(b'\n');
        out.write_all(&huge).await.expect("write");
        let chunk = serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "fake-1",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "still here"}}}});
        let done = serde_json::json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"stopReason": "end_turn"}});
        out.write_all(format!("{chunk}\n{done}\n").as_bytes()).await.expect("write");
        // Keep the pipe open: the driver must not need EOF to finish.
        std::future::pending::<()>().await;
    })
    .await;
    let stop = tokio::time::timeout(TURN, conn.prompt("hi"))
        .await
        .expect("no hang")
        .expect("prompt");
    assert_eq!(stop, StopReason::EndTurn);
    let mut seen = Vec::new();
    while let Ok(signal) = signals.try_recv() {
        seen.push(signal);
    }
    assert!(
        matches!(&seen[0], AgentSignal::ProtocolError { detail } if detail.contains("over the limit")),
        "{seen:?}"
    );
    assert!(matches!(&seen[1], AgentSignal::Message { text } if text == "still here"));
}

#[tokio::test]
async fn after_a_flood_of_updates_settle_returns_only_once_every_one_is_handled() {
    const CHUNKS: usize = 3_000;
    let (conn, mut signals, _dir) = fake_agent(|prompt, mut out| async move {
        let mut lines = String::new();
        for i in 0..CHUNKS {
            let chunk = serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "fake-1",
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("{i} ")}}}});
            lines.push_str(&format!("{chunk}\n"));
        }
        let done = serde_json::json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"stopReason": "end_turn"}});
        lines.push_str(&format!("{done}\n"));
        out.write_all(lines.as_bytes()).await.expect("write");
        std::future::pending::<()>().await;
    })
    .await;
    // A slow reader, as the orchestrator is when the database is busy.
    let reader = tokio::spawn(async move {
        let mut messages = 0usize;
        while let Some(signal) = signals.recv().await {
            match signal {
                AgentSignal::Message { .. } => {
                    messages += 1;
                    if messages.is_multiple_of(500) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                AgentSignal::Settled(done) => {
                    let _ = done.send(());
                    return messages;
                }
                _ => {}
            }
        }
        messages
    });
    let stop = tokio::time::timeout(TURN, conn.prompt("hi"))
        .await
        .expect("no hang")
        .expect("prompt");
    assert_eq!(stop, StopReason::EndTurn);
    tokio::time::timeout(TURN, conn.settle())
        .await
        .expect("settles");
    assert_eq!(
        reader.await.expect("reader"),
        CHUNKS,
        "every message handled before settle returned"
    );
}

#[tokio::test]
async fn an_agent_that_dies_mid_turn_fails_the_prompt_with_a_clear_error() {
    let (conn, _signals, _dir) = fake_agent(|_prompt, out| async move {
        drop(out); // the agent's stdout closes, as when it crashes
    })
    .await;
    let err = tokio::time::timeout(TURN, conn.prompt("hi"))
        .await
        .expect("no hang")
        .expect_err("the agent is gone");
    assert!(
        matches!(
            err,
            DriverError::AgentExited {
                method: "session/prompt"
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("stderr"),
        "says where to look: {err}"
    );
}

// ---------------------------------------------------------------- modes

#[tokio::test]
async fn an_agent_left_in_its_starting_mode_edits_without_asking() {
    // Why Overseer sets the mode: the demo, like claude-agent-acp 0.101,
    // starts in `auto`.
    let mut agent = launch_in_starting_mode("happy", std::process::Stdio::inherit()).await;
    assert_eq!(agent.conn.current_mode().as_deref(), Some("auto"));
    agent.plan().await;
    let (result, seen) = agent.execute().await;
    assert_eq!(result.expect("turns"), StopReason::EndTurn);
    assert!(permissions(&seen).is_empty(), "nothing was asked");
    assert_eq!(written(&seen).len(), 2, "and both files were written");
}

#[tokio::test]
async fn a_switch_to_a_mode_the_run_does_not_allow_is_caught_at_the_wire() {
    let mut agent = launch("hijack").await;
    agent.conn.allow_modes(vec!["default".into()]);
    agent.plan().await;
    let (_, seen) = agent.turn(&step_text(1)).await;
    let (mode, why) = seen
        .iter()
        .find_map(|s| match s {
            Seen::Mode(m, Some(why)) => Some((m.clone(), why.clone())),
            _ => None,
        })
        .expect("the breach is reported");
    assert_eq!(mode, "auto");
    assert!(
        why.contains("without asking") && why.contains("nobody chose"),
        "{why}"
    );
    assert!(agent.conn.breached());
    assert!(
        written(&seen).is_empty(),
        "nothing is written after the breach"
    );
    assert!(seen
        .iter()
        .any(|s| matches!(s, Seen::FileRefused(_, r) if r.contains("mode"))));
    assert!(!agent.repo.join("src/greeting.txt").exists());
    agent.conn.set_mode("default").await.expect("restore");
    assert!(!agent.conn.breached());
    assert_eq!(agent.conn.current_mode().as_deref(), Some("default"));
}

#[tokio::test]
async fn a_mode_the_agent_does_not_offer_is_refused_by_name() {
    let agent = launch("happy").await;
    let e = agent.conn.set_mode("yolo").await.expect_err("not offered");
    let text = e.to_string();
    assert!(
        text.contains("`yolo`") && text.contains("`default`, `plan`, `auto`"),
        "{text}"
    );
}

#[tokio::test]
async fn in_plan_mode_the_plan_comes_as_an_exit_plan_request_with_markdown() {
    let mut agent = launch("happy").await;
    agent.conn.set_mode("plan").await.expect("plan mode");
    agent.policy = Policy::Reject;
    let (result, seen) = agent
        .turn(&planning_prompt("Add a greeting to the project", ""))
        .await;
    assert_eq!(
        result.expect("turn"),
        StopReason::Cancelled,
        "rejecting keeps it planning, like Claude"
    );
    let (call, options) = permissions(&seen).pop().expect("the exit-plan request");
    assert_eq!(call.kind.map(|k| k.as_str()), Some("switch_mode"));
    let plan = call
        .raw_input
        .as_ref()
        .and_then(|r| r.get("plan"))
        .and_then(|p| p.as_str())
        .expect("plan markdown");
    assert!(plan.contains("1. Write the greeting"), "{plan}");
    assert!(options.iter().any(|o| o.kind == "allow_always"));
}

// ------------------------------------------------------------ unasked

#[tokio::test]
async fn a_change_carried_out_unasked_halts_the_driver_before_its_write() {
    // The `unasked` demo asks nothing (like OpenCode with `"*": "allow"`)
    // although it reports `default`: it announces its README edit as
    // in progress, then sends the write. A judge that finds it unasked
    // halts the driver at the wire, before the write is handled.
    let mut agent = launch("unasked").await;
    agent
        .conn
        .watch_unasked(std::sync::Arc::new(|call: &ToolCallInfo| {
            (call.kind.map(|k| k.as_str()) == Some("edit")).then(|| format!("{} unasked", call.id))
        }));
    agent.plan().await;
    let (_, seen) = agent.turn(&step_text(1)).await;
    let (call, why) = seen
        .iter()
        .find_map(|s| match s {
            Seen::Unasked(call, why) => Some((call.clone(), why.clone())),
            _ => None,
        })
        .expect("reported");
    assert_eq!(call.status.map(|s| s.as_str()), Some("in_progress"));
    assert!(!call.asked);
    assert_eq!(why, format!("{} unasked", call.id));
    assert_eq!(
        seen.iter()
            .filter(|s| matches!(s, Seen::Unasked(..)))
            .count(),
        1,
        "once"
    );
    assert!(written(&seen).is_empty(), "the write was refused");
    assert!(seen
        .iter()
        .any(|s| matches!(s, Seen::FileRefused(_, r) if r.contains("without asking"))));
    assert_eq!(
        std::fs::read_to_string(agent.repo.join("README.md")).expect("README"),
        "hello\n"
    );
}

#[tokio::test]
async fn a_call_the_agent_asked_for_is_never_judged() {
    // `destructive` asks before each call (and announces each as pending
    // first): the judge is never consulted.
    let mut agent = launch("destructive").await;
    agent
        .conn
        .watch_unasked(std::sync::Arc::new(|call: &ToolCallInfo| {
            Some(format!("judged {}", call.id))
        }));
    agent.plan().await;
    let (_, seen) = agent.execute().await;
    assert!(!permissions(&seen).is_empty());
    assert!(
        !seen.iter().any(|s| matches!(s, Seen::Unasked(..))),
        "{seen:?}"
    );
}

/// A judge that finds every call it is shown wanting.
fn judge_all() -> overseer_acp::UnaskedJudge {
    std::sync::Arc::new(|call: &ToolCallInfo| Some(format!("{} unasked", call.id)))
}

#[tokio::test]
async fn a_call_announced_in_progress_and_asked_for_right_after_is_no_event() {
    // codex-acp announces a patch `in_progress`, then asks for it: the ask
    // within the window clears it, and the write it then sends is served.
    let mut agent = launch("late_ask").await;
    agent.conn.watch_unasked(judge_all());
    agent.plan().await;
    let (result, seen) = agent.turn(&step_text(1)).await;
    assert_eq!(result.expect("turn"), StopReason::EndTurn);
    // Past the window: still nothing.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let mut late = Vec::new();
    while let Ok(signal) = agent.signals.try_recv() {
        answer(
            signal,
            agent.policy,
            &agent.question_reply,
            &mut agent.held,
            &mut late,
        );
    }
    assert_eq!(permissions(&seen).len(), 1, "it asked");
    assert!(
        !seen
            .iter()
            .chain(&late)
            .any(|s| matches!(s, Seen::Unasked(..))),
        "{seen:?} {late:?}"
    );
    assert_eq!(written(&seen).len(), 1, "the allowed write was served");
}

#[tokio::test]
async fn a_call_announced_in_progress_and_never_asked_for_is_an_event_once_the_window_passes() {
    // `lingering` announces `rm -rf build/` running and sends nothing more.
    let mut agent = launch("lingering").await;
    agent.conn.watch_unasked(judge_all());
    agent.plan().await;
    let started = std::time::Instant::now();
    let text = step_text(1);
    let prompt = agent.conn.prompt(&text);
    tokio::pin!(prompt);
    let mut seen = Vec::new();
    let why = tokio::time::timeout(TURN, async {
        loop {
            tokio::select! {
                Some(signal) = agent.signals.recv() => {
                    if let AgentSignal::Unasked { why, .. } = &signal {
                        return why.clone();
                    }
                    answer(signal, agent.policy, &agent.question_reply, &mut agent.held, &mut seen);
                }
                r = &mut prompt => panic!("the turn ended first: {r:?}"),
            }
        }
    })
    .await
    .expect("reported in time");
    let waited = started.elapsed();
    assert_eq!(why, "linger-rm unasked");
    assert!(
        waited >= std::time::Duration::from_millis(450),
        "not before the window: {waited:?}"
    );
    assert!(
        seen.iter()
            .any(|s| matches!(s, Seen::ToolCall(c) if c.status.map(|s| s.as_str()) == Some("in_progress"))),
        "{seen:?}"
    );
}
