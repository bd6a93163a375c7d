//! The window's demo data, recorded from the real engine: the fleet the UI's
//! unit tests and `npm run dev` show is built here through the store's real
//! transactions, and what the contract's operations answer about it (runs,
//! gates, workspaces, each gate's and run's "Why?" story) is written to
//! ui/src/lib/backend/fixtures.json. The
//! mock backend serves those answers instead of inventing rows, so what it
//! shows (needs you, ask kinds, batch options, actions, attention ranks) is
//! what the engine computes, and it can no longer disagree with it.
//!
//! Checked for drift like the contract: a stale file fails this test;
//! `make types` (OVERSEER_WRITE_TYPES=1) rewrites it.

use overseer_core::{Actor, GateBody, GateChoice, GateOption, Millis, RunEvent, RunId, RunOrigin};
use overseer_engine::ops;
use overseer_engine::{Engine, LogNotifier, Paths, Scope, SystemClock};
use overseer_server::api::{Api, Served};
use overseer_store::{GateSpec, Keyring, NewSession, Store, WorkspaceSettings};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

/// The demo's "now" (the UI's tests use the same instant).
const NOW: Millis = 1_700_000_000_000;
const FILE: &str = "ui/src/lib/backend/fixtures.json";

fn body(v: serde_json::Value) -> GateBody {
    serde_json::from_value(v).expect("a gate body")
}

fn options(v: serde_json::Value) -> Vec<GateOption> {
    serde_json::from_value(v).expect("gate options")
}

/// A launched run of the demo, started at `since` (its state's time).
struct Launched {
    ws: &'static str,
    title: &'static str,
    agent: &'static str,
    since: Millis,
}

