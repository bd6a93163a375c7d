//! Supervision wired to the world: permission rules on tool calls, the
//! supervisor's evaluation of gates and steps, decision records, gate timers,
//! and steering. What the answers *mean* is decided in
//! [`overseer_core::rules`], [`overseer_core::confidence`] and
//! [`overseer_core::supervision`]; this module only calls them and records.
//!
//! The supervisor is off by default. When a policy enables it, each gate opens
//! with the supervisor's authority on its kind; the evaluator's answer is a
//! vote the store resolves (the user always wins), and any evaluator failure is
//! an `escalate` decision plus a `supervisor_failed` notification: never an
//! approval on error.

use crate::notify::NotificationKind;
use crate::settings::Scope;
use crate::{Engine, Shared, Supervision};
use futures::future::BoxFuture;
use overseer_core::activity::{Activity, RuleDecision};
use overseer_core::rules::{self, Permission, Provenance, RuleLayer, RuleSet, ToolRequest};
use overseer_core::supervision::{
    resolve_policy, select_verdict, verdict_option, Autonomy, Concerns, EvaluatorConfig,
    EvaluatorOutput, PendingEffect, StepFacts, Subject, SupervisorPolicy, Verdict,
};
use overseer_core::{
    Actor, ApiError, ErrorCode, GateBody, GateId, GateKind, GateOption, GateView,
    MergeReviewChoice, RunId, StepReviewChoice, SupervisorPauseChoice,
};
use overseer_evaluate::{
    evaluate_with_timeout, CommandEvaluator, EvaluationRequest, Evaluator, EvaluatorError,
    OpenAiEvaluator,
};
use overseer_store::{DecisionInput, GateSpec, RunWork};
use std::sync::Arc;
use std::time::Duration;

/// The policy that applies to a run: the task's, else the workspace's, else off.
pub(crate) fn policy_of(work: &RunWork) -> SupervisorPolicy {
    resolve_policy(
        work.task_settings.supervisor.as_ref(),
        work.workspace.settings.supervisor.as_ref(),
    )
}

