//! Settings checked by the engine alone, through its real socket and a real
//! data dir: a refused write names its fields, a secret pasted where a
//! variable name belongs is refused, and a dry run writes nothing.

use crate::common;

use overseer_core::supervision::{EvaluatorConfig, SupervisorPolicy};
use overseer_core::{Actor, ErrorCode, FieldError};
use overseer_engine::{
    Engine, NotificationKind, NotificationSettings, Paths, RuleTexts, Scope, SettingsChange,
};
use overseer_server::api::Request;
use overseer_server::client::Client;
use std::sync::Arc;

struct Running {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    paths: Paths,
    workspace: String,
}

async fn start() -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, paths, _server) = common::served(dir.path());
    engine.seed_demo(&Actor::cli(), true).expect("seed");
    let workspace = engine.workspaces().expect("workspaces")[0].name.clone();
    Running {
        _dir: dir,
        engine,
        paths,
        workspace,
    }
}

async fn client(r: &Running) -> Client {
    Client::connect(&r.paths.socket())
        .await
        .expect("connect")
        .expect("engine is running")
}

/// Every row of every table, as text: what "nothing was written" compares.
fn snapshot(paths: &Paths) -> Vec<String> {
    let db = rusqlite::Connection::open_with_flags(
        paths.db(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open db");
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("names");
    let mut rows = Vec::new();
    for t in tables {
        let mut stmt = db
            .prepare(&format!("SELECT * FROM \"{t}\""))
            .expect("select");
        let n = stmt.column_count();
        let mut q = stmt.query([]).expect("rows");
        while let Some(row) = q.next().expect("row") {
            let cells: Vec<String> = (0..n)
                .map(|i| format!("{:?}", row.get_ref(i).expect("cell")))
                .collect();
            rows.push(format!("{t}: {}", cells.join(" | ")));
        }
    }
    rows
}

fn openai(api_key_env: &str) -> SupervisorPolicy {
    SupervisorPolicy {
        enabled: true,
        evaluator: EvaluatorConfig::Openai {
            base_url: "http://127.0.0.1:11434/v1".to_owned(),
            model: "llama3.1".to_owned(),
            api_key_env: Some(api_key_env.to_owned()),
        },
        ..SupervisorPolicy::default()
    }
}

fn fields(errors: &[FieldError]) -> Vec<&str> {
    errors.iter().map(|e| e.field.as_str()).collect()
}

#[tokio::test]
async fn a_pasted_key_is_refused_under_its_field_and_nothing_is_stored() {
    let r = start().await;
    let mut c = client(&r).await;
    let scope = Scope {
        workspace: r.workspace.clone(),
        task: None,
    };
    let secret = "sk-proj-Zx9fQ2mLk8PwR4tYu7IoP3aSd6";
    let before = snapshot(&r.paths);
    let err = c
        .call(Request::SetSupervisor {
            scope: scope.clone(),
            policy: Some(openai(secret)),
        })
        .await
        .expect_err("a key is not a variable name");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(fields(&err.fields), ["policy.evaluator.api_key_env"]);
    assert!(err.message.contains("looks like a key"), "{err:?}");
    assert!(!err.message.contains(secret), "never echoed: {err:?}");
    let after = snapshot(&r.paths);
    assert_eq!(before, after, "a refused write changes nothing");
    assert!(
        !after.iter().any(|row| row.contains(secret)),
        "the key is nowhere in the database, audit log included"
    );

    // A variable name is stored as before.
    c.call(Request::SetSupervisor {
        scope: scope.clone(),
        policy: Some(openai("OPENAI_API_KEY")),
    })
    .await
    .expect("a name is fine");
    let status = r.engine.supervisor_status(&scope).expect("status");
    assert_eq!(status.own, Some(openai("OPENAI_API_KEY")));

    // The same refusal from the window's own call (the engine, as the app).
    let err = r
        .engine
        .set_supervisor(&scope, Some(openai(secret)), &Actor::app())
        .expect_err("refused from the app too");
    assert_eq!(fields(&err.fields), ["policy.evaluator.api_key_env"]);
}

#[tokio::test]
async fn a_dry_run_names_every_field_in_error_and_writes_nothing() {
    let r = start().await;
    let mut c = client(&r).await;
    let scope = Scope {
        workspace: r.workspace.clone(),
        task: None,
    };
    let mut bad_policy = openai("ghp_0123456789abcdefABCDEF");
    bad_policy.timeout_seconds = 0;
    let changes = [
        (
            SettingsChange::Supervisor {
                scope: scope.clone(),
                policy: Some(bad_policy),
            },
            vec!["policy.timeout_seconds", "policy.evaluator.api_key_env"],
        ),
        (
            SettingsChange::Permissions {
                scope: scope.clone(),
                rules: RuleTexts {
                    allow: vec!["Bash(npm test:*)".into(), "Edit(src/**".into()],
                    ask: vec![],
                    deny: vec!["Read(a/**b)".into()],
                },
            },
            vec!["rules.allow[1]", "rules.deny[0]"],
        ),
        (
            SettingsChange::WorkspaceChecks {
                workspace: r.workspace.clone(),
                sensors: vec!["npm test".into(), " ".into(), "npm test ".into()],
                auto_advance: Some(true),
            },
            vec!["sensors[1]", "sensors[2]"],
        ),
        (
            SettingsChange::Notifications {
                settings: NotificationSettings {
                    muted: vec![
                        NotificationKind::RunFailed,
                        NotificationKind::AgentQuestionBlocking,
                    ],
                    ..Default::default()
                },
            },
            vec!["notifications.muted[1]"],
        ),
        (
            SettingsChange::Supervisor {
                scope: scope.clone(),
                policy: Some(openai("OPENAI_API_KEY")),
            },
            vec![],
        ),
        (
            SettingsChange::WorkspaceChecks {
                workspace: r.workspace.clone(),
                sensors: vec!["cargo test".into()],
                auto_advance: None,
            },
            vec![],
        ),
    ];
    let before = snapshot(&r.paths);
    let mut watcher = client(&r).await;
    watcher.subscribe().await.expect("subscribe");
    for (change, want) in changes {
        let answer = c
            .call(Request::CheckSettings {
                change: change.clone(),
            })
            .await
            .expect("a dry run answers");
        let found: Vec<FieldError> = serde_json::from_value(answer).expect("field errors");
        assert_eq!(fields(&found), want, "{change:?}");
        // The engine's own call agrees with the socket's.
        assert_eq!(r.engine.check_settings(&change).expect("check"), found);
    }
    assert_eq!(
        snapshot(&r.paths),
        before,
        "a dry run writes nothing, valid or not: not the settings, not the audit log"
    );
    c.call(Request::Ping).await.expect("ping");
    let quiet =
        tokio::time::timeout(std::time::Duration::from_millis(200), watcher.next_event()).await;
    assert!(quiet.is_err(), "a dry run publishes nothing: {quiet:?}");

    // The write refuses what the dry run found, with the same fields.
    let err = c
        .call(Request::SetWorkspaceChecks {
            workspace: r.workspace.clone(),
            sensors: vec!["npm test".into(), "npm test".into()],
            auto_advance: None,
        })
        .await
        .expect_err("listed twice");
    assert_eq!(fields(&err.fields), ["sensors[1]"]);
    assert!(err.message.contains("the same as sensor 1"), "{err:?}");

    // An unknown scope is the write's error, not a field's.
    let nowhere = Scope {
        workspace: "nowhere".into(),
        task: None,
    };
    let err = r
        .engine
        .check_settings(&SettingsChange::Supervisor {
            scope: nowhere.clone(),
            policy: None,
        })
        .expect_err("no such workspace");
    let write = r
        .engine
        .set_supervisor(&nowhere, None, &Actor::app())
        .expect_err("no such workspace");
    assert_eq!(err, write);
}

#[tokio::test]
async fn a_task_started_with_settings_in_error_names_each_and_creates_nothing() {
    let r = start().await;
    let mut c = client(&r).await;
    let settings = overseer_store::TaskSettings {
        approval: overseer_core::confidence::ApprovalMode::ConfidenceThreshold { threshold: 1.5 },
        supervisor: Some(openai("AIzaSyD-0123456789")),
        retry: Some(overseer_core::RetryPolicy {
            max_attempts: 50,
            backoff_seconds: 5,
        }),
        ..Default::default()
    };
    let before = snapshot(&r.paths);
    let err = c
        .call(Request::StartTask {
            task: overseer_engine::TaskStart {
                workspace: r.workspace.clone(),
                agent: "demo".into(),
                prompt: "do it".into(),
                title: None,
                scenario: None,
                settings,
                stage: None,
            },
        })
        .await
        .expect_err("three settings in error");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(
        fields(&err.fields),
        [
            "settings.approval.threshold",
            "settings.supervisor.evaluator.api_key_env",
            "settings.retry.max_attempts"
        ]
    );
    assert_eq!(snapshot(&r.paths), before, "no task, no run, no record");
}