/// Builds the demo fleet on a fresh store: runs 1-7 launched (one in
/// review, five waiting on a gate of each kind, one merged), runs 8 and 9
/// external sessions (a terminal Claude Code with a tool call, an MCP client
/// with an info item). Ids follow creation: gate n belongs to run n.
fn build(store: &mut Store) {
    let user = Actor::app();
    let created = NOW - 3_600_000;
    let ws = |store: &mut Store, name: &str, settings: WorkspaceSettings| -> i64 {
        store
            .write(|tx| {
                let id = tx.ensure_workspace(name, &format!("~/src/{name}"), &user, created)?;
                tx.set_workspace_settings(id, &settings, &user, created)?;
                Ok(id)
            })
            .expect("workspace")
    };
    let web = ws(
        store,
        "web-app",
        WorkspaceSettings {
            sensors: vec!["npm test".into()],
            ..Default::default()
        },
    );
    let api = ws(
        store,
        "api-server",
        WorkspaceSettings {
            auto_advance: Some(false),
            ..Default::default()
        },
    );
    let launched = [
        Launched {
            ws: "web-app",
            title: "Add rate limiting to the public API",
            agent: "claude-code",
            since: NOW - 720_000,
        },
        Launched {
            ws: "web-app",
            title: "Refactor the billing module",
            agent: "gemini",
            since: NOW - 480_000,
        },
        Launched {
            ws: "api-server",
            title: "Write the migration for user settings",
            agent: "codex",
            since: NOW - 1_260_000,
        },
        Launched {
            ws: "web-app",
            title: "Pick a framework for the greeting",
            agent: "demo",
            since: NOW - 60_000,
        },
        Launched {
            ws: "api-server",
            title: "Fix the flaky login test",
            agent: "demo",
            since: NOW - 200_000,
        },
        Launched {
            ws: "web-app",
            title: "Document the CLI",
            agent: "demo",
            since: NOW - 30_000,
        },
        Launched {
            ws: "web-app",
            title: "Bump version to 0.4.2",
            agent: "demo",
            since: NOW - 10_800_000,
        },
    ];
    let mut runs = Vec::new();
    for r in &launched {
        let ws_id = if r.ws == "web-app" { web } else { api };
        let run = store
            .write(|tx| {
                let task = tx.create_task(ws_id, r.title, r.title, &user, created)?;
                let run = tx.create_run(task, r.agent, &user, created)?;
                tx.transition(run, RunEvent::Claim, None, &Actor::Engine, r.since - 2_000)?;
                tx.transition(run, RunEvent::Start, None, &Actor::Engine, r.since)?;
                Ok(run)
            })
            .expect("run");
        runs.push(run);
    }
    let finish = RunEvent::Finish {
        auto_advance: false,
    };
    // Run 1 finished a minute ago and waits for review (the engine opens
    // its merge review: gate 1).
    store
        .write(|tx| tx.transition(runs[0], finish.clone(), None, &Actor::Engine, NOW - 60_000))
        .expect("review");
    let opt = |id: &str, label: &str| json!({ "id": id, "label": label });
    let why = |id: &str, label: &str| json!({ "id": id, "label": label, "requires_context": true });
    // Gate n, on run n, opened n minutes ago by its run's agent.
    let gate = |store: &mut Store, n: i64, spec: GateSpec| {
        let by = Actor::Agent(launched[(n - 1) as usize].agent.into());
        store
            .write(|tx| tx.open_gate_spec(&spec, &by, NOW - 60_000 * n))
            .expect("gate");
    };
    gate(
        store,
        2,
        GateSpec::new(
            runs[1],
            body(json!({ "kind": "plan", "payload": {
        "goal": "Split billing into modules",
        "steps": [{ "title": "Extract invoices", "agent": "coder" }, { "title": "Extract payments" }],
        "files": ["src/billing/invoices.ts", "src/billing/payments.ts"],
        "risks": ["Import cycles"],
        "source": "agent_mode",
        "markdown": "# Split billing\n\n1. Extract **invoices** into `src/billing/invoices.ts`\n2. Extract payments\n   - keep the public API\n\nSee [the design](https://example.com/billing).\n",
    } })),
            "Approve the plan: split billing into modules",
            options(json!([
                opt("approve", "Approve"),
                why("request_changes", "Request changes"),
                opt("reject", "Reject")
            ])),
        ),
    );
    gate(
        store,
        3,
        GateSpec::new(
            runs[2],
            body(json!({ "kind": "tool_call", "payload": {
        "tool_call": { "id": null, "title": null, "kind": null, "raw_input": null },
        "request": { "tool": "Bash", "kind": "execute", "command": "npm install pg-migrate", "paths": [] },
        "reason": "installing packages is always gated",
        "rule": null,
        "always_gated": "install_packages",
        "always_gated_why": null,
        "agent_options": [],
    } })),
            "Run `npm install pg-migrate`",
            options(json!([
                opt("yes", "Yes"),
                opt("always", "Always for this run"),
                opt("no", "No")
            ])),
        ),
    );
    gate(
        store,
        4,
        GateSpec::new(
            runs[3],
            body(json!({ "kind": "question", "payload": {
        "message": "A few questions before I plan the greeting.",
        "schema": { "type": "object", "title": "Before I plan", "required": ["framework", "add_tests"], "properties": {
            "framework": { "type": "string", "title": "Framework", "enum": ["svelte", "react", "vue"] },
            "add_tests": { "type": "boolean", "title": "Add tests?" },
            "notes": { "type": "string", "title": "Anything else I should know?" },
        } },
    } })),
            "A few questions before I plan the greeting.",
            options(json!([why("answer", "Answer"), opt("decline", "Decline")])),
        ),
    );
    gate(
        store,
        5,
        GateSpec::new(
            runs[4],
            body(json!({ "kind": "deviation", "payload": {
        "cause": "turn_failed", "error": "npm test exited with status 1", "attempts": 2, "max_attempts": 10,
    } })),
            "The agent hit a problem: test failed",
            options(json!([
                opt("retry", "Retry"),
                opt("replan", "Replan"),
                opt("stop", "Stop")
            ])),
        ),
    );
    let mut review = GateSpec::new(
        runs[5],
        body(json!({ "kind": "step_review", "payload": {
        "step": 2, "plan": null, "drift": [], "destructive": false, "checks_passed": 0, "checks_total": 0,
        "sensors": [], "retries": 1, "tool_calls_ok": 0, "tool_calls_total": 0, "summary": "",
        "confidence": 0.64, "explain": "one retry used; sensors passed",
    } })),
        "Review step 2: confidence 0.64",
        options(json!([opt("proceed", "Proceed"), opt("stop", "Stop")])),
    );
    review.auto = Some((
        NOW + 10_000,
        GateChoice::parse(overseer_core::GateKind::StepReview, "proceed").expect("proceed"),
    ));
    gate(store, 6, review);
    // Run 7 was reviewed and merged (its merge review is gate 7, decided).
    store
        .write(|tx| {
            let merged = launched[6].since;
            tx.transition(
                runs[6],
                finish.clone(),
                None,
                &Actor::Engine,
                merged - 60_000,
            )?;
            let g = tx
                .pending_gate(runs[6], overseer_core::GateKind::MergeReview)?
                .expect("merge review");
            tx.decide_gate(g, "approve", None, &user, merged)?;
            tx.transition(runs[6], RunEvent::Approve, None, &user, merged)
        })
        .expect("merged");

    // External sessions: they reach Overseer already working.
    let external = store
        .write(|tx| tx.ensure_workspace("external", "~/src/external", &user, created))
        .expect("workspace");
    let session = |store: &mut Store, s: NewSession<'_>| -> RunId {
        store
            .write(|tx| Ok(tx.open_session_run(&s, &Actor::Engine, NOW - 1_800_000)?.1))
            .expect("session")
    };
    let claude = session(
        store,
        NewSession {
            workspace_id: web,
            origin: RunOrigin::ClaudeCode,
            session_id: "5c1e0b7a-2f4d-4e55-9a61-0f3c2d8b1e11",
            cwd: "/home/ada/src/web-app",
            agent: "claude-code",
            title: "Claude Code in ~/src/web-app",
        },
    );
    let mcp = session(
        store,
        NewSession {
            workspace_id: external,
            origin: RunOrigin::Mcp,
            session_id: "nightly-42",
            cwd: "/srv/scripts/nightly",
            agent: "mcp",
            title: "MCP client in /srv/scripts/nightly",
        },
    );
    let ask = |store: &mut Store, spec: GateSpec, by: &str, at: Millis| {
        store
            .write(|tx| tx.open_gate_spec(&spec, &Actor::Agent(by.into()), at))
            .expect("ask");
    };
    ask(
        store,
        GateSpec::new(
            claude,
            body(json!({ "kind": "tool_call", "payload": {
        "tool_call": { "id": "toolu_01", "title": "Run `rm -rf node_modules && npm ci`", "kind": "execute",
                       "raw_input": { "command": "rm -rf node_modules && npm ci" }, "name": "Bash" },
        "request": { "tool": "Bash", "kind": "execute", "command": "rm -rf node_modules && npm ci", "paths": [] },
        "reason": "no rule allows Bash here", "rule": null, "always_gated": null, "always_gated_why": null,
        "agent_options": [], "ask_kind": "blocking",
    } })),
            "Run `rm -rf node_modules && npm ci`",
            options(json!([
                opt("yes", "Yes"),
                opt("always", "Always for this session"),
                opt("no", "No")
            ])),
        ),
        "claude-code",
        NOW - 45_000,
    );
    ask(
        store,
        GateSpec::new(
            mcp,
            body(json!({ "kind": "question", "payload": {
        "message": "Nightly import finished with 3 warnings.\nShall I open an issue for the skipped rows?",
        "ask_kind": "info", "notice": "notification",
    } })),
            "Nightly import finished with 3 warnings",
            options(json!([why("answer", "Reply"), opt("decline", "Dismiss")])),
        ),
        "mcp",
        NOW - 20_000,
    );
}

