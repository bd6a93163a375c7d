//! One prompt turn: what the agent says, asks and does until it answers
//! `session/prompt`.
//!
//! A planning prompt ([`is_planning_prompt`]) gets a plan (through the
//! exit-plan request in `plan` mode, as a block otherwise); "Carry out step
//! N" ([`step_of_prompt`]) does that step's edits; anything else is a
//! follow-up (feedback, guidance, retry context) that resumes the current
//! step when execution has started.

use crate::script::{Action, Answers, Effect, PermissionSettings, Scenario, Script};
use crate::state::{log, Demo, Phase};
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, ErrorCode};
use overseer_core::plan::{is_planning_prompt, plan_block, step_of_prompt};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

/// Why a turn stopped early.
enum Halt {
    /// The client sent `session/cancel` (or answered a permission `cancelled`).
    Cancelled,
    /// The turn fails: `session/prompt` is answered with this error.
    Failed(agent_client_protocol::Error),
}

impl From<agent_client_protocol::Error> for Halt {
    fn from(e: agent_client_protocol::Error) -> Self {
        Halt::Failed(e)
    }
}

type Step<T> = Result<T, Halt>;

/// The user's answer to a permission request.
enum Permission {
    Once,
    Always,
    Reject,
}

pub(crate) struct Turn {
    demo: Arc<Demo>,
    cx: ConnectionTo<Client>,
    session: acp::SessionId,
    cwd: PathBuf,
    cancel: watch::Receiver<u64>,
}

impl Turn {
    /// Subscribes to cancellation now, so a cancel sent right after the
    /// prompt is not missed.
    pub(crate) fn new(
        demo: Arc<Demo>,
        cx: ConnectionTo<Client>,
        session: acp::SessionId,
        cwd: PathBuf,
    ) -> Turn {
        let cancel = demo.cancel.subscribe();
        Turn {
            demo,
            cx,
            session,
            cwd,
            cancel,
        }
    }

    pub(crate) async fn run(
        mut self,
        text: &str,
    ) -> Result<acp::StopReason, agent_client_protocol::Error> {
        let prompt = text.trim_start();
        let outcome = if is_planning_prompt(prompt) {
            self.plan().await
        } else if let Some(step) = step_of_prompt(prompt) {
            self.demo.with_session(|s| s.step = step);
            self.execute().await
        } else {
            self.follow_up(prompt).await
        };
        match outcome {
            Ok(stop) => Ok(stop),
            Err(Halt::Cancelled) => {
                log!("turn cancelled");
                Ok(acp::StopReason::Cancelled)
            }
            Err(Halt::Failed(e)) => {
                log!("turn failed: {}", e.message);
                Err(e)
            }
        }
    }

    async fn plan(&mut self) -> Step<acp::StopReason> {
        let answers = if self.demo.scenario == Scenario::Questions {
            match self.demo.with_session(|s| s.answers.clone()) {
                Some(answers) => answers,
                None => {
                    let answers = self.ask_questions().await?;
                    let stored = answers.clone();
                    self.demo.with_session(|s| s.answers = Some(stored));
                    answers
                }
            }
        } else {
            Answers::default()
        };
        self.pause().await?;
        self.think("Reading the task and the README.")?;
        self.read_readme().await;
        let script = Script::for_scenario(self.demo.scenario, &answers);
        self.pause().await?;
        self.send_plan(&script, None)?;
        self.pause().await?;
        if self.demo.with_session(|s| s.mode == "plan") {
            return self.exit_plan(&script).await;
        }
        // In two chunks, the way real agents stream.
        self.say("Here is my plan.\n\n")?;
        self.say(&format!(
            "{}\n\nApprove it and I will start.",
            plan_block(&script.plan)
        ))?;
        self.demo.with_session(|s| s.phase = Phase::Planned);
        Ok(acp::StopReason::EndTurn)
    }