/// Maps an ACP tool call to what the permission rules see.
pub(crate) fn tool_request(info: &overseer_acp::ToolCallInfo, worktree: &str) -> ToolRequest {
    let kind = info.kind.unwrap_or(overseer_core::ToolKind::Other);
    let raw = info.raw_input.as_ref();
    let field = |names: &[&str]| {
        names.iter().find_map(|n| {
            raw.and_then(|r| r.get(*n))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        })
    };
    let command = field(&["command", "cmd"])
        .or_else(|| argv_command(raw))
        .or_else(|| {
            (kind == overseer_core::ToolKind::Execute)
                .then(|| info.title.clone())
                .flatten()
        });
    let mut paths: Vec<String> = info
        .locations
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(p) = field(&["file_path", "path", "abs_path", "notebook_path"]) {
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    // MCP tools by their own name (`mcp__server__tool`): the rules name them
    // so; a subagent dispatch (`Task`) too, which read-only sessions ask for.
    let mcp_name = info
        .name
        .as_deref()
        .filter(|n| n.starts_with("mcp__") || rules::is_dispatch_tool(n));
    let tool = match kind.as_str() {
        _ if mcp_name.is_some() => mcp_name.unwrap_or_default(),
        "execute" => "Bash",
        "edit" => "Edit",
        "delete" => "Delete",
        "move" => "Move",
        "read" => "Read",
        "search" => "Grep",
        "fetch" => "WebFetch",
        "think" => "Think",
        _ => "Other",
    }
    .to_owned();
    // Where each path really leads, for the rules (core does no I/O): a
    // symlink `docs -> ~` must not make `~/.bashrc` a `docs/**` file.
    let resolved = match std::fs::canonicalize(worktree) {
        Ok(root) => paths
            .iter()
            .map(|p| overseer_acp::resolve_for_rules(&root, p))
            .collect(),
        Err(e) => paths
            .iter()
            .map(|_| rules::Resolved::Unresolved {
                why: format!("the worktree {worktree} cannot be resolved ({e})"),
            })
            .collect(),
    };
    ToolRequest {
        tool,
        kind,
        command,
        paths,
        resolved,
    }
}

/// A command given as an argument list (Codex: `["/bin/bash", "-lc", "rm -rf
/// build"]`): the script a shell runs, else the arguments joined as a shell
/// would read them, so the rules see what will run.
fn argv_command(raw: Option<&serde_json::Value>) -> Option<String> {
    let list = raw?.get("command")?.as_array()?;
    let args: Vec<&str> = list.iter().filter_map(|v| v.as_str()).collect();
    if args.len() != list.len() || args.is_empty() {
        return None;
    }
    let shell = args[0].rsplit('/').next().unwrap_or_default();
    let is_shell = matches!(shell, "sh" | "bash" | "zsh" | "dash");
    match args.as_slice() {
        [_, flag, script] if is_shell && flag.starts_with('-') && flag.contains('c') => {
            Some((*script).to_owned())
        }
        _ => shlex::try_join(args.iter().copied()).ok(),
    }
}

/// The permission for one tool call, from the run's own "always" rules, then
/// the task's, then the workspace's. A planning turn is a read-only session
/// whatever the task says: nothing changes before the plan is approved.
pub(crate) fn permission_for(
    work: &RunWork,
    run_rules: &RuleSet,
    req: &ToolRequest,
    worktree: &str,
    planning: bool,
) -> Permission {
    let layers = [
        (RuleLayer::Run, run_rules),
        (RuleLayer::Task, &work.task_settings.permissions),
        (RuleLayer::Workspace, &work.workspace.settings.permissions),
    ];
    let session = if planning {
        rules::SessionMode::ReadOnly
    } else {
        work.task_settings.session
    };
    rules::decide(req, &layers, session, worktree)
}

impl Supervision {
    /// Opens a gate with the supervisor's authority on its kind (when a policy
    /// enables one) and starts the evaluation. Publishes after the commit.
    pub(crate) fn open_gate_supervised(
        self: &Arc<Self>,
        work: &RunWork,
        mut spec: GateSpec,
        actor: &Actor,
    ) -> Result<GateId, ApiError> {
        let policy = policy_of(work);
        spec.authority = policy.authority(spec.kind());
        if spec.approve_option.is_none() {
            spec.approve_option = Some(spec.kind().approve_option().to_owned());
        }
        let gate = self.open_gate_spec(&spec, actor)?;
        if spec.authority.is_some() {
            self.evaluate_later(gate, policy);
        }
        Ok(gate)
    }

    /// Starts the supervisor's evaluation of `gate` on the orchestrator's
    /// runtime.
    fn evaluate_later(self: &Arc<Self>, gate: GateId, policy: SupervisorPolicy) {
        let engine = self.clone();
        let spawned = self
            .runtime
            .get()
            .map(|rt| rt.spawn(async move { evaluate_gate(engine, gate, policy).await }));
        if spawned.is_none() {
            tracing::warn!(gate = %gate, "no runtime: the supervisor cannot evaluate this gate");
        }
    }

    /// The supervisor's authority on a merge review of `work`'s run, when
    /// its policy gives it one: never autonomous on a merge of files other
    /// tools run on their own (it only advises there, and the timeline
    /// says why). Written with the review, in the transaction that opens it
    /// ([`crate::Records::transition_reviewing`]), so its notification
    /// already knows who decides.
    pub(crate) fn review_authority(&self, work: &RunWork) -> Option<Autonomy> {
        let mut authority = policy_of(work).authority(GateKind::MergeReview)?;
        if authority == Autonomy::Autonomous {
            if let Some(why) = self.merge_needs_a_human(work.run_id) {
                authority = Autonomy::Advisory;
                self.record_activity_or_warn(
                    work.run_id,
                    Activity::Merge {
                        text: format!("the supervisor only advises on this merge review: {why}"),
                        outcome: None,
                    },
                );
            }
        }
        Some(authority)
    }

    /// Starts the supervisor's evaluation of a merge review opened under
    /// its authority ([`Supervision::review_authority`]).
    pub(crate) fn supervise_review(self: &Arc<Self>, work: &RunWork, gate: GateId) {
        self.evaluate_later(gate, policy_of(work));
    }

    /// Writes a gate from a spec and publishes it.
    pub(crate) fn open_gate_spec(
        &self,
        spec: &GateSpec,
        actor: &Actor,
    ) -> Result<GateId, ApiError> {
        let now = self.clock.now();
        let write = || Ok(self.write(|tx| tx.open_gate_spec(spec, actor, now))?);
        // An agent's ask counts against its run's cap of pending asks.
        let gate = if matches!(actor, Actor::Agent(_)) {
            self.flood_admit_gate(spec.run_id, write)?
        } else {
            write()?
        };
        Ok(gate)
    }

    /// Records a decision that is not a vote (a rule allowing a tool call, a
    /// step verdict, an evaluator failure).
    pub(crate) fn note_decision(
        &self,
        run: RunId,
        gate: Option<GateId>,
        actor: &Actor,
        input: &DecisionInput,
    ) -> Result<i64, ApiError> {
        let now = self.clock.now();
        Ok(self.write(|tx| tx.record_decision_note(run, gate, actor, input, now))?)
    }

    /// A vote by the supervisor (or a human acting through the supervisor
    /// commands) on a gate, with its rationale. Merge reviews decided this way
    /// take effect here: the merge, or the rejection.
    pub fn supervisor_vote(
        &self,
        gate_id: GateId,
        actor: &Actor,
        input: &DecisionInput,
    ) -> Result<GateView, ApiError> {
        self.supervisor_vote_within(gate_id, actor, input, None)
    }

    /// [`Supervision::supervisor_vote`], where an autonomous decision takes
    /// effect only at `grace_until` (None: at once): until then the gate
    /// stays open to humans and carries the decision as its pending effect;
    /// the gate timers ([`start_timers`]) make it take effect.
    pub(crate) fn supervisor_vote_within(
        &self,
        gate_id: GateId,
        actor: &Actor,
        input: &DecisionInput,
        grace_until: Option<overseer_core::Millis>,
    ) -> Result<GateView, ApiError> {
        let now = self.clock.now();
        let outcome = self.write(|tx| tx.vote_within(gate_id, actor, input, grace_until, now))?;
        if outcome.late {
            // Kept, signed, and shown in "Why?" as overruled; the human's
            // decision stands.
            let (option, by) = outcome
                .gate
                .decision
                .as_ref()
                .map(|d| (d.option.clone(), d.who_and_when()))
                .unwrap_or_default();
            return Err(ApiError::new(
                ErrorCode::AlreadyDecided,
                format!(
                    "gate {gate_id} was already decided \"{option}\" by {by}; this vote is recorded as overruled and changes nothing"
                ),
            ));
        }
        if outcome.decided && outcome.gate.kind() == GateKind::MergeReview {
            self.review_effect(&outcome.gate)?;
        }
        let gate = self.gate(gate_id)?;
        // Its word reaches the notification too, not only the card.
        self.tell_advice(&gate);
        Ok(gate)
    }

    /// A human voting as the supervisor has the supervisor's authority, never
    /// more: the actor is derived from the caller, not claimed.
    pub fn vote_as_supervisor(
        &self,
        gate: GateId,
        approve: bool,
        rationale: String,
        actor: &Actor,
    ) -> Result<GateView, ApiError> {
        let name = match actor {
            Actor::User(n) | Actor::Person { person: n, .. } => n.clone(),
            Actor::Supervisor(n) | Actor::Agent(n) => n.clone(),
            Actor::Engine => "engine".to_owned(),
        };
        let view = self.gate(gate)?;
        let verdict = if approve {
            overseer_core::supervision::Verdict::Approve
        } else {
            overseer_core::supervision::Verdict::Reject
        };
        let option = overseer_core::supervision::verdict_option(view.kind(), verdict).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "the supervisor cannot decide {} gates; decide it yourself with `overseer gates decide`",
                    view.kind().as_str()
                ),
            )
        })?;
        let input = DecisionInput {
            verdict: Some(verdict),
            option: Some(option.to_owned()),
            rationale: Some(rationale),
            rule_ref: Some("manual".to_owned()),
            source_event: Some(format!("cli:{gate}")),
            ..Default::default()
        };
        // An autonomous decision waits for its grace, whoever voted for the
        // supervisor: the user can still override it.
        let grace_until = match view.authority {
            Some(Autonomy::Autonomous) => {
                let policy = policy_of(&self.store().run_work(view.run_id)?);
                PendingEffect::deadline(&policy, self.clock.now())
            }
            _ => None,
        };
        let decided =
            self.supervisor_vote_within(gate, &Actor::Supervisor(name), &input, grace_until)?;
        if let Some(effect) = &decided.pending_effect {
            tell_pending_effect(self, &decided, effect);
        }
        Ok(decided)
    }

    /// A merge review decided by a vote (the supervisor's, or a human's
    /// approval it co-signed): marked effected (from now on nobody can
    /// override it) and applied. Approval merges through the one merge
    /// ([`Engine::effect_approval`]); anything else releases the run as its
    /// decider chose.
    pub(crate) fn review_effect(&self, gate: &GateView) -> Result<(), ApiError> {
        let now = self.clock.now();
        let gate = self.write(|tx| tx.mark_effected(gate.id, now))?;
        let Some(d) = gate.decision.clone() else {
            return Ok(());
        };
        let run = gate.run_id;
        let choice = d.choice::<MergeReviewChoice>();
        if choice == Ok(MergeReviewChoice::Approve) {
            return self.effect_approval(&gate, &d.actor).map(|_| ());
        }
        match (&d.actor, choice) {
            (Actor::Supervisor(_), _) => {
                let why = d
                    .context
                    .unwrap_or_else(|| "rejected by the supervisor".to_owned());
                self.transition(
                    run,
                    overseer_core::RunEvent::SupervisorReject,
                    Some(&why),
                    &d.actor,
                )?;
            }
            (_, Ok(MergeReviewChoice::Abort)) => {
                self.abort_run(run, &d.actor)?;
            }
            (_, Ok(MergeReviewChoice::Approve | MergeReviewChoice::Reject) | Err(_)) => {
                let why = d
                    .context
                    .unwrap_or_else(|| format!("rejected by {}", d.actor));
                self.transition(run, overseer_core::RunEvent::Reject, Some(&why), &d.actor)?;
            }
        }
        Ok(())
    }

    /// Sends an instruction to a running agent's next turn, recorded as a
    /// user instruction.
    pub fn steer_run(&self, run: RunId, text: &str, actor: &Actor) -> Result<(), ApiError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "a steering instruction needs text: say what the agent should do differently",
            ));
        }
        let view = self.run(run)?;
        if !view.actions.steer {
            return Err(ApiError::new(
                ErrorCode::InvalidTransition,
                format!(
                    "run {run} is {}; only a run whose agent is still working can be steered",
                    view.state
                ),
            ));
        }
        self.queue_steering(run, text, actor)
    }

    /// Keeps an instruction for `run`'s next turn (in the database: it
    /// survives a restart), with its timeline entry.
    pub(crate) fn queue_steering(
        &self,
        run: RunId,
        text: &str,
        actor: &Actor,
    ) -> Result<(), ApiError> {
        let now = self.clock.now();
        self.write(|tx| tx.add_steering(run, text, actor, now))?;
        self.record_activity(
            run,
            Activity::UserInstruction {
                text: text.to_owned(),
                by: overseer_core::device::actor_text(actor),
            },
        )
    }

    /// A permission rule allowed a tool call: its decision record and its
    /// timeline entry, in one write. Err (nothing allowed) when they cannot
    /// be written: no allow without its record.
    pub(crate) fn record_rule_allow(
        &self,
        work: &RunWork,
        title: &str,
        req: &ToolRequest,
        rule: &Provenance,
        source: Option<String>,
    ) -> Result<(), ApiError> {
        let run = work.run_id;
        let layer = rule.layers();
        self.record_rule_decision(
            run,
            &DecisionInput {
                verdict: Some(Verdict::Approve),
                rationale: Some(format!("allowed by rule ({layer}): {title}")),
                rule_ref: Some(rule.rule()),
                provenance: Some(rule.clone()),
                source_event: source,
                ..DecisionInput::default()
            },
            Activity::ToolAllowed(RuleDecision {
                title: title.to_owned(),
                kind: req.kind,
                text: format!("{rule} ({layer})"),
                provenance: Some(rule.clone()),
            }),
        )
    }

    /// A rule's decision record and its timeline entry, committed together
    /// (one commit on the way to the agent's answer, not two), then pushed.
    fn record_rule_decision(
        &self,
        run: RunId,
        input: &DecisionInput,
        entry: Activity,
    ) -> Result<(), ApiError> {
        let now = self.clock.now();
        self.write(|tx| {
            tx.record_decision_note(run, None, &Actor::Engine, input, now)?;
            tx.record_run_event(run, &entry, now)
        })?;
        Ok(())
    }

    /// A permission rule denied a tool call: its decision record and
    /// timeline entry. A denial stands even when its record cannot be
    /// written (the safe side); the failure is logged.
    pub(crate) fn record_rule_deny(
        &self,
        work: &RunWork,
        title: &str,
        req: &ToolRequest,
        rule: &Provenance,
        reason: &str,
        source: Option<String>,
    ) {
        let run = work.run_id;
        let layer = rule.layers();
        if let Err(e) = self.record_rule_decision(
            run,
            &DecisionInput {
                verdict: Some(Verdict::Reject),
                rationale: Some(format!("{reason} ({layer}): {title}")),
                rule_ref: Some(rule.rule()),
                provenance: Some(rule.clone()),
                source_event: source,
                ..DecisionInput::default()
            },
            Activity::ToolDenied(RuleDecision {
                title: title.to_owned(),
                kind: req.kind,
                text: format!("{reason} ({layer})"),
                provenance: Some(rule.clone()),
            }),
        ) {
            tracing::error!(run = %run, "cannot record a rule's denial: {}", e.message);
        }
    }

    /// Every decision recorded on `run` (rules, the supervisor, timers,
    /// retries, humans), oldest first.
    pub fn run_decisions(
        &self,
        run: RunId,
    ) -> Result<Vec<overseer_core::supervision::DecisionRecord>, ApiError> {
        self.run(run)?;
        Ok(self.store().decisions_of_run(run)?)
    }

    /// Whether instructions wait for `run`'s next turn.
    pub(crate) fn has_steering(&self, run: RunId) -> bool {
        self.store().has_steering(run).unwrap_or_else(|e| {
            tracing::error!(run = %run, "cannot read the run's steering: {e}");
            false
        })
    }

    /// Takes the instructions waiting for `run`'s next turn.
    pub(crate) fn take_steering(&self, run: RunId) -> Vec<String> {
        let now = self.clock.now();
        self.write(|tx| tx.take_steering(run, now))
            .unwrap_or_else(|e| {
                // Left waiting, not lost: the next turn tries again.
                tracing::error!(run = %run, "cannot take the run's steering: {e}");
                Vec::new()
            })
    }
}

