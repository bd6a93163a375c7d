//! The client side of the conversation: the handlers for what the agent
//! sends (updates, permission requests, questions, file reads and writes) and
//! the task that runs the connection.
//!
//! Handlers run inside the crate's dispatch loop, one message at a time, which
//! keeps updates in order. Anything that waits for a human (a permission, a
//! question) is answered from a spawned task instead, so the loop never blocks
//! on a decision.

use super::confine::{self, resolve_in_worktree, Access, BeneathError, RootDir};
use crate::signal::{
    AgentSignal, DriverError, ModeInfo, PermissionChoice, PermissionReply, PlanEntry,
    QuestionReply, ToolCallInfo, UnaskedJudge, MAX_READ_BYTES,
};
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client};
use overseer_core::agent::{check_mode, ModeCheck};
use overseer_core::{ToolCallStatus, ToolKind};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tokio::sync::{mpsc, oneshot, watch};

/// How long a tool call announced `in_progress` without a permission request
/// may wait for one before it counts as carried out unasked (codex-acp
/// announces a patch, then asks, within the same millisecond).
const SUSPECT_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Runs the connection until the `AgentConnection` is dropped or the agent
/// closes its output, and hands the connection context to `start`.
pub(super) async fn drive<T>(
    shared: Arc<Shared>,
    client_name: String,
    transport: T,
    cx_tx: oneshot::Sender<ConnectionTo<Agent>>,
    stopped: oneshot::Receiver<()>,
) where
    T: agent_client_protocol::ConnectTo<Client> + 'static,
{
    let s_update = shared.clone();
    let s_permission = shared.clone();
    let s_read = shared.clone();
    let s_write = shared.clone();
    let s_question = shared.clone();
    let result = Client
        .v1()
        .name(client_name)
        .on_receive_notification(
            async move |n: acp::SessionNotification, _cx| {
                s_update.on_update(n).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: acp::RequestPermissionRequest, responder, cx| {
                s_permission.on_permission(r, responder, cx).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: acp::ReadTextFileRequest, responder, _cx| {
                s_read.on_read(r, responder).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: acp::WriteTextFileRequest, responder, _cx| {
                s_write.on_write(r, responder).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: acp::CreateElicitationRequest, responder, cx| {
                s_question.on_question(r, responder, cx).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let closed = cx.clone();
            if cx_tx.send(cx).is_err() {
                return Ok(());
            }
            tokio::select! {
                _ = stopped => {}
                () = closed.incoming_closed() => {}
            }
            Ok(())
        })
        .await;
    let detail = match result {
        Ok(()) => "the agent closed its output".to_owned(),
        Err(e) => {
            tracing::warn!(error = %e, "ACP connection failed");
            e.to_string()
        }
    };
    *shared.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(detail);
}

/// What the handlers share with the connection.
pub(super) struct Shared {
    /// The worktree, canonical.
    pub(super) root: PathBuf,
    /// The worktree held open: file I/O for the agent happens beneath it.
    pub(super) root_dir: Arc<RootDir>,
    pub(super) signals: mpsc::Sender<AgentSignal>,
    pub(super) tool_calls: Mutex<HashMap<String, ToolCallInfo>>,
    /// Set once `session/new` answered; updates for other sessions are refused.
    pub(super) session_id: OnceLock<String>,
    /// Bumped by `cancel()`; pending answers watch it.
    pub(super) cancel: watch::Sender<u64>,
    /// Set by `cancel()` until the next prompt: asks arriving then are cancelled.
    pub(super) turn_cancelled: AtomicBool,
    /// Why the connection ended, once it has.
    pub(super) ended: Mutex<Option<String>>,
    /// The agent's session mode and the modes the run allows.
    pub(super) modes: Mutex<ModeWatch>,
    /// Set when the agent switched to a mode the run does not allow: writes
    /// are refused and asks cancelled until Overseer sets a mode again.
    pub(super) breached: AtomicBool,
    /// Set while the turn must change nothing (planning): writes are refused.
    pub(super) read_only: AtomicBool,
    /// Set while `session/load` replays the session's history: its updates
    /// are the past, already in the run's timeline, and are not recorded.
    pub(super) replaying: AtomicBool,
    /// Tool kinds for which the agent was answered with an `allow_always`
    /// option: it may carry out more of them without asking again.
    pub(super) always_kinds: Mutex<std::collections::HashSet<ToolKind>>,
    /// Judges tool calls carried out without asking (set by the run).
    pub(super) judge: Mutex<Option<UnaskedJudge>>,
    /// Set for good once the judge found one: writes are refused and asks
    /// cancelled; the run is being stopped.
    pub(super) halted: AtomicBool,
    /// Tool calls announced `in_progress` unasked that the judge found
    /// wanting, by id, with why: halted on unless asked for in time.
    pub(super) suspects: Mutex<HashMap<String, String>>,
}

/// The mode the agent is in, and what the run allows (empty: not watched).
#[derive(Debug, Default)]
pub(super) struct ModeWatch {
    pub(super) current: Option<String>,
    pub(super) allowed: Vec<String>,
}

/// An agent's `mode` config option: its id, current value and values.
pub(super) struct ModeOption {
    pub(super) id: String,
    pub(super) current: String,
    pub(super) values: Vec<ModeInfo>,
}

/// The config option that selects the session mode (category `mode`, or
/// id `mode`), if the agent offers one.
pub(super) fn mode_option(options: &[acp::SessionConfigOption]) -> Option<ModeOption> {
    let option = options
        .iter()
        .find(|o| matches!(o.category, Some(acp::SessionConfigOptionCategory::Mode)))
        .or_else(|| options.iter().find(|o| &*o.id.0 == "mode"))?;
    let acp::SessionConfigKind::Select(select) = &option.kind else {
        return None;
    };
    let values = match &select.options {
        acp::SessionConfigSelectOptions::Ungrouped(list) => list.clone(),
        acp::SessionConfigSelectOptions::Grouped(groups) => {
            groups.iter().flat_map(|g| g.options.clone()).collect()
        }
        _ => Vec::new(),
    };
    Some(ModeOption {
        id: option.id.0.to_string(),
        current: select.current_value.0.to_string(),
        values: values
            .into_iter()
            .map(|v| ModeInfo {
                id: v.value.0.to_string(),
                name: v.name,
                description: v.description,
            })
            .collect(),
    })
}

impl Shared {
    pub(super) fn modes_mut(&self) -> std::sync::MutexGuard<'_, ModeWatch> {
        self.modes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent says it is in `mode`: a breach takes effect here, before
    /// the next message from the agent is handled.
    fn on_mode(&self, mode: String) -> AgentSignal {
        let breach = {
            let mut watch = self.modes_mut();
            watch.current = Some(mode.clone());
            if watch.allowed.is_empty() {
                None
            } else {
                match check_mode(&mode, &watch.allowed) {
                    ModeCheck::Allowed => None,
                    ModeCheck::Breach { why, .. } => Some(why),
                }
            }
        };
        if breach.is_some() {
            self.breached.store(true, Ordering::SeqCst);
            // Whatever the agent asked before is withdrawn too.
            self.cancel.send_modify(|epoch| *epoch += 1);
            tracing::warn!(%mode, "the agent switched to a mode the run does not allow");
        }
        AgentSignal::ModeChanged { mode, breach }
    }

    async fn signal(&self, signal: AgentSignal) -> bool {
        self.signals.send(signal).await.is_ok()
    }

    async fn protocol_error(&self, detail: String) {
        tracing::warn!(%detail, "agent protocol error");
        self.signal(AgentSignal::ProtocolError { detail }).await;
    }

    pub(super) fn ended_detail(&self) -> String {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned())
    }

    /// Turns a failed request into what went wrong, in the user's terms.
    pub(super) fn classify(
        &self,
        method: &'static str,
        e: agent_client_protocol::Error,
    ) -> DriverError {
        if agent_client_protocol::is_incoming_transport_closed(&e) {
            DriverError::AgentExited { method }
        } else if agent_client_protocol::is_connection_terminated(&e) {
            DriverError::ConnectionLost {
                method,
                detail: self.ended_detail(),
            }
        } else {
            DriverError::Agent {
                method,
                code: e.code.value(),
                message: e.message,
            }
        }
    }

    /// Whether a session id the agent sent is ours (any, before session/new answered).
    fn is_our_session(&self, id: &acp::SessionId) -> bool {
        self.session_id.get().is_none_or(|ours| *ours == *id.0)
    }

    async fn on_update(self: &Arc<Self>, n: acp::SessionNotification) {
        if self.replaying.load(Ordering::SeqCst) {
            tracing::debug!("session/load replay: an update of the past, not recorded");
            return;
        }
        if !self.is_our_session(&n.session_id) {
            self.protocol_error(format!(
                "the agent sent an update for session {:?}, which is not this connection's",
                n.session_id.0
            ))
            .await;
            return;
        }
        let signal = match n.update {
            acp::SessionUpdate::AgentMessageChunk(chunk)
                if is_informational(chunk.meta.as_ref()) =>
            {
                // Not the model's words (claude-agent-acp's billing and auto
                // mode notices): kept out of the transcript a plan is read from.
                if let Some(text) = text_of(chunk.content) {
                    tracing::info!(%text, "agent notice (not model output)");
                }
                return;
            }
            acp::SessionUpdate::AgentMessageChunk(chunk) => match text_of(chunk.content) {
                Some(text) => AgentSignal::Message { text },
                None => return,
            },
            acp::SessionUpdate::AgentThoughtChunk(chunk) => match text_of(chunk.content) {
                Some(text) => AgentSignal::Thought { text },
                None => return,
            },
            acp::SessionUpdate::Plan(plan) => AgentSignal::Plan {
                entries: plan
                    .entries
                    .into_iter()
                    .map(|e| PlanEntry {
                        content: e.content,
                        priority: wire_name(&e.priority),
                        status: wire_name(&e.status),
                    })
                    .collect(),
            },
            acp::SessionUpdate::ToolCall(call) => {
                let info = self.merge_call(call);
                return self.tool_call_signal(info).await;
            }
            acp::SessionUpdate::ToolCallUpdate(update) => {
                let info = self.merge_update(&update);
                return self.tool_call_signal(info).await;
            }
            acp::SessionUpdate::CurrentModeUpdate(update) => {
                self.on_mode(update.current_mode_id.0.to_string())
            }
            acp::SessionUpdate::ConfigOptionUpdate(update) => {
                match mode_option(&update.config_options) {
                    Some(option) => self.on_mode(option.current),
                    None => return,
                }
            }
            acp::SessionUpdate::UsageUpdate(u) => AgentSignal::Usage {
                used: u.used,
                size: u.size,
                cost: u.cost.map(|c| (c.amount, c.currency)),
            },
            // Echoes of the user's prompt, commands, modes and the
            // like carry nothing the orchestrator acts on yet.
            other => {
                tracing::debug!(update = ?std::mem::discriminant(&other), "ACP update ignored");
                return;
            }
        };
        self.signal(signal).await;
    }

    /// A tool call's new state, then, once the run's judge finds it carried
    /// out unasked, the halt (the first time only). A call that reaches
    /// `completed` unasked is confirmed at once, and so is a suspect that
    /// reports `failed` (it started unasked). One announced `in_progress`
    /// unasked is a suspect: codex-acp announces a patch `in_progress` and
    /// asks right after, so the ask may still come. It is confirmed when the
    /// agent sends a write through the client before asking, when it
    /// completes, or when [`SUSPECT_WAIT`] passes with no ask for it.
    async fn tool_call_signal(self: &Arc<Self>, info: ToolCallInfo) {
        let status = info.status;
        let mut unasked = None;
        if info.asked {
            self.suspects_mut().remove(&info.id);
        } else if status == Some(ToolCallStatus::Failed) {
            // Started unasked, then reported failed: it ran, in part or in
            // whole (Qwen Code reports a command its shell killed as failed,
            // after it ran): confirmed, never forgotten.
            let suspect = self.suspects_mut().remove(&info.id);
            if let Some(why) = suspect.filter(|_| !self.halted.load(Ordering::SeqCst)) {
                unasked = self.halt(&info, why);
            }
        }
        let carried_out_unasked = !info.asked
            && info.kind.is_some_and(ToolKind::changes_something)
            && status.is_some_and(ToolCallStatus::carried_out);
        if carried_out_unasked && !self.halted.load(Ordering::SeqCst) {
            let known = self.suspects_mut().remove(&info.id);
            let why = known.or_else(|| {
                let judge = self
                    .judge
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                judge.and_then(|j| j(&info))
            });
            match why {
                Some(why) if status == Some(ToolCallStatus::Completed) => {
                    unasked = self.halt(&info, why)
                }
                Some(why) => {
                    self.suspects_mut().insert(info.id.clone(), why);
                    let shared = self.clone();
                    let id = info.id.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(SUSPECT_WAIT).await;
                        shared.confirm_suspect(Some(&id)).await;
                    });
                }
                None => {}
            }
        }
        self.signal(AgentSignal::ToolCall(info)).await;
        if let Some(signal) = unasked {
            self.signal(signal).await;
        }
    }

    fn suspects_mut(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.suspects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Confirms a suspect (`id`, or any when `None`) still unasked: the
    /// halt, reported. True when the driver is halted.
    pub(super) async fn confirm_suspect(&self, id: Option<&str>) -> bool {
        let found = {
            let mut suspects = self.suspects_mut();
            let key = match id {
                Some(id) => suspects.contains_key(id).then(|| id.to_owned()),
                None => suspects.keys().next().cloned(),
            };
            key.and_then(|k| suspects.remove(&k).map(|why| (k, why)))
        };
        if let Some((id, why)) = found {
            let info = self
                .tool_calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&id)
                .cloned();
            if let Some(signal) = info.filter(|i| !i.asked).and_then(|i| self.halt(&i, why)) {
                self.signal(signal).await;
            }
        }
        self.halted.load(Ordering::SeqCst)
    }

    /// Halts the driver for good (writes refused, asks cancelled) and
    /// returns the signal to report, unless it was halted already.
    fn halt(&self, info: &ToolCallInfo, why: String) -> Option<AgentSignal> {
        if self.halted.swap(true, Ordering::SeqCst) {
            return None;
        }
        self.cancel.send_modify(|epoch| *epoch += 1);
        tracing::error!(tool_call = %info.id, %why, "the agent acted without asking");
        Some(AgentSignal::Unasked {
            tool_call: info.clone(),
            why,
        })
    }

    /// A full `tool_call` announcement, merged over what is known by id. The
    /// kind `other` is the wire default for "not given", so it does not erase
    /// a kind already known.
    fn merge_call(&self, call: acp::ToolCall) -> ToolCallInfo {
        let mut calls = self
            .tool_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let id = call.tool_call_id.0.to_string();
        let entry = calls.entry(id.clone()).or_insert_with(|| ToolCallInfo {
            id,
            ..ToolCallInfo::default()
        });
        entry.title = Some(call.title);
        let kind = tool_kind(&call.kind);
        if kind != ToolKind::Other || entry.kind.is_none() {
            entry.kind = Some(kind);
        }
        entry.status = tool_status(&call.status);
        if let Some(raw_input) = call.raw_input.filter(|r| !is_empty_input(r)) {
            entry.raw_input = Some(raw_input);
        }
        if !call.locations.is_empty() {
            entry.locations = call.locations.into_iter().map(|l| l.path).collect();
        }
        if let Some(text) = text_content(&call.content) {
            entry.text = Some(text);
        }
        if let Some(name) = tool_name(call.meta.as_ref()) {
            entry.name = Some(name);
        }
        self.covered_by_always(entry);
        entry.clone()
    }

    /// A `tool_call_update` (or the tool call of a permission request): only
    /// the fields it carries change.
    fn merge_update(&self, update: &acp::ToolCallUpdate) -> ToolCallInfo {
        let mut calls = self
            .tool_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let id = update.tool_call_id.0.to_string();
        let entry = calls.entry(id.clone()).or_insert_with(|| ToolCallInfo {
            id,
            ..ToolCallInfo::default()
        });
        let fields = &update.fields;
        if let Some(title) = &fields.title {
            entry.title = Some(title.clone());
        }
        if let Some(kind) = &fields.kind {
            entry.kind = Some(tool_kind(kind));
        }
        if let Some(status) = &fields.status {
            entry.status = tool_status(status);
        }
        // claude-agent-acp announces ExitPlanMode's plan in a tool_call_update,
        // then asks permission with an empty `rawInput`: keep what is known.
        if let Some(raw_input) = fields.raw_input.as_ref().filter(|r| !is_empty_input(r)) {
            entry.raw_input = Some(raw_input.clone());
        }
        if let Some(locations) = &fields.locations {
            entry.locations = locations.iter().map(|l| l.path.clone()).collect();
        }
        if let Some(text) = fields.content.as_deref().and_then(text_content) {
            entry.text = Some(text);
        }
        if let Some(name) = tool_name(update.meta.as_ref()) {
            entry.name = Some(name);
        }
        self.covered_by_always(entry);
        entry.clone()
    }

    /// A call of a kind the agent holds an "always" answer for counts as
    /// asked: Overseer (the user's "always") let it stop asking.
    fn covered_by_always(&self, entry: &mut ToolCallInfo) {
        if entry.asked {
            return;
        }
        if let Some(kind) = &entry.kind {
            entry.asked = self
                .always_kinds
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(kind);
        }
    }

    /// Notes that the agent asked before the tool call `id`.
    fn mark_asked(&self, id: &str) -> ToolCallInfo {
        let mut calls = self
            .tool_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = calls.entry(id.to_owned()).or_insert_with(|| ToolCallInfo {
            id: id.to_owned(),
            ..ToolCallInfo::default()
        });
        entry.asked = true;
        let info = entry.clone();
        drop(calls);
        self.suspects_mut().remove(id);
        info
    }

    async fn on_permission(
        self: &Arc<Self>,
        request: acp::RequestPermissionRequest,
        responder: Responder<acp::RequestPermissionResponse>,
        cx: ConnectionTo<Agent>,
    ) -> Result<(), agent_client_protocol::Error> {
        if !self.is_our_session(&request.session_id) {
            return responder.respond_with_error(
                acp::Error::session_not_found(request.session_id.clone()).into(),
            );
        }
        self.merge_update(&request.tool_call);
        let tool_call = self.mark_asked(&request.tool_call.tool_call_id.0);
        let kind = tool_call.kind;
        let options: Vec<PermissionChoice> = request
            .options
            .iter()
            .map(|o| PermissionChoice {
                option_id: o.option_id.0.to_string(),
                name: o.name.clone(),
                kind: wire_name(&o.kind),
            })
            .collect();
        let cancelled =
            acp::RequestPermissionResponse::new(acp::RequestPermissionOutcome::Cancelled);
        // Subscribe before asking, so a cancel while the question is out counts.
        let mut cancel = self.cancel.subscribe();
        if self.turn_cancelled.load(Ordering::SeqCst)
            || self.breached.load(Ordering::SeqCst)
            || self.halted.load(Ordering::SeqCst)
        {
            return responder.respond(cancelled);
        }
        let (reply, answer) = oneshot::channel();
        let offered: Vec<String> = options.iter().map(|o| o.option_id.clone()).collect();
        let asked = self
            .signal(AgentSignal::Permission {
                tool_call,
                options,
                reply,
            })
            .await;
        if !asked {
            // Nobody is listening: never allow by default.
            return responder.respond(cancelled);
        }
        let withdrawn = responder.cancellation();
        let always_ids: Vec<String> = request
            .options
            .iter()
            .filter(|o| wire_name(&o.kind) == "allow_always")
            .map(|o| o.option_id.0.to_string())
            .collect();
        let shared = self.clone();
        // Waiting for a human must not hold the dispatch loop.
        cx.spawn(async move {
            // An answer given before a cancel is the answer (the orchestrator
            // answers an exit-plan request, then cancels the turn).
            let outcome = tokio::select! {
                biased;
                answer = answer => match answer {
                    Ok(PermissionReply::Selected { option_id }) if offered.contains(&option_id) => {
                        acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(option_id))
                    }
                    Ok(PermissionReply::Selected { option_id }) => {
                        tracing::warn!(%option_id, "permission answered with an option the agent did not offer; cancelling");
                        acp::RequestPermissionOutcome::Cancelled
                    }
                    Ok(PermissionReply::Cancelled) | Err(_) => acp::RequestPermissionOutcome::Cancelled,
                },
                _ = cancel.changed() => acp::RequestPermissionOutcome::Cancelled,
                () = withdrawn.cancelled() => acp::RequestPermissionOutcome::Cancelled,
            };
            if let (acp::RequestPermissionOutcome::Selected(chosen), Some(kind)) = (&outcome, &kind) {
                if always_ids.iter().any(|id| *id == *chosen.option_id.0) {
                    shared
                        .always_kinds
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(*kind);
                }
            }
            if let Err(e) = responder.respond(acp::RequestPermissionResponse::new(outcome)) {
                tracing::debug!(error = %e, "permission answer not delivered");
            }
            Ok(())
        })
    }

    async fn on_question(
        self: &Arc<Self>,
        request: acp::CreateElicitationRequest,
        responder: Responder<acp::CreateElicitationResponse>,
        cx: ConnectionTo<Agent>,
    ) -> Result<(), agent_client_protocol::Error> {
        let cancel_answer = || acp::CreateElicitationResponse::new(acp::ElicitationAction::Cancel);
        let acp::ElicitationMode::Form(form) = request.mode else {
            // Only form mode is offered in our capabilities.
            self.protocol_error(
                "the agent asked for an elicitation mode other than `form`, which Overseer does not offer; it was declined".to_owned(),
            )
            .await;
            return responder.respond(acp::CreateElicitationResponse::new(
                acp::ElicitationAction::Decline,
            ));
        };
        if let acp::ElicitationScope::Session(scope) = &form.scope {
            if !self.is_our_session(&scope.session_id) {
                return responder.respond_with_error(
                    acp::Error::session_not_found(scope.session_id.clone()).into(),
                );
            }
        }
        let mut cancel = self.cancel.subscribe();
        if self.turn_cancelled.load(Ordering::SeqCst) {
            return responder.respond(cancel_answer());
        }
        let schema = serde_json::to_value(&form.requested_schema).unwrap_or_default();
        let (reply, answer) = oneshot::channel();
        let asked = self
            .signal(AgentSignal::Question {
                message: request.message,
                schema,
                reply,
            })
            .await;
        if !asked {
            return responder.respond(cancel_answer());
        }
        let withdrawn = responder.cancellation();
        cx.spawn(async move {
            let action = tokio::select! {
                biased;
                answer = answer => match answer {
                    Ok(QuestionReply::Accept { content }) => {
                        match serde_json::from_value::<BTreeMap<String, acp::ElicitationContentValue>>(content) {
                            Ok(values) => acp::ElicitationAction::Accept(
                                acp::ElicitationAcceptAction::new().content(values),
                            ),
                            Err(e) => {
                                tracing::warn!(error = %e, "question answer is not a flat object of form values; cancelling");
                                acp::ElicitationAction::Cancel
                            }
                        }
                    }
                    Ok(QuestionReply::Decline) => acp::ElicitationAction::Decline,
                    Ok(QuestionReply::Cancel) | Err(_) => acp::ElicitationAction::Cancel,
                },
                _ = cancel.changed() => acp::ElicitationAction::Cancel,
                () = withdrawn.cancelled() => acp::ElicitationAction::Cancel,
            };
            if let Err(e) = responder.respond(acp::CreateElicitationResponse::new(action)) {
                tracing::debug!(error = %e, "question answer not delivered");
            }
            Ok(())
        })
    }

    /// Resolves a path the agent sent, or refuses it (reported and answered).
    async fn confine(
        &self,
        session: &acp::SessionId,
        path: &Path,
        access: Access,
    ) -> Result<confine::Confined, agent_client_protocol::Error> {
        if !self.is_our_session(session) {
            return Err(acp::Error::session_not_found(session.clone()).into());
        }
        match resolve_in_worktree(&self.root, path, access) {
            Ok(confined) => Ok(confined),
            Err(refusal) => {
                let shown = path.display().to_string();
                tracing::warn!(path = %shown, reason = %refusal, "file request refused");
                self.signal(AgentSignal::FileRefused {
                    path: shown.clone(),
                    reason: refusal.to_string(),
                })
                .await;
                Err(agent_client_protocol::Error::new(
                    agent_client_protocol::ErrorCode::INVALID_PARAMS,
                    format!("refused: {refusal}"),
                )
                .data(serde_json::json!({ "path": shown })))
            }
        }
    }

    async fn on_read(
        &self,
        request: acp::ReadTextFileRequest,
        responder: Responder<acp::ReadTextFileResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let target = match self
            .confine(&request.session_id, &request.path, Access::Read)
            .await
        {
            Ok(target) => target,
            Err(e) => return responder.respond_with_error(e),
        };
        match read_text(
            &self.root_dir,
            &target.relative,
            request.line,
            request.limit,
        )
        .await
        {
            Ok(content) => {
                self.signal(AgentSignal::FileRead {
                    path: target.relative,
                })
                .await;
                responder.respond(acp::ReadTextFileResponse::new(content))
            }
            Err(e) => {
                self.refused_at_io(&target.relative, &e).await;
                responder.respond_with_error(e)
            }
        }
    }

    /// A file request the kernel refused because it led out of the worktree
    /// at the moment of the I/O (a swap race): reported like a refusal.
    async fn refused_at_io(&self, relative: &Path, e: &agent_client_protocol::Error) {
        if e.data
            .as_ref()
            .is_some_and(|d| d.get("escapes") == Some(&serde_json::Value::Bool(true)))
        {
            let shown = relative.display().to_string();
            tracing::warn!(path = %shown, "file request refused at the I/O: it led out of the worktree");
            self.signal(AgentSignal::FileRefused {
                path: shown,
                reason: BeneathError::Escapes.to_string(),
            })
            .await;
        }
    }

    async fn on_write(
        &self,
        request: acp::WriteTextFileRequest,
        responder: Responder<acp::WriteTextFileResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        // A write while a call is suspect, before any ask for it: confirmed.
        let halted = self.confirm_suspect(None).await;
        let held = if halted {
            Some("the agent carried out a change without asking: Overseer stopped the run")
        } else if self.breached.load(Ordering::SeqCst) {
            Some("the agent switched itself to a mode Overseer does not allow; nothing is written until the user decides")
        } else if self.read_only.load(Ordering::SeqCst) {
            Some("this turn is read-only: change nothing (a planning turn proposes a plan and waits for its approval; a consultation answers a question)")
        } else {
            None
        };
        if let Some(reason) = held {
            let shown = request.path.display().to_string();
            self.signal(AgentSignal::FileRefused {
                path: shown.clone(),
                reason: reason.to_owned(),
            })
            .await;
            return responder.respond_with_error(
                agent_client_protocol::Error::new(
                    agent_client_protocol::ErrorCode::INVALID_REQUEST,
                    format!("refused: {reason}"),
                )
                .data(serde_json::json!({ "path": shown })),
            );
        }
        let target = match self
            .confine(&request.session_id, &request.path, Access::Write)
            .await
        {
            Ok(target) => target,
            Err(e) => return responder.respond_with_error(e),
        };
        let bytes = request.content.len();
        // Beneath the worktree's descriptor: parents created one component
        // at a time, the file written to a temporary name and renamed.
        let root = self.root_dir.clone();
        let relative = target.relative.clone();
        let written =
            tokio::task::spawn_blocking(move || root.write(&relative, request.content.as_bytes()))
                .await
                .unwrap_or_else(|e| Err(BeneathError::Io(std::io::Error::other(e.to_string()))));
        match written {
            Ok(()) => {
                self.signal(AgentSignal::FileWritten {
                    path: target.relative,
                    bytes,
                })
                .await;
                responder.respond(acp::WriteTextFileResponse::new())
            }
            Err(e) => {
                let e = beneath_error(&target.relative, e);
                self.refused_at_io(&target.relative, &e).await;
                responder.respond_with_error(e)
            }
        }
    }
}

