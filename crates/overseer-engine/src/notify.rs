//! What the engine tells the user outside the window. The desktop shell
//! implements [`Notifier`] with OS notifications; headless it only logs.

use overseer_core::supervision::{Autonomy, Verdict};
use overseer_core::urgency::{Urgency, UrgencySettings};
use overseer_core::{EngineEvent, GateKind, ReleaseReason, RunId, RunState, RunView};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// An agent waits on a decision that proceeds by itself if nobody acts
    /// (a step review with a timer).
    AgentQuestionPending,
    /// An agent is stopped until a human answers (a question, a tool call, a
    /// plan, a deviation, a supervisor's pause). Always notifies.
    AgentQuestionBlocking,
    RunPendingReview,
    RunFailed,
    /// The supervisor handed a decision to the human.
    SupervisorEscalated,
    /// The supervisor's evaluator failed (timeout, error, garbage): the
    /// human decides.
    SupervisorFailed,
    /// A security event: a run tried to reach what it must not (a process
    /// of a run connected to the engine's socket), or the user's repository
    /// changed outside a recorded merge. Always notifies.
    SecurityEvent,
    /// The hub held back an agent's message (addressed to a peer).
    AgentMessageBlocked,
    /// The data dir's disk is nearly full: runs are paused until there is
    /// room. Always notifies (the runs wait for the user).
    DiskFull,
}

impl NotificationKind {
    pub const ALL: [NotificationKind; 9] = [
        NotificationKind::AgentQuestionPending,
        NotificationKind::AgentQuestionBlocking,
        NotificationKind::RunPendingReview,
        NotificationKind::RunFailed,
        NotificationKind::SupervisorEscalated,
        NotificationKind::SupervisorFailed,
        NotificationKind::SecurityEvent,
        NotificationKind::AgentMessageBlocked,
        NotificationKind::DiskFull,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::AgentQuestionPending => "agent_question_pending",
            NotificationKind::AgentQuestionBlocking => "agent_question_blocking",
            NotificationKind::RunPendingReview => "run_pending_review",
            NotificationKind::RunFailed => "run_failed",
            NotificationKind::SupervisorEscalated => "supervisor_escalated",
            NotificationKind::SupervisorFailed => "supervisor_failed",
            NotificationKind::SecurityEvent => "security_event",
            NotificationKind::AgentMessageBlocked => "agent_message_blocked",
            NotificationKind::DiskFull => "disk_full",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Blocking asks always notify: they cannot be muted.
    pub fn is_blocking(self) -> bool {
        self == NotificationKind::AgentQuestionBlocking
    }

    /// Blocking asks, security events and a full disk cannot be muted.
    pub fn can_mute(self) -> bool {
        !self.is_blocking()
            && self != NotificationKind::SecurityEvent
            && self != NotificationKind::DiskFull
    }

    /// How loudly this kind is told unless the user chose otherwise for
    /// the kind of item it is about: critical for what stops an agent or
    /// the runs, normal otherwise.
    pub fn default_urgency(self) -> Urgency {
        if self.can_mute() {
            Urgency::Normal
        } else {
            Urgency::Critical
        }
    }

    /// How loudly this kind is told about an item of kind `ask` (None: not
    /// about an inbox item) under the user's `chosen` urgencies. A security
    /// event and a full disk are always critical, and so is a blocking ask.
    pub fn urgency(self, ask: Option<overseer_core::AskKind>, chosen: &UrgencySettings) -> Urgency {
        match ask {
            _ if self == NotificationKind::SecurityEvent || self == NotificationKind::DiskFull => {
                Urgency::Critical
            }
            // Blocking asks told as something else (the supervisor will
            // decide it) keep that kind's urgency: nobody is waited on.
            Some(overseer_core::AskKind::Blocking) if !self.is_blocking() => self.default_urgency(),
            Some(ask) => chosen.of(ask, self.default_urgency()),
            None => self.default_urgency(),
        }
    }
}

/// What a webhook can be sent: every notification kind, a run that
/// finished (whatever its end), and the test a user asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum WebhookEvent {
    AgentQuestionPending,
    AgentQuestionBlocking,
    RunPendingReview,
    RunFailed,
    SupervisorEscalated,
    SupervisorFailed,
    SecurityEvent,
    AgentMessageBlocked,
    DiskFull,
    /// A run was released: merged, rejected, aborted, failed, interrupted
    /// or ended (once per run).
    RunFinished,
    /// What `overseer webhooks test` sends: never subscribed to, never muted.
    Test,
}

