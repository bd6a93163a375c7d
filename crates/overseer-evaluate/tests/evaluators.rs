//! The supervisor's evaluators against real peers: a local HTTP server that
//! speaks the chat-completions format (standing in for the LLM), and real
//! reviewer commands. Every failure is an error, never an approval.

use overseer_core::plan::{PlanProposal, PlanSource, PlanStep};
use overseer_core::supervision::{Subject, SupervisorPolicy, Verdict};
use overseer_core::{GateBody, GateOption, GateStatus, GateView, RunState, RunView};
use overseer_evaluate::{
    check_secret_name, evaluate_with_timeout, evaluator_env, parse_verdict, CommandEvaluator,
    EvaluationRequest, Evaluator, EvaluatorError, OpenAiEvaluator, RefusedEvaluator,
    PROMPT_VERSION,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn request(subject: Subject) -> EvaluationRequest {
    let run = RunView {
        id: overseer_core::RunId(3),
        task_id: overseer_core::TaskId(1),
        task_title: "Add a greeting".into(),
        workspace: "web".into(),
        agent: "demo".into(),
        state: RunState::Running,
        state_since: 1,
        created_at: 1,
        needs_you: true,
        attention_rank: 0,
        release_note: None,
        pending_gate: None,
        current_step: None,
        sensors: None,
        last_gate: None,
        origin: Default::default(),
        session: None,
        actions: Default::default(),
        usage: None,
        max_cost: None,
        parent: None,
    };
    let gate = GateView {
        id: overseer_core::GateId(12),
        run_id: overseer_core::RunId(3),
        body: GateBody::Plan(PlanProposal {
            goal: "Add a greeting".into(),
            steps: vec![PlanStep {
                title: "write".into(),
                agent: None,
            }],
            files: vec!["a.txt".into()],
            risks: Vec::new(),
            markdown: None,
            source: PlanSource::default(),
        }),
        unreadable_payload: None,
        status: GateStatus::Pending,
        title: "Approve the plan: Add a greeting".into(),
        options: vec![
            GateOption::new("approve", "Approve"),
            GateOption::new("reject", "Reject"),
        ],
        opened_at: 1,
        decision: None,
        auto_at: None,
        auto_option: None,
        authority: None,
        effected: false,
        ask_kind: overseer_core::AskKind::Blocking,
        batch_option: None,
        pending_effect: None,
        snoozed_until: None,
        advice: None,
    };
    EvaluationRequest {
        subject,
        run,
        gate: Some(gate),
        step: None,
        message: None,
        policy: SupervisorPolicy::default(),
        allowed_verdicts: Verdict::ALL
            .into_iter()
            .filter(|v| v.fits(subject))
            .collect(),
    }
}

/// One HTTP exchange: the request head and body the server received.
struct Seen {
    head: String,
    body: String,
}

/// Serves `status` + `body` to one request (or never answers when `hang`).
fn server(status: u16, body: &str, hang: bool) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    let body = body.to_owned();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut head = String::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            head.push_str(&line);
        }
        let mut buf = vec![0; len];
        let _ = reader.read_exact(&mut buf);
        let _ = tx.send(Seen {
            head,
            body: String::from_utf8_lossy(&buf).into_owned(),
        });
        if hang {
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
        let _ = write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    (url, rx)
}

fn completion(content: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "llama3.1:8b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    })
    .to_string()
}