/// The evaluator a policy names.
pub(crate) fn evaluator(
    policy: &SupervisorPolicy,
    supervision: &crate::config::SupervisionConfig,
    launcher: impl FnOnce() -> Arc<dyn overseer_evaluate::Launcher>,
) -> Arc<dyn Evaluator> {
    let timeout = Duration::from_secs(policy.timeout_seconds.max(1));
    // The secrets the owner named (overseer.toml): the only variables of
    // the engine's an evaluator may use (issue 37, item 2).
    let named = supervision.evaluator_secrets();
    match &policy.evaluator {
        EvaluatorConfig::Rules => Arc::new(RulesEvaluator),
        EvaluatorConfig::Command { command, args } => Arc::new(CommandEvaluator {
            command: command.clone(),
            args: args.clone(),
            timeout,
            env: overseer_evaluate::evaluator_env(std::env::vars(), &named),
            // Its sandbox, made for a command only.
            launcher: launcher(),
        }),
        EvaluatorConfig::Openai {
            base_url,
            model,
            api_key_env,
        } => {
            if let Some(Err(e)) = api_key_env
                .as_deref()
                .map(|name| overseer_evaluate::check_secret_name(name, &named))
            {
                return Arc::new(overseer_evaluate::RefusedEvaluator {
                    id: format!("openai:{model}"),
                    why: match e {
                        overseer_evaluate::EvaluatorError::Secret(why) => why,
                        other => other.to_string(),
                    },
                });
            }
            Arc::new(OpenAiEvaluator::from_config(
                base_url,
                model,
                api_key_env.as_deref(),
                timeout,
            ))
        }
    }
}

