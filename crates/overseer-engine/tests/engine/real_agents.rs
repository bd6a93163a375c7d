//! The real ACP adapters, driven end to end by the engine: claude-agent-acp
//! 0.101.0, codex-acp 0.16.0 and Qwen Code 0.24.4 from `tests/real-agents/node_modules`, each
//! pointed at `tests/real-agents/model-server.mjs` (a scripted, offline model
//! server started here with a script from `tests/real-agents/scripts/`). A real
//! engine on a temp dir, a real git repository, the orchestrator started, the
//! gates decided as a user; checked on disk, in the database and in the model
//! server's request log. Install the adapters with `scripts/setup.sh`.

use crate::common;
use crate::common::real;

use common::git;
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, DeviationCause, GateBody, GateKind, ReleaseReason, RunState};
use overseer_engine::{Engine, LogNotifier, Paths, Scope, SystemClock};
use overseer_store::WorkspaceSettings;
use real::*;
use serde_json::Value;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

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
    assert_eq!(
        plan.body.payload_json()["source"],
        "agent_mode",
        "{}",
        plan.body.payload_json()
    );
    assert!(
        plan.body.payload_json()["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("# README plan") && m.contains("description is too short")),
        "{}",
        plan.body.payload_json()
    );
    let payload = plan.body.payload_json();
    let steps: Vec<&str> = payload["steps"]
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
    let first = r.server.main_entries();
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
        edit.body.payload_json()["tool_call"]["kind"],
        "edit",
        "{}",
        edit.body.payload_json()
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
        activity.iter().any(|a| a.kind() == "plan_answer"
            && a.payload()["text"]
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

/// Claude Code's own cost report (claude-agent-acp's `usage_update` at each
/// turn's result, priced by Claude Code from the model server's token
/// counts) lands on the run, and a workspace budget below it holds the run
/// before its first step's turn: no step prompt reaches the model until
/// the user raises the budget and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claudes_reported_cost_is_the_runs_and_its_budget_holds_the_next_step() {
    let r = real_world_with(
        "claude cost",
        Adapter::Claude,
        "engine-plan-edit.json",
        Setup {
            env: &[("CLAUDE_CODE_MAX_RETRIES", "1")],
            workspace: WorkspaceSettings {
                max_cost: Some(0.000_001),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await;
    let run = r.start("Describe the project better", None);
    let plan = r.gate(run, &[GateKind::Plan]).await;
    r.decide(&plan, "approve", None);

    // The planning turn's cost is over the budget: a budget gate, before
    // step 1's prompt.
    let held = r.gate(run, &[GateKind::Deviation]).await;
    assert!(
        matches!(&held.body, GateBody::Deviation(d) if d.cause == DeviationCause::Budget),
        "{held:?}\n{}",
        r.dump(run)
    );
    let view = r.engine().run(run).expect("run");
    let usage = view.usage.clone().expect("Claude reported its usage");
    let cost = usage.cost.clone().expect("Claude reported a cost");
    assert_eq!(cost.currency, "USD");
    assert!(cost.amount > 0.0, "{usage:?}");
    assert!(usage.used > 0 && usage.used <= usage.size, "{usage:?}");
    assert!(
        !r.server
            .inputs()
            .iter()
            .any(|l| l.contains("Carry out step 1")),
        "step 1 was prompted past the budget"
    );
    assert_eq!(
        view.state,
        RunState::Running,
        "the agent is held, not stopped"
    );

    // Raised, the run goes on: both steps, the edit asked, then review.
    r.engine()
        .set_max_cost(
            &Scope {
                workspace: "proj".into(),
                task: None,
            },
            Some(100.0),
            &Actor::cli(),
        )
        .expect("raise the budget");
    r.decide(&held, "retry", None);
    let edit = r.gate(run, &[GateKind::ToolCall]).await;
    r.decide(&edit, "yes", None);
    r.gate(run, &[GateKind::MergeReview]).await;
    let after = r
        .engine()
        .run(run)
        .expect("run")
        .usage
        .and_then(|u| u.cost)
        .expect("cost");
    assert!(
        after.amount > cost.amount,
        "each step's turn adds to the cost: {} then {}",
        cost.amount,
        after.amount
    );
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
        first.body.payload_json()["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("Reword README.md")),
        "{}",
        first.body.payload_json()
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
                .find(|g| g.run_id == run && g.kind() == GateKind::Plan && g.id != first.id)
        })
        .await;
    assert!(
        second.body.payload_json()["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("mention the license")),
        "{}",
        second.body.payload_json()
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
    assert_eq!(
        rm.body.payload_json()["tool_call"]["kind"],
        "execute",
        "{}",
        rm.body.payload_json()
    );
    assert_eq!(
        rm.body.payload_json()["always_gated"],
        "destructive_shell",
        "{}",
        rm.body.payload_json()
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
    let main = r.server.main_entries();
    assert!(main.len() >= 2, "{}", r.dump(run));
    assert_eq!(main[0]["reply"]["status"], 529);
    assert!(main[1]["reply"]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Recovered")));
    let activity = r.activity(run);
    assert!(
        !activity.iter().any(|a| a.kind() == "deviation"),
        "{}",
        r.dump(run)
    );
    assert!(activity.iter().any(|a| a.kind() == "message"
        && a.payload()["text"]
            .as_str()
            .is_some_and(|t| t.contains("Recovered after the overload"))));
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_engine_restart_the_run_is_carried_on_continuing_claudes_session_in_its_supervised_mode(
) {
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
    // same data: the run is carried on, its agent's own session continued.
    r.engine().stop_agents().await;
    let engine = Arc::new(
        Engine::open(
            r.paths.clone(),
            Arc::new(SystemClock),
            Arc::new(LogNotifier),
        )
        .expect("engine"),
    );
    engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    r.w.engine = engine;
    let resumed = run;
    r.state(resumed, RunState::PendingReview).await;
    let activity = r.activity(resumed);
    assert!(
        activity.iter().any(|a| a.kind() == "carried_on"),
        "{}",
        r.dump(resumed)
    );
    // From the carried-on agent's session on.
    let second = activity
        .iter()
        .rposition(|a| a.kind() == "session")
        .unwrap_or_else(|| panic!("{}", r.dump(resumed)));
    let activity = activity[second..].to_vec();
    let session = &activity[0];
    assert!(
        session.payload()["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("resumed the agent's session")),
        "{}",
        r.dump(resumed)
    );
    let first_mode = activity
        .iter()
        .position(|a| a.kind() == "mode")
        .expect("the mode is set");
    let first_prompt = activity
        .iter()
        .position(|a| a.kind() == "message")
        .unwrap_or(usize::MAX);
    assert!(first_mode < first_prompt, "{}", r.dump(resumed));
    assert_eq!(activity[first_mode].payload()["mode"], "default");
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
        !r.activity(run).iter().any(|a| a.kind() == "deviation"),
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
    // One by one: a short-lived child listed a moment ago (a shell, a git)
    // may be gone already, which is no reason to fail; the adapter is not.
    let killed = pids
        .iter()
        .filter(|pid| {
            Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .is_ok_and(|s| s.success())
        })
        .count();
    assert!(killed > 0, "no agent process could be killed: {pids:?}");
    let deviation = r.gate(run, &[GateKind::Deviation]).await;
    assert_eq!(
        deviation.body.payload_json()["cause"],
        "turn_failed",
        "{}",
        deviation.body.payload_json()
    );
    assert!(
        deviation.body.payload_json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("exited or crashed") || e.contains("connection")),
        "{}",
        deviation.body.payload_json()
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
        write.body.payload_json()["tool_call"]["kind"],
        "edit",
        "{}",
        write.body.payload_json()
    );
    let activity = r.activity(run);
    let modes: Vec<&str> = activity
        .iter()
        .find_map(|a| match &a.entry {
            overseer_core::Activity::Session { modes, .. } => Some(modes),
            _ => None,
        })
        .expect("session entry")
        .iter()
        .map(|m| m.id.as_str())
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
    let props = &q.body.payload_json()["schema"]["properties"];
    assert_eq!(
        props["question_0"]["title"],
        "Tone",
        "{}",
        q.body.payload_json()
    );
    assert!(props["question_1"].is_object(), "{}", q.body.payload_json());
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
    assert_eq!(
        plan.body.payload_json()["source"],
        "prose",
        "{}",
        plan.body.payload_json()
    );
    r.decide(&plan, "approve", None);

    let shell = r.gate(run, &[GateKind::ToolCall]).await;
    assert_eq!(
        shell.body.payload_json()["tool_call"]["kind"],
        "execute",
        "{}",
        shell.body.payload_json()
    );
    let worktree = r.worktree(run);
    assert!(!worktree.join("notes.txt").exists());
    r.decide(&shell, "yes", None);

    let patch = r
        .until(run, "the patch's gate", |e| {
            e.gates(true)
                .ok()?
                .into_iter()
                .find(|g| g.run_id == run && g.kind() == GateKind::ToolCall && g.id != shell.id)
        })
        .await;
    assert_eq!(
        patch.body.payload_json()["tool_call"]["kind"],
        "edit",
        "{}",
        patch.body.payload_json()
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
        !r.activity(run).iter().any(|a| a.kind() == "deviation"),
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

// ------------------------------------------------------------------ Qwen

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_acting_unasked_by_the_repositorys_own_settings_is_stopped_and_nothing_merges() {
    // Qwen Code 0.24.4 starts its sessions in `auto`; the profile names no
    // mode, so Overseer puts it in `default`, which asks. But the
    // repository's own `.qwen/settings.json` lets `run_shell_command` run
    // without asking, so Qwen runs `rm -rf build` with no
    // session/request_permission: a security event, whatever its mode.
    let r = real_world_with(
        "qwen unasked",
        Adapter::Qwen,
        "qwen-unasked-rm.json",
        Setup {
            files: vec![(
                ".qwen/settings.json".to_owned(),
                r#"{"tools": {"allowed": ["run_shell_command"]}}"#.to_owned(),
            )],
            workspace: overseer_store::WorkspaceSettings {
                auto_advance: Some(true),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await;
    let base = git(&r.w.repo, &["rev-parse", "main"]);
    let run = r.start("Clean the build output", Some(PlanStrategy::Skip));
    r.state(
        run,
        RunState::Released {
            reason: ReleaseReason::Failed,
        },
    )
    .await;
    let activity = r.activity(run);
    let texts = |kind: &str| -> Vec<String> {
        activity
            .iter()
            .filter(|a| a.kind() == kind)
            .map(|a| a.payload()["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    // The setup named the repository's grant.
    assert!(
        texts("security")
            .iter()
            .any(|t| t.contains(".qwen/settings.json") && t.contains("run_shell_command")),
        "{}",
        r.dump(run)
    );
    // Out of `auto` into `default`, before the prompt.
    assert!(
        texts("mode")
            .iter()
            .any(|t| t.contains("started in mode `auto`") && t.contains("`default`")),
        "{}",
        r.dump(run)
    );
    // The model did ask for the command, and Qwen ran it unasked.
    assert!(r.server.sent("Clean the build output"), "{}", r.dump(run));
    assert!(
        texts("security")
            .iter()
            .any(|t| t.contains("ran `rm -rf build`") && t.contains("without asking")),
        "{}",
        r.dump(run)
    );
    let note = r
        .engine()
        .run(run)
        .expect("run")
        .release_note
        .unwrap_or_default();
    assert!(note.contains("security event"), "{note}");
    assert!(
        audit_payloads(&r.paths)
            .iter()
            .any(|p| p["type"] == "security_event"
                && p["event"] == "unasked_action"
                && p["run_id"] == run.0),
        "{}",
        r.dump(run)
    );
    assert!(
        !r.engine()
            .gates(false)
            .expect("gates")
            .iter()
            .any(|g| g.run_id == run && g.kind() == GateKind::ToolCall),
        "nothing was asked: {}",
        r.dump(run)
    );
    // Auto-advance is on: nothing merged; main still has build/.
    assert_eq!(git(&r.w.repo, &["rev-parse", "main"]), base);
    assert_eq!(git(&r.w.repo, &["show", "main:build/out.txt"]), "x");
    r.until(run, "the agent's processes killed", |_| {
        r.agent_pids(run).is_empty().then_some(())
    })
    .await;
    assert!(r.engine().verify_audit().expect("audit").is_ok());
    r.done();
}

// ------------------------------------------------------------------ demo

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_agent_that_switches_itself_to_auto_is_stopped_and_audited() {
    let started = Instant::now();
    let w = common::world(vec![]).await;
    // `switch`: it goes to `auto` but keeps asking (one that then acts
    // unasked is stopped outright: tests/unasked.rs, tests/modes.rs).
    let run = common::start(&w, "switch");
    let plan = common::pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let gate = common::until(&w, "the mode breach gate", |e| {
        let gates = e.gates(true).ok()?;
        if let Some(g) = gates
            .iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::ToolCall)
        {
            panic!("the hijacked agent got a tool call gate: {}", g.title);
        }
        gates
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == GateKind::Deviation)
    })
    .await;
    assert_eq!(
        gate.body.payload_json()["cause"],
        "mode_breach",
        "{}",
        gate.body.payload_json()
    );
    assert_eq!(
        gate.body.payload_json()["mode"],
        "auto",
        "{}",
        gate.body.payload_json()
    );
    let ids: Vec<&str> = gate.options.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["retry", "stop"]);
    let worktree = w.engine.worktree_path("demo", run);
    assert_eq!(read(&worktree.join("src/greeting.txt")), "hello\n");
    let activity = w.engine.activity(run, 0).expect("activity");
    assert!(
        activity.iter().any(|a| a.kind() == "security"),
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

/// `consult` with the real adapter on both sides: the launched Claude calls
/// Overseer's MCP tool, the consulted Claude runs as a read-only child run of
/// it, and its answer comes back as the tool's result to the asking model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_launched_claude_consults_another_claude_and_gets_its_answer() {
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/overseer");
    assert!(
        cli.exists(),
        "{} is missing: build the CLI (`cargo build -p overseer-cli`; `make test` does)",
        cli.display()
    );
    let r = real_world(
        "claude consult",
        Adapter::Claude,
        "engine-consult.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    let run = r.start("Consult through Overseer", Some(PlanStrategy::Skip));
    r.gate(run, &[GateKind::MergeReview]).await;
    let runs = r.engine().runs().expect("runs");
    let child = runs
        .iter()
        .find(|v| v.parent == Some(run))
        .unwrap_or_else(|| panic!("no consultation of run {run}: {}", r.dump(run)));
    assert_eq!(
        child.state,
        RunState::Released {
            reason: ReleaseReason::Ended
        },
        "{}",
        r.dump(child.id)
    );
    // The consulted agent was asked the question, and the asker's model got
    // its answer as the tool's result.
    assert!(
        r.server
            .latest()
            .iter()
            .any(|l| l.contains("CONSULT-QUESTION")),
        "{}",
        r.dump(child.id)
    );
    assert!(
        r.server
            .latest()
            .iter()
            .any(|l| l.contains("CONSULT-ANSWER") && l.contains(&format!("{}", child.id))),
        "the answer and its run reached the asking model: {}",
        r.dump(run)
    );
    r.done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_launched_claude_asks_through_overseers_own_mcp_tools_bound_to_its_run() {
    // Overseer puts `overseer mcp` in the agent's session/new, bound to the
    // run's own socket inside the sandbox (the engine's socket stays hidden).
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/overseer");
    assert!(
        cli.exists(),
        "{} is missing: build the CLI (`cargo build -p overseer-cli`; `make test` does)",
        cli.display()
    );
    let r = real_world(
        "claude mcp",
        Adapter::Claude,
        "engine-mcp-ask.json",
        &[("CLAUDE_CODE_MAX_RETRIES", "1")],
    )
    .await;
    let run = r.start("Ask through Overseer", Some(PlanStrategy::Skip));
    let q = r.gate(run, &[GateKind::Question]).await;
    assert_eq!(
        q.run_id, run,
        "the ask belongs to the launched run, not a session of its own"
    );
    assert_eq!(
        q.body.payload_json()["schema"]["properties"]["question_0"]["oneOf"][1]["const"],
        "Friendly",
        "{}",
        q.body.payload_json()
    );
    r.decide(&q, "answer", Some(r#"{"question_0": "Friendly"}"#));
    r.gate(run, &[GateKind::MergeReview]).await;
    assert!(
        r.server.latest().iter().any(|l| l.contains("Friendly")),
        "the answer reached the model: {}",
        r.dump(run)
    );
    let messages = r.engine().messages(Some(run), None).expect("messages");
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].body, "Going with a friendly tone.");
    assert_eq!(messages[0].from_run, Some(run));
    assert!(
        r.engine()
            .runs()
            .expect("runs")
            .iter()
            .all(|v| !v.origin.is_external()),
        "no external session row for a launched run's own tools"
    );
    r.done();
}
