//! A run's life through the agent-session trait: the real orchestrator, a
//! real engine on a real SQLite file, a real git repository and a real
//! (contained) agent process, with a scripted session in place of ACP. The
//! script says what the agent does; the tests check what the user sees and
//! relies on: gates, states, the timeline, the branch.

use crate::common;
use crate::common::scripted;

use common::{git, pending_gate, start_as, state, until, World};
use overseer_acp::{PermissionReply, QuestionReply};
use overseer_core::agent::PlanStrategy;
use overseer_core::{Actor, DeviationGate, GateBody, GateKind, ReleaseReason, RunState};
use overseer_engine::{Engine, LogNotifier, SystemClock};
use overseer_store::{TaskSettings, WorkspaceSettings};
use scripted::{call, Act, Script, Scripted, Turn};
use std::sync::Arc;

/// A world whose `scripted` agent is a real process (`sleep`) whose session
/// is `script`'s.
async fn scripted_world(sensors: Vec<String>, script: &Arc<Script>) -> World {
    scripted::scripted_world(
        WorkspaceSettings {
            sensors,
            ..Default::default()
        },
        "",
        script,
    )
    .await
}

fn start(w: &World, plan: Option<PlanStrategy>) -> i64 {
    start_as(
        w,
        "scripted",
        "none",
        TaskSettings {
            plan,
            ..Default::default()
        },
    )
    .into()
}

fn say(text: &str) -> Act {
    Act::Say(text.to_owned())
}

