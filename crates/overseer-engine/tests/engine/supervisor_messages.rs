//! Messages an agent sends its supervisor are read by the supervisor of its
//! run's policy (a real command evaluator, the agent's message on its
//! stdin): its answer goes back to the agent through the hub, a message a
//! human must answer is handed to the user with a notification, and each
//! reading is the supervisor's recorded decision. The agent asks through
//! the real socket, as `overseer mcp` and the hooks do.

use crate::common;

use common::Captured;
use overseer_core::message::{MessageStatus, MessageTo, MessageView};
use overseer_core::supervision::{Autonomy, EvaluatorConfig, SupervisorPolicy, Verdict};
use overseer_core::{Actor, RunId, RunOrigin, SessionAnswer, SessionAsk, SessionRef};
use overseer_engine::{Engine, NotificationKind, Paths, SystemClock};
use overseer_server::api::Request;
use overseer_server::client::Client;
use overseer_store::WorkspaceSettings;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct World {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    paths: Paths,
    notes: Arc<Captured>,
    repo: std::path::PathBuf,
    _server: tokio::task::JoinHandle<()>,
}

/// An engine serving its socket, with workspace `proj` supervised by `sh
/// -c script` (what the supervisor is asked comes on its stdin; contained,
/// it sees nothing of the test's dirs, so a script says in its answer what
/// it was asked).
async fn world(script: &str) -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    let notes = Arc::new(Captured::default());
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), notes.clone()).expect("engine"),
    );
    let listener = overseer_server::server::bind(&paths.socket()).expect("bind");
    let server = tokio::spawn(overseer_server::server::serve(engine.clone(), listener));
    let repo = dir.path().join("proj");
    std::fs::create_dir_all(&repo).expect("repo dir");
    overseer_test_support::git(&repo, &["init", "-q"]);
    let policy = SupervisorPolicy {
        enabled: true,
        autonomy: Autonomy::Advisory,
        evaluator: EvaluatorConfig::Command {
            command: "sh".into(),
            args: vec!["-c".into(), format!("input=$(cat); {script}")],
        },
        ..SupervisorPolicy::default()
    };
    engine
        .add_workspace(
            &repo,
            Some("proj"),
            WorkspaceSettings {
                supervisor: Some(policy),
                ..Default::default()
            },
            &Actor::cli(),
        )
        .expect("workspace");
    World {
        _dir: dir,
        engine,
        paths,
        notes,
        repo,
        _server: server,
    }
}

impl World {
    fn session(&self) -> SessionRef {
        SessionRef {
            origin: RunOrigin::ClaudeCode,
            session_id: "asker".into(),
            cwd: self.repo.clone(),
            agent: None,
        }
    }

    async fn ask(&self, ask: SessionAsk) -> SessionAnswer {
        let mut c = Client::connect(&self.paths.socket())
            .await
            .expect("connect")
            .expect("engine running");
        let v = c
            .call(Request::Session {
                session: self.session(),
                ask,
            })
            .await
            .expect("answer");
        serde_json::from_value(v).expect("a session answer")
    }

    /// The agent's message to its supervisor, as sent.
    async fn to_supervisor(&self, body: &str) -> MessageView {
        let SessionAnswer::Message { message } = self
            .ask(SessionAsk::SendMessage {
                to: MessageTo::Supervisor,
                body: body.into(),
                correlation_id: Some("q-1".into()),
            })
            .await
        else {
            panic!("a message answer")
        };
        assert_eq!(message.status, MessageStatus::Delivered);
        message
    }

    async fn inbox(&self) -> Vec<MessageView> {
        let SessionAnswer::Messages { messages } =
            self.ask(SessionAsk::ReadMessages { after: None }).await
        else {
            panic!("messages")
        };
        messages
    }