/// The supervisor's evaluation of one gate, recorded as its vote.
async fn evaluate_gate(engine: Arc<Supervision>, gate_id: GateId, policy: SupervisorPolicy) {
    let (gate, run) = match engine
        .gate(gate_id)
        .and_then(|g| Ok((engine.run(g.run_id)?, g)))
    {
        Ok((run, gate)) => (gate, run),
        Err(e) => {
            tracing::warn!(gate_id = %gate_id, "supervisor: cannot read the gate: {}", e.message);
            return;
        }
    };
    let Some(authority) = gate.authority else {
        return;
    };
    let step = last_step(&engine, run.id);
    let req = EvaluationRequest {
        subject: Subject::Gate,
        run: run.clone(),
        gate: Some(gate.clone()),
        step,
        message: None,
        policy: policy.clone(),
        allowed_verdicts: Verdict::ALL
            .into_iter()
            .filter(|v| v.fits(Subject::Gate))
            .collect(),
    };
    let ev = evaluator(&policy, &engine.config.supervision, || {
        engine.evaluator_launcher(run.id)
    });
    let actor = Actor::Supervisor(ev.id());
    let timeout = Duration::from_secs(policy.timeout_seconds.max(1));
    let result = evaluate_with_timeout(&*ev, &req, timeout).await;
    let input = match result {
        Ok(out) => vote_input(gate.kind(), authority, &out, gate_id),
        Err(e) => failure_input(&e, gate_id),
    };
    let escalated = input.verdict == Some(Verdict::Escalate);
    let grace_until = (authority == Autonomy::Autonomous)
        .then(|| PendingEffect::deadline(&policy, engine.clock.now()))
        .flatten();
    match engine.supervisor_vote_within(gate_id, &actor, &input, grace_until) {
        Ok(view) => {
            if let Some(effect) = &view.pending_effect {
                tell_pending_effect(&engine, &view, effect);
            }
        }
        Err(e) if e.code == ErrorCode::AlreadyDecided => {
            tracing::info!(gate_id = %gate_id, "supervisor: the user decided first: {}", e.message);
            return;
        }
        Err(e) => {
            tracing::warn!(gate_id = %gate_id, "supervisor: vote refused: {}", e.message);
            return;
        }
    }
    if escalated {
        let failed = input
            .rule_ref
            .as_deref()
            .is_some_and(|r| r.starts_with("evaluator_failed"));
        let (kind, title) = if failed {
            (
                NotificationKind::SupervisorFailed,
                format!("The supervisor failed on: {}", gate.title),
            )
        } else {
            (
                NotificationKind::SupervisorEscalated,
                format!("The supervisor needs you: {}", gate.title),
            )
        };
        engine.notify_user(
            kind,
            run.id,
            title,
            input.rationale.clone().unwrap_or_default(),
        );
    }
}

/// The supervisor decided on its own authority and its decision waits for
/// its grace: the user is told (informational, like every notification
/// about what the supervisor decides), with the time left to override.
fn tell_pending_effect(engine: &Supervision, gate: &GateView, effect: &PendingEffect) {
    let what = match effect.verdict {
        Verdict::Approve => "approve",
        _ => "reject",
    };
    let secs = ((effect.at - engine.clock.now()).max(0) + 999) / 1000;
    engine.notify_user(
        NotificationKind::AgentQuestionPending,
        gate.run_id,
        format!(
            "Run {}: the supervisor will {what} in {secs} s: {}",
            gate.run_id, gate.title
        ),
        format!(
            "Override it in the inbox before then ({}). Nothing is sent to the agent until it takes effect.",
            effect.rationale.as_deref().unwrap_or("no reason given")
        ),
    );
}

/// The supervisor's answer as a vote within its authority: advisory
/// supervisors only advise (naming the option they would choose).
fn vote_input(
    kind: GateKind,
    authority: Autonomy,
    out: &EvaluatorOutput,
    gate: GateId,
) -> DecisionInput {
    let option = verdict_option(kind, out.verdict).map(str::to_owned);
    let verdict = match (authority, out.verdict, &option) {
        (_, Verdict::Approve | Verdict::Reject, None) => Verdict::Escalate,
        (Autonomy::Advisory, Verdict::Approve | Verdict::Reject, Some(_)) => Verdict::Advise,
        (_, v, _) => v,
    };
    DecisionInput {
        verdict: Some(verdict),
        option: match verdict {
            Verdict::Approve | Verdict::Reject => option,
            Verdict::Advise => option,
            Verdict::Escalate | Verdict::Continue | Verdict::Reorient | Verdict::Pause => None,
        },
        context: None,
        rationale: Some(out.rationale.clone()),
        correction: out.correction.clone(),
        rule_ref: out.rule_ref.clone(),
        provenance: None,
        model_id: out.model_id.clone(),
        prompt_version: out.prompt_version.clone(),
        confidence: out.confidence,
        source_event: Some(format!("gate_opened:{gate}")),
    }
}

