//! What the step loop does when nobody acts, and what reaches the agent
//! when somebody does: a medium-confidence step review proceeding by itself
//! when its timer ends, a supervisor's pause terminating the run when
//! nobody answers it, the notifications only informational asks and
//! held-back messages raise, the user's words with a plan approval or a
//! request for changes reaching the agent's next prompt, a replan after a
//! failed step, and the cap of ten retries per step. The real engine on a
//! real SQLite file, real git repositories, and a real agent process (the
//! demo agent, or a scripted session over a real process).

use crate::common;
use crate::common::scripted;

use common::{pending_gate, start, start_as, state, until, world_with, Captured, World};
use overseer_acp::StopReason;
use overseer_core::message::{MessageStatus, MessageTo};
use overseer_core::rules::RuleSet;
use overseer_core::supervision::{Autonomy, EvaluatorConfig, SupervisorPolicy};
use overseer_core::{
    Actor, ErrorCode, GateKind, GateView, ReleaseReason, RunId, RunOrigin, RunState, SessionAnswer,
    SessionAsk, SessionRef,
};
use overseer_engine::NotificationKind;
use overseer_store::{TaskSettings, WorkspaceSettings};
use scripted::{Act, Script, Turn};
use std::sync::Arc;

const PLAN: &str = "Here is my plan.\n```overseer-plan\n{\"goal\": \"Greet the world\", \"steps\": [{\"title\": \"Write the greeting\"}, {\"title\": \"Mention it in the README\"}]}\n```\n";

fn say(text: &str) -> Act {
    Act::Say(text.to_owned())
}

/// A turn that ends as `end` after saying `text`.
fn ending(text: &str, end: StopReason) -> Turn {
    Turn {
        acts: vec![say(text)],
        end,
    }
}

/// A world running `script` as agent `scripted`, telling `notes`.
async fn scripted(script: &Arc<Script>, notes: Arc<Captured>) -> World {
    scripted::scripted_world_telling(WorkspaceSettings::default(), "", script, notes).await
}

fn start_scripted(w: &World, settings: TaskSettings) -> RunId {
    start_as(w, "scripted", "none", settings)
}

/// The run's pending gate of `kind` other than `not`.
async fn another_gate(w: &World, run: RunId, kind: GateKind, not: &GateView) -> GateView {
    until(w, &format!("another {kind:?} gate on run {run}"), |e| {
        e.gates(true)
            .ok()?
            .into_iter()
            .find(|g| g.run_id == run && g.kind() == kind && g.id != not.id)
    })
    .await
}

/// The gate's timer is set `ms` after it opened (its deadline is reckoned
/// just before the gate is written, so a few ms less at most); its deadline.
fn assert_timer(gate: &GateView, ms: i64) -> i64 {
    let at = gate.auto_at.expect("the gate has a timer");
    let after = at - gate.opened_at;
    assert!(
        (ms - 500..=ms).contains(&after),
        "a timer {after} ms after the gate opened, not {ms}"
    );
    at
}