    /// The supervisor's decision on the run about `message`, once recorded.
    async fn reading_of(&self, run: RunId, message: &MessageView) -> (Verdict, Actor) {
        let source = format!("message:{}", message.id);
        until("the supervisor's reading", || {
            self.engine
                .run_decisions(run)
                .ok()?
                .into_iter()
                .find(|d| d.source_event.as_deref() == Some(source.as_str()))
                .map(|d| (d.verdict, d.actor))
        })
        .await
    }

    fn escalations(&self) -> Vec<(String, String)> {
        self.notes
            .0
            .lock()
            .expect("lock")
            .iter()
            .filter(|n| n.kind == NotificationKind::SupervisorEscalated)
            .map(|n| (n.title.clone(), n.body.clone()))
            .collect()
    }
}

async fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_supervisor_answers_an_agents_question_through_the_hub() {
    let w = world(
        // What it was asked, in its rationale: the subject, and whether
        // the agent's words were in it.
        r#"case "$input" in *'"subject":"message"'*) s=message;; *) s=other;; esac; case "$input" in *'Tabs or spaces for the new module?'*) b=yes;; *) b=no;; esac; printf '{"verdict":"advise","rationale":"subject=%s body=%s","correction":"Use two spaces, as the rest of the repository does."}' "$s" "$b""#,
    )
    .await;
    let asked = w.to_supervisor("Tabs or spaces for the new module?").await;
    let run = asked.from_run.expect("the session's run");
    let (verdict, actor) = w.reading_of(run, &asked).await;
    assert_eq!(verdict, Verdict::Advise);
    assert_eq!(actor, Actor::Supervisor("command:sh".into()));
    // The supervisor was given the agent's message to read.
    let rationale = w
        .engine
        .run_decisions(run)
        .expect("decisions")
        .into_iter()
        .find(|d| d.source_event.as_deref() == Some(format!("message:{}", asked.id).as_str()))
        .and_then(|d| d.rationale)
        .expect("the supervisor's rationale");
    assert_eq!(rationale, "subject=message body=yes");
    // Its answer reaches the agent, as the supervisor, on the same thread.
    let end = Instant::now() + Duration::from_secs(20);
    let answer = loop {
        if let Some(m) = w.inbox().await.into_iter().next() {
            break m;
        }
        assert!(Instant::now() < end, "no answer in the agent's inbox");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        answer.body,
        "Use two spaces, as the rest of the repository does."
    );
    assert_eq!(answer.from, "supervisor:command:sh");
    assert_eq!(answer.correlation_id.as_deref(), Some("q-1"));
    assert!(w.escalations().is_empty(), "{:?}", w.escalations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_only_a_human_can_answer_is_handed_to_the_user() {
    let w = world(
        r#"echo '{"verdict":"escalate","rationale":"deleting the fixtures is for the user to decide"}'"#,
    )
    .await;
    let asked = w.to_supervisor("May I delete tests/fixtures?").await;
    let run = asked.from_run.expect("the session's run");
    assert_eq!(w.reading_of(run, &asked).await.0, Verdict::Escalate);
    let told = until("the user to be told", || w.escalations().into_iter().next()).await;
    assert_eq!(
        told.0,
        format!("Run {run} asked the supervisor: May I delete tests/fixtures?")
    );
    assert!(
        told.1
            .contains("deleting the fixtures is for the user to decide"),
        "{told:?}"
    );
    assert!(
        w.inbox().await.is_empty(),
        "the supervisor answered nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_that_answers_with_a_decision_hands_the_message_to_the_user() {
    // "approve" is no reading of a message: it is never taken as an answer.
    let w = world(r#"echo '{"verdict":"approve","rationale":"go ahead"}'"#).await;
    let asked = w.to_supervisor("Can I push to main?").await;
    let run = asked.from_run.expect("the session's run");
    assert_eq!(w.reading_of(run, &asked).await.0, Verdict::Escalate);
    let told = until("the user to be told", || w.escalations().into_iter().next()).await;
    assert!(
        told.1
            .contains("APPROVE, which does not apply to a message"),
        "{told:?}"
    );
    assert!(w.inbox().await.is_empty());
}