/// Any evaluator failure: an escalate decision that hands the gate to the human.
fn failure_input(e: &EvaluatorError, gate: GateId) -> DecisionInput {
    DecisionInput {
        verdict: Some(Verdict::Escalate),
        rationale: Some(format!("the supervisor could not evaluate this: {e}")),
        rule_ref: Some(format!("evaluator_failed:{}", e.code())),
        source_event: Some(format!("gate_opened:{gate}")),
        ..DecisionInput::default()
    }
}

/// The latest step record of a run (what the agent did, sensors, drift,
/// confidence), for evaluators.
fn last_step(engine: &Shared, run: RunId) -> Option<serde_json::Value> {
    engine
        .store()
        .run_events(run, 0, i64::MAX)
        .ok()?
        .into_iter()
        .rev()
        .find_map(|e| {
            let Activity::StepFinished(record) = e.entry else {
                return None;
            };
            serde_json::to_value(record).ok()
        })
}

/// What the supervisor said about a finished step.
pub(crate) struct StepJudgement {
    pub verdict: Verdict,
    pub rationale: String,
    pub correction: Option<String>,
    pub confidence: Option<f64>,
    /// The evaluator failed: the human decides (never an approval on error).
    pub failed: bool,
}

/// Evaluates a finished step and records the verdict.
pub(crate) async fn evaluate_step(
    engine: &Arc<Engine>,
    work: &RunWork,
    policy: &SupervisorPolicy,
    step: serde_json::Value,
    step_no: u32,
) -> StepJudgement {
    let run = match engine.run(work.run_id) {
        Ok(r) => r,
        Err(e) => {
            return StepJudgement {
                verdict: Verdict::Pause,
                rationale: e.message,
                correction: None,
                confidence: None,
                failed: true,
            }
        }
    };
    let req = EvaluationRequest {
        subject: Subject::Step,
        run,
        gate: None,
        step: Some(step),
        message: None,
        policy: policy.clone(),
        allowed_verdicts: Verdict::ALL
            .into_iter()
            .filter(|v| v.fits(Subject::Step))
            .collect(),
    };
    let ev = evaluator(policy, &engine.config.supervision, || {
        engine.evaluator_launcher(work.run_id)
    });
    let actor = Actor::Supervisor(ev.id());
    let timeout = Duration::from_secs(policy.timeout_seconds.max(1));
    let source = Some(format!("step_finished:{}:{step_no}", work.run_id));
    match evaluate_with_timeout(&*ev, &req, timeout).await {
        Ok(out) => followed_verdict(engine, work, &actor, out, source, step_no),
        Err(e) => supervisor_failed(engine, work, &actor, &e, source, step_no),
    }
}

/// The supervisor's verdict on a step, followed once it is on record; one
/// that cannot be written pauses the run for the human instead.
fn followed_verdict(
    engine: &Arc<Engine>,
    work: &RunWork,
    actor: &Actor,
    out: EvaluatorOutput,
    source: Option<String>,
    step_no: u32,
) -> StepJudgement {
    // No verdict without its record: one that cannot be written
    // pauses the run for the human instead of taking effect.
    if let Err(e) = engine.note_decision(
        work.run_id,
        None,
        actor,
        &DecisionInput {
            verdict: Some(out.verdict),
            rationale: Some(out.rationale.clone()),
            correction: out.correction.clone(),
            rule_ref: out.rule_ref.clone(),
            model_id: out.model_id.clone(),
            prompt_version: out.prompt_version.clone(),
            confidence: out.confidence,
            source_event: source,
            ..DecisionInput::default()
        },
    ) {
        tracing::error!(
            run = %work.run_id,
            "cannot record the supervisor's verdict, so it is not followed: {}",
            e.message
        );
        return StepJudgement {
            verdict: Verdict::Pause,
            rationale: format!(
                "the supervisor's verdict on step {step_no} ({}) could not be recorded, so it is not followed: {}",
                out.verdict.as_str(),
                e.message
            ),
            correction: None,
            confidence: None,
            failed: true,
        };
    }
    StepJudgement {
        verdict: out.verdict,
        rationale: out.rationale,
        correction: out.correction,
        confidence: out.confidence,
        failed: false,
    }
}

/// A supervisor that could not evaluate a step: recorded as an escalation,
/// the user told, and the run paused for the human.
fn supervisor_failed(
    engine: &Arc<Engine>,
    work: &RunWork,
    actor: &Actor,
    e: &EvaluatorError,
    source: Option<String>,
    step_no: u32,
) -> StepJudgement {
    let input = DecisionInput {
        verdict: Some(Verdict::Escalate),
        rationale: Some(format!(
            "the supervisor could not evaluate step {step_no}: {e}"
        )),
        rule_ref: Some(format!("evaluator_failed:{}", e.code())),
        source_event: source,
        ..DecisionInput::default()
    };
    if let Err(e) = engine.note_decision(work.run_id, None, actor, &input) {
        // The run pauses for the human either way.
        tracing::error!(
            run = %work.run_id,
            "cannot record the supervisor's failure: {}",
            e.message
        );
    }
    engine.notify_user(
        NotificationKind::SupervisorFailed,
        work.run_id,
        format!("The supervisor failed on run {}", work.run_id),
        input.rationale.clone().unwrap_or_default(),
    );
    StepJudgement {
        verdict: Verdict::Pause,
        rationale: input.rationale.unwrap_or_default(),
        correction: None,
        confidence: None,
        failed: true,
    }
}

/// The deterministic evaluator: every verdict cites the rule that fired.
pub(crate) struct RulesEvaluator;

/// A verdict of the rules, citing the rule that fired and saying why.
fn cited(verdict: Verdict, rule: &str, rationale: String) -> EvaluatorOutput {
    EvaluatorOutput {
        verdict,
        rationale,
        correction: None,
        confidence: None,
        rule_ref: Some(rule.to_owned()),
        model_id: None,
        prompt_version: None,
    }
}

impl RulesEvaluator {
    /// The rules' verdict on a step, a message to the supervisor or a gate.
    fn judge(req: &EvaluationRequest) -> EvaluatorOutput {
        match (req.subject, &req.gate) {
            (Subject::Step, _) => Self::judge_step(req),
            // The rules read no prose: a message to the supervisor is a
            // human's to answer.
            (Subject::Message, _) => cited(
                Verdict::Escalate,
                "rules:message",
                "the rules supervisor does not read messages: a human answers this one".to_owned(),
            ),
            (Subject::Gate, None) => cited(
                Verdict::Escalate,
                "rules:no_gate",
                "nothing to evaluate".to_owned(),
            ),
            (Subject::Gate, Some(gate)) if gate.unreadable_payload.is_some() => cited(
                Verdict::Escalate,
                "rules:unreadable_payload",
                "what the gate is about could not be read: a human must look".to_owned(),
            ),
            (Subject::Gate, Some(gate)) => Self::judge_gate(req, gate),
        }
    }