impl WebhookEvent {
    /// What a hook can subscribe to (every kind but `test`).
    pub const SUBSCRIBABLE: [WebhookEvent; 10] = [
        WebhookEvent::AgentQuestionPending,
        WebhookEvent::AgentQuestionBlocking,
        WebhookEvent::RunPendingReview,
        WebhookEvent::RunFailed,
        WebhookEvent::SupervisorEscalated,
        WebhookEvent::SupervisorFailed,
        WebhookEvent::SecurityEvent,
        WebhookEvent::AgentMessageBlocked,
        WebhookEvent::DiskFull,
        WebhookEvent::RunFinished,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WebhookEvent::RunFinished => "run_finished",
            WebhookEvent::Test => "test",
            other => other
                .notification()
                .map(NotificationKind::as_str)
                .unwrap_or("test"),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::SUBSCRIBABLE
            .into_iter()
            .chain([WebhookEvent::Test])
            .find(|k| k.as_str() == s)
    }

    /// The notification kind it is, if it is one.
    pub fn notification(self) -> Option<NotificationKind> {
        Some(match self {
            WebhookEvent::AgentQuestionPending => NotificationKind::AgentQuestionPending,
            WebhookEvent::AgentQuestionBlocking => NotificationKind::AgentQuestionBlocking,
            WebhookEvent::RunPendingReview => NotificationKind::RunPendingReview,
            WebhookEvent::RunFailed => NotificationKind::RunFailed,
            WebhookEvent::SupervisorEscalated => NotificationKind::SupervisorEscalated,
            WebhookEvent::SupervisorFailed => NotificationKind::SupervisorFailed,
            WebhookEvent::SecurityEvent => NotificationKind::SecurityEvent,
            WebhookEvent::AgentMessageBlocked => NotificationKind::AgentMessageBlocked,
            WebhookEvent::DiskFull => NotificationKind::DiskFull,
            WebhookEvent::RunFinished | WebhookEvent::Test => return None,
        })
    }
}

impl From<NotificationKind> for WebhookEvent {
    fn from(kind: NotificationKind) -> Self {
        match kind {
            NotificationKind::AgentQuestionPending => WebhookEvent::AgentQuestionPending,
            NotificationKind::AgentQuestionBlocking => WebhookEvent::AgentQuestionBlocking,
            NotificationKind::RunPendingReview => WebhookEvent::RunPendingReview,
            NotificationKind::RunFailed => WebhookEvent::RunFailed,
            NotificationKind::SupervisorEscalated => WebhookEvent::SupervisorEscalated,
            NotificationKind::SupervisorFailed => WebhookEvent::SupervisorFailed,
            NotificationKind::SecurityEvent => WebhookEvent::SecurityEvent,
            NotificationKind::AgentMessageBlocked => WebhookEvent::AgentMessageBlocked,
            NotificationKind::DiskFull => WebhookEvent::DiskFull,
        }
    }
}

/// What the user muted, per channel: the desktop (OS notifications) and
/// webhooks (every hook).
///
/// On the desktop, blocking asks, security events and a full disk cannot
/// be muted, neither one by one nor with the whole channel: the machine
/// the agents run on always says when they wait for the user. On webhooks
/// every kind can be muted: a hook only gets the kinds it subscribed to
/// anyway, and the desktop (and the window) keeps the guarantee; muting is
/// how a user silences their phone without removing its hook.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct NotificationSettings {
    /// Kinds muted on the desktop.
    #[serde(default)]
    pub muted: Vec<NotificationKind>,
    /// The desktop muted whole: every kind that can be muted is.
    #[serde(default)]
    pub desktop_muted: bool,
    /// Kinds muted on webhooks (any kind but `test`).
    #[serde(default)]
    pub webhook_muted: Vec<WebhookEvent>,
    /// Webhooks muted whole: nothing is queued for any hook (a test still
    /// goes out: the user asked for it).
    #[serde(default)]
    pub webhooks_muted: bool,
    /// How loudly each kind of inbox item is told (on the desktop and on
    /// webhooks); unset: `[notifications.urgency]` in `overseer.toml`, else
    /// as the notification's kind says. Blocking asks are always critical.
    #[serde(default)]
    pub urgency: UrgencySettings,
}