    /// Claude's way out of plan mode: a permission request carrying the plan
    /// as markdown, with an auto-accepting option a client must not pick.
    async fn exit_plan(&mut self, script: &Script) -> Step<acp::StopReason> {
        let mut markdown = format!("# {}\n\n", script.plan.goal);
        for (i, step) in script.plan.steps.iter().enumerate() {
            markdown.push_str(&format!("{}. {}\n", i + 1, step.title));
        }
        markdown.push_str(&format!("\n{}\n", plan_block(&script.plan)));
        self.say("I have a plan; asking to leave plan mode.")?;
        let options = vec![
            acp::PermissionOption::new(
                "exit-plan-auto",
                "Yes, and auto-accept edits",
                acp::PermissionOptionKind::AllowAlways,
            ),
            acp::PermissionOption::new(
                "exit-plan-default",
                "Yes, manually approve edits",
                acp::PermissionOptionKind::AllowOnce,
            ),
            acp::PermissionOption::new(
                "reject",
                "No, keep planning",
                acp::PermissionOptionKind::RejectOnce,
            ),
        ];
        let id = acp::ToolCallId::new("exit-plan-mode");
        let fields = acp::ToolCallUpdateFields::new()
            .title("Approve Plan".to_owned())
            .kind(acp::ToolKind::SwitchMode)
            .raw_input(serde_json::json!({ "plan": markdown }));
        let answer = self
            .cx
            .send_request(acp::RequestPermissionRequest::new(
                self.session.clone(),
                acp::ToolCallUpdate::new(id, fields),
                options,
            ))
            .block_task()
            .await?;
        let chosen = match answer.outcome {
            acp::RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
            acp::RequestPermissionOutcome::Cancelled => return Err(Halt::Cancelled),
            _ => "reject".to_owned(),
        };
        log!("exit-plan answered {chosen}");
        let next = match chosen.as_str() {
            "exit-plan-default" => "default",
            "exit-plan-auto" => "auto",
            // Like Claude: a rejection ends the prompt, cancelled.
            _ => return Ok(acp::StopReason::Cancelled),
        };
        self.set_mode(next)?;
        self.demo.with_session(|s| s.phase = Phase::Planned);
        self.say("Plan approved. Waiting for the first step.")?;
        Ok(acp::StopReason::EndTurn)
    }

    /// Changes its own mode and tells the client, as agents do.
    fn set_mode(&self, mode: &str) -> Step<()> {
        self.demo.with_session(|s| s.mode = mode.to_owned());
        self.update(acp::SessionUpdate::CurrentModeUpdate(
            acp::CurrentModeUpdate::new(mode.to_owned()),
        ))
    }

    async fn execute(&mut self) -> Step<acp::StopReason> {
        self.demo.with_session(|s| s.phase = Phase::Executing);
        // The scenarios' specials happen at the first step.
        let first = self.demo.with_session(|s| s.step) == 0;
        match self.demo.scenario {
            Scenario::Garbage if first => self.write_garbage(),
            Scenario::Stubborn if first => return self.hang().await,
            Scenario::Escape if first => return self.escape().await,
            Scenario::Lingering if first => return self.linger(false).await,
            Scenario::Fleeting if first => return self.linger(true).await,
            Scenario::LateAsk if first => return self.ask_late().await,
            Scenario::Permissions if first => {
                if let Some(stop) = self.time_permissions().await? {
                    return Ok(stop);
                }
            }
            Scenario::Garbage
            | Scenario::Stubborn
            | Scenario::Escape
            | Scenario::Permissions
            | Scenario::Happy
            | Scenario::Questions
            | Scenario::Destructive
            | Scenario::Flaky
            | Scenario::Hijack
            | Scenario::Unasked
            | Scenario::Switch
            | Scenario::Lingering
            | Scenario::Fleeting
            | Scenario::LateAsk
            | Scenario::Drift
            | Scenario::DriftTwice
            | Scenario::Dispatch
            | Scenario::Costly
            | Scenario::Consult
            | Scenario::ConsultWrite
            | Scenario::ConsultShell => {}
        }
        self.run_remaining().await
    }

    async fn follow_up(&mut self, text: &str) -> Step<acp::StopReason> {
        if matches!(
            self.demo.scenario,
            Scenario::Consult | Scenario::ConsultWrite | Scenario::ConsultShell
        ) {
            return self.answer_consultation(text).await;
        }
        self.say(&format!("Understood: {text}"))?;
        if self.demo.with_session(|s| s.phase) == Phase::Idle {
            // No plan was asked for (plan = "skip"): the prompt is the task.
            return self.run_all().await;
        }
        if text.contains("The user rejected a tool call") {
            // Like a real agent told why: it does not ask for that again.
            self.demo.with_session(|s| s.done += 1);
        }
        if self.demo.with_session(|s| s.phase) == Phase::Executing {
            self.pause().await?;
            return self.run_remaining().await;
        }
        Ok(acp::StopReason::EndTurn)
    }