    /// A finished step, by the verdict table: one that changed files outside
    /// its plan is told to undo them or say why they are needed.
    fn judge_step(req: &EvaluationRequest) -> EvaluatorOutput {
        let step = req.step.clone().unwrap_or_default();
        let drift: Vec<String> = step["drift"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let facts = StepFacts {
            interpretation_wrong: false,
            out_of_scope: !drift.is_empty(),
            destructive: step["destructive"].as_bool().unwrap_or(false),
            suboptimal_but_achieved: false,
            concerns: Concerns::None,
            low_confidence_but_correct: false,
        };
        let row = select_verdict(&facts);
        let mut o = cited(
            row.verdict,
            &format!("verdict_table:{}", row.id),
            row.rationale.to_owned(),
        );
        if row.verdict == Verdict::Reorient {
            o.correction = Some(format!(
                "Stay within the files your plan declared. Undo your changes to {} or explain why they are needed, then finish the step.",
                drift.join(", ")
            ));
            o.rationale = format!(
                "{} (changed outside the plan: {})",
                row.rationale,
                drift.join(", ")
            );
        }
        o
    }

    /// A readable gate, by its kind: what the rules approve, the rest goes
    /// to the human.
    fn judge_gate(req: &EvaluationRequest, gate: &GateView) -> EvaluatorOutput {
        match &gate.body {
            GateBody::ToolCall(call) => match call.always_gated {
                Some(cat) => {
                    let cat = cat.as_str();
                    cited(
                        Verdict::Escalate,
                        &format!("always_gated:{cat}"),
                        format!("{cat}: a human must see this every time"),
                    )
                }
                None => cited(
                    Verdict::Approve,
                    "rules:not_destructive",
                    "not destructive, inside the worktree, not a secret".to_owned(),
                ),
            },
            GateBody::Plan(plan) => Self::judge_plan(plan),
            GateBody::StepReview(step) => Self::judge_step_review(step),
            GateBody::MergeReview(_) => Self::judge_merge(req),
            GateBody::Question(_) | GateBody::Deviation(_) | GateBody::SupervisorPause(_) => cited(
                Verdict::Escalate,
                "rules:human_only",
                "questions and failures go to the human".to_owned(),
            ),
        }
    }

    /// A plan passes when it declares steps and files.
    fn judge_plan(plan: &overseer_core::plan::PlanProposal) -> EvaluatorOutput {
        let steps = plan.steps.len();
        let files = plan.files.len();
        if steps > 0 && files > 0 {
            cited(
                Verdict::Approve,
                "rules:plan_complete",
                format!("{steps} steps, {files} declared files"),
            )
        } else {
            cited(
                Verdict::Escalate,
                "rules:plan_incomplete",
                "the plan declares no steps or no files".to_owned(),
            )
        }
    }

    /// A step review passes at medium confidence or better, nothing destructive.
    fn judge_step_review(step: &overseer_core::StepRecord) -> EvaluatorOutput {
        let score = step.confidence.unwrap_or(0.0);
        let band = overseer_core::confidence::band(score);
        let medium_or_better = matches!(
            band,
            overseer_core::confidence::Band::High | overseer_core::confidence::Band::Medium
        );
        if medium_or_better && !step.destructive {
            cited(
                Verdict::Approve,
                "rules:confidence_medium",
                format!("confidence {score:.2} and nothing destructive"),
            )
        } else {
            cited(
                Verdict::Escalate,
                "rules:confidence_low",
                format!("confidence {score:.2} or destructive operations"),
            )
        }
    }

    /// A merge review passes when every sensor passed and nothing drifted
    /// outside the plan.
    fn judge_merge(req: &EvaluationRequest) -> EvaluatorOutput {
        let step = req.step.clone().unwrap_or_default();
        let sensors_ok = step["checks_total"].as_u64().unwrap_or(0) > 0
            && step["checks_passed"] == step["checks_total"];
        let drift = step["drift"].as_array().is_some_and(|a| !a.is_empty());
        if sensors_ok && !drift {
            cited(
                Verdict::Approve,
                "rules:sensors_passed",
                "every sensor passed and no drift".to_owned(),
            )
        } else {
            cited(
                Verdict::Escalate,
                "rules:review_needed",
                "no passing sensors, or changes outside the plan".to_owned(),
            )
        }
    }
}

impl Evaluator for RulesEvaluator {
    fn id(&self) -> String {
        "rules".to_owned()
    }

    fn evaluate<'a>(
        &'a self,
        req: &'a EvaluationRequest,
    ) -> BoxFuture<'a, Result<EvaluatorOutput, EvaluatorError>> {
        Box::pin(async move { Ok(Self::judge(req)) })
    }
}

/// Fires gate timers: once each, also after a restart, never after a human
/// has acted (the store checks both in the same transaction).
pub(crate) fn start_timers(engine: Arc<Engine>) {
    engine.clone().spawn_cancellable(async move {
        let mut rx = engine.subscribe();
        loop {
            let now = engine.clock.now();
            let timers = match engine.store().pending_timers() {
                Ok(t) => t,
                Err(e) => {
                    tracing::error!("gate timers: {e}");
                    Vec::new()
                }
            };
            for (gate, at) in timers.iter().filter(|(_, at)| *at <= now) {
                let _ = at;
                fire(&engine, *gate);
            }
            let next = timers.iter().map(|(_, at)| *at).find(|at| *at > now);
            let wait = next.map_or(Duration::from_secs(3600), |at| {
                Duration::from_millis(u64::try_from(at - now).unwrap_or(0))
            });
            // Any change may set or clear a timer (a gate opened, a
            // supervisor's vote with its grace, a decision): the timers are
            // read again after each, but once per burst, not once per event
            // (fifty runs changing at once is one read).
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                ev = rx.recv() => match ev {
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => loop {
                        match rx.try_recv() {
                            Ok(_) | Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => {}
                            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => break,
                            Err(tokio::sync::broadcast::error::TryRecvError::Closed) => return,
                        }
                    },
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
            }
        }
    });
}