/// Reads a UTF-8 file beneath the worktree, optionally from a 1-based
/// `line` for `limit` lines.
async fn read_text(
    root: &Arc<RootDir>,
    relative: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, agent_client_protocol::Error> {
    let shown = relative.to_path_buf();
    let (root, rel) = (root.clone(), relative.to_path_buf());
    let bytes = tokio::task::spawn_blocking(move || root.read(&rel, MAX_READ_BYTES))
        .await
        .unwrap_or_else(|e| Err(BeneathError::Io(std::io::Error::other(e.to_string()))))
        .map_err(|e| beneath_error(&shown, e))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        agent_client_protocol::Error::new(
            agent_client_protocol::ErrorCode::INVALID_PARAMS,
            format!("{} is not a UTF-8 text file", shown.display()),
        )
    })?;
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1)) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

/// What the agent hears when I/O beneath the worktree failed. A refused
/// escape carries `"escapes": true` in its data.
fn beneath_error(path: &Path, e: BeneathError) -> agent_client_protocol::Error {
    use agent_client_protocol::ErrorCode;
    match e {
        BeneathError::Io(e) => io_error(path, &e),
        BeneathError::TooBig(n) => agent_client_protocol::Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "{} is {n} bytes, over the {MAX_READ_BYTES}-byte limit for reads through the client",
                path.display()
            ),
        ),
        BeneathError::NotAFile => agent_client_protocol::Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("{} is not a regular file", path.display()),
        ),
        BeneathError::Escapes => agent_client_protocol::Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("refused: {}: {}", path.display(), BeneathError::Escapes),
        )
        .data(serde_json::json!({ "path": path.display().to_string(), "escapes": true })),
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> agent_client_protocol::Error {
    let code = if e.kind() == std::io::ErrorKind::NotFound {
        agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND
    } else {
        agent_client_protocol::ErrorCode::INTERNAL_ERROR
    };
    agent_client_protocol::Error::new(code, format!("{}: {e}", path.display()))
}

