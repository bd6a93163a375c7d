//! Each kind of ask an external session (or a launched run's MCP server)
//! makes, as a gate or a record, and its answer.

use super::forms::{answers_of, check_questions, hook_tool_request, question_schema};
use super::*;
use overseer_core::Activity;

impl Engine {
    pub(super) async fn session_tool_call(
        self: &Arc<Self>,
        work: &RunWork,
        cwd: &str,
        key: Option<String>,
        tool: &str,
        input: Value,
        stage: ToolStage,
    ) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        let req = hook_tool_request(tool, &input, cwd);
        let title = tool_title(tool, &req);
        let source = Some(format!("tool_call:{}", key.as_deref().unwrap_or(tool)));
        // Asked again (a reconnect): the same gate, not the rules again.
        if let Some(gate) = self.gate_of_key(run, key.as_deref())? {
            let _waiter = Waiter::new(self, gate);
            let d = wait_gate(self, gate).await?;
            return Ok(self.tool_answer(work, cwd, &req, &title, d));
        }
        let run_rules = lock(&self.external.rules)
            .get(&run)
            .cloned()
            .unwrap_or_default();
        let permission = match permission_for(work, &run_rules, &req, cwd, false) {
            // The user's own checkout: a path outside it is a question for
            // the user, not a violation of a run's confinement.
            Permission::Deny { rule, reason } if rule.is_confinement() => Permission::Ask {
                reason,
                always_gated: None,
                rule: Some(rule.rule()),
            },
            other @ (Permission::Allow { .. }
            | Permission::Deny { .. }
            | Permission::Ask { .. }) => other,
        };
        match permission {
            Permission::Allow { rule } => {
                self.record_rule_allow(work, &title, &req, &rule, source)?;
                let decision = match stage {
                    // Before the tool runs: the agent's own permission
                    // system goes on (a stricter rule of its own still holds).
                    ToolStage::PreToolUse => ToolDecision::Pass,
                    ToolStage::PermissionRequest => ToolDecision::Allow,
                };
                Ok(SessionAnswer::Tool {
                    decision,
                    reason: Some(format!("allowed by the rule {rule}")),
                })
            }
            Permission::Deny { rule, reason } => {
                self.record_rule_deny(work, &title, &req, &rule, &reason, source);
                Ok(SessionAnswer::Tool {
                    decision: ToolDecision::Deny,
                    reason: Some(format!("Overseer: {reason} ({rule})")),
                })
            }
            Permission::Ask {
                reason,
                always_gated,
                rule,
            } => {
                let options = crate::supervise::tool_call_options(
                    &req,
                    always_gated,
                    rule.as_deref(),
                    "Always for this session",
                );
                let body = GateBody::ToolCall(ToolCallGate {
                    tool_call: AgentToolCall {
                        id: key.clone(),
                        title: Some(title.clone()),
                        kind: Some(req.kind),
                        raw_input: Some(input),
                        name: Some(tool.to_owned()),
                        ..AgentToolCall::default()
                    },
                    request: req.clone(),
                    risk: Some(overseer_core::rules::risk_of(
                        &req,
                        always_gated,
                        rule.as_deref(),
                    )),
                    reason,
                    rule,
                    always_gated,
                    always_gated_why: always_gated.map(|g| g.describe().to_owned()),
                    agent_options: Vec::new(),
                    ask_kind: Some(AskKind::Blocking),
                });
                let spec = GateSpec::new(run, body, &title, options);
                let d = self.ask_gate(work, spec, key).await?;
                Ok(self.tool_answer(work, cwd, &req, &title, d))
            }
        }
    }

    /// A tool-call gate's decision as the agent's answer.
    pub(super) fn tool_answer(
        &self,
        work: &RunWork,
        cwd: &str,
        req: &ToolRequest,
        title: &str,
        d: GateDecision,
    ) -> SessionAnswer {
        let allow = SessionAnswer::Tool {
            decision: ToolDecision::Allow,
            reason: Some(format!("allowed in Overseer by {}", d.actor)),
        };
        match d.choice::<ToolCallChoice>() {
            Ok(ToolCallChoice::Yes) => allow,
            Ok(ToolCallChoice::Always) => {
                let added = rules::always_rule(req, cwd);
                self.record_activity_or_warn(
                    work.run_id,
                    Activity::RuleAdded {
                        text: format!("allow {added} for the rest of this session"),
                    },
                );
                lock(&self.external.rules)
                    .entry(work.run_id)
                    .or_default()
                    .allow
                    .push(added);
                allow
            }
            Ok(ToolCallChoice::No) | Err(_) => {
                let why = d
                    .context
                    .filter(|c| !c.trim().is_empty())
                    .unwrap_or_else(|| "no reason given".to_owned());
                SessionAnswer::Tool {
                    decision: ToolDecision::Deny,
                    reason: Some(format!(
                        "{title}: refused in Overseer by {}: {why}",
                        d.actor
                    )),
                }
            }
        }
    }

    pub(super) async fn session_questions(
        self: &Arc<Self>,
        work: &RunWork,
        key: Option<String>,
        questions: Vec<AskQuestion>,
        expires_in_seconds: Option<u64>,
    ) -> Result<SessionAnswer, ApiError> {
        check_questions(&questions)?;
        if let Some(secs) = expires_in_seconds {
            overseer_core::questions::check_expiry(secs)
                .map_err(|e| ApiError::new(ErrorCode::InvalidInput, e))?;
        }
        // The asker's expiry, else its task's, else the global default.
        let expiry = expires_in_seconds
            .or(work.task_settings.question_timeout_seconds)
            .or_else(|| self.config.questions.expiry());
        let defaults = overseer_core::questions::default_content(&questions);
        let schema = question_schema(&questions);
        let title = match questions.as_slice() {
            [one] => one.question.clone(),
            many => format!("{} questions: {}", many.len(), many[0].question),
        };
        let body = GateBody::Question(QuestionGate {
            message: title.clone(),
            schema,
            questions: questions.clone(),
            ask_kind: Some(if expiry.is_some() {
                AskKind::Question
            } else {
                AskKind::Blocking
            }),
            notice: None,
        });
        let mut options =
            vec![GateOption::choice(QuestionChoice::Answer, "Answer").with_required_context()];
        if defaults.is_some() {
            options.push(GateOption::choice(
                QuestionChoice::Default,
                "Use the defaults",
            ));
        }
        options.push(GateOption::choice(QuestionChoice::Decline, "Decline"));
        let mut spec = GateSpec::new(work.run_id, body, &title, options);
        if let Some(secs) = expiry {
            let at =
                self.clock.now() + i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX / 2);
            let fallback = if defaults.is_some() {
                QuestionChoice::Default
            } else {
                QuestionChoice::Decline
            };
            spec.auto = Some((at, fallback.into()));
        }
        let d = self.ask_gate(work, spec, key).await?;
        Ok(match d.choice::<QuestionChoice>() {
            Ok(QuestionChoice::Answer) => SessionAnswer::Questions {
                action: QuestionsAction::Answered,
                answers: answers_of(&questions, d.context.as_deref().unwrap_or_default()),
            },
            Ok(QuestionChoice::Decline) => SessionAnswer::Questions {
                action: QuestionsAction::Declined,
                answers: Vec::new(),
            },
            Ok(QuestionChoice::Default) => match &defaults {
                Some(content) => SessionAnswer::Questions {
                    action: QuestionsAction::Defaulted,
                    answers: answers_of(&questions, &content.to_string()),
                },
                None => SessionAnswer::Questions {
                    action: QuestionsAction::Cancelled,
                    answers: Vec::new(),
                },
            },
            Err(_) => SessionAnswer::Questions {
                action: QuestionsAction::Cancelled,
                answers: Vec::new(),
            },
        })
    }

    pub(super) async fn session_plan(
        self: &Arc<Self>,
        work: &RunWork,
        key: Option<String>,
        goal: String,
        steps: Vec<PlanStepInput>,
        files: Vec<String>,
        risks: Vec<String>,
    ) -> Result<SessionAnswer, ApiError> {
        if goal.trim().is_empty() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "a plan needs a goal: say in one line what the work achieves",
            ));
        }
        let plan = PlanProposal {
            goal,
            steps: steps
                .into_iter()
                .map(|s| PlanStep {
                    title: s.title,
                    agent: s.agent,
                })
                .collect(),
            files,
            risks,
            markdown: None,
            source: PlanSource::Requested,
        };
        if self.gate_of_key(work.run_id, key.as_deref())?.is_none() {
            self.record_activity_or_warn(work.run_id, Activity::PlanProposed(plan.clone()));
        }
        let spec = GateSpec::new(
            work.run_id,
            GateBody::Plan(plan.clone()),
            &format!("Approve the plan: {}", plan.goal),
            vec![
                GateOption::choice(PlanChoice::Approve, "Approve"),
                GateOption::choice(PlanChoice::RequestChanges, "Request changes")
                    .with_required_context(),
                GateOption::choice(PlanChoice::Reject, "Reject"),
            ],
        );
        let d = self.ask_gate(work, spec, key).await?;
        let context = d.context.clone().filter(|c| !c.trim().is_empty());
        let verdict = match d.choice::<PlanChoice>() {
            Ok(PlanChoice::Approve) => PlanVerdict::Approved,
            Ok(PlanChoice::RequestChanges) => PlanVerdict::ChangesRequested {
                feedback: context.unwrap_or_else(|| "no details given".to_owned()),
            },
            Ok(PlanChoice::Reject) | Err(_) => PlanVerdict::Rejected { reason: context },
        };
        Ok(SessionAnswer::Plan { verdict })
    }

    /// A reported step: in the timeline, then weighed by the supervisor when
    /// a policy enables one (a pause asks the user). Steering the user left
    /// for the session comes back as a reorientation.
    pub(super) async fn session_step(
        self: &Arc<Self>,
        work: &RunWork,
        key: Option<String>,
        step: Activity,
    ) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        let reattached = self.gate_of_key(run, key.as_deref())?;
        if reattached.is_none() {
            self.record_activity(run, step.clone())?;
            let steering = self.take_steering(run);
            if !steering.is_empty() {
                return Ok(SessionAnswer::Step {
                    verdict: StepVerdict::Reorient {
                        correction: steering.join("\n\n"),
                    },
                });
            }
            let policy = policy_of(work);
            if !policy.enabled {
                return Ok(SessionAnswer::Step {
                    verdict: StepVerdict::Continue,
                });
            }
            let steps = self
                .activity(run, 0)?
                .iter()
                .filter(|a| matches!(a.entry, Activity::StepReported { .. }))
                .count();
            let judged = evaluate_step(
                self,
                work,
                &policy,
                step.encode().1,
                u32::try_from(steps).unwrap_or(u32::MAX),
            )
            .await;
            let why = judged.rationale.clone();
            match judged.verdict {
                Verdict::Continue | Verdict::Approve | Verdict::Advise if !judged.failed => {
                    return Ok(SessionAnswer::Step {
                        verdict: StepVerdict::Continue,
                    })
                }
                Verdict::Reorient if !judged.failed => {
                    return Ok(SessionAnswer::Step {
                        verdict: StepVerdict::Reorient {
                            correction: judged.correction.unwrap_or(why),
                        },
                    })
                }
                Verdict::Continue
                | Verdict::Approve
                | Verdict::Advise
                | Verdict::Reorient
                | Verdict::Pause
                | Verdict::Reject
                | Verdict::Escalate => {}
            }
            let spec = GateSpec::new(
                run,
                GateBody::SupervisorPause(SupervisorPauseGate {
                    rationale: why.clone(),
                    step: None,
                    timeout_seconds: None,
                    ask_kind: Some(AskKind::Blocking),
                }),
                &format!("The supervisor paused the session: {}", first_line(&why)),
                supervisor_pause_options(),
            );
            let d = self.ask_gate(work, spec, key).await?;
            return Ok(step_answer(d));
        }
        let gate = reattached.ok_or_else(|| ApiError::new(ErrorCode::Internal, "no gate"))?;
        let _waiter = Waiter::new(self, gate);
        Ok(step_answer(wait_gate(self, gate).await?))
    }

    /// Something the agent tells the user: in the timeline, and an `info`
    /// item in the inbox whose reply (if any) steers the session.
    pub(super) fn session_notice(
        self: &Arc<Self>,
        work: &RunWork,
        kind: NoticeKind,
        title: Option<String>,
        message: &str,
    ) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        self.flood_use(run, crate::flood::Use::Notice)?;
        let (text, heading) = (message.to_owned(), title.clone());
        self.record_activity(
            run,
            match kind {
                NoticeKind::Notification => Activity::Notice {
                    text,
                    title: heading,
                },
                NoticeKind::Stop => Activity::TurnEnded {
                    text,
                    title: heading,
                },
            },
        )?;
        if kind == NoticeKind::Stop {
            let steering = self.take_steering(run);
            if !steering.is_empty() {
                let text = steering.join("\n\n");
                self.record_activity_or_warn(
                    run,
                    Activity::SteeringDelivered {
                        text: text.to_owned(),
                    },
                );
                return Ok(SessionAnswer::Noted {
                    run,
                    steering: Some(text),
                });
            }
        }
        // One info item per session: a newer notice replaces the older.
        // (The run's own pending gates: reading every run's made each
        // notice cost more as gates piled up.)
        let pending = self.store().pending_gates_of_run(run)?;
        for g in pending {
            if g.body.declared_ask_kind() == Some(AskKind::Info) {
                self.withdraw_gate(g.id, "a newer notice from the same session replaced it");
            }
        }
        let title = title
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| match kind {
                NoticeKind::Notification => first_line(message),
                NoticeKind::Stop => format!("{} finished its turn", work.agent),
            });
        let body = GateBody::Question(QuestionGate {
            message: message.to_owned(),
            schema: serde_json::Value::Null,
            questions: Vec::new(),
            ask_kind: Some(AskKind::Info),
            notice: Some(kind),
        });
        let spec = GateSpec::new(
            run,
            body,
            &title,
            vec![
                GateOption::choice(QuestionChoice::Answer, "Reply").with_required_context(),
                GateOption::choice(QuestionChoice::Decline, "Dismiss"),
            ],
        );
        let gate = self.open_gate_spec(&spec, &Actor::Agent(work.agent.clone()))?;
        reply_becomes_steering(self, gate, run);
        Ok(SessionAnswer::Noted {
            run,
            steering: None,
        })
    }

    pub(super) fn session_end(&self, work: &RunWork) -> Result<SessionAnswer, ApiError> {
        let run = work.run_id;
        self.transition(run, RunEvent::End, None, &Actor::Agent(work.agent.clone()))?;
        lock(&self.external.rules).remove(&run);
        Ok(SessionAnswer::Noted {
            run,
            steering: None,
        })
    }
}