fn fire(engine: &Engine, gate: GateId) {
    let now = engine.clock.now();
    // An autonomous decision whose grace ended takes effect first (a gate
    // waiting for one has no timer of its own running).
    match engine.write(|tx| tx.take_effect(gate, now)) {
        Ok(Some(decided)) => {
            // A merge review's effect is the engine's to carry out; every
            // other gate's waiter acts on the decision.
            if decided.kind() == GateKind::MergeReview {
                if let Err(e) = engine.review_effect(&decided) {
                    tracing::error!(gate = %gate, "the supervisor's merge decision: {}", e.message);
                }
            }
            return;
        }
        Ok(None) => {}
        Err(e) => tracing::error!(gate = %gate, "the supervisor's pending decision: {e}"),
    }
    if let Err(e) = engine.write(|tx| tx.fire_timer(gate, now)) {
        tracing::error!(gate = %gate, "gate timer: {e}");
    }
}

/// The options of a step-review gate.
pub(crate) fn step_review_options() -> Vec<GateOption> {
    vec![
        GateOption::choice(StepReviewChoice::Proceed, "Proceed"),
        GateOption::choice(StepReviewChoice::Stop, "Stop").with_required_context(),
    ]
}

/// The options of a tool-call gate. "Always" (labelled for a run or a
/// session) would add a rule that can never apply to an always-gated
/// operation, nor to a path that leads out of the worktree, nor cover only
/// this call's like when the call names no command or a whole MCP server:
/// not offered for those.
pub(crate) fn tool_call_options(
    req: &ToolRequest,
    always_gated: Option<rules::AlwaysGated>,
    rule: Option<&str>,
    always_label: &str,
) -> Vec<GateOption> {
    use overseer_core::ToolCallChoice;
    let mut options = vec![GateOption::choice(ToolCallChoice::Yes, "Yes")];
    if always_gated.is_none() && rule != Some(rules::CONFINEMENT) && rules::always_offerable(req) {
        options.push(GateOption::choice(ToolCallChoice::Always, always_label));
    }
    options.push(GateOption::choice(ToolCallChoice::No, "No"));
    options
}

/// The options of a supervisor-pause gate.
pub(crate) fn supervisor_pause_options() -> Vec<GateOption> {
    vec![
        GateOption::choice(SupervisorPauseChoice::Proceed, "Proceed anyway"),
        GateOption::choice(SupervisorPauseChoice::Modify, "Correct the agent")
            .with_required_context(),
        GateOption::choice(SupervisorPauseChoice::Abort, "Abort the run"),
    ]
}

/// A gate's whole story, for `overseer gates why` and the "Why?" drawer.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct GateStory {
    pub gate: GateView,
    /// Every decision on the gate (votes, timers), in order, with rationale.
    pub decisions: Vec<overseer_core::supervision::DecisionRecord>,
    /// Every audit record about the gate, each checked on its own.
    pub records: Vec<overseer_store::CheckedRecord>,
    /// Decision rows about the gate (its decision, its history, its votes)
    /// that no verifying signed record backs: written outside Overseer.
    pub decision_problems: Vec<overseer_store::DecisionMismatch>,
    /// True when every record's signature, hashes and chain link verify and
    /// every decision row is backed by its signed record.
    pub verified: bool,
    /// A human approved this co-signed gate and it waits for the
    /// supervisor's approval: the window says "waiting for the co-sign".
    #[serde(default)]
    #[ts(optional)]
    pub awaiting_cosign: Option<bool>,
}

/// A task as the user set it up.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct TaskInfo {
    pub task_id: overseer_core::TaskId,
    pub workspace: String,
    pub title: String,
    pub stage: String,
    pub settings: overseer_store::TaskSettings,
}

/// A run's whole story: everything that decided anything on it (rules'
/// allows and denials, step verdicts, supervisor votes, timers, retries,
/// humans), for `overseer runs why` and the run page's "Why?".
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct RunStory {
    pub run: overseer_core::RunView,
    /// Every decision recorded on the run or one of its gates, oldest first.
    pub decisions: Vec<overseer_core::supervision::DecisionRecord>,
    /// Every audit record about the run or one of its gates, in log order,
    /// each checked on its own.
    pub records: Vec<overseer_store::CheckedRecord>,
    /// Decision rows about the run that no verifying signed record backs.
    pub decision_problems: Vec<overseer_store::DecisionMismatch>,
    /// Every record verifies and every decision row is backed.
    pub verified: bool,
}

/// The policy at a scope, and the one that applies there.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct PolicyStatus {
    pub scope: Scope,
    /// Set at this scope (None: inherited).
    pub own: Option<SupervisorPolicy>,
    /// What applies at this scope.
    pub effective: SupervisorPolicy,
}

impl Supervision {
    pub fn gate_story(&self, gate: GateId) -> Result<GateStory, ApiError> {
        let store = self.store();
        let view = store.gate(gate)?;
        let mut decisions = store.decisions_of_gate(gate)?;
        for d in &mut decisions {
            d.mark_overruled(view.decision.as_ref());
        }
        let records = store.audit_story("gate_id", gate.into())?;
        let decision_problems = store.gate_decision_problems(gate)?;
        let verified = records.iter().all(|r| r.problem.is_none()) && decision_problems.is_empty();
        let awaiting_cosign = Some(crate::merge::awaiting_cosign(&view, &decisions));
        Ok(GateStory {
            gate: view,
            decisions,
            records,
            decision_problems,
            verified,
            awaiting_cosign,
        })
    }

    pub fn run_story(&self, run: RunId) -> Result<RunStory, ApiError> {
        let store = self.store();
        let view = store.run(run)?;
        let decisions = store.decisions_of_run(run)?;
        let records = store.audit_story_of_run(run)?;
        let decision_problems = store.run_decision_problems(run)?;
        let verified = records.iter().all(|r| r.problem.is_none()) && decision_problems.is_empty();
        Ok(RunStory {
            run: view,
            decisions,
            records,
            decision_problems,
            verified,
        })
    }