/// A step whose only tool call failed scores 0.75 (no sensors, no
/// supervisor: retries 0.2, not destructive 0.1, tool calls 0/1): the
/// medium band, a step review that proceeds by itself when its timer ends
/// (the task's `auto_proceed_seconds`, 1 s here; 10 s unless set). Nobody
/// acts: the engine decides "proceed", recorded as the timer's, and the
/// next step runs. The review told the user as an informational ask
/// (`agent_question_pending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_medium_confidence_step_review_proceeds_by_itself_when_nobody_acts() {
    let failed_read = || {
        Turn::new(vec![
            Act::ToolEnded {
                id: "src/missing.txt".into(),
                ok: false,
            },
            say("The file I wanted to read is not there; wrote nothing."),
        ])
    };
    let script = Script::new(vec![
        Turn::new(vec![say(PLAN)]),
        failed_read(),
        Turn::new(vec![say("Mentioned it.")]),
        // A second run, with the default timer.
        Turn::new(vec![say(PLAN)]),
        failed_read(),
    ]);
    let notes = Arc::new(Captured::default());
    let w = scripted(&script, notes.clone()).await;
    let run = start_scripted(
        &w,
        TaskSettings {
            auto_proceed_seconds: Some(1),
            ..Default::default()
        },
    );
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let review = pending_gate(&w, run, GateKind::StepReview).await;
    let score = review.body.payload_json()["confidence"]
        .as_f64()
        .expect("a score");
    assert!(
        (score - 0.75).abs() < 1e-9,
        "{}",
        review.body.payload_json()
    );
    let at = assert_timer(&review, 1_000);
    let told = until(&w, "the review's notification", |_| {
        notes
            .of(NotificationKind::AgentQuestionPending)
            .into_iter()
            .find(|n| n.run_id == run)
    })
    .await;
    assert_eq!(told.title, format!("Run {run}: a step waits for review"));
    // Nobody acts: the timer decides, once, and the run goes on.
    let decided = until(&w, "the review decided by its timer", |e| {
        let g = e.gate(review.id).ok()?;
        g.decision.is_some().then_some(g)
    })
    .await;
    let d = decided.decision.expect("decided");
    assert_eq!((d.option.as_str(), &d.actor), ("proceed", &Actor::Engine));
    assert!(d.at >= at, "not before its time: {} < {at}", d.at);
    state(&w, run, RunState::PendingReview).await;
    let prompts = script.prompts();
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    assert!(
        prompts[2].contains("Mention it in the README"),
        "{}",
        prompts[2]
    );
    let story = w.engine.gate_story(review.id).expect("story");
    assert!(story.verified);
    assert!(
        story
            .decisions
            .iter()
            .any(|r| r.actor == Actor::Engine && r.rule_ref.as_deref() == Some("timer")),
        "{:?}",
        story.decisions
    );

    // Unless the task says otherwise, the review waits 10 s.
    let second = start_scripted(&w, TaskSettings::default());
    let plan = pending_gate(&w, second, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let review = pending_gate(&w, second, GateKind::StepReview).await;
    assert_timer(&review, 10_000);
    w.engine.abort_run(second, &Actor::cli()).expect("abort");
}

/// The supervisor pauses a run whose step keeps drifting (the rules
/// evaluator: one reorient, then a pause) and nobody answers the pause
/// within `pause_timeout_seconds`: the run is terminated as
/// supervisor_rejected, and its timeline and story say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_pause_nobody_answers_terminates_the_run_at_its_timeout() {
    let settings = WorkspaceSettings {
        supervisor: Some(SupervisorPolicy {
            enabled: true,
            autonomy: Autonomy::Advisory,
            evaluator: EvaluatorConfig::Rules,
            max_reorient_attempts: 1,
            pause_timeout_seconds: 1,
            ..SupervisorPolicy::default()
        }),
        // The edits need no answer: only the pause waits for one.
        permissions: RuleSet::parse(&["Edit(**)".to_owned()], &[], &[]).expect("rules"),
        ..Default::default()
    };
    let w = world_with(settings, Arc::new(overseer_engine::LogNotifier), "").await;
    let run = start(&w, "drift");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let pause = pending_gate(&w, run, GateKind::SupervisorPause).await;
    assert_timer(&pause, 1_000);
    state(
        &w,
        run,
        RunState::Released {
            reason: ReleaseReason::SupervisorRejected,
        },
    )
    .await;
    let g = w.engine.gate(pause.id).expect("gate");
    let d = g.decision.expect("decided by its timer");
    assert_eq!((d.option.as_str(), &d.actor), ("abort", &Actor::Engine));
    let released = w.engine.run(run).expect("run");
    assert_eq!(
        released.release_note.as_deref(),
        Some("terminated: nobody answered the supervisor's pause within 1 s"),
        "{released:?}"
    );
    assert!(w.engine.gate_story(pause.id).expect("story").verified);
}

