//! Writes a small database with one audit record of every kind Overseer
//! writes, through the real store (the engine's own records, written by the
//! engine outside the store, with the payloads it writes), plus its signing
//! key and checkpoint: `cargo run -p overseer-store --example audit_fixture
//! -- DIR`. The committed fixture under `tests/fixtures/audit-v1` was made
//! this way before audit payloads were typed; `tests/old_records.rs` checks
//! that the code of today still verifies it and tells its story.

use overseer_core::supervision::{Autonomy, Verdict};
use overseer_core::{
    message::MessageTo, Actor, GateBody, GateKind, GateOption, RunEvent, RunOrigin,
    StepReviewChoice, TaskId,
};
use overseer_store::{
    DecisionInput, GateSpec, Keyring, NewMessage, NewSession, Store, TaskSettings,
    WorkspaceSettings, DB_FILE,
};
use serde_json::json;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: audit_fixture DIR (an empty or missing directory)")?,
    );
    let keyring = Keyring::load_or_create(&dir.join("config"))?;
    let mut store = Store::open(&dir.join("data").join(DB_FILE), keyring)?;
    let e = Actor::Engine;
    let user = Actor::cli();
    let agent = Actor::Agent("demo".into());
    // A workspace, a task, a run through review: workspace_added,
    // task_created, run_created, run_transition, gate_opened.
    let (ws, task, run) = store.write(|tx| {
        let ws = tx.ensure_workspace("demo", "/tmp/demo", &e, 1_000)?;
        let task = tx.create_task(ws, "Fix the flaky test", "make it pass", &e, 1_001)?;
        tx.set_task_stage(task, "review", &user, 1_002)?;
        let run = tx.create_run(task, "demo", &e, 1_003)?;
        tx.transition(run, RunEvent::Claim, None, &e, 1_004)?;
        tx.transition(run, RunEvent::Start, None, &e, 1_005)?;
        tx.transition(
            run,
            RunEvent::Finish {
                auto_advance: false,
            },
            Some("done"),
            &e,
            1_006,
        )?;
        Ok((ws, task, run))
    })?;
    // Settings: workspace_settings, setting, task_settings.
    store.write(|tx| {
        tx.set_workspace_settings(ws, &WorkspaceSettings::default(), &user, 1_010)?;
        tx.set_setting("theme", "dark", &user, 1_011)?;
        tx.set_task_settings(TaskId(task.into()), &TaskSettings::default(), &user, 1_012)
    })?;
    // A tool-call gate under the supervisor's authority (gate_terms), a
    // rule's note and the supervisor's vote (decision), the human's decision
    // (gate_decided), then the human overriding it (gate_decided with
    // overrides).
    let tool = store.write(|tx| {
        let mut spec = GateSpec::new(
            run,
            GateBody::empty(GateKind::ToolCall),
            "rm -rf build",
            vec![GateOption::new("yes", "Yes"), GateOption::new("no", "No")],
        );
        spec.authority = Some(Autonomy::Autonomous);
        spec.approve_option = Some("yes".to_owned());
        tx.open_gate_spec(&spec, &agent, 1_020)
    })?;
    store.write(|tx| {
        tx.record_decision_note(
            run,
            None,
            &e,
            &DecisionInput {
                verdict: Some(Verdict::Approve),
                rule_ref: Some("workspace:allow Read".into()),
                rationale: Some("reads are allowed".into()),
                source_event: Some("tool_call:1".into()),
                ..DecisionInput::default()
            },
            1_021,
        )?;
        tx.vote(
            tool,
            &Actor::Supervisor("rules".into()),
            &DecisionInput {
                verdict: Some(Verdict::Reject),
                option: Some("no".into()),
                rationale: Some("deletes the build".into()),
                model_id: Some("gpt-test".into()),
                prompt_version: Some("v3".into()),
                confidence: Some(0.83),
                ..DecisionInput::default()
            },
            1_022,
        )?;
        tx.vote(
            tool,
            &user,
            &DecisionInput {
                option: Some("yes".into()),
                context: Some("it is a scratch dir".into()),
                ..DecisionInput::default()
            },
            1_023,
        )?;
        Ok(())
    })?;
    // A step review with a timer (gate_terms with auto_at), stopped by a
    // human (gate_timer_stopped); another gate given authority afterwards
    // (gate_terms without a timer); one decided by its timer.
    store.write(|tx| {
        let mut spec = GateSpec::new(
            run,
            GateBody::empty(GateKind::StepReview),
            "Review step 1",
            vec![
                GateOption::new("proceed", "Proceed"),
                GateOption::new("stop", "Stop"),
            ],
        );
        spec.auto = Some((5_000, StepReviewChoice::Proceed.into()));
        let held = tx.open_gate_spec(&spec, &e, 1_030)?;
        tx.hold_gate(held, &Actor::app(), 1_031)?;
        let timed = tx.open_gate_spec(&spec, &e, 1_032)?;
        tx.fire_timer(timed, 6_000)?;
        let later = GateSpec::new(
            run,
            GateBody::empty(GateKind::Question),
            "Which framework?",
            vec![GateOption::new("answer", "Answer")],
        );
        let later = tx.open_gate_spec(&later, &agent, 1_033)?;
        tx.set_gate_authority(later, Some(Autonomy::Advisory), None, 1_034)?;
        tx.decide_gate(later, "answer", Some("svelte, as before"), &user, 1_035)
    })?;
    // The run's work and its merge: run_worktree, run_reviewed_tip,
    // merge_intent, merge_commit, merge_done.
    store.write(|tx| {
        tx.set_run_work(
            run,
            "/data/worktrees/demo-run-1",
            "overseer/run-1",
            "main",
            Some("b0"),
            &e,
            1_040,
        )?;
        tx.set_reviewed_tip(run, "t1", 1_041)?;
        tx.begin_merge(run, "main", "b0", "t1", &user, 1_042)?;
        tx.set_merge_commit(run, "m1", 1_043)?;
        tx.finish_merge(run, "main", "b0", "t1", Some("m1"), "merged", &user, 1_044)
    })?;
    // Messages (message), delivered and held back.
    store.write(|tx| {
        tx.insert_message(
            &NewMessage {
                from_run: Some(run),
                to: MessageTo::Supervisor,
                body: "is the cache safe to drop?",
                correlation_id: Some("c1"),
                blocked: None,
            },
            &agent,
            1_050,
        )?;
        tx.insert_message(
            &NewMessage {
                from_run: Some(run),
                to: MessageTo::Run { run },
                body: "hello me",
                correlation_id: None,
                blocked: Some("peer messages are held back"),
            },
            &agent,
            1_051,
        )?;
        Ok(())
    })?;
    // An external session (session_opened) steered by the user
    // (user_instruction).
    store.write(|tx| {
        let (_, session) = tx.open_session_run(
            &NewSession {
                workspace_id: ws,
                origin: RunOrigin::ClaudeCode,
                session_id: "sess-1",
                cwd: "/tmp/demo",
                agent: "claude-code",
                title: "a Claude Code session",
            },
            &agent,
            1_060,
        )?;
        tx.add_steering(session, "use the cache", &user, 1_061)
    })?;
    // The engine's own records, written with the payloads the engine writes.
    let engine_records = [
        json!({"type": "file_access_refused", "run_id": run, "path": "/etc/shadow", "reason": "outside the run's repository"}),
        json!({"type": "security_event", "event": "unsupervised_mode", "run_id": run, "mode": "bypassPermissions", "why": "the agent switched to a mode that asks nothing"}),
        json!({"type": "security_event", "event": "unasked_action", "run_id": run,
               "tool_call": "tc-9", "kind": "execute", "status": "completed",
               "title": "rm -rf /", "raw_input": {"command": "rm -rf /"}, "why": "it ran a tool without asking"}),
        json!({"type": "security_event", "event": "flood", "run_id": run, "cap": "asks", "what": "120 asks in a minute"}),
        json!({"type": "security_event", "event": "unrecorded_merge", "run_id": run,
               "base": "main", "base_commit": "b9", "tip": "t1", "found": ["c1", "c2"]}),
        json!({"type": "security_event", "event": "socket_from_run", "run_id": run, "pid": 4242, "attempts": 3}),
        json!({"type": "security_event", "event": "limit_hit", "run_id": run, "limit": "pids", "text": "the run hit its limit of 512 processes"}),
    ];
    for (i, payload) in engine_records.iter().enumerate() {
        store.write(|tx| tx.append_untyped_audit(&e, payload, 1_070 + i as i64))?;
    }
    // A decision written straight into the database, put back when the
    // store finds it (security_event decision_without_record).
    let forged = store.write(|tx| {
        let spec = GateSpec::new(
            run,
            GateBody::empty(GateKind::Question),
            "Ship it?",
            vec![GateOption::new("answer", "Answer")],
        );
        tx.open_gate_spec(&spec, &agent, 1_080)
    })?;
    store.raw_connection().execute(
        "UPDATE gates SET status = 'decided', decided_option = 'answer', decided_by = 'user:app',
                decided_at = 1081 WHERE id = ?1",
        [i64::from(forged)],
    )?;
    store.write(|tx| tx.reconcile_gate(forged, 1_082))?;
    store.checkpoint(1_090)?;
    let report = store.verify_audit()?;
    if let Err(e) = report {
        return Err(format!("the fixture does not verify: {e}").into());
    }
    println!("wrote {}", dir.display());
    Ok(())
}