    /// A consultation's one turn: the `consult*` scenarios. The answer is
    /// the turn's message, starting `ANSWER:`.
    async fn answer_consultation(&mut self, text: &str) -> Step<acp::StopReason> {
        let question = text
            .split_once("Question:")
            .map_or(text, |(_, q)| q)
            .trim()
            .to_owned();
        let mut found = Vec::new();
        match self.demo.scenario {
            Scenario::ConsultWrite => {
                let path = self.cwd.join("README.md");
                let id = acp::ToolCallId::new("consult-edit");
                let asked = self
                    .ask_permission(
                        &id,
                        "Edit README.md",
                        Some(acp::ToolKind::Edit),
                        &serde_json::json!({"file_path": path, "content": "# changed by a consultant\n"}),
                    )
                    .await?;
                found.push(match asked {
                    Permission::Once | Permission::Always => "the edit was allowed".to_owned(),
                    Permission::Reject => "the edit was refused".to_owned(),
                });
                // Then without asking, as a careless agent would.
                found.push(
                    match self.write_file(&path, "# changed by a consultant\n").await {
                        Ok(()) => "the write went through".to_owned(),
                        Err(e) => format!("the write was refused ({})", e.message),
                    },
                );
            }
            Scenario::ConsultShell => {
                let id = acp::ToolCallId::new("consult-shell");
                let asked = self
                    .ask_permission(
                        &id,
                        "cargo test",
                        Some(acp::ToolKind::Execute),
                        &serde_json::json!({"command": "cargo test"}),
                    )
                    .await?;
                found.push(match asked {
                    Permission::Once | Permission::Always => "cargo test may run".to_owned(),
                    Permission::Reject => "cargo test was refused".to_owned(),
                });
            }
            _ => {}
        }
        if self.demo.scenario == Scenario::Consult {
            // What answering cost, as agents that know report it.
            self.update(acp::SessionUpdate::UsageUpdate(
                acp::UsageUpdate::new(12_000, 200_000).cost(acp::Cost::new(0.05, "USD")),
            ))?;
        }
        let readme = self.readme_first_line().await;
        let mut answer = format!("ANSWER to {question:?}: README.md begins with {readme:?}");
        for f in found {
            answer.push_str("; ");
            answer.push_str(&f);
        }
        self.say(&answer)?;
        Ok(acp::StopReason::EndTurn)
    }

    /// README.md's first line as the client serves it (or why not).
    async fn readme_first_line(&self) -> String {
        let request =
            acp::ReadTextFileRequest::new(self.session.clone(), self.cwd.join("README.md"));
        match self.cx.send_request(request).block_task().await {
            Ok(file) => file.content.lines().next().unwrap_or_default().to_owned(),
            Err(e) => format!("(unreadable: {})", e.message),
        }
    }

    /// Every step in one turn, for a client that asked for no plan.
    async fn run_all(&mut self) -> Step<acp::StopReason> {
        self.demo.with_session(|s| s.phase = Phase::Executing);
        let answers = self
            .demo
            .with_session(|s| s.answers.clone())
            .unwrap_or_default();
        let steps = Script::for_scenario(self.demo.scenario, &answers)
            .plan
            .steps
            .len();
        let mut stop = acp::StopReason::EndTurn;
        for step in 0..steps {
            self.demo.with_session(|s| s.step = step);
            stop = self.run_remaining().await?;
        }
        Ok(stop)
    }