/// A message an agent addresses to a peer is held back, and the user is
/// told (`agent_message_blocked`); a note the agent leaves (a hook's
/// Notification) is an informational ask (`agent_question_pending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_back_message_and_an_agents_note_notify_the_user() {
    let notes = Arc::new(Captured::default());
    let w = world_with(WorkspaceSettings::default(), notes.clone(), "").await;
    let session = |id: &str| SessionRef {
        origin: RunOrigin::ClaudeCode,
        session_id: id.into(),
        cwd: w.repo.clone(),
        agent: None,
    };
    let ask = |id: &str, ask: SessionAsk| w.engine.session_ask(session(id), ask, None);
    let SessionAnswer::Messages { .. } = ask("peer", SessionAsk::ReadMessages { after: None })
        .await
        .expect("the peer's row")
    else {
        panic!("messages")
    };
    let peer = w
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|r| r.session.as_ref().is_some_and(|s| s.session_id == "peer"))
        .expect("the peer's row")
        .id;
    let SessionAnswer::Message { message } = ask(
        "sender",
        SessionAsk::SendMessage {
            to: MessageTo::Run { run: peer },
            body: "psst".into(),
            correlation_id: None,
        },
    )
    .await
    .expect("sent") else {
        panic!("a message answer")
    };
    assert_eq!(message.status, MessageStatus::Blocked);
    let sender = message.from_run.expect("from the sender's run");
    let blocked = until(&w, "the held-back message's notification", |_| {
        notes
            .of(NotificationKind::AgentMessageBlocked)
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(blocked.run_id, sender);
    assert_eq!(
        blocked.title,
        format!("Run {sender}: a message was held back")
    );
    assert!(blocked.body.contains("never to a peer"), "{}", blocked.body);

    ask(
        "sender",
        SessionAsk::Notice {
            kind: overseer_core::session::NoticeKind::Notification,
            title: Some("Heads up".into()),
            message: "I am waiting for the build".into(),
        },
    )
    .await
    .expect("noted");
    let note = until(&w, "the note's notification", |_| {
        notes
            .of(NotificationKind::AgentQuestionPending)
            .into_iter()
            .find(|n| n.run_id == sender)
    })
    .await;
    assert!(note.title.contains("a note from"), "{}", note.title);
    assert!(
        !notes
            .of(NotificationKind::AgentQuestionBlocking)
            .iter()
            .any(|n| n.run_id == sender),
        "a note asks nothing"
    );
}

/// The user's words with a plan approval reach the agent in its first
/// step's prompt; a request for changes is the next planning prompt, and
/// its revised plan is a new plan gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_words_on_a_plan_reach_the_agents_next_prompt() {
    let script = Script::new(vec![
        Turn::new(vec![say(PLAN)]),
        Turn::new(vec![say(PLAN)]),
        Turn::new(vec![say("Wrote it.")]),
        Turn::new(vec![say("Mentioned it.")]),
    ]);
    let w = scripted(&script, Arc::new(Captured::default())).await;
    let run = start_scripted(&w, TaskSettings::default());
    let first = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(
            first.id,
            "request_changes",
            Some("say who wrote the greeting"),
            &Actor::cli(),
        )
        .expect("request changes");
    let second = another_gate(&w, run, GateKind::Plan, &first).await;
    let prompts = script.prompts();
    assert_eq!(prompts.len(), 2, "a new planning turn: {prompts:?}");
    assert!(
        prompts[1].contains(
            "The user asked for changes to the plan: say who wrote the greeting\nRevise the plan."
        ),
        "{}",
        prompts[1]
    );
    w.engine
        .decide_gate(
            second.id,
            "approve",
            Some("keep lines under 80 columns"),
            &Actor::cli(),
        )
        .expect("approve with feedback");
    state(&w, run, RunState::PendingReview).await;
    let prompts = script.prompts();
    assert_eq!(prompts.len(), 4, "{prompts:?}");
    assert!(
        prompts[2].contains("Write the greeting")
            && prompts[2].contains("keep lines under 80 columns"),
        "the first step's prompt carries the approval's words: {}",
        prompts[2]
    );
    assert!(
        !prompts[3].contains("keep lines under 80 columns"),
        "said once: {}",
        prompts[3]
    );
}

/// A failed step's deviation answered "replan" with guidance: the agent
/// plans again (a planning prompt saying what failed and the user's
/// words), and the new plan is a new plan gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replan_after_a_failed_step_asks_the_agent_for_a_new_plan() {
    let script = Script::new(vec![
        Turn::new(vec![say(PLAN)]),
        ending("I cannot write that.", StopReason::Refusal),
        Turn::new(vec![say(PLAN)]),
    ]);
    let w = scripted(&script, Arc::new(Captured::default())).await;
    let run = start_scripted(&w, TaskSettings::default());
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let deviation = pending_gate(&w, run, GateKind::Deviation).await;
    w.engine
        .decide_gate(
            deviation.id,
            "replan",
            Some("write to a new file instead"),
            &Actor::cli(),
        )
        .expect("replan");
    another_gate(&w, run, GateKind::Plan, &plan).await;
    let prompts = script.prompts();
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    let replan = &prompts[2];
    assert!(
        replan.contains("The last attempt failed: the turn ended with Refusal")
            && replan.contains("Make a new plan. write to a new file instead"),
        "{replan}"
    );
    assert_eq!(
        overseer_core::plan::step_of_prompt(replan),
        None,
        "a planning prompt, not a step's: {replan}"
    );
}