/// What the contract's read operations answer about the demo fleet.
/// The demo fleet on a fresh data dir, signed with a fixed key so the
/// recorded audit records (the stories) are the same bytes every time
/// (Ed25519 signatures are deterministic). The store is handed to `then`
/// once built (to act on the fleet before it is read).
fn demo(then: impl FnOnce(&mut Store)) -> (tempfile::TempDir, Paths) {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&paths.config_dir)
            .expect("config dir");
        let mut key = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(Keyring::key_path(&paths.config_dir))
            .expect("key file");
        std::io::Write::write_all(&mut key, "07".repeat(32).as_bytes()).expect("key");
    }
    {
        let keys = Keyring::load_or_create(&paths.config_dir).expect("keys");
        let mut store = Store::open(&paths.db(), keys).expect("store");
        build(&mut store);
        then(&mut store);
    }
    (dir, paths)
}

/// A human's action on the demo, a second after it was recorded.
const ACTED: Millis = NOW + 1_000;

/// The row of `run` after `act` on a fresh demo fleet, as list_runs answers.
fn after(run: RunId, act: impl FnOnce(&mut Store)) -> overseer_core::RunView {
    let (_dir, paths) = demo(act);
    let engine = Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine");
    engine.run(run).expect("run")
}

/// What the mock answers a human's action on the demo with: the run's row
/// after each action the window offers (approve, reject, abort a run; decide
/// a gate), by `"<operation> <id>"`.
fn afters(
    runs: &[overseer_core::RunView],
    gates: &[overseer_core::GateView],
) -> serde_json::Map<String, serde_json::Value> {
    let user = Actor::app();
    let mut out = serde_json::Map::new();
    let mut put = |key: String, row: overseer_core::RunView| {
        out.insert(key, serde_json::to_value(row).expect("row"));
    };
    for r in runs {
        if r.actions.approve {
            put(
                format!("approve_run {}", r.id),
                after(r.id, |s| {
                    ops::approve_run(s, r.id, &user, ACTED).expect("approve");
                }),
            );
        }
        if r.actions.reject {
            put(
                format!("reject_run {}", r.id),
                after(r.id, |s| {
                    ops::reject_run(s, r.id, "the reason", &user, ACTED).expect("reject");
                }),
            );
        }
        if r.actions.abort {
            put(
                format!("abort_run {}", r.id),
                after(r.id, |s| {
                    ops::abort_run(s, r.id, &user, ACTED).expect("abort");
                }),
            );
        }
    }
    for g in gates
        .iter()
        .filter(|g| g.status == overseer_core::GateStatus::Pending)
    {
        let option = g.options.first().expect("an option");
        let context = option.requires_context.then_some("the reason");
        put(
            format!("decide_gate {}", g.id),
            after(g.run_id, |s| {
                s.write(|tx| tx.decide_gate(g.id, &option.id, context, &user, ACTED))
                    .expect("decide");
            }),
        );
    }
    out
}