pub(super) fn step_answer(d: GateDecision) -> SessionAnswer {
    let context = d.context.clone().filter(|c| !c.trim().is_empty());
    let verdict = match d.choice::<SupervisorPauseChoice>() {
        Ok(SupervisorPauseChoice::Proceed) => StepVerdict::Continue,
        Ok(SupervisorPauseChoice::Modify) => StepVerdict::Reorient {
            correction: context.unwrap_or_else(|| "no details given".to_owned()),
        },
        Ok(SupervisorPauseChoice::Abort) | Err(_) => StepVerdict::Pause {
            reason: context.unwrap_or_else(|| format!("{} said stop", d.actor)),
        },
    };
    SessionAnswer::Step { verdict }
}

pub(super) fn tool_title(tool: &str, req: &ToolRequest) -> String {
    let detail = req
        .command
        .clone()
        .or_else(|| req.paths.first().cloned())
        .unwrap_or_default();
    let detail = first_line(&detail);
    if detail.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool}: {detail}")
    }
}

/// The first non-blank line of `s`, at most 120 characters.
pub(super) fn first_line(s: &str) -> String {
    crate::work::first_line(s, 120)
}

/// A reply to a session's notice is steering for its next stop or step, as
/// the person who replied. Kept across a restart: the engine's start calls
/// this again for every notice still pending. Watched once per notice: a
/// notice that reached the engine while it started (its socket answers
/// before its start looks at what sessions left) is not watched twice,
/// which queued its reply twice.
pub(crate) fn reply_becomes_steering(engine: &Arc<Engine>, gate: GateId, run: RunId) {
    if !lock(&engine.external.replies).insert(gate) {
        return;
    }
    engine.when_answered(gate, move |engine, reply, by| {
        lock(&engine.external.replies).remove(&gate);
        if let Err(e) = engine.queue_steering(run, &reply, &by) {
            tracing::error!(run = %run, "a reply could not be kept as steering: {}", e.message);
        }
    });
}