/// A message chunk the adapter marks as its own notice, not the model's
/// output: `_meta.claudeCode.kind = "informational"` (claude-agent-acp).
/// The agent's own name for a tool (`_meta.claudeCode.toolName`).
fn tool_name(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> Option<String> {
    meta?
        .get("claudeCode")?
        .get("toolName")?
        .as_str()
        .filter(|n| !n.is_empty() && n.len() <= 200)
        .map(str::to_owned)
}

fn is_informational(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> bool {
    meta.and_then(|m| m.get("claudeCode"))
        .and_then(|c| c.get("kind"))
        .is_some_and(|k| k == "informational")
}

/// `null` or `{}`: an announcement that carries no input yet.
fn is_empty_input(raw: &serde_json::Value) -> bool {
    raw.is_null() || raw.as_object().is_some_and(|o| o.is_empty())
}

/// The text of a tool call's content blocks, joined; diffs and terminals are
/// not text.
fn text_content(content: &[acp::ToolCallContent]) -> Option<String> {
    let texts: Vec<String> = content
        .iter()
        .filter_map(|c| match c {
            acp::ToolCallContent::Content(c) => text_of(c.content.clone()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The text of a content block; other kinds (images, resources) are not shown.
fn text_of(content: acp::ContentBlock) -> Option<String> {
    match content {
        acp::ContentBlock::Text(text) => Some(text.text),
        _ => None,
    }
}

/// The wire name of a protocol enum (`in_progress`, `allow_once`, ...).
/// Going through serde keeps this right for variants added later.
/// ACP's tool kind as ours (by its wire name: a kind a newer protocol adds
/// is `Other`).
fn tool_kind(kind: &acp::ToolKind) -> ToolKind {
    ToolKind::parse(&wire_name(kind))
}

/// ACP's tool call status as ours; None for one this version cannot name.
fn tool_status(status: &acp::ToolCallStatus) -> Option<ToolCallStatus> {
    ToolCallStatus::parse(&wire_name(status))
}

fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "other".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_of(dir: &tempfile::TempDir) -> Arc<RootDir> {
        Arc::new(RootDir::open(dir.path()).expect("open root"))
    }

    #[tokio::test]
    async fn a_read_can_start_at_a_line_and_stop_after_a_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("f.txt"), "one\ntwo\nthree\nfour").expect("write");
        let root = root_of(&dir);
        let file = Path::new("f.txt");
        assert_eq!(
            read_text(&root, file, None, None).await.expect("all"),
            "one\ntwo\nthree\nfour"
        );
        assert_eq!(
            read_text(&root, file, Some(2), Some(2))
                .await
                .expect("slice"),
            "two\nthree\n"
        );
        assert_eq!(
            read_text(&root, file, Some(4), None).await.expect("tail"),
            "four"
        );
        assert_eq!(
            read_text(&root, file, Some(9), None)
                .await
                .expect("past the end"),
            ""
        );
    }

    #[tokio::test]
    async fn a_file_that_is_not_text_or_not_there_is_an_error_for_the_agent() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("bin"), [0xff, 0xfe, 0x00]).expect("write");
        let root = root_of(&dir);
        let e = read_text(&root, Path::new("bin"), None, None)
            .await
            .expect_err("binary");
        assert!(e.message.contains("not a UTF-8 text file"));
        let e = read_text(&root, Path::new("missing"), None, None)
            .await
            .expect_err("missing");
        assert_eq!(e.code, agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND);
        let e = read_text(&root, Path::new(""), None, None)
            .await
            .expect_err("a directory");
        assert!(e.message.contains("not a regular file"), "{}", e.message);
    }

    #[test]
    fn protocol_enums_are_shown_by_their_wire_names() {
        assert_eq!(wire_name(&acp::ToolCallStatus::InProgress), "in_progress");
        assert_eq!(
            wire_name(&acp::PermissionOptionKind::AllowOnce),
            "allow_once"
        );
        assert_eq!(wire_name(&acp::ToolKind::SwitchMode), "switch_mode");
    }
}