    /// Stops a gate's timer (a step review's auto-proceed): it waits for a human.
    pub fn hold_gate(&self, gate: GateId, actor: &Actor) -> Result<GateView, ApiError> {
        if !actor.is_user() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "only a human can stop a gate's timer",
            ));
        }
        let now = self.clock.now();
        Ok(self.write(|tx| tx.hold_gate(gate, actor, now))?)
    }

    /// The supervisor policy at a scope and the one in effect there.
    pub fn supervisor_status(&self, scope: &Scope) -> Result<PolicyStatus, ApiError> {
        let task = self.task_of(scope)?;
        let store = self.store();
        let ws = store.workspace(&scope.workspace)?;
        let task_policy = match task {
            Some(t) => store.task_settings(t)?.supervisor,
            None => None,
        };
        let own = match task {
            Some(_) => task_policy.clone(),
            None => ws.settings.supervisor.clone(),
        };
        let effective = resolve_policy(task_policy.as_ref(), ws.settings.supervisor.as_ref());
        Ok(PolicyStatus {
            scope: scope.clone(),
            own,
            effective,
        })
    }

    /// Sets (or, with None, removes) the supervisor policy at a scope. The
    /// policy is validated first: a broken one changes nothing.
    pub fn set_supervisor(
        &self,
        scope: &Scope,
        policy: Option<SupervisorPolicy>,
        actor: &Actor,
    ) -> Result<PolicyStatus, ApiError> {
        if !actor.is_user() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "only a human can change the supervisor's policy",
            ));
        }
        if let Some(p) = &policy {
            crate::settings::check_policy(p).map_err(ApiError::invalid_fields)?;
        }
        let for_task = policy.clone();
        self.change_scope(
            scope,
            actor,
            |t| t.supervisor = for_task,
            |w| w.supervisor = policy,
        )?;
        self.supervisor_status(scope)
    }

    /// Replaces the permission rules at a scope.
    pub fn set_permissions(
        &self,
        scope: &Scope,
        rules: RuleSet,
        actor: &Actor,
    ) -> Result<RuleSet, ApiError> {
        if !actor.is_user() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "only a human can change permission rules",
            ));
        }
        let (for_task, for_workspace) = (rules.clone(), rules.clone());
        self.change_scope(
            scope,
            actor,
            |t| t.permissions = for_task,
            |w| w.permissions = for_workspace,
        )?;
        Ok(rules)
    }

    /// Changes the settings at `scope` (the task's when it names one, else
    /// the workspace's) and pushes the change to every surface.
    pub(crate) fn change_scope(
        &self,
        scope: &Scope,
        actor: &Actor,
        on_task: impl FnOnce(&mut overseer_store::TaskSettings),
        on_workspace: impl FnOnce(&mut overseer_store::WorkspaceSettings),
    ) -> Result<(), ApiError> {
        let task = self.task_of(scope)?;
        let now = self.clock.now();
        match task {
            Some(t) => {
                let mut settings = self.store().task_settings(t)?;
                on_task(&mut settings);
                self.write(|tx| tx.set_task_settings(t, &settings, actor, now))?;
            }
            None => {
                let ws = self.store().workspace(&scope.workspace)?;
                let mut settings = ws.settings.clone();
                on_workspace(&mut settings);
                self.write(|tx| tx.set_workspace_settings(ws.id, &settings, actor, now))?;
            }
        }
        Ok(())
    }

    /// A task and its settings, as the user set them.
    pub fn task(&self, task: overseer_core::TaskId) -> Result<TaskInfo, ApiError> {
        let store = self.store();
        let (workspace, title, stage): (String, String, String) = store
            .raw_connection()
            .query_row(
                "SELECT w.name, t.title, t.stage FROM tasks t JOIN workspaces w ON w.id = t.workspace_id
                 WHERE t.id = ?1",
                [task],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(|_| {
                ApiError::new(
                    ErrorCode::NotFound,
                    format!("task {task} does not exist: `overseer runs list` shows tasks and runs"),
                )
            })?;
        let settings = store.task_settings(task)?;
        Ok(TaskInfo {
            task_id: task,
            workspace,
            title,
            stage,
            settings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(raw: serde_json::Value) -> overseer_acp::ToolCallInfo {
        overseer_acp::ToolCallInfo {
            id: "c".into(),
            title: Some("Run something".into()),
            kind: Some("execute".into()),
            raw_input: Some(raw),
            ..Default::default()
        }
    }

    #[test]
    fn a_command_given_as_a_list_is_read_as_the_shell_would_run_it() {
        let req = tool_request(
            &call(serde_json::json!({"command": ["/bin/bash", "-lc", "rm -rf build"]})),
            "/w",
        );
        assert_eq!(req.command.as_deref(), Some("rm -rf build"));
        let req = tool_request(
            &call(serde_json::json!({"command": ["git", "commit", "-m", "a b"]})),
            "/w",
        );
        assert_eq!(req.command.as_deref(), Some("git commit -m 'a b'"));
        let req = tool_request(&call(serde_json::json!({"command": "ls -la"})), "/w");
        assert_eq!(req.command.as_deref(), Some("ls -la"));
        let req = tool_request(&call(serde_json::json!({"command": [1, 2]})), "/w");
        assert_eq!(
            req.command.as_deref(),
            Some("Run something"),
            "else the title"
        );
    }

    /// A tool-call gate as the rules evaluator sees it.
    fn tool_gate(body: GateBody, unreadable: Option<serde_json::Value>) -> EvaluationRequest {
        let run = overseer_core::RunView {
            id: overseer_core::RunId(3),
            task_id: overseer_core::TaskId(1),
            task_title: "Install".into(),
            workspace: "web".into(),
            agent: "demo".into(),
            state: overseer_core::RunState::Running,
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
            body,
            unreadable_payload: unreadable,
            status: overseer_core::GateStatus::Pending,
            title: "Run `npm install pg-migrate`".into(),
            options: Vec::new(),
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
            subject: Subject::Gate,
            run,
            gate: Some(gate),
            step: None,
            message: None,
            policy: SupervisorPolicy::default(),
            allowed_verdicts: Verdict::ALL.to_vec(),
        }
    }

    #[test]
    fn the_rules_never_approve_a_gate_whose_payload_could_not_be_read() {
        let empty = GateBody::empty(GateKind::ToolCall);
        // Read: nothing always-gated about it, so the rules approve.
        let read = RulesEvaluator::judge(&tool_gate(empty.clone(), None));
        assert_eq!(read.verdict, Verdict::Approve);
        // The same empty payload standing in for one an older version wrote:
        // what it asks is unknown, so a human decides.
        let old = serde_json::json!({"tool": "Bash", "command": "npm install pg-migrate"});
        let unread = RulesEvaluator::judge(&tool_gate(empty, Some(old)));
        assert_eq!(unread.verdict, Verdict::Escalate);
        assert_eq!(unread.rule_ref.as_deref(), Some("rules:unreadable_payload"));
    }
}