    /// Carries out the steps not done yet, asking before each tool call.
    async fn run_remaining(&mut self) -> Step<acp::StopReason> {
        let answers = self
            .demo
            .with_session(|s| s.answers.clone())
            .unwrap_or_default();
        let script = Script::for_scenario(self.demo.scenario, &answers);
        if !self.demo.client_writes() {
            self.say(
                "This client does not offer fs/write_text_file, so I cannot edit files through it.",
            )?;
            return Ok(acp::StopReason::EndTurn);
        }
        let start = self.demo.with_session(|s| s.done);
        let step = self.demo.with_session(|s| s.step);
        if matches!(self.demo.scenario, Scenario::Hijack | Scenario::Switch) && step == 0 {
            // Nobody asked for this: off to `auto`, then edit unasked.
            self.set_mode("auto")?;
        }
        for (index, action) in script.actions.iter().enumerate().skip(start) {
            if action.entry != step {
                if action.entry > step {
                    break;
                }
                continue;
            }
            self.send_plan(&script, Some(index))?;
            self.pause().await?;
            let flaky_now = self.demo.scenario == Scenario::Flaky
                && index == 1
                && !self
                    .demo
                    .with_session(|s| std::mem::replace(&mut s.flaky_failed, true));
            if flaky_now {
                return Err(Halt::Failed(agent_client_protocol::Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    "step 2 failed: test timeout",
                )));
            }
            let attempt = self.demo.with_session(|s| {
                s.tool_calls += 1;
                s.tool_calls
            });
            let id = acp::ToolCallId::new(format!("step-{}-call-{attempt}", index + 1));
            let location = self.cwd.join(action.location);
            self.announce(&id, action, &location)?;
            // `unasked`: its own settings allow everything (OpenCode's
            // default), whatever mode it reports.
            // `switch`: it keeps asking in any mode.
            let always = self.demo.scenario == Scenario::Unasked
                || (self.demo.scenario != Scenario::Switch
                    && self.demo.with_session(|s| {
                        s.always_allowed || !["default", "plan"].contains(&s.mode.as_str())
                    }));
            if !always {
                match self
                    .ask_permission_with(
                        &id,
                        &action.title,
                        None,
                        &action.raw_input,
                        action.effect.meta(),
                    )
                    .await?
                {
                    Permission::Once => {}
                    Permission::Always => self.demo.with_session(|s| s.always_allowed = true),
                    Permission::Reject => {
                        self.tool_status(&id, acp::ToolCallStatus::Failed)?;
                        self.say(&format!(
                            "Stopped: you rejected \"{}\". Tell me what to do instead and I will pick up from there.",
                            action.title
                        ))?;
                        return Ok(acp::StopReason::EndTurn);
                    }
                }
            }
            self.tool_status(&id, acp::ToolCallStatus::InProgress)?;
            self.pause().await?;
            match &action.effect {
                Effect::Write { content } => {
                    if let Err(e) = self.write_file(&location, content).await {
                        self.tool_status(&id, acp::ToolCallStatus::Failed)?;
                        self.say(&format!(
                            "Could not write {}: {}. Stopping here.",
                            action.location, e.message
                        ))?;
                        return Ok(acp::StopReason::EndTurn);
                    }
                }
                Effect::RemoveDir => remove_dir_inside(&self.cwd, action.location),
                Effect::Dispatch { .. } => {
                    self.say("The subagent reviewed the greeting and found nothing to change.")?;
                }
            }
            self.tool_status(&id, acp::ToolCallStatus::Completed)?;
            self.demo.with_session(|s| s.done = index + 1);
            if self.demo.scenario == Scenario::Costly {
                self.report_usage(index)?;
            }
        }
        let done = self.demo.with_session(|s| s.done);
        self.send_plan(&script, Some(done))?;
        self.pause().await?;
        let title = script
            .plan
            .steps
            .get(step)
            .map_or("the task", |s| s.title.as_str());
        let message = format!(
            "{title}\n\n{}. Scenario: {}. Written by the Overseer demo agent.",
            script.plan.goal, self.demo.scenario
        );
        let summary = commit(&self.cwd, &message);
        self.say(&format!("Step {} done: {title}. {summary}", step + 1))?;
        if done >= script.actions.len() {
            self.demo.with_session(|s| s.phase = Phase::Done);
        }
        Ok(acp::StopReason::EndTurn)
    }

    /// The `costly` scenario's usage after tool call `index` (0-based):
    /// 0.25 USD a call, cumulative; after the first, two reports that cannot
    /// be true, which a client must ignore.
    fn report_usage(&self, index: usize) -> Step<()> {
        let calls = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let usage = |used: u64, amount: f64| {
            acp::SessionUpdate::UsageUpdate(
                acp::UsageUpdate::new(used, 200_000).cost(acp::Cost::new(amount, "USD")),
            )
        };
        self.update(usage(u64::from(calls) * 10_000, 0.25 * f64::from(calls)))?;
        if index == 0 {
            self.update(usage(10_000, -1.0))?;
            self.update(usage(10_000, 0.01))?;
        }
        Ok(())
    }

    /// Announces a tool call twice, first with an empty input and then
    /// complete, as real agents do; the client must merge them by id.
    fn announce(&self, id: &acp::ToolCallId, action: &Action, location: &Path) -> Step<()> {
        let call = || {
            acp::ToolCall::new(id.clone(), action.title.clone())
                .kind(action.kind)
                .status(acp::ToolCallStatus::Pending)
                .locations(vec![acp::ToolCallLocation::new(location.to_path_buf())])
                .meta(action.effect.meta())
        };
        self.update(acp::SessionUpdate::ToolCall(
            call().raw_input(serde_json::json!({})),
        ))?;
        self.update(acp::SessionUpdate::ToolCall(
            call().raw_input(action.raw_input.clone()),
        ))
    }

    /// Asks before a tool call. Without `kind` the request carries none: like
    /// some real agents, the kind is then only in the `tool_call` update.
    async fn ask_permission(
        &self,
        id: &acp::ToolCallId,
        title: &str,
        kind: Option<acp::ToolKind>,
        raw_input: &serde_json::Value,
    ) -> Step<Permission> {
        self.ask_permission_with(id, title, kind, raw_input, None)
            .await
    }

    /// [`Self::ask_permission`], the tool call carrying `meta`.
    async fn ask_permission_with(
        &self,
        id: &acp::ToolCallId,
        title: &str,
        kind: Option<acp::ToolKind>,
        raw_input: &serde_json::Value,
        meta: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Step<Permission> {
        let options = vec![
            acp::PermissionOption::new("allow", "Allow once", acp::PermissionOptionKind::AllowOnce),
            acp::PermissionOption::new(
                "always",
                "Always allow",
                acp::PermissionOptionKind::AllowAlways,
            ),
            acp::PermissionOption::new("reject", "Reject", acp::PermissionOptionKind::RejectOnce),
        ];
        let mut fields = acp::ToolCallUpdateFields::new()
            .title(title.to_owned())
            .raw_input(raw_input.clone());
        if let Some(kind) = kind {
            fields = fields.kind(kind);
        }
        let tool_call = acp::ToolCallUpdate::new(id.clone(), fields).meta(meta);
        let answer = self
            .cx
            .send_request(acp::RequestPermissionRequest::new(
                self.session.clone(),
                tool_call,
                options,
            ))
            .block_task()
            .await?;
        match answer.outcome {
            acp::RequestPermissionOutcome::Selected(selected) => Ok(match &*selected.option_id.0 {
                "allow" => Permission::Once,
                "always" => Permission::Always,
                // "reject", and anything we did not offer.
                _ => Permission::Reject,
            }),
            acp::RequestPermissionOutcome::Cancelled => Err(Halt::Cancelled),
            // Non-exhaustive: an outcome this version cannot name is not a yes.
            _ => Ok(Permission::Reject),
        }
    }

    /// The `permissions` scenario's requests (see the crate docs): timed
    /// round trips, one `<kind> <micros> <answered at>` line each in the
    /// latency file, and `finished <time>` after the last.
    /// `Some` ends the turn early (the user said no).
    async fn time_permissions(&mut self) -> Step<Option<acp::StopReason>> {
        let settings = self.demo.permissions.clone();
        let mut latencies = settings.latency_file.as_ref().and_then(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| log!("cannot open {}: {e}", path.display()))
                .ok()
        });
        let count = if settings.hold { 1 } else { settings.count };
        if let Some((agents, dir)) = &settings.barrier {
            wait_for_agents(*agents, dir).await;
        }
        log!(
            "asking for {count} permission(s){}",
            if settings.hold { ", holding" } else { "" }
        );
        for index in 0..count {
            if settings.think_ms > 0 {
                tokio::time::sleep(think_time(settings.think_ms)).await;
            }
            let kind = if settings.hold {
                acp::ToolKind::Edit
            } else {
                PermissionSettings::kind_of(index)
            };
            let (name, title, location, raw_input) = if kind == acp::ToolKind::Read {
                let input = serde_json::json!({ "path": "README.md" });
                ("read", "Read README.md", "README.md", input)
            } else {
                let input = serde_json::json!({ "path": "src/greeting.txt", "content": "hello\n" });
                ("edit", "Edit src/greeting.txt", "src/greeting.txt", input)
            };
            let attempt = self.demo.with_session(|s| {
                s.tool_calls += 1;
                s.tool_calls
            });
            let id = acp::ToolCallId::new(format!("permission-{}-call-{attempt}", index + 1));
            self.update(acp::SessionUpdate::ToolCall(
                acp::ToolCall::new(id.clone(), title)
                    .kind(kind)
                    .status(acp::ToolCallStatus::Pending)
                    .locations(vec![acp::ToolCallLocation::new(self.cwd.join(location))])
                    .raw_input(raw_input.clone()),
            ))?;
            let started = Instant::now();
            let answer = self
                .ask_permission(&id, title, Some(kind), &raw_input)
                .await?;
            let micros = started.elapsed().as_micros();
            if let Some(file) = latencies.as_mut() {
                // One write per line: agents may share the file.
                let line = format!("{name} {micros} {}\n", unix_micros());
                if let Err(e) = file.write_all(line.as_bytes()) {
                    log!("cannot record a latency: {e}");
                    latencies = None;
                }
            }
            if matches!(answer, Permission::Reject) {
                self.tool_status(&id, acp::ToolCallStatus::Failed)?;
                self.say(&format!("Stopped: you rejected \"{title}\"."))?;
                return Ok(Some(acp::StopReason::EndTurn));
            }
            self.tool_status(&id, acp::ToolCallStatus::Completed)?;
        }
        // When this agent stopped asking: the bench tells the round trips
        // of a fleet still asking from those beside runs that are finishing.
        if let Some(file) = latencies.as_mut() {
            if let Err(e) = file.write_all(format!("finished {}\n", unix_micros()).as_bytes()) {
                log!("cannot record the end of the requests: {e}");
            }
        }
        Ok(None)
    }

    async fn ask_questions(&mut self) -> Step<Answers> {
        if !self.demo.client_forms() {
            self.say("I would ask which framework to use, whether to add tests and for any notes, but this client offers no forms; I will use defaults.")?;
            return Ok(Answers::default());
        }
        let schema = acp::ElicitationSchema::new()
            .title("Before I plan")
            .property(
                "framework",
                acp::StringPropertySchema::new()
                    .title("Framework")
                    .enum_values(
                        FRAMEWORKS
                            .iter()
                            .map(|f| (*f).to_owned())
                            .collect::<Vec<_>>(),
                    ),
                true,
            )
            .property(
                "add_tests",
                acp::BooleanPropertySchema::new().title("Add tests?"),
                true,
            )
            .property(
                "notes",
                acp::StringPropertySchema::new().title("Anything else I should know?"),
                false,
            );
        let request = acp::CreateElicitationRequest::new(
            acp::ElicitationFormMode::new(
                acp::ElicitationSessionScope::new(self.session.clone()),
                schema,
            ),
            "A few questions before I plan the greeting.",
        );
        let answer = self.cx.send_request(request).block_task().await?;
        self.check_cancelled()?;
        let acp::ElicitationAction::Accept(accepted) = answer.action else {
            log!("questions declined or cancelled; using defaults");
            return Ok(Answers::default());
        };
        let content = accepted.content.unwrap_or_default();
        let text = |key: &str| match content.get(key) {
            Some(acp::ElicitationContentValue::String(s)) => Some(s.clone()),
            _ => None,
        };
        let defaults = Answers::default();
        Ok(Answers {
            framework: text("framework")
                .filter(|f| FRAMEWORKS.contains(&f.as_str()))
                .unwrap_or(defaults.framework),
            add_tests: matches!(
                content.get("add_tests"),
                Some(acp::ElicitationContentValue::Boolean(true))
            ),
            notes: text("notes").unwrap_or_default(),
            given: true,
        })
    }

    /// Never ends the turn on its own; only a cancel does.
    async fn hang(&mut self) -> Step<acp::StopReason> {
        // Announced, never carried out: a command run without asking would
        // be a security event that stops the run (this scenario is about
        // stopping a process tree, not about permissions).
        let id = acp::ToolCallId::new("watch-tests");
        self.update(acp::SessionUpdate::ToolCall(
            acp::ToolCall::new(id, "Run the test suite in watch mode")
                .kind(acp::ToolKind::Execute)
                .status(acp::ToolCallStatus::Pending)
                .raw_input(serde_json::json!({ "command": "npm test -- --watch" })),
        ))?;
        match self.cancel.changed().await {
            Ok(()) => Err(Halt::Cancelled),
            // The sender lives as long as the agent, so this does not happen;
            // if it did, there would be nobody left to cancel us.
            Err(_) => std::future::pending().await,
        }
    }

    /// `lingering`: a command announced as running, never asked for, and
    /// then nothing until cancelled; `fleeting` (`end`): the command is
    /// reported `failed` right after the announcement (as Qwen Code reports
    /// a command its shell killed, whatever it did first) and the turn ends.
    async fn linger(&mut self, end: bool) -> Step<acp::StopReason> {
        let id = acp::ToolCallId::new("linger-rm");
        self.update(acp::SessionUpdate::ToolCall(
            acp::ToolCall::new(id.clone(), "Run rm -rf build/")
                .kind(acp::ToolKind::Execute)
                .status(acp::ToolCallStatus::InProgress)
                .raw_input(serde_json::json!({ "command": "rm -rf build/" })),
        ))?;
        if end {
            self.update(acp::SessionUpdate::ToolCallUpdate(
                acp::ToolCallUpdate::new(
                    id,
                    acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::Failed),
                ),
            ))?;
            return Ok(acp::StopReason::EndTurn);
        }
        match self.cancel.changed().await {
            Ok(()) => Err(Halt::Cancelled),
            Err(_) => std::future::pending().await,
        }
    }

    /// `late_ask`: the edit announced `in_progress`, then asked for (as
    /// codex-acp does with a patch), written only once allowed.
    async fn ask_late(&mut self) -> Step<acp::StopReason> {
        let id = acp::ToolCallId::new("late-edit");
        let location = self.cwd.join("README.md");
        let raw = serde_json::json!({ "path": "README.md", "content": "# asked late\n" });
        self.update(acp::SessionUpdate::ToolCall(
            acp::ToolCall::new(id.clone(), "Edit README.md")
                .kind(acp::ToolKind::Edit)
                .status(acp::ToolCallStatus::InProgress)
                .locations(vec![acp::ToolCallLocation::new(location.clone())])
                .raw_input(raw.clone()),
        ))?;
        match self
            .ask_permission(&id, "Edit README.md", Some(acp::ToolKind::Edit), &raw)
            .await?
        {
            Permission::Once | Permission::Always => {
                if let Err(e) = self.write_file(&location, "# asked late\n").await {
                    self.tool_status(&id, acp::ToolCallStatus::Failed)?;
                    self.say(&format!("Could not write README.md: {}", e.message))?;
                    return Ok(acp::StopReason::EndTurn);
                }
                self.tool_status(&id, acp::ToolCallStatus::Completed)?;
            }
            Permission::Reject => self.tool_status(&id, acp::ToolCallStatus::Failed)?,
        }
        Ok(acp::StopReason::EndTurn)
    }

    /// Tries three ways out of the worktree; the client must refuse each.
    async fn escape(&mut self) -> Step<acp::StopReason> {
        let Some(parent) = self.cwd.parent().map(Path::to_path_buf) else {
            self.say("The session directory has no parent; nothing to try.")?;
            return Ok(acp::StopReason::EndTurn);
        };
        let link = self.cwd.join("escape-link");
        if let Err(e) = std::os::unix::fs::symlink(&parent, &link) {
            log!("could not create {}: {e}", link.display());
        }
        let attempts = [
            self.cwd.join("../escaped-dotdot.txt"),
            parent.join("escaped-absolute.txt"),
            link.join("escaped-via-link.txt"),
        ];
        let mut results = Vec::new();
        for path in &attempts {
            let result = match self.write_file(path, "this must never be written\n").await {
                Ok(()) => format!("{}: WRITTEN", path.display()),
                Err(e) => format!("{}: {}", path.display(), e.message),
            };
            results.push(result);
        }
        self.say(&format!(
            "I tried to write outside the worktree:\n- {}",
            results.join("\n- ")
        ))?;
        Ok(acp::StopReason::EndTurn)
    }

    /// A malformed JSON line, a line that is not UTF-8 and a 2 MiB line,
    /// straight to stdout past the protocol library.
    fn write_garbage(&self) {
        let mut huge = vec![b'x'; 2 * 1024 * 1024];
        huge.push(b'\n');
        for line in [
            b"{\"jsonrpc\": \"2.0\", \"method\": \"session/update\", \"params\": {oops\n".to_vec(),
            b"\xff\xfe garbage that is not UTF-8 \xc3\x28\n".to_vec(),
            huge,
        ] {
            if self.demo.raw_out.send(line).is_err() {
                log!("stdout is closed; garbage not written");
            }
        }
    }

    /// Reads README.md through the client, as an agent looking around would.
    async fn read_readme(&self) {
        if !self.demo.client_reads() {
            return;
        }
        let request =
            acp::ReadTextFileRequest::new(self.session.clone(), self.cwd.join("README.md"));
        match self.cx.send_request(request).block_task().await {
            Ok(file) => log!("README.md has {} bytes", file.content.len()),
            Err(e) => log!("could not read README.md: {}", e.message),
        }
    }

    async fn write_file(
        &self,
        path: &Path,
        content: &str,
    ) -> Result<(), agent_client_protocol::Error> {
        self.cx
            .send_request(acp::WriteTextFileRequest::new(
                self.session.clone(),
                path.to_path_buf(),
                content,
            ))
            .block_task()
            .await
            .map(|_| ())
    }

    /// The progress list: steps before `current` completed, the current one
    /// in progress, the rest pending (all pending when planning).
    fn send_plan(&self, script: &Script, current: Option<usize>) -> Step<()> {
        let entries = script
            .plan
            .steps
            .iter()
            .enumerate()
            .map(|(entry, step)| {
                let status = match current {
                    None => acp::PlanEntryStatus::Pending,
                    Some(current) => {
                        let actions = script
                            .actions
                            .iter()
                            .enumerate()
                            .filter(|(_, a)| a.entry == entry);
                        let indices: Vec<usize> = actions.map(|(i, _)| i).collect();
                        if indices.iter().all(|i| *i < current) {
                            acp::PlanEntryStatus::Completed
                        } else if indices.iter().any(|i| *i <= current) {
                            acp::PlanEntryStatus::InProgress
                        } else {
                            acp::PlanEntryStatus::Pending
                        }
                    }
                };
                acp::PlanEntry::new(step.title.clone(), acp::PlanEntryPriority::Medium, status)
            })
            .collect();
        self.update(acp::SessionUpdate::Plan(acp::Plan::new(entries)))
    }

    fn tool_status(&self, id: &acp::ToolCallId, status: acp::ToolCallStatus) -> Step<()> {
        self.update(acp::SessionUpdate::ToolCallUpdate(
            acp::ToolCallUpdate::new(id.clone(), acp::ToolCallUpdateFields::new().status(status)),
        ))
    }

    fn say(&self, text: &str) -> Step<()> {
        self.update(acp::SessionUpdate::AgentMessageChunk(
            acp::ContentChunk::new(acp::ContentBlock::Text(acp::TextContent::new(text))),
        ))
    }

    fn think(&self, text: &str) -> Step<()> {
        self.update(acp::SessionUpdate::AgentThoughtChunk(
            acp::ContentChunk::new(acp::ContentBlock::Text(acp::TextContent::new(text))),
        ))
    }

    fn update(&self, update: acp::SessionUpdate) -> Step<()> {
        self.cx
            .send_notification(acp::SessionNotification::new(self.session.clone(), update))?;
        Ok(())
    }

    /// Waits one step (`OVERSEER_DEMO_STEP_MS`), or stops if the turn is cancelled.
    async fn pause(&mut self) -> Step<()> {
        if self.demo.step.is_zero() {
            tokio::task::yield_now().await;
            return self.check_cancelled();
        }
        tokio::select! {
            () = tokio::time::sleep(self.demo.step) => self.check_cancelled(),
            _ = self.cancel.changed() => Err(Halt::Cancelled),
        }
    }

    fn check_cancelled(&self) -> Step<()> {
        match self.cancel.has_changed() {
            Ok(false) => Ok(()),
            Ok(true) | Err(_) => Err(Halt::Cancelled),
        }
    }
}