fn write(path: &str, text: &str) -> Act {
    Act::Write {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

fn kinds(w: &World, run: i64) -> Vec<String> {
    w.engine
        .activity(overseer_core::RunId(run), 0)
        .expect("activity")
        .into_iter()
        .map(|a| a.kind())
        .collect()
}

fn gates_of(w: &World, run: i64, kind: GateKind) -> usize {
    w.engine
        .gates(false)
        .expect("gates")
        .into_iter()
        .filter(|g| g.run_id == run && g.kind() == kind)
        .count()
}

const PLAN: &str = "Here is my plan.\n```overseer-plan\n{\"goal\": \"Greet the world\", \"steps\": [{\"title\": \"Write the greeting\"}, {\"title\": \"Mention it in the README\"}]}\n```\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposed_plan_is_approved_then_each_step_runs_and_the_work_waits_for_review() {
    let script = Script::new(vec![
        Turn::new(vec![say(PLAN)]),
        Turn::new(vec![
            write("src/greeting.txt", "hello, world\n"),
            say("Wrote the greeting."),
        ]),
        Turn::new(vec![
            write("README.md", "# demo\n\nIt greets the world.\n"),
            say("Done."),
        ]),
    ]);
    let w = scripted_world(vec!["test -s src/greeting.txt".into()], &script).await;
    let run = start(&w, None);

    let plan = pending_gate(&w, overseer_core::RunId(run), GateKind::Plan).await;
    let GateBody::Plan(proposal) = &plan.body else {
        panic!("a plan gate carries a plan: {:?}", plan.body)
    };
    let titles: Vec<&str> = proposal.steps.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles, ["Write the greeting", "Mention it in the README"]);
    // Nothing is asked of the agent, nor changed, before the plan is approved.
    assert_eq!(script.prompts().len(), 1);
    assert_eq!(
        w.engine.run(overseer_core::RunId(run)).expect("run").state,
        RunState::Running,
        "the run waits on its plan"
    );
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve plan");

    let review = pending_gate(&w, overseer_core::RunId(run), GateKind::MergeReview).await;
    state(&w, overseer_core::RunId(run), RunState::PendingReview).await;
    assert_eq!(review.run_id, run);
    // Each step was its own turn, on its own step of the approved plan.
    let prompts = script.prompts();
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    assert!(prompts[1].contains("Write the greeting"), "{}", prompts[1]);
    assert!(
        prompts[2].contains("Mention it in the README"),
        "{}",
        prompts[2]
    );
    let activity = w
        .engine
        .activity(overseer_core::RunId(run), 0)
        .expect("activity");
    let started: Vec<i64> = activity
        .iter()
        .filter(|a| a.kind() == "step_started")
        .filter_map(|a| a.payload()["step"].as_i64())
        .collect();
    assert_eq!(started, [1, 2]);
    assert!(activity
        .iter()
        .any(|a| a.kind() == "message" && a.payload()["text"] == "Wrote the greeting."));
    assert!(activity
        .iter()
        .any(|a| a.kind() == "sensor" && a.payload()["passed"] == true));
    let (files, diff) = w.engine.run_diff(overseer_core::RunId(run)).expect("diff");
    assert!(diff.contains("+hello, world"), "{diff}");
    assert!(diff.contains("+It greets the world."), "{diff}");
    assert_eq!(files.len(), 2, "{files:?}");

    // The review approved: the work lands on the base branch.
    w.engine
        .approve_run(overseer_core::RunId(run), &Actor::app())
        .expect("approve");
    assert_eq!(
        w.engine.run(overseer_core::RunId(run)).expect("run").state,
        RunState::Released {
            reason: ReleaseReason::Merged
        }
    );
    assert_eq!(
        git(&w.repo, &["show", "main:src/greeting.txt"]),
        "hello, world"
    );
    assert!(w.engine.verify_audit().expect("read").is_ok());
    // The run is over: its agent's session is let go of, not kept (with
    // the task reading its messages) for as long as the engine runs.
    until(&w, "the finished run's agent session to be dropped", |_| {
        (script.dropped.load(std::sync::atomic::Ordering::SeqCst) == script.sessions().len())
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_is_allowed_by_rule_and_a_command_waits_for_the_human_who_says_no_and_why() {
    let script = Script::new(vec![
        Turn::new(vec![
            Act::Ask(call(
                "read-1",
                "read",
                "Read src/greeting.txt",
                serde_json::json!({"path": "src/greeting.txt"}),
            )),
            Act::Ask(call(
                "exec-1",
                "execute",
                "Run rm -rf build",
                serde_json::json!({"command": "rm -rf build"}),
            )),
            say("I will leave the build alone."),
        ]),
        Turn::new(vec![say("Understood.")]),
    ]);
    let w = scripted_world(Vec::new(), &script).await;
    let run = start(&w, Some(PlanStrategy::Skip));

    let gate = pending_gate(&w, overseer_core::RunId(run), GateKind::ToolCall).await;
    assert_eq!(
        gate.body.payload_json()["tool_call"]["id"],
        "exec-1",
        "{}",
        gate.body.payload_json()
    );
    // The read was decided by the default rules, with no gate, and the agent
    // got its answer; the command waits for a human, and so does the turn.
    assert_eq!(
        script.answers(),
        [(
            "read-1".to_owned(),
            PermissionReply::Selected {
                option_id: "opt-allow_once".into()
            }
        )]
    );
    assert!(
        kinds(&w, run).iter().any(|k| k == "tool_allowed"),
        "the rule's allow is in the timeline"
    );
    assert_eq!(
        gates_of(&w, run, GateKind::ToolCall),
        1,
        "only the command asks"
    );
    assert_eq!(
        w.engine.run(overseer_core::RunId(run)).expect("run").state,
        RunState::Running
    );
    assert_eq!(script.prompts().len(), 1);

    w.engine
        .decide_gate(gate.id, "no", Some("not in this repository"), &Actor::cli())
        .expect("no");
    // A step that asked for a destructive command is the user's to weigh,
    // refused or not.
    let review = pending_gate(&w, overseer_core::RunId(run), GateKind::StepReview).await;
    assert_eq!(
        review.body.payload_json()["destructive"],
        true,
        "{}",
        review.body.payload_json()
    );
    w.engine
        .decide_gate(review.id, "proceed", None, &Actor::cli())
        .expect("proceed");
    state(&w, overseer_core::RunId(run), RunState::PendingReview).await;
    let answers = script.answers();
    assert_eq!(
        answers[1],
        (
            "exec-1".to_owned(),
            PermissionReply::Selected {
                option_id: "opt-reject_once".into()
            }
        )
    );
    // The agent hears why at once, in a follow-up turn on the same step.
    let prompts = script.prompts();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(
        prompts[1].contains("not in this repository"),
        "{}",
        prompts[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_ends_its_planning_turn_without_a_plan_puts_its_words_to_the_user() {
    let script = Script::new(vec![Turn::new(vec![say(
        "I would change the greeting in src/greeting.txt to greet the world.",
    )])]);
    let w = scripted_world(Vec::new(), &script).await;
    let run = start(&w, None);

    let plan = pending_gate(&w, overseer_core::RunId(run), GateKind::Plan).await;
    assert_eq!(
        plan.body.payload_json()["source"],
        "prose",
        "{}",
        plan.body.payload_json()
    );
    assert!(
        plan.body.payload_json()["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("change the greeting")),
        "{}",
        plan.body.payload_json()
    );
    // A missing plan is never a deviation.
    assert_eq!(gates_of(&w, run, GateKind::Deviation), 0);
    assert!(!kinds(&w, run).iter().any(|k| k == "deviation"));

    w.engine
        .decide_gate(plan.id, "reject", Some("not now"), &Actor::cli())
        .expect("reject");
    state(
        &w,
        overseer_core::RunId(run),
        RunState::Released {
            reason: ReleaseReason::PlanRejected,
        },
    )
    .await;
    assert_eq!(script.prompts().len(), 1, "the agent never acted");
    assert_eq!(
        std::fs::read_to_string(w.repo.join("src/greeting.txt")).expect("read"),
        "hello\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_dies_mid_turn_ends_the_run_with_its_reason_and_keeps_what_it_did() {
    let script = Script::new(vec![Turn::new(vec![
        write("src/greeting.txt", "hello, wor"),
        say("Halfway there."),
        Act::Die,
    ])]);
    let w = scripted_world(Vec::new(), &script).await;
    let run = start(&w, Some(PlanStrategy::Skip));

    let deviation = pending_gate(&w, overseer_core::RunId(run), GateKind::Deviation).await;
    let GateBody::Deviation(DeviationGate { error, .. }) = &deviation.body else {
        panic!("a deviation gate: {:?}", deviation.body)
    };
    assert!(
        error.contains("exited or crashed"),
        "the user is told the agent died: {error}"
    );
    // What the agent did and said before it died is in the timeline.
    let activity = w
        .engine
        .activity(overseer_core::RunId(run), 0)
        .expect("activity");
    assert!(activity
        .iter()
        .any(|a| a.kind() == "file_written" && a.payload()["path"] == "src/greeting.txt"));
    assert!(activity
        .iter()
        .any(|a| a.kind() == "message" && a.payload()["text"] == "Halfway there."));

    w.engine
        .decide_gate(deviation.id, "stop", None, &Actor::cli())
        .expect("stop");
    let failed = until(&w, "the run to fail", |e| {
        let r = e.run(overseer_core::RunId(run)).ok()?;
        (r.state
            == RunState::Released {
                reason: ReleaseReason::Failed,
            })
        .then_some(r)
    })
    .await;
    assert!(
        failed
            .release_note
            .as_deref()
            .is_some_and(|n| n.contains("exited or crashed")),
        "{:?}",
        failed.release_note
    );
    // Its work is kept in the run's worktree.
    let work = w.engine.worktree_path("demo", overseer_core::RunId(run));
    assert_eq!(
        std::fs::read_to_string(work.join("src/greeting.txt")).expect("the worktree"),
        "hello, wor"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_question_waits_in_the_inbox_and_the_users_answer_reaches_it() {
    let script = Script::new(vec![Turn::new(vec![
        Act::Question {
            message: "Which greeting?".to_owned(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {"greeting": {"type": "string"}},
            }),
        },
        write("src/greeting.txt", "hi\n"),
    ])]);
    let w = scripted_world(Vec::new(), &script).await;
    let run = start(&w, Some(PlanStrategy::Skip));

    let question = pending_gate(&w, overseer_core::RunId(run), GateKind::Question).await;
    assert_eq!(question.body.payload_json()["message"], "Which greeting?");
    assert!(
        w.engine
            .run(overseer_core::RunId(run))
            .expect("run")
            .needs_you
    );
    assert!(
        script.replies().is_empty(),
        "the agent waits for the answer"
    );

    w.engine
        .decide_gate(
            question.id,
            "answer",
            Some(r#"{"greeting": "hi"}"#),
            &Actor::cli(),
        )
        .expect("answer");
    state(&w, overseer_core::RunId(run), RunState::PendingReview).await;
    assert_eq!(
        script.replies(),
        [QuestionReply::Accept {
            content: serde_json::json!({"greeting": "hi"})
        }]
    );
    let (_, diff) = w.engine.run_diff(overseer_core::RunId(run)).expect("diff");
    assert!(diff.contains("+hi"), "{diff}");
}

/// The engine stops (its agents with it) and another starts on the same
/// data, its agents' sessions from the same script.
async fn restart(w: &mut World, script: &Arc<Script>) {
    w.engine.stop_agents().await;
    let engine = Arc::new(
        Engine::open(
            w.engine.paths().clone(),
            Arc::new(SystemClock),
            Arc::new(LogNotifier),
        )
        .expect("engine"),
    );
    engine.use_agent_sessions(Arc::new(Scripted(script.clone())));
    engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    w.engine = engine;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_run_carries_on_in_its_agents_continued_session() {
    let script = Script::new(vec![
        Turn::new(vec![say(PLAN)]),
        Turn::new(vec![write("src/greeting.txt", "hello, world\n")]),
        Turn::new(vec![say("Done.")]),
    ]);
    script
        .resumes
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let mut w = scripted_world(Vec::new(), &script).await;
    let run = start(&w, None);
    let plan = pending_gate(&w, overseer_core::RunId(run), GateKind::Plan).await;

    restart(&mut w, &script).await;
    // The run continues the session it had, and the timeline says so.
    until(&w, "the agent's session resumed", |e| {
        e.activity(overseer_core::RunId(run), 0)
            .ok()?
            .into_iter()
            .find(|a| {
                a.kind() == "session"
                    && a.payload()["text"] == "resumed the agent's session scripted-1"
            })
    })
    .await;
    let sessions = script.sessions();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].resume, None);
    assert_eq!(sessions[1].resume.as_deref(), Some("scripted-1"));
    until(&w, "the run carried on", |e| {
        e.activity(overseer_core::RunId(run), 0)
            .ok()?
            .into_iter()
            .find(|a| a.kind() == "carried_on")
    })
    .await;
    // It waits on the same plan gate: the plan is not asked for again.
    assert_eq!(
        pending_gate(&w, overseer_core::RunId(run), GateKind::Plan)
            .await
            .id,
        plan.id
    );
    assert_eq!(script.prompts().len(), 1);

    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    state(&w, overseer_core::RunId(run), RunState::PendingReview).await;
    let prompts = script.prompts();
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    assert!(prompts[1].contains("Write the greeting"), "{}", prompts[1]);
    let (_, diff) = w.engine.run_diff(overseer_core::RunId(run)).expect("diff");
    assert!(diff.contains("+hello, world"), "{diff}");
}