impl NotificationSettings {
    /// Every kind muted that cannot be, by its place: `muted[1]`,
    /// `webhook_muted[0]`.
    pub fn validate(&self) -> Result<(), Vec<overseer_core::FieldError>> {
        let mut errors: Vec<_> = self
            .muted
            .iter()
            .enumerate()
            .filter(|(_, k)| !k.can_mute())
            .map(|(i, k)| {
                let why = if k.is_blocking() {
                    "an agent is stopped until you answer"
                } else if *k == NotificationKind::DiskFull {
                    "runs are paused until there is room on the disk"
                } else {
                    "it says something tried to get around Overseer"
                };
                overseer_core::FieldError::new(
                    format!("muted[{i}]"),
                    format!("{} cannot be muted: {why}", k.as_str()),
                )
            })
            .collect();
        if let Err(e) = self.urgency.validate() {
            errors.extend(overseer_core::error::under("urgency", e));
        }
        errors.extend(
            self.webhook_muted
                .iter()
                .enumerate()
                .filter(|(_, k)| **k == WebhookEvent::Test)
                .map(|(i, _)| {
                    overseer_core::FieldError::new(
                        format!("webhook_muted[{i}]"),
                        "test cannot be muted: a test is sent only when you ask for one",
                    )
                }),
        );
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Muted on the desktop (by kind or with the whole channel).
    pub fn is_muted(&self, kind: NotificationKind) -> bool {
        kind.can_mute() && (self.desktop_muted || self.muted.contains(&kind))
    }

    /// Muted on webhooks (by kind or with the whole channel); a test never is.
    pub fn is_webhook_muted(&self, event: WebhookEvent) -> bool {
        event != WebhookEvent::Test && (self.webhooks_muted || self.webhook_muted.contains(&event))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub kind: NotificationKind,
    pub run_id: RunId,
    pub title: String,
    pub body: String,
    /// What the notification itself can answer, as the owner (its
    /// buttons), if anything.
    pub quick: Option<QuickAnswer>,
    /// How loudly it is sent (the OS notification's urgency); never
    /// `silent`: a silent one is not sent.
    pub urgency: Urgency,
    /// What it is about (`gate:12`), when a later notification may say
    /// more of the same thing (the supervisor's advice on that gate): a
    /// notifier that can replaces the one it showed with the same tag.
    pub tag: Option<String>,
}

/// A decision a notification's buttons can make: only the simplest two,
/// where the notification shows all there is to decide ([`quick_answer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuickAnswer {
    /// A tool call of low or medium risk waits for permission: Yes or No.
    ToolCall { gate: overseer_core::GateId },
    /// A run whose diff has no file other tools run on their own waits for
    /// review (`gate`): Approve (merge).
    Review {
        run: RunId,
        gate: overseer_core::GateId,
    },
}

/// The longest command (or tool and paths) a notification quotes, in
/// characters.
const QUOTED: usize = 200;
/// The most auto-run files a notification names one by one.
const NAMED_FILES: usize = 8;

/// What a notification's buttons may answer on `gate` from the
/// notification itself, if anything: a tool call's Yes and No when its risk
/// is low or medium, a merge review's Approve when its diff has no file
/// other tools run on their own. A high or critical call, a flagged merge,
/// a gate whose payload cannot be read, every other kind: nothing (the
/// notification opens the window, where the whole call or diff is shown).
/// The desktop asks this again when a button is pressed, on the gate as it
/// stands then.
pub fn quick_answer(gate: &overseer_core::GateView) -> Option<QuickAnswer> {
    if gate.unreadable_payload.is_some() || gate.status != overseer_core::GateStatus::Pending {
        return None;
    }
    match &gate.body {
        // Only a risk assessed when the gate opened counts (one opened
        // before risk was assessed is decided in the window).
        overseer_core::GateBody::ToolCall(call) => call
            .risk
            .as_ref()
            .is_some_and(|r| r.level <= overseer_core::rules::RiskLevel::Medium)
            .then_some(QuickAnswer::ToolCall { gate: gate.id }),
        overseer_core::GateBody::MergeReview(review) => {
            review.auto_run.is_empty().then_some(QuickAnswer::Review {
                run: gate.run_id,
                gate: gate.id,
            })
        }
        overseer_core::GateBody::Plan(_)
        | overseer_core::GateBody::StepReview(_)
        | overseer_core::GateBody::SupervisorPause(_)
        | overseer_core::GateBody::Deviation(_)
        | overseer_core::GateBody::Question(_) => None,
    }
}

/// A tool call's risk: as assessed when its gate opened, else (a gate
/// opened before risk was assessed) from what it asks, its paths judged
/// from the root (its worktree is not at hand here).
fn risk_of_call(call: &overseer_core::ToolCallGate) -> overseer_core::rules::Risk {
    call.risk.clone().unwrap_or_else(|| {
        let gated = call
            .always_gated
            .or_else(|| overseer_core::rules::always_gated(&call.request, "/").map(|(g, _)| g));
        overseer_core::rules::risk_of(&call.request, gated, call.rule.as_deref())
    })
}

fn level_name(level: overseer_core::rules::RiskLevel) -> &'static str {
    match level {
        overseer_core::rules::RiskLevel::Low => "low",
        overseer_core::rules::RiskLevel::Medium => "medium",
        overseer_core::rules::RiskLevel::High => "high",
        overseer_core::rules::RiskLevel::Critical => "critical",
    }
}