const FRAMEWORKS: [&str; 3] = ["svelte", "react", "vue"];

/// `rm -rf <cwd>/<dir>`, without a shell and only inside `cwd`.
fn remove_dir_inside(cwd: &Path, dir: &str) {
    let target = cwd.join(dir);
    if !target.starts_with(cwd) || dir.contains("..") {
        log!("refusing to remove {}", target.display());
        return;
    }
    match std::fs::remove_dir_all(&target) {
        Ok(()) => log!("removed {}", target.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => log!("could not remove {}: {e}", target.display()),
    }
}

/// `git add -A` and a commit in `cwd`; returns what to tell the user. Under
/// Overseer's containment the run's `.git` is read-only to agents and the
/// engine commits each step itself: then there is nothing to do here.
fn commit(cwd: &Path, message: &str) -> String {
    if !git_dir_writable(cwd) {
        return "Done. Overseer commits the step (this run's repository is read-only to agents)."
            .to_owned();
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(cwd)
            .args([
                "-c",
                "user.name=Overseer Demo Agent",
                "-c",
                "user.email=demo@overseer.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
    };
    let run = |args: &[&str]| -> Result<String, String> {
        match git(args) {
            Ok(out) if out.status.success() => {
                Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
            }
            Ok(out) => Err(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
            Err(e) => Err(format!("cannot run git: {e}")),
        }
    };
    let result = (|| {
        run(&["add", "-A"])?;
        if run(&["status", "--porcelain"])?.is_empty() {
            return Ok("Done. Nothing changed, so there is nothing to commit.".to_owned());
        }
        run(&["commit", "-q", "-m", message])?;
        let sha = run(&["rev-parse", "--short", "HEAD"])?;
        Ok(format!("Done. Committed {sha}."))
    })();
    result.unwrap_or_else(|e: String| {
        log!("commit failed: {e}");
        format!("The edits are made, but the commit failed: {e}")
    })
}

/// True when a file can be created in `cwd/.git` (false on a read-only bind).
fn git_dir_writable(cwd: &Path) -> bool {
    let probe = cwd
        .join(".git")
        .join(format!("overseer-demo-probe-{}", std::process::id()));
    match std::fs::File::create_new(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            true
        }
        // A linked worktree's `.git` is a file: let git find the real dir.
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => true,
        Err(_) => false,
    }
}

/// The `permissions` scenario's start barrier: leaves this agent's mark in
/// `dir`, then waits (at most two minutes) until `agents` marks are there.
async fn wait_for_agents(agents: usize, dir: &std::path::Path) {
    // Not the pid: in a sandbox's own pid namespace every agent has the same.
    let mark = dir.join(format!("ready-{:016x}", random_u64()));
    if let Err(e) = std::fs::write(&mark, b"") {
        log!(
            "cannot leave a mark at {}: {e}; not waiting",
            mark.display()
        );
        return;
    }
    let ready = || {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("ready-"))
                .count()
        })
    };
    let deadline = Instant::now() + std::time::Duration::from_secs(120);
    while ready() < agents {
        if Instant::now() >= deadline {
            log!(
                "only {} of {agents} agents ready after 2 minutes; going on",
                ready()
            );
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Microseconds since the Unix epoch (0 if the clock is before it): a time
/// every agent of a bench shares.
fn unix_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// A pause of about `think_ms` before a request: between half and one and
/// a half times it, drawn anew each time, so agents do not ask in lockstep.
fn think_time(think_ms: u64) -> std::time::Duration {
    let spread = random_u64() % (think_ms + 1);
    std::time::Duration::from_millis(think_ms / 2 + spread)
}

/// A number of no importance, different in each process and call (the
/// standard library's hasher keys are random).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::{think_time, wait_for_agents};
    use std::time::{Duration, Instant};

    #[test]
    fn a_think_time_is_between_half_and_one_and_a_half_times_the_setting() {
        for _ in 0..200 {
            let t = think_time(100);
            assert!(
                (Duration::from_millis(50)..=Duration::from_millis(150)).contains(&t),
                "{t:?}"
            );
        }
    }

    /// The barrier lets an agent go once the count of marks is reached
    /// (each agent's mark has a name of its own, even with equal pids).
    #[test]
    fn the_barrier_waits_for_the_other_agents_marks() {
        let dir = std::env::temp_dir().join(format!("demo-barrier-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let started = Instant::now();
        rt.block_on(async {
            let other = dir.clone();
            let late = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                wait_for_agents(2, &other).await;
            });
            wait_for_agents(2, &dir).await;
            late.await.expect("the other agent");
        });
        let marks = std::fs::read_dir(&dir).expect("read").count();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(marks, 2, "one mark per agent");
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "the first agent waited for the second"
        );
    }
}