/// What the contract's read operations answer about the demo fleet.
fn record() -> String {
    let (_dir, paths) = demo(|_| {});
    let engine = Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine");
    let app = Actor::app();
    let api = Served(&engine);
    let runs = api.list_runs(&app).expect("runs");
    // Every gate the demo holds (a few dozen: one page).
    let gates = api
        .list_gates(&app, false, Some(overseer_engine::GATE_PAGE_MAX), None)
        .expect("gates")
        .gates;
    // "Why?" for every gate and run: the signed records as the engine reads
    // and verifies them.
    let gate_stories: Vec<_> = gates
        .iter()
        .map(|g| api.gate_story(&app, g.id).expect("gate story"))
        .collect();
    let run_stories: Vec<_> = runs
        .iter()
        .map(|r| api.run_story(&app, r.id).expect("run story"))
        .collect();
    let fixtures = json!({
        "now": NOW,
        "runs": runs,
        "gates": gates,
        "workspaces": api.list_workspaces(&app).expect("workspaces"),
        // The policy a scope without one of its own follows.
        "default_policy": api.supervisor_status(
            &app,
            Scope {
                workspace: "web-app".into(),
                task: None,
            },
        )
        .expect("supervisor status")
        .effective,
        "after": afters(&runs, &gates),
        "gate_stories": gate_stories,
        "run_stories": run_stories,
    });
    let mut text = serde_json::to_string_pretty(&fixtures).expect("json");
    text.push('\n');
    text
}

#[test]
fn the_uis_demo_fixtures_are_what_the_engine_answers() {
    let want = record();
    // Recording twice gives the same file: nothing in it depends on the
    // machine, the clock or the keys.
    assert_eq!(want, record(), "the fixtures are not deterministic");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(FILE);
    if std::env::var_os("OVERSEER_WRITE_TYPES").is_some() {
        std::fs::write(&path, &want).expect("write the fixtures");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{FILE} is stale: the engine answers differently about the demo fleet; run `make types` \
         and commit the result"
    );
}