/// Agent text quoted on one line: control characters become spaces, bidi
/// controls are spelled out (`\u{202e}`) so they cannot reorder what is
/// shown, and it is cut at `max` characters.
fn quoted(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        match c {
            '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{061C}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// What the gate's notification shows of what would happen, one line each:
/// the command (or the tool and its paths) and its risk for a tool call;
/// each file other tools run on their own for a merge review. Empty for
/// other gates.
pub fn what_it_decides(gate: &overseer_core::GateView) -> Vec<String> {
    match &gate.body {
        overseer_core::GateBody::ToolCall(call) => {
            let req = &call.request;
            let what = match (&req.command, req.paths.as_slice()) {
                (Some(command), _) => format!("$ {}", quoted(command, QUOTED)),
                (None, []) => quoted(&req.tool, QUOTED),
                (None, paths) => quoted(&format!("{} {}", req.tool, paths.join(", ")), QUOTED),
            };
            let risk = risk_of_call(call);
            let mut lines = vec![
                what,
                format!("Risk: {}: {}", level_name(risk.level), risk.why),
            ];
            if quick_answer(gate).is_none() && gate.status == overseer_core::GateStatus::Pending {
                lines
                    .push("Decide it in the window: it is not answered from a notification".into());
            }
            lines
        }
        overseer_core::GateBody::MergeReview(review) if !review.auto_run.is_empty() => {
            let n = review.auto_run.len();
            let mut lines = vec![format!(
                "AUTO-RUN: the diff has {n} file{} other tools run on their own, outside any sandbox: review it in the window",
                if n == 1 { "" } else { "s" }
            )];
            lines.extend(review.auto_run.iter().take(NAMED_FILES).map(|f| {
                let change = match f.change {
                    overseer_core::autorun::PathChange::Added => "added",
                    overseer_core::autorun::PathChange::Changed => "changed",
                    overseer_core::autorun::PathChange::Deleted => "deleted",
                };
                format!(
                    "AUTO-RUN {} ({change}): {}",
                    quoted(&f.path, QUOTED),
                    f.runs
                )
            }));
            if n > NAMED_FILES {
                lines.push(format!("and {} more", n - NAMED_FILES));
            }
            lines
        }
        overseer_core::GateBody::MergeReview(_)
        | overseer_core::GateBody::Plan(_)
        | overseer_core::GateBody::StepReview(_)
        | overseer_core::GateBody::SupervisorPause(_)
        | overseer_core::GateBody::Deviation(_)
        | overseer_core::GateBody::Question(_) => Vec::new(),
    }
}

pub trait Notifier: Send + Sync {
    fn notify(&self, n: &Notification);
}

/// Headless: notifications go to the log.
#[derive(Debug, Default)]
pub struct LogNotifier;

impl Notifier for LogNotifier {
    fn notify(&self, n: &Notification) {
        tracing::info!(
            kind = n.kind.as_str(),
            run = %n.run_id,
            "{}: {}",
            n.title,
            n.body
        );
    }
}

/// The longest rationale a notification carries, in characters.
const RATIONALE: usize = 160;

/// The supervisor's latest word on `g`, in one line for its notification:
/// None when it said nothing yet, or when its decision waits for its
/// grace (that has a notification of its own, with the countdown).
fn advice_line(g: &overseer_core::GateView) -> Option<String> {
    if g.pending_effect.is_some() {
        return None;
    }
    let a = g.advice.as_ref()?;
    let label = a.option.as_deref().map(|o| {
        g.options
            .iter()
            .find(|x| x.id == o)
            .map_or(o, |x| x.label.as_str())
    });
    let why = a
        .rationale
        .as_deref()
        .map(|r| {
            r.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
        })
        .filter(|r| !r.is_empty())
        .map(|r| match r.char_indices().nth(RATIONALE) {
            Some((cut, _)) => format!(": {}…", &r[..cut]),
            None => format!(": {r}"),
        })
        .unwrap_or_default();
    let named = |l: Option<&str>| l.map(|l| format!(" “{l}”")).unwrap_or_default();
    let cosign = g.authority == Some(Autonomy::Cosign);
    Some(match a.verdict {
        Verdict::Advise => format!("The supervisor advises{}{why}", named(label)),
        Verdict::Approve if cosign => format!(
            "The supervisor approved{}{why}. It passes once you approve too (co-sign)",
            named(label)
        ),
        Verdict::Approve => format!("The supervisor approves{}{why}", named(label)),
        Verdict::Reject if cosign => format!(
            "The supervisor objects{}{why}. Your approval overrides it (co-sign)",
            named(label)
        ),
        Verdict::Reject => format!("The supervisor would refuse{}{why}", named(label)),
        Verdict::Escalate => format!("The supervisor hands this to you{why}"),
        Verdict::Continue | Verdict::Reorient | Verdict::Pause => return None,
    })
}

/// The notification an event calls for, if any, given the run as it stands
/// after the whole batch of events.
/// `opened` is the gate a `GateOpened` event opened. (Public: the app asks
/// the same of a host's events, so a host's gate notifies as a local one.)
/// Sent at its kind's urgency; the engine sets the one the user chose for
/// the item's kind when it tells it.
pub fn notification_for(
    event: &EngineEvent,
    run: &RunView,
    opened: Option<&overseer_core::GateView>,
) -> Option<Notification> {
    notification_of(event, run, opened).map(|mut n| {
        n.urgency = n.kind.default_urgency();
        if let EngineEvent::GateOpened { gate_id, .. } = event {
            n.tag = Some(format!("gate:{gate_id}"));
        }
        n
    })
}

/// The notification an event calls for, before its urgency and tag are set:
/// a gate that opened, or a run that failed.
fn notification_of(
    event: &EngineEvent,
    run: &RunView,
    opened: Option<&overseer_core::GateView>,
) -> Option<Notification> {
    match event {
        EngineEvent::GateOpened { run_id, kind, .. } => gate_opened(*run_id, kind, run, opened),
        EngineEvent::RunChanged { run: changed } => run_failed(changed, run),
        EngineEvent::GateDecided { .. }
        | EngineEvent::RunActivity { .. }
        | EngineEvent::OrchestrationAborted { .. }
        | EngineEvent::MessagePosted { .. }
        | EngineEvent::WorkspaceChanged { .. }
        | EngineEvent::TaskChanged { .. }
        | EngineEvent::DeviceChanged { .. }
        | EngineEvent::PairingCodesBurned { .. }
        | EngineEvent::WebServingChanged { .. } => None,
    }
}

/// A notification without buttons, at normal urgency and without a tag
/// ([`notification_for`] sets both).
fn plain(kind: NotificationKind, run_id: RunId, title: String, body: String) -> Notification {
    Notification {
        kind,
        run_id,
        title,
        body,
        quick: None,
        urgency: Urgency::Normal,
        tag: None,
    }
}

/// Whether the gate just opened is the engine pausing the run for `cause`.
fn paused_for(
    opened: Option<&overseer_core::GateView>,
    cause: overseer_core::DeviationCause,
) -> bool {
    opened.is_some_and(
        |g| matches!(&g.body, overseer_core::GateBody::Deviation(d) if d.cause == cause),
    )
}

/// What a gate that just opened tells the user, if anything: a run paused
/// (flooding, budget), a note to read, a decision the supervisor takes on
/// its own, or what the gate waits on the user for.
fn gate_opened(
    run_id: RunId,
    kind: &GateKind,
    run: &RunView,
    opened: Option<&overseer_core::GateView>,
) -> Option<Notification> {
    let task = run.task_title.clone();
    let ask = opened.map(|g| g.ask_kind);
    // A run paused for flooding: its one notification, a security
    // event (it cannot be muted), not one more "hit a problem".
    if run.needs_you && paused_for(opened, overseer_core::DeviationCause::Flood) {
        return Some(plain(
            NotificationKind::SecurityEvent,
            run_id,
            format!("Run {run_id} flooded Overseer and was paused"),
            opened.map(|g| g.title.clone()).unwrap_or(task),
        ));
    }
    // A run paused at its budget: says so, with what it cost.
    if run.needs_you && paused_for(opened, overseer_core::DeviationCause::Budget) {
        return Some(plain(
            NotificationKind::AgentQuestionBlocking,
            run_id,
            format!("Run {run_id} reached its budget and was paused"),
            opened.map(|g| g.title.clone()).unwrap_or(task),
        ));
    }
    // Something to read, not to decide: never as loud as a blocking ask.
    // An info item is not "needs you" (it asks nothing), so it is told
    // while it is still there to read, not by the run's row.
    if ask == Some(overseer_core::AskKind::Info)
        && opened.is_some_and(|g| {
            g.status == overseer_core::GateStatus::Pending && g.snoozed_until.is_none()
        })
    {
        return Some(plain(
            NotificationKind::AgentQuestionPending,
            run_id,
            format!("Run {run_id}: a note from {}", run.agent),
            task,
        ));
    }
    // The supervisor decides this gate on its own authority: the user is
    // told (they may still step in), not asked. If it escalates, that
    // is a blocking notification of its own.
    if run.needs_you
        && opened
            .is_some_and(|g| g.authority == Some(overseer_core::supervision::Autonomy::Autonomous))
    {
        return Some(supervisor_decides(run_id, task, opened));
    }
    if run.needs_you {
        return Some(waits_on_you(run_id, kind, task, opened));
    }
    None
}

/// A gate the supervisor decides on its own: the user is told what it
/// decides, not asked.
fn supervisor_decides(
    run_id: RunId,
    task: String,
    opened: Option<&overseer_core::GateView>,
) -> Notification {
    plain(
        NotificationKind::AgentQuestionPending,
        run_id,
        format!(
            "Run {run_id}: the supervisor will decide: {}",
            opened.map(|g| g.title.as_str()).unwrap_or_default()
        ),
        std::iter::once(task)
            .chain(opened.map(what_it_decides).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// A gate that waits on the user: what it asks, what it decides, the
/// supervisor's word, and buttons where they suffice.
fn waits_on_you(
    run_id: RunId,
    kind: &GateKind,
    task: String,
    opened: Option<&overseer_core::GateView>,
) -> Notification {
    let (kind, title) = headline(run_id, kind);
    // Buttons only where the notification shows all there is to
    // decide: a low or medium risk call, a merge with no auto-run
    // file (never a review it cannot read).
    let quick = opened.and_then(quick_answer);
    // What would run, its risk, the auto-run files; then the
    // supervisor's word, once it gave one (a gate told again when
    // it arrives, or after a restart).
    let body = std::iter::once(task)
        .chain(opened.map(what_it_decides).unwrap_or_default())
        .chain(opened.and_then(advice_line))
        .collect::<Vec<_>>()
        .join("\n");
    Notification {
        kind,
        run_id,
        title,
        body,
        quick,
        urgency: Urgency::Normal,
        tag: None,
    }
}

/// The kind and title of a gate that waits on the user, by the gate's kind.
fn headline(run_id: RunId, kind: &GateKind) -> (NotificationKind, String) {
    match kind {
        GateKind::MergeReview => (
            NotificationKind::RunPendingReview,
            format!("Run {run_id} is ready for review"),
        ),
        GateKind::StepReview => (
            NotificationKind::AgentQuestionPending,
            format!("Run {run_id}: a step waits for review"),
        ),
        GateKind::Question => (
            NotificationKind::AgentQuestionBlocking,
            format!("Run {run_id} has a question for you"),
        ),
        GateKind::Plan => (
            NotificationKind::AgentQuestionBlocking,
            format!("Run {run_id}: approve the plan"),
        ),
        GateKind::ToolCall => (
            NotificationKind::AgentQuestionBlocking,
            format!("Run {run_id} asks permission"),
        ),
        GateKind::Deviation => (
            NotificationKind::AgentQuestionBlocking,
            format!("Run {run_id} hit a problem"),
        ),
        GateKind::SupervisorPause => (
            NotificationKind::AgentQuestionBlocking,
            format!("Run {run_id} was paused by the supervisor"),
        ),
    }
}

/// A run that failed, when it still stands failed after the batch: says
/// so, with the reason it was failed if one was given.
fn run_failed(changed: &RunView, run: &RunView) -> Option<Notification> {
    if changed.state
        == (RunState::Released {
            reason: ReleaseReason::Failed,
        })
        && changed.state_since == run.state_since
    {
        let task = run.task_title.clone();
        return Some(plain(
            NotificationKind::RunFailed,
            changed.id,
            format!("Run {} failed", changed.id),
            changed
                .release_note
                .clone()
                .map(|n| format!("{task}: {n}"))
                .unwrap_or(task),
        ));
    }
    None
}

/// Notifications that arrive together become one per kind: fifty agents
/// finishing at once make one "50 runs are ready for review", not fifty popups.
pub fn coalesce(batch: Vec<Notification>) -> Vec<Notification> {
    let mut out: Vec<Notification> = Vec::new();
    for kind in NotificationKind::ALL {
        let of_kind: Vec<&Notification> = batch.iter().filter(|n| n.kind == kind).collect();
        match of_kind.as_slice() {
            [] => {}
            [one] => out.push((*one).clone()),
            many => {
                let n = many.len();
                let title = match kind {
                    NotificationKind::AgentQuestionPending => format!("{n} steps wait for review"),
                    NotificationKind::AgentQuestionBlocking => {
                        format!("{n} agents are waiting for you")
                    }
                    NotificationKind::RunPendingReview => format!("{n} runs are ready for review"),
                    NotificationKind::RunFailed => format!("{n} runs failed"),
                    NotificationKind::SupervisorEscalated => {
                        format!("The supervisor needs you on {n} decisions")
                    }
                    NotificationKind::SupervisorFailed => {
                        format!("The supervisor failed on {n} decisions")
                    }
                    NotificationKind::SecurityEvent => format!("{n} security events"),
                    NotificationKind::AgentMessageBlocked => {
                        format!("{n} agent messages were held back")
                    }
                    NotificationKind::DiskFull => "Runs paused: the disk is nearly full".to_owned(),
                };
                let mut body: Vec<String> = many
                    .iter()
                    .take(3)
                    .map(|m| format!("run {}: {}", m.run_id, m.body))
                    .collect();
                if n > 3 {
                    body.push(format!("and {} more", n - 3));
                }
                out.push(Notification {
                    kind,
                    run_id: many[0].run_id,
                    title,
                    body: body.join("\n"),
                    quick: None,
                    urgency: many
                        .iter()
                        .map(|m| m.urgency)
                        .max()
                        .unwrap_or(kind.default_urgency()),
                    tag: None,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(kind: NotificationKind, run: RunId) -> Notification {
        Notification {
            kind,
            run_id: run,
            title: format!("t{run}"),
            body: format!("task {run}"),
            quick: None,
            urgency: kind.default_urgency(),
            tag: None,
        }
    }

    #[test]
    fn fifty_reviews_at_once_become_one_notification() {
        let batch: Vec<Notification> = (1..=50)
            .map(|i| n(NotificationKind::RunPendingReview, overseer_core::RunId(i)))
            .chain([n(
                NotificationKind::AgentQuestionBlocking,
                overseer_core::RunId(99),
            )])
            .collect();
        let out = coalesce(batch);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].title, "t99", "a lone kind stays as it was");
        assert_eq!(out[1].title, "50 runs are ready for review");
        assert!(out[1].body.ends_with("and 47 more"), "{}", out[1].body);
    }

    #[test]
    fn blocking_asks_cannot_be_muted() {
        let s = NotificationSettings {
            muted: vec![
                NotificationKind::RunFailed,
                NotificationKind::AgentQuestionBlocking,
                NotificationKind::SecurityEvent,
            ],
            ..Default::default()
        };
        let err = s.validate().expect_err("two cannot be muted");
        let at: Vec<&str> = err.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(at, ["muted[1]", "muted[2]"]);
        assert!(!s.is_muted(NotificationKind::AgentQuestionBlocking));
        let s = NotificationSettings {
            muted: vec![NotificationKind::RunPendingReview],
            ..Default::default()
        };
        assert!(s.validate().is_ok());
        assert!(s.is_muted(NotificationKind::RunPendingReview));
    }

    #[test]
    fn the_desktop_muted_whole_still_shows_what_cannot_be_muted_and_webhooks_mute_anything() {
        let s = NotificationSettings {
            desktop_muted: true,
            webhook_muted: vec![WebhookEvent::AgentQuestionBlocking],
            ..Default::default()
        };
        assert!(s.validate().is_ok());
        assert!(s.is_muted(NotificationKind::RunFailed));
        for kind in [
            NotificationKind::AgentQuestionBlocking,
            NotificationKind::SecurityEvent,
            NotificationKind::DiskFull,
        ] {
            assert!(!s.is_muted(kind), "{} always shows", kind.as_str());
        }
        assert!(s.is_webhook_muted(WebhookEvent::AgentQuestionBlocking));
        assert!(!s.is_webhook_muted(WebhookEvent::RunFinished));
        let all = NotificationSettings {
            webhooks_muted: true,
            ..Default::default()
        };
        assert!(WebhookEvent::SUBSCRIBABLE
            .iter()
            .all(|e| all.is_webhook_muted(*e)));
        assert!(
            !all.is_webhook_muted(WebhookEvent::Test),
            "a test always goes"
        );
        let err = NotificationSettings {
            webhook_muted: vec![WebhookEvent::RunFailed, WebhookEvent::Test],
            ..Default::default()
        }
        .validate()
        .expect_err("test cannot be muted");
        assert_eq!(err[0].field, "webhook_muted[1]");
    }

    #[test]
    fn every_webhook_event_reads_back_from_its_name() {
        for e in WebhookEvent::SUBSCRIBABLE
            .into_iter()
            .chain([WebhookEvent::Test])
        {
            assert_eq!(WebhookEvent::parse(e.as_str()), Some(e));
            let json = serde_json::to_string(&e).expect("json");
            assert_eq!(json, format!("\"{}\"", e.as_str()));
        }
        for k in NotificationKind::ALL {
            assert_eq!(WebhookEvent::from(k).notification(), Some(k));
        }
    }
}