fn openai(url: &str, key: Option<&str>, timeout_ms: u64) -> OpenAiEvaluator {
    OpenAiEvaluator {
        base_url: url.to_owned(),
        model: "llama3.1".into(),
        api_key: key.map(str::to_owned),
        timeout: Duration::from_millis(timeout_ms),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_completions_verdict_is_parsed_with_its_model_and_prompt_version() {
    let (url, seen) = server(
        200,
        &completion(
            r#"{"verdict": "APPROVE", "rationale": "small, declared files", "confidence": 0.9}"#,
        ),
        false,
    );
    let ev = openai(&url, Some("sk-test"), 5_000);
    let req = request(Subject::Gate);
    let out = evaluate_with_timeout(&ev, &req, Duration::from_secs(5))
        .await
        .expect("verdict");
    assert_eq!(out.verdict, Verdict::Approve);
    assert_eq!(out.rationale, "small, declared files");
    assert_eq!(out.confidence, Some(0.9));
    assert_eq!(out.model_id.as_deref(), Some("llama3.1:8b"));
    assert_eq!(out.prompt_version.as_deref(), Some(PROMPT_VERSION));
    assert_eq!(ev.id(), "openai:llama3.1");
    let seen = seen.recv_timeout(Duration::from_secs(5)).expect("request");
    assert!(
        seen.head.starts_with("POST /v1/chat/completions"),
        "{}",
        seen.head
    );
    assert!(seen
        .head
        .to_ascii_lowercase()
        .contains("authorization: bearer sk-test"));
    let body: serde_json::Value = serde_json::from_str(&seen.body).expect("json body");
    assert_eq!(body["model"], "llama3.1");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["response_format"]["type"], "json_object");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    let system = body["messages"][0]["content"]
        .as_str()
        .expect("system prompt");
    assert!(system.contains(PROMPT_VERSION), "{system}");
    assert!(
        system.contains("Allowed verdicts: APPROVE, REJECT, ESCALATE, ADVISE."),
        "{system}"
    );
    assert!(system.contains("Never approve what you are unsure of"));
    let user: serde_json::Value = serde_json::from_str(
        body["messages"][1]["content"]
            .as_str()
            .expect("user message"),
    )
    .expect("the request as JSON");
    assert_eq!(user["gate"]["id"], 12);
    assert_eq!(user["gate"]["payload"]["goal"], "Add a greeting");
    assert_eq!(user["run"]["task_title"], "Add a greeting");
    assert_eq!(user["subject"], "gate");
    assert_eq!(user["allowed_verdicts"][0], "approve");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_is_judged_by_the_verdict_rules_without_a_key_or_a_model_echo() {
    let answer = serde_json::json!({
        "id": "chatcmpl-2",
        "choices": [{"message": {"role": "assistant", "content":
            r#"{"verdict": "REORIENT", "rationale": "touched files outside the plan", "correction": "only edit a.txt", "confidence": 0.7}"#}}],
    })
    .to_string();
    let (url, seen) = server(200, &answer, false);
    let mut req = request(Subject::Step);
    req.gate = None;
    req.step = Some(
        serde_json::json!({"summary": "wrote a.txt and b.txt", "files_touched": ["a.txt", "b.txt"]}),
    );
    // A trailing slash on base_url is fine.
    let out = evaluate_with_timeout(
        &openai(&format!("{url}/"), None, 5_000),
        &req,
        Duration::from_secs(5),
    )
    .await
    .expect("verdict");
    assert_eq!(out.verdict, Verdict::Reorient);
    assert_eq!(out.correction.as_deref(), Some("only edit a.txt"));
    // No "model" in the answer: the configured one is recorded.
    assert_eq!(out.model_id.as_deref(), Some("llama3.1"));
    assert_eq!(out.prompt_version.as_deref(), Some(PROMPT_VERSION));
    let seen = seen.recv_timeout(Duration::from_secs(5)).expect("request");
    assert!(
        seen.head.starts_with("POST /v1/chat/completions "),
        "{}",
        seen.head
    );
    assert!(!seen.head.to_ascii_lowercase().contains("authorization"));
    let body: serde_json::Value = serde_json::from_str(&seen.body).expect("json body");
    let system = body["messages"][0]["content"]
        .as_str()
        .expect("system prompt");
    assert!(
        system.contains("Allowed verdicts: CONTINUE, REORIENT, PAUSE."),
        "{system}"
    );
    for rule in [
        "fundamentally wrong -> PAUSE",
        "destructive or irreversible -> PAUSE",
        "-> REORIENT, with a correction",
        "suboptimal but the goal is achieved -> CONTINUE",
        "critical concerns that a human must review -> PAUSE",
        "otherwise -> CONTINUE",
    ] {
        assert!(system.contains(rule), "{rule} in {system}");
    }
    let user: serde_json::Value = serde_json::from_str(
        body["messages"][1]["content"]
            .as_str()
            .expect("user message"),
    )
    .expect("the request as JSON");
    assert_eq!(user["step"]["files_touched"][1], "b.txt");
}

#[test]
fn the_api_key_comes_from_the_named_environment_variable() {
    // PATH is always set: any variable's value is taken as the key.
    let path = std::env::var("PATH").expect("PATH");
    let ev = OpenAiEvaluator::from_config(
        "http://127.0.0.1:11434/v1/",
        "llama3.1",
        Some("PATH"),
        Duration::from_secs(30),
    );
    assert_eq!(ev.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(ev.api_key.as_deref(), Some(path.trim()));
    assert_eq!(ev.timeout, Duration::from_secs(30));
    let none = OpenAiEvaluator::from_config(
        "http://127.0.0.1:11434/v1",
        "llama3.1",
        Some("OVERSEER_TEST_SURELY_UNSET_VARIABLE"),
        Duration::from_secs(30),
    );
    assert_eq!(none.api_key, None);
    assert!(
        !format!("{ev:?}").contains(path.trim()),
        "Debug hides the key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_json_is_accepted() {
    let (url, _seen) = server(
        200,
        &completion("```json\n{\"verdict\": \"escalate\", \"rationale\": \"unsure\"}\n```"),
        false,
    );
    let out = evaluate_with_timeout(
        &openai(&url, None, 5_000),
        &request(Subject::Gate),
        Duration::from_secs(5),
    )
    .await
    .expect("verdict");
    assert_eq!(out.verdict, Verdict::Escalate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_unknown_verdicts_errors_and_silence_are_failures_never_approvals() {
    let cases = [
        (200, completion("I think it's fine"), "garbage"),
        (
            200,
            completion(r#"{"verdict": "MAYBE", "rationale": "x"}"#),
            "garbage",
        ),
        (200, completion(r#"{"verdict": "approve"}"#), "garbage"),
        (200, "not json at all".to_owned(), "garbage"),
        (200, completion(r#"["approve", "fine"]"#), "garbage"),
        (
            200,
            r#"{"error": {"message": "model 'llama3.1' not found"}}"#.to_owned(),
            "garbage",
        ),
        (500, r#"{"error": "model not loaded"}"#.to_owned(), "http"),
    ];
    for (status, body, code) in cases {
        let (url, _seen) = server(status, &body, false);
        let err = evaluate_with_timeout(
            &openai(&url, None, 5_000),
            &request(Subject::Gate),
            Duration::from_secs(5),
        )
        .await
        .expect_err("a failure");
        assert_eq!(err.code(), code, "{status} {body}: {err}");
    }
    let (url, _seen) = server(
        200,
        &completion(r#"{"verdict": "MAYBE", "rationale": "x"}"#),
        false,
    );
    let err = evaluate_with_timeout(
        &openai(&url, None, 5_000),
        &request(Subject::Gate),
        Duration::from_secs(5),
    )
    .await
    .expect_err("unknown verdict");
    let msg = err.to_string();
    assert!(
        msg.contains("\"MAYBE\"") && msg.contains("APPROVE, REJECT, ESCALATE"),
        "{msg}"
    );
    let (url, _seen) = server(500, r#"{"error": "model not loaded"}"#, false);
    let err = evaluate_with_timeout(
        &openai(&url, None, 5_000),
        &request(Subject::Gate),
        Duration::from_secs(5),
    )
    .await
    .expect_err("http");
    assert!(
        matches!(&err, EvaluatorError::Http { status: 500, body } if body.contains("model not loaded")),
        "{err}"
    );
    assert!(err.to_string().contains("model not loaded"), "{err}");
    let (url, _seen) = server(200, "", true);
    let started = Instant::now();
    let err = evaluate_with_timeout(
        &openai(&url, None, 500),
        &request(Subject::Gate),
        Duration::from_millis(500),
    )
    .await
    .expect_err("timeout");
    assert_eq!(err.code(), "timeout", "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", closed.local_addr().expect("addr"));
    drop(closed);
    let err = evaluate_with_timeout(
        &openai(&url, None, 2_000),
        &request(Subject::Gate),
        Duration::from_secs(2),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.code(), "transport", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_for_the_wrong_subject_is_refused() {
    let (url, _seen) = server(
        200,
        &completion(r#"{"verdict": "CONTINUE", "rationale": "on track"}"#),
        false,
    );
    let err = evaluate_with_timeout(
        &openai(&url, None, 5_000),
        &request(Subject::Gate),
        Duration::from_secs(5),
    )
    .await
    .expect_err("unfit");
    assert!(matches!(err, EvaluatorError::Unfit { .. }), "{err}");
}

fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> CommandEvaluator {
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    CommandEvaluator {
        command: "sh".into(),
        args: vec![path.to_string_lossy().into_owned()],
        timeout: Duration::from_secs(5),
        env: base_env(),
        launcher: std::sync::Arc::new(overseer_evaluate::Direct),
    }
}

/// The environment a reviewer command gets in these tests: what the
/// engine would give it from this process's.
fn base_env() -> Vec<(String, String)> {
    evaluator_env(std::env::vars(), &[])
}

fn pairs(vars: &[(&str, &str)]) -> Vec<(String, String)> {
    vars.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Issue 37, item 2: a reviewer command never gets the engine's
/// environment: PATH, HOME, LANG, the `OVERSEER_EVAL_*` variables and the
/// ones the owner named, nothing else.
#[test]
fn an_evaluator_gets_only_the_base_variables_and_the_secrets_the_owner_named() {
    let engine = pairs(&[
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/home/owner"),
        ("LANG", "C.UTF-8"),
        ("AWS_SECRET_ACCESS_KEY", "leaked"),
        ("OPENAI_API_KEY", "sk-owner"),
        ("OVERSEER_EVAL_TOKEN", "for-the-evaluator"),
        ("SSH_AUTH_SOCK", "/run/user/1000/ssh"),
    ]);
    let got = evaluator_env(engine.clone(), &[]);
    let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["PATH", "HOME", "LANG", "OVERSEER_EVAL_TOKEN"]);
    let got = evaluator_env(engine, &["OPENAI_API_KEY".to_owned()]);
    let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "PATH",
            "HOME",
            "LANG",
            "OPENAI_API_KEY",
            "OVERSEER_EVAL_TOKEN"
        ]
    );

    // A key may come only from a variable the owner named.
    assert!(check_secret_name("OVERSEER_EVAL_OPENAI", &[]).is_ok());
    assert!(check_secret_name("OPENAI_API_KEY", &["OPENAI_API_KEY".to_owned()]).is_ok());
    let err = check_secret_name("AWS_SECRET_ACCESS_KEY", &["OPENAI_API_KEY".to_owned()])
        .expect_err("not named");
    assert_eq!(err.code(), "secret");
    assert!(err.to_string().contains("AWS_SECRET_ACCESS_KEY"), "{err}");
    assert!(err.to_string().contains("overseer.toml"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_command_runs_with_its_environment_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seen = dir.path().join("env");
    let mut ev = script(
        &dir,
        "env.sh",
        &format!(
            "cat >/dev/null; env > {}; echo '{{\"verdict\": \"escalate\", \"rationale\": \"ok\"}}'",
            seen.display()
        ),
    );
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
    ev.env = evaluator_env(
        pairs(&[
            ("PATH", &path),
            ("HOME", "/home/owner"),
            ("AWS_SECRET_ACCESS_KEY", "leaked"),
            ("OVERSEER_EVAL_TOKEN", "for-the-evaluator"),
        ]),
        &[],
    );
    evaluate_with_timeout(&ev, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect("verdict");
    let text = std::fs::read_to_string(&seen).expect("the command's env");
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        // What sh sets for itself.
        .filter(|k| !["PWD", "SHLVL", "_", "OLDPWD"].contains(k))
        .collect();
    assert_eq!(names.len(), 3, "{text}");
    for name in ["PATH", "HOME", "OVERSEER_EVAL_TOKEN"] {
        assert!(names.contains(&name), "{name} in {text}");
    }
    // Nothing of this test process's own environment beyond those.
    for (k, _) in std::env::vars() {
        if !["PATH", "HOME", "PWD", "SHLVL", "_", "OLDPWD"].contains(&k.as_str()) {
            assert!(!names.contains(&k.as_str()), "{k} leaked: {text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_evaluator_fails_with_what_to_do() {
    let ev = RefusedEvaluator {
        id: "openai:llama3.1".into(),
        why: "api_key_env names 'AWS_SECRET_ACCESS_KEY', which the owner did not name".into(),
    };
    let err = evaluate_with_timeout(&ev, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("refused");
    assert_eq!(err.code(), "secret");
    assert!(err.to_string().contains("[supervision]"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_command_reads_the_request_and_prints_a_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.json");
    let ev = script(
        &dir,
        "ok.sh",
        &format!(
            "cat > {}\necho '{{\"verdict\": \"reject\", \"rationale\": \"touches prod\", \"rule_ref\": \"no-prod\"}}'",
            input.display()
        ),
    );
    let out = evaluate_with_timeout(&ev, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect("verdict");
    assert_eq!(out.verdict, Verdict::Reject);
    assert_eq!(out.rule_ref.as_deref(), Some("no-prod"));
    let got: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&input).expect("stdin copy")).expect("json");
    assert_eq!(got["gate"]["kind"], "plan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_command_failures_are_errors_with_what_went_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = script(&dir, "garbage.sh", "cat >/dev/null; echo 'LGTM!'");
    let err = evaluate_with_timeout(&garbage, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("garbage");
    assert_eq!(err.code(), "garbage");

    let fails = script(
        &dir,
        "fails.sh",
        "echo 'cannot reach the policy server' >&2; exit 2",
    );
    let err = evaluate_with_timeout(&fails, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("exit");
    assert_eq!(err.code(), "exit");
    assert!(
        err.to_string().contains("cannot reach the policy server"),
        "{err}"
    );

    let big = script(&dir, "big.sh", "head -c 2000000 /dev/zero | tr '\\0' 'x'");
    let err = evaluate_with_timeout(&big, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("too big");
    assert_eq!(err.code(), "garbage");

    let missing = CommandEvaluator {
        command: "/nonexistent/reviewer".into(),
        args: vec![],
        timeout: Duration::from_secs(5),
        env: base_env(),
        launcher: std::sync::Arc::new(overseer_evaluate::Direct),
    };
    let err = evaluate_with_timeout(&missing, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("spawn");
    assert_eq!(err.code(), "spawn");
    assert!(err.to_string().contains("/nonexistent/reviewer"), "{err}");

    let pid_file = dir.path().join("pid");
    let mut slow = script(
        &dir,
        "slow.sh",
        &format!("echo $$ > {}; exec sleep 30", pid_file.display()),
    );
    slow.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let err = evaluate_with_timeout(&slow, &request(Subject::Gate), Duration::from_secs(10))
        .await
        .expect_err("timeout");
    assert_eq!(err.code(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .to_owned();
    assert!(gone(&pid), "the timed-out reviewer {pid} was killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_reviewers_helpers_die_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("helper");
    // No exec: the shell waits on a helper in the background.
    let mut slow = script(
        &dir,
        "helper.sh",
        &format!("sleep 30 &\necho $! > {}\nwait", pid_file.display()),
    );
    slow.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let err = evaluate_with_timeout(&slow, &request(Subject::Gate), Duration::from_secs(10))
        .await
        .expect_err("timeout");
    assert!(
        matches!(err, EvaluatorError::Timeout { after_ms: 500 }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .to_owned();
    assert!(gone(&pid), "the reviewer's helper {pid} was killed too");
}

/// Whether a process is gone (or a zombie waiting to be reaped by init).
fn gone(pid: &str) -> bool {
    (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.is_empty()
            || stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewer_commands_report_model_and_prompt_and_must_print_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ev = script(
        &dir,
        "model.sh",
        "cat >/dev/null\nprintf '%s\\n\\n' '{\"verdict\": \"ESCALATE\", \"rationale\": \"policy says ask\", \"model_id\": \"house-model\", \"prompt_version\": \"house/2\", \"confidence\": 0.4}'",
    );
    assert!(ev.id().starts_with("command:"), "{}", ev.id());
    let out = evaluate_with_timeout(&ev, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect("verdict");
    assert_eq!(out.verdict, Verdict::Escalate);
    assert_eq!(out.model_id.as_deref(), Some("house-model"));
    assert_eq!(out.prompt_version.as_deref(), Some("house/2"));
    assert_eq!(out.confidence, Some(0.4));

    let plain = script(
        &dir,
        "plain.sh",
        "cat >/dev/null; echo '{\"verdict\": \"approve\", \"rationale\": \"ok\"}'",
    );
    let out = evaluate_with_timeout(&plain, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect("verdict");
    assert_eq!(
        (out.model_id, out.prompt_version, out.rule_ref),
        (None, None, None)
    );

    let binary = script(&dir, "binary.sh", "cat >/dev/null; printf '\\377\\376{}'");
    let err = evaluate_with_timeout(&binary, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("not UTF-8");
    assert_eq!(err.code(), "garbage", "{err}");

    // A reviewer that never reads its input still gets judged on its output.
    let deaf = script(
        &dir,
        "deaf.sh",
        "echo '{\"verdict\": \"reject\", \"rationale\": \"never\"}'",
    );
    let out = evaluate_with_timeout(&deaf, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect("verdict");
    assert_eq!(out.verdict, Verdict::Reject);

    let two = script(
        &dir,
        "two.sh",
        "cat >/dev/null; echo '{\"verdict\": \"approve\", \"rationale\": \"a\"}'; echo '{\"verdict\": \"approve\", \"rationale\": \"b\"}'",
    );
    let err = evaluate_with_timeout(&two, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("two objects");
    assert_eq!(err.code(), "garbage", "{err}");

    let step = script(
        &dir,
        "step.sh",
        "cat >/dev/null; echo '{\"verdict\": \"approve\", \"rationale\": \"a\"}'",
    );
    let err = evaluate_with_timeout(&step, &request(Subject::Step), Duration::from_secs(5))
        .await
        .expect_err("approve is not a step verdict");
    assert!(
        matches!(
            err,
            EvaluatorError::Unfit {
                verdict: Verdict::Approve,
                subject: Subject::Step
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("CONTINUE, REORIENT, PAUSE"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_that_is_not_executable_is_a_spawn_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("review");
    std::fs::write(&path, "#!/bin/sh\necho hi\n").expect("write");
    let ev = CommandEvaluator {
        command: path.to_string_lossy().into_owned(),
        args: vec![],
        timeout: Duration::from_secs(5),
        env: base_env(),
        launcher: std::sync::Arc::new(overseer_evaluate::Direct),
    };
    let err = evaluate_with_timeout(&ev, &request(Subject::Gate), Duration::from_secs(5))
        .await
        .expect_err("not executable");
    assert_eq!(err.code(), "spawn", "{err}");
    assert!(err.to_string().contains("not executable"), "{err}");
}

#[test]
fn verdict_objects_are_parsed_strictly() {
    let ok = parse_verdict(
        "\n{\"verdict\": \"Continue\", \"rationale\": \" on track \", \"rule_ref\": \"r1\"}\n\n",
    )
    .expect("verdict");
    assert_eq!(ok.verdict, Verdict::Continue);
    assert_eq!(ok.rationale, "on track");
    assert_eq!(ok.rule_ref.as_deref(), Some("r1"));
    assert_eq!(ok.confidence, None);
    for fenced in [
        "```json\n{\"verdict\": \"pause\", \"rationale\": \"r\"}\n```",
        "```JSON\n{\"verdict\": \"pause\", \"rationale\": \"r\"}\n```\n",
        "```\n{\"verdict\": \"pause\", \"rationale\": \"r\"}\n```",
        "```json {\"verdict\": \"pause\", \"rationale\": \"r\"} ```",
    ] {
        assert_eq!(
            parse_verdict(fenced).expect(fenced).verdict,
            Verdict::Pause,
            "{fenced}"
        );
    }
    for (bad, why) in [
        ("", "expected one JSON object"),
        ("I think it's fine", "expected one JSON object"),
        ("[\"approve\", \"x\"]", "expected one JSON object"),
        ("\"approve\"", "expected one JSON object"),
        ("{\"rationale\": \"x\"}", "no \"verdict\""),
        (
            "{\"verdict\": 1, \"rationale\": \"x\"}",
            "unknown verdict 1",
        ),
        ("{\"verdict\": \"approve\"}", "no \"rationale\""),
        (
            "{\"verdict\": \"approve\", \"rationale\": \"  \"}",
            "no \"rationale\"",
        ),
        (
            "{\"verdict\": \"approve\", \"rationale\": 3}",
            "no \"rationale\"",
        ),
        (
            "{\"verdict\": \"approve\", \"rationale\": \"x\", \"confidence\": 1.5}",
            "confidence 1.5",
        ),
        (
            "{\"verdict\": \"approve\", \"rationale\": \"x\", \"confidence\": -0.1}",
            "confidence -0.1",
        ),
        (
            "{\"verdict\": \"approve\", \"rationale\": \"x\", \"confidence\": \"high\"}",
            "confidence \"high\"",
        ),
        (
            "{\"verdict\": \"approve\", \"rationale\": \"x\"} and more",
            "expected one JSON object",
        ),
    ] {
        let err = parse_verdict(bad).expect_err(bad);
        assert_eq!(err.code(), "garbage", "{bad}");
        assert!(err.to_string().contains(why), "{bad}: {err}");
    }
}