/// A step that keeps failing can be retried ten times; the eleventh
/// failure offers no retry (replan or stop), and a retry asked for anyway
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_is_retried_at_most_ten_times() {
    let mut turns = vec![Turn::new(vec![say(PLAN)])];
    turns.extend((0..11).map(|i| ending(&format!("attempt {i} failed"), StopReason::Refusal)));
    let script = Script::new(turns);
    let w = scripted(&script, Arc::new(Captured::default())).await;
    let run = start_scripted(&w, TaskSettings::default());
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    w.engine
        .decide_gate(plan.id, "approve", None, &Actor::cli())
        .expect("approve");
    let mut last = plan;
    for attempt in 0..10u32 {
        let deviation = another_gate(&w, run, GateKind::Deviation, &last).await;
        assert_eq!(
            deviation.body.payload_json()["attempts"],
            attempt,
            "{}",
            deviation.body.payload_json()
        );
        assert!(
            deviation.options.iter().any(|o| o.id == "retry"),
            "retry {} is offered: {:?}",
            attempt + 1,
            deviation.options
        );
        w.engine
            .decide_gate(deviation.id, "retry", None, &Actor::cli())
            .expect("retry");
        last = deviation;
    }
    let capped = another_gate(&w, run, GateKind::Deviation, &last).await;
    assert_eq!(capped.body.payload_json()["attempts"], 10);
    assert_eq!(capped.body.payload_json()["max_attempts"], 10);
    let offered: Vec<&str> = capped.options.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(offered, ["replan", "stop"], "no eleventh retry");
    let err = w
        .engine
        .decide_gate(capped.id, "retry", None, &Actor::cli())
        .expect_err("a retry past the cap");
    assert_eq!(err.code, ErrorCode::InvalidInput, "{}", err.message);
    // 1 planning turn and 11 attempts at the step: no twelfth.
    assert_eq!(script.prompts().len(), 12);
    w.engine
        .decide_gate(capped.id, "stop", None, &Actor::cli())
        .expect("stop");
}

/// A workspace rule naming a risk level: `Risk(low)` lets a command known
/// only to read run without asking (the rule named in the timeline), a
/// medium-risk command still asks and says its risk, and an allow rule
/// naming `critical` is refused with the field it is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_risk_low_lets_a_read_only_command_through_and_a_riskier_one_asks() {
    use overseer_core::rules::RiskLevel;
    let script = Script::new(vec![Turn::new(vec![
        Act::Ask(scripted::call(
            "status",
            "execute",
            "Run git status",
            serde_json::json!({"command": "git status"}),
        )),
        Act::Ask(scripted::call(
            "tests",
            "execute",
            "Run npm test",
            serde_json::json!({"command": "npm test"}),
        )),
        say("Checked."),
    ])]);
    let settings = WorkspaceSettings {
        permissions: RuleSet::parse(&["Risk(low)".to_owned()], &[], &[]).expect("rules"),
        ..Default::default()
    };
    let w = scripted::scripted_world_telling(settings, "", &script, Arc::new(Captured::default()))
        .await;
    let run = start_scripted(
        &w,
        TaskSettings {
            plan: Some(overseer_core::agent::PlanStrategy::Skip),
            ..Default::default()
        },
    );
    let asked = pending_gate(&w, run, GateKind::ToolCall).await;
    let overseer_core::GateBody::ToolCall(gate) = &asked.body else {
        panic!("a tool call: {:?}", asked.body)
    };
    assert_eq!(
        gate.tool_call.id.as_deref(),
        Some("tests"),
        "only the riskier command asks"
    );
    assert_eq!(gate.risk.as_ref().map(|r| r.level), Some(RiskLevel::Medium));
    assert_eq!(
        script.answers(),
        [(
            "status".to_owned(),
            overseer_acp::PermissionReply::Selected {
                option_id: "opt-allow_once".into()
            }
        )],
        "git status was allowed without a gate"
    );
    let allowed = w
        .engine
        .activity(run, 0)
        .expect("activity")
        .into_iter()
        .find(|a| a.kind() == "tool_allowed")
        .expect("the allow in the timeline");
    assert_eq!(
        allowed.payload()["provenance"][0]["rule"],
        "Risk(low)",
        "{:?}",
        allowed.payload()
    );
    let errors = w
        .engine
        .check_settings(&overseer_engine::SettingsChange::Permissions {
            scope: overseer_engine::Scope {
                workspace: "demo".into(),
                task: None,
            },
            rules: overseer_engine::settings::RuleTexts {
                allow: vec!["Bash(ls)".into(), "Risk(critical)".into()],
                ..Default::default()
            },
        })
        .expect("checked");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].field, "rules.allow[1]");
    assert!(errors[0].message.contains("always ask"), "{errors:?}");
    w.engine
        .decide_gate(asked.id, "no", None, &Actor::cli())
        .expect("no");
}
