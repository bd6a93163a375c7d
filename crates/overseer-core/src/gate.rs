//! Gates: every point where a run stops for a decision.
//!
//! A gate is written to the database before anyone waits on it, and decided
//! exactly once (the store enforces that with a compare-and-set). This module
//! holds the pure parts: kinds, options, and checking a decision against them.

use crate::{Actor, Millis};
use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    Plan,
    ToolCall,
    StepReview,
    SupervisorPause,
    Deviation,
    MergeReview,
    Question,
}

impl GateKind {
    pub const ALL: [GateKind; 7] = [
        GateKind::Plan,
        GateKind::ToolCall,
        GateKind::StepReview,
        GateKind::SupervisorPause,
        GateKind::Deviation,
        GateKind::MergeReview,
        GateKind::Question,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GateKind::Plan => "plan",
            GateKind::ToolCall => "tool_call",
            GateKind::StepReview => "step_review",
            GateKind::SupervisorPause => "supervisor_pause",
            GateKind::Deviation => "deviation",
            GateKind::MergeReview => "merge_review",
            GateKind::Question => "question",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The choices this kind of gate can offer, in the order they are shown.
    /// A gate offers all of them or a subset (a deviation the agent cannot
    /// retry offers no `retry`; a question without defaults no `default`).
    pub fn options(self) -> Vec<GateChoice> {
        fn all<C: Choice>() -> Vec<GateChoice> {
            C::ALL.iter().map(|c| c.into_choice()).collect()
        }
        match self {
            GateKind::Plan => all::<PlanChoice>(),
            GateKind::ToolCall => all::<ToolCallChoice>(),
            GateKind::StepReview => all::<StepReviewChoice>(),
            GateKind::SupervisorPause => all::<SupervisorPauseChoice>(),
            GateKind::Deviation => all::<DeviationChoice>(),
            GateKind::MergeReview => all::<MergeReviewChoice>(),
            GateKind::Question => all::<QuestionChoice>(),
        }
    }

    /// The choice that counts as "approve" on this kind of gate: for
    /// co-signing, and for reading a human's choice as a verdict.
    pub fn approve_choice(self) -> GateChoice {
        match self {
            GateKind::Plan => GateChoice::Plan(PlanChoice::Approve),
            GateKind::ToolCall => GateChoice::ToolCall(ToolCallChoice::Yes),
            GateKind::StepReview => GateChoice::StepReview(StepReviewChoice::Proceed),
            GateKind::SupervisorPause => {
                GateChoice::SupervisorPause(SupervisorPauseChoice::Proceed)
            }
            GateKind::Deviation => GateChoice::Deviation(DeviationChoice::Retry),
            GateKind::MergeReview => GateChoice::MergeReview(MergeReviewChoice::Approve),
            GateKind::Question => GateChoice::Question(QuestionChoice::Answer),
        }
    }

    /// The choice that declines what the gate asks: what a gate gets when
    /// nobody waits for its answer any more (its asker left).
    pub fn decline_choice(self) -> GateChoice {
        match self {
            GateKind::Plan => GateChoice::Plan(PlanChoice::Reject),
            GateKind::ToolCall => GateChoice::ToolCall(ToolCallChoice::No),
            GateKind::StepReview => GateChoice::StepReview(StepReviewChoice::Stop),
            GateKind::SupervisorPause => GateChoice::SupervisorPause(SupervisorPauseChoice::Abort),
            GateKind::Deviation => GateChoice::Deviation(DeviationChoice::Stop),
            GateKind::MergeReview => GateChoice::MergeReview(MergeReviewChoice::Reject),
            GateKind::Question => GateChoice::Question(QuestionChoice::Decline),
        }
    }

    /// The id of [`GateKind::approve_choice`], as on the wire.
    pub fn approve_option(self) -> &'static str {
        self.approve_choice().as_str()
    }
}

/// The fixed choices of one kind of gate. Their ids (`as_str`) are what the
/// wire and the database carry; match on the enum, never on the id.
pub trait Choice: Copy + Sized + 'static {
    /// The kind of gate that offers these choices.
    const KIND: GateKind;
    /// Every choice, in the order a gate shows them.
    const ALL: &'static [Self];
    /// The id on the wire and in the database.
    fn as_str(self) -> &'static str;
    /// The choice an id names, if this kind offers it.
    fn parse(id: &str) -> Option<Self>;
    /// Tagged with its kind.
    fn into_choice(self) -> GateChoice;
}

macro_rules! choices {
    ($(#[$meta:meta])* $name:ident, $kind:ident, { $($(#[$vmeta:meta])* $variant:ident => $id:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $id)] $variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $id),+
                }
            }
        }

        impl Choice for $name {
            const KIND: GateKind = GateKind::$kind;
            const ALL: &'static [Self] = &[$($name::$variant),+];
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
            fn parse(id: &str) -> Option<Self> {
                match id {
                    $($id => Some($name::$variant),)+
                    _ => None,
                }
            }
            fn into_choice(self) -> GateChoice {
                GateChoice::$kind(self)
            }
        }

        impl From<$name> for GateChoice {
            fn from(c: $name) -> GateChoice {
                GateChoice::$kind(c)
            }
        }
    };
}

choices!(
    /// A plan gate: the agent's plan, before any step runs.
    PlanChoice, Plan, {
        Approve => "approve",
        /// Needs a reason: what to change.
        RequestChanges => "request_changes",
        Reject => "reject",
    }
);

choices!(
    /// A tool call the rules send to a human.
    ToolCallChoice, ToolCall, {
        Yes => "yes",
        /// Allow it, and add a rule allowing its like for the rest of the run.
        Always => "always",
        No => "no",
    }
);

choices!(
    /// A step review (confidence too low to go on unasked).
    StepReviewChoice, StepReview, {
        Proceed => "proceed",
        Stop => "stop",
    }
);

choices!(
    /// The supervisor paused the run.
    SupervisorPauseChoice, SupervisorPause, {
        Proceed => "proceed",
        /// Correct the agent (the context is the correction).
        Modify => "modify",
        Abort => "abort",
    }
);

choices!(
    /// A deviation: a failed turn, a mode breach, a failed merge.
    DeviationChoice, Deviation, {
        Retry => "retry",
        Replan => "replan",
        Stop => "stop",
    }
);

choices!(
    /// A merge review (a run waiting in pending_review).
    MergeReviewChoice, MergeReview, {
        Approve => "approve",
        Reject => "reject",
        Abort => "abort",
    }
);

choices!(
    /// A question from the agent (an elicitation).
    QuestionChoice, Question, {
        /// The context is the answer (form content as JSON, or plain text).
        Answer => "answer",
        /// Take the form's defaults.
        Default => "default",
        Decline => "decline",
    }
);

/// A choice on some gate, tagged by the gate's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "choice", rename_all = "snake_case")]
pub enum GateChoice {
    Plan(PlanChoice),
    ToolCall(ToolCallChoice),
    StepReview(StepReviewChoice),
    SupervisorPause(SupervisorPauseChoice),
    Deviation(DeviationChoice),
    MergeReview(MergeReviewChoice),
    Question(QuestionChoice),
}

impl GateChoice {
    /// Reads an option id from the wire (the window, the CLI, the socket, the
    /// database) as a choice of `kind`.
    pub fn parse(kind: GateKind, id: &str) -> Result<GateChoice, DecisionError> {
        fn one<C: Choice>(id: &str) -> Result<GateChoice, DecisionError> {
            parse_choice::<C>(id).map(Choice::into_choice)
        }
        match kind {
            GateKind::Plan => one::<PlanChoice>(id),
            GateKind::ToolCall => one::<ToolCallChoice>(id),
            GateKind::StepReview => one::<StepReviewChoice>(id),
            GateKind::SupervisorPause => one::<SupervisorPauseChoice>(id),
            GateKind::Deviation => one::<DeviationChoice>(id),
            GateKind::MergeReview => one::<MergeReviewChoice>(id),
            GateKind::Question => one::<QuestionChoice>(id),
        }
    }

    pub fn kind(self) -> GateKind {
        match self {
            GateChoice::Plan(_) => GateKind::Plan,
            GateChoice::ToolCall(_) => GateKind::ToolCall,
            GateChoice::StepReview(_) => GateKind::StepReview,
            GateChoice::SupervisorPause(_) => GateKind::SupervisorPause,
            GateChoice::Deviation(_) => GateKind::Deviation,
            GateChoice::MergeReview(_) => GateKind::MergeReview,
            GateChoice::Question(_) => GateKind::Question,
        }
    }

    /// The option id on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            GateChoice::Plan(c) => c.as_str(),
            GateChoice::ToolCall(c) => c.as_str(),
            GateChoice::StepReview(c) => c.as_str(),
            GateChoice::SupervisorPause(c) => c.as_str(),
            GateChoice::Deviation(c) => c.as_str(),
            GateChoice::MergeReview(c) => c.as_str(),
            GateChoice::Question(c) => c.as_str(),
        }
    }
}

/// Every kind's choices in words, for an error that says what may be sent:
/// `plan: approve, request_changes, reject; tool_call: yes, always, no; ...`.
pub fn all_choices() -> String {
    GateKind::ALL
        .iter()
        .map(|k| {
            let ids: Vec<&str> = k.options().iter().map(|c| c.as_str()).collect();
            format!("{}: {}", k.as_str(), ids.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The choice a decide request carries. Typed: `{"kind": "tool_call",
/// "choice": "yes"}` (in TypeScript a [`GateChoice`]); a kind or a choice
/// that does not exist is refused when the request is read, and a choice of
/// another kind than the gate's by the engine. A client written before
/// choices were typed sends the bare option id (`"yes"`): it is read when it
/// is some kind's choice, and taken as the gate's kind's, as it always was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ts_rs::TS)]
#[ts(as = "GateChoice")]
pub enum RequestedChoice {
    Typed(GateChoice),
    /// An older client's bare option id (one of some kind's choices).
    Id(&'static str),
}

impl From<GateChoice> for RequestedChoice {
    fn from(c: GateChoice) -> Self {
        RequestedChoice::Typed(c)
    }
}

impl RequestedChoice {
    /// The choice on a gate of `kind`: a typed choice of that kind, or an
    /// older client's id read as that kind's.
    pub fn for_gate(self, kind: GateKind) -> Result<GateChoice, DecisionError> {
        match self {
            RequestedChoice::Typed(c) if c.kind() == kind => Ok(c),
            RequestedChoice::Typed(c) => Err(DecisionError::OtherKind {
                sent: c.kind().as_str().to_owned(),
                chosen: c.as_str().to_owned(),
                kind: kind.as_str().to_owned(),
                offered: kind
                    .options()
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            RequestedChoice::Id(id) => GateChoice::parse(kind, id),
        }
    }
}

impl Serialize for RequestedChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestedChoice::Typed(c) => c.serialize(s),
            RequestedChoice::Id(id) => s.serialize_str(id),
        }
    }
}

impl<'de> Deserialize<'de> for RequestedChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(d)?;
        if let serde_json::Value::String(id) = &value {
            return GateKind::ALL
                .iter()
                .flat_map(|k| k.options())
                .find(|c| c.as_str() == id)
                .map(|c| RequestedChoice::Id(c.as_str()))
                .ok_or_else(|| {
                    D::Error::custom(format!(
                        "'{id}' is no gate's choice; send {{\"kind\": KIND, \"choice\": CHOICE}} with one of {}",
                        all_choices()
                    ))
                });
        }
        GateChoice::deserialize(value)
            .map(RequestedChoice::Typed)
            .map_err(|e| {
                D::Error::custom(format!(
                    "not a gate choice ({e}); send {{\"kind\": KIND, \"choice\": CHOICE}} with one of {}",
                    all_choices()
                ))
            })
    }
}

/// Reads an option id as one of `C`'s choices.
pub fn parse_choice<C: Choice>(id: &str) -> Result<C, DecisionError> {
    C::parse(id).ok_or_else(|| DecisionError::UnknownOption {
        chosen: id.to_owned(),
        offered: C::ALL
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The three kinds of ask (PRODUCT.md, the unified inbox): what the user
/// sees first and how loudly they are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum AskKind {
    /// The agent is stopped until a human answers.
    Blocking,
    /// It proceeds by itself if nobody acts (a timer), or it can wait.
    Question,
    /// Nothing waits: something to read (a notice, a finished turn).
    Info,
}

impl AskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AskKind::Blocking => "blocking",
            AskKind::Question => "question",
            AskKind::Info => "info",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [AskKind::Blocking, AskKind::Question, AskKind::Info]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// What kind of ask a gate is: what its opener declared (`ask_kind` in its
/// payload, [`crate::GateBody::declared_ask_kind`]), else a gate with a
/// timer is a question, else by kind.
pub fn ask_kind(kind: GateKind, declared: Option<AskKind>, auto_at: Option<Millis>) -> AskKind {
    if let Some(declared) = declared {
        return declared;
    }
    if auto_at.is_some() {
        return AskKind::Question;
    }
    match kind {
        GateKind::Plan
        | GateKind::ToolCall
        | GateKind::SupervisorPause
        | GateKind::Deviation
        | GateKind::Question => AskKind::Blocking,
        GateKind::StepReview | GateKind::MergeReview => AskKind::Question,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Pending,
    Decided,
}

impl GateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Pending => "pending",
            GateStatus::Decided => "decided",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(GateStatus::Pending),
            "decided" => Some(GateStatus::Decided),
            _ => None,
        }
    }
}

/// One choice offered by a gate (the "Action" of the two-question pattern).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct GateOption {
    /// Stable identifier, e.g. `approve`.
    pub id: String,
    /// What the user sees, e.g. `Approve and merge`.
    pub label: String,
    /// True when choosing this option requires a non-empty context (a reason).
    #[serde(default)]
    pub requires_context: bool,
}

impl GateOption {
    pub fn new(id: &str, label: &str) -> Self {
        GateOption {
            id: id.to_owned(),
            label: label.to_owned(),
            requires_context: false,
        }
    }

    /// An option for one of a kind's fixed choices.
    pub fn choice<C: Choice>(choice: C, label: &str) -> Self {
        GateOption::new(choice.as_str(), label)
    }

    pub fn with_required_context(mut self) -> Self {
        self.requires_context = true;
        self
    }
}

/// The options of a merge-review gate (a run waiting in pending_review).
pub fn merge_review_options() -> Vec<GateOption> {
    vec![
        GateOption::choice(MergeReviewChoice::Approve, "Approve and merge"),
        GateOption::choice(MergeReviewChoice::Reject, "Reject").with_required_context(),
        GateOption::choice(MergeReviewChoice::Abort, "Abort"),
    ]
}

/// A decision on a gate: the chosen option and the optional context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct GateDecision {
    pub option: String,
    pub context: Option<String>,
    pub actor: Actor,
    pub at: Millis,
    /// The paired device a person decided through (`actor` is that
    /// person); absent for the local owner, the supervisor, the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub device: Option<crate::DeviceRef>,
}

impl GateDecision {
    /// Who decided, through which device, and when, as a person reads it:
    /// `user:ana through Ana's phone (device 3) at 2026-11-27 04:05:06 UTC`.
    pub fn who_and_when(&self) -> String {
        format!(
            "{}{} at {}",
            self.actor,
            crate::device::through(self.device.as_ref()),
            crate::device::utc_text(self.at)
        )
    }

    /// The decision's option as one of `C`'s choices (the option of a gate of
    /// `C::KIND` was checked against its offered options when decided).
    pub fn choice<C: Choice>(&self) -> Result<C, DecisionError> {
        parse_choice::<C>(&self.option)
    }
}

/// Why a decision does not fit the gate's options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    #[error("option '{chosen}' is not offered by this gate (offered: {offered})")]
    UnknownOption { chosen: String, offered: String },
    #[error(
        "'{chosen}' is a choice of {sent} gates; this is a {kind} gate: choose one of {offered}"
    )]
    OtherKind {
        sent: String,
        chosen: String,
        kind: String,
        offered: String,
    },
    #[error("option '{0}' needs a reason: say why")]
    ContextRequired(String),
}

/// Checks `option` and `context` against a gate's options.
pub fn check_decision(
    options: &[GateOption],
    option: &str,
    context: Option<&str>,
) -> Result<(), DecisionError> {
    let Some(found) = options.iter().find(|o| o.id == option) else {
        return Err(DecisionError::UnknownOption {
            chosen: option.to_owned(),
            offered: options
                .iter()
                .map(|o| o.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let has_context = context.is_some_and(|c| !c.trim().is_empty());
    if found.requires_context && !has_context {
        return Err(DecisionError::ContextRequired(option.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the inbox sorts by (the window reads it from the gate, never
    /// re-derives it): gates an agent waits on block, reviews and gates with
    /// a timer are questions, and a kind the opener declared wins.
    #[test]
    fn a_gate_asks_by_its_declared_kind_else_its_timer_else_its_kind() {
        for kind in [
            GateKind::Plan,
            GateKind::ToolCall,
            GateKind::SupervisorPause,
            GateKind::Deviation,
            GateKind::Question,
        ] {
            assert_eq!(ask_kind(kind, None, None), AskKind::Blocking, "{kind:?}");
        }
        assert_eq!(
            ask_kind(GateKind::StepReview, None, None),
            AskKind::Question
        );
        assert_eq!(
            ask_kind(GateKind::MergeReview, None, None),
            AskKind::Question
        );
        assert_eq!(
            ask_kind(GateKind::Question, None, Some(5)),
            AskKind::Question
        );
        assert_eq!(
            ask_kind(GateKind::Question, Some(AskKind::Info), None),
            AskKind::Info
        );
        // Declared beats the timer.
        assert_eq!(
            ask_kind(GateKind::ToolCall, Some(AskKind::Blocking), Some(5)),
            AskKind::Blocking
        );
        assert_eq!(
            ask_kind(GateKind::SupervisorPause, Some(AskKind::Question), None),
            AskKind::Question
        );
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for k in GateKind::ALL {
            assert_eq!(GateKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(GateKind::parse("nope"), None);
    }

    /// A decide request's choice is typed on the wire: an unknown kind or
    /// choice is refused when it is read, saying what may be sent; one of
    /// another kind than the gate's is refused with the gate's choices; an
    /// older client's bare id is still read, as the gate's kind's.
    #[test]
    fn a_requested_choice_is_typed_and_an_unknown_one_is_refused_with_the_choices() {
        let read = |v: serde_json::Value| serde_json::from_value::<RequestedChoice>(v);
        let yes = read(serde_json::json!({"kind": "tool_call", "choice": "yes"})).expect("typed");
        assert_eq!(yes, RequestedChoice::Typed(ToolCallChoice::Yes.into()));
        assert_eq!(
            serde_json::to_value(yes).expect("json"),
            serde_json::json!({"kind": "tool_call", "choice": "yes"})
        );
        let maybe = read(serde_json::json!({"kind": "tool_call", "choice": "maybe"}))
            .expect_err("no such choice")
            .to_string();
        assert!(maybe.contains("`maybe`"), "{maybe}");
        assert!(maybe.contains("tool_call: yes, always, no"), "{maybe}");
        let kind = read(serde_json::json!({"kind": "vote", "choice": "yes"}))
            .expect_err("no such kind")
            .to_string();
        assert!(kind.contains("`vote`"), "{kind}");
        assert!(
            kind.contains("plan: approve, request_changes, reject"),
            "{kind}"
        );
        // Older clients: the bare id of some kind's choice.
        let old = read(serde_json::json!("approve")).expect("an older client's id");
        assert_eq!(old, RequestedChoice::Id("approve"));
        assert_eq!(
            old.for_gate(GateKind::MergeReview),
            Ok(MergeReviewChoice::Approve.into())
        );
        assert!(matches!(
            old.for_gate(GateKind::ToolCall),
            Err(DecisionError::UnknownOption { .. })
        ));
        let nonsense = read(serde_json::json!("sure"))
            .expect_err("no gate's choice")
            .to_string();
        assert!(
            nonsense.contains("'sure' is no gate's choice"),
            "{nonsense}"
        );
        assert!(
            nonsense.contains("question: answer, default, decline"),
            "{nonsense}"
        );
        // A typed choice is the gate's kind's or nothing.
        assert_eq!(
            yes.for_gate(GateKind::ToolCall),
            Ok(ToolCallChoice::Yes.into())
        );
        let approve = RequestedChoice::from(GateChoice::Plan(PlanChoice::Approve));
        assert_eq!(
            approve.for_gate(GateKind::MergeReview).map_err(|e| e.to_string()),
            Err("'approve' is a choice of plan gates; this is a merge_review gate: choose one of approve, reject, abort".to_owned())
        );
    }

    #[test]
    fn choices_round_trip_through_their_ids_and_know_their_kind() {
        for k in GateKind::ALL {
            let options = k.options();
            assert!(!options.is_empty());
            for c in options {
                assert_eq!(c.kind(), k);
                assert_eq!(GateChoice::parse(k, c.as_str()), Ok(c));
                let json = serde_json::to_value(c).expect("serializes");
                assert_eq!(json["kind"], k.as_str());
                assert_eq!(json["choice"], c.as_str());
            }
            assert!(k.options().contains(&k.approve_choice()));
            assert!(GateChoice::parse(k, "nope").is_err());
        }
    }

    #[test]
    fn option_ids_stay_as_they_are_on_the_wire_and_in_the_database() {
        let ids = |k: GateKind| {
            k.options()
                .into_iter()
                .map(GateChoice::as_str)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(GateKind::Plan),
            ["approve", "request_changes", "reject"]
        );
        assert_eq!(ids(GateKind::ToolCall), ["yes", "always", "no"]);
        assert_eq!(ids(GateKind::StepReview), ["proceed", "stop"]);
        assert_eq!(
            ids(GateKind::SupervisorPause),
            ["proceed", "modify", "abort"]
        );
        assert_eq!(ids(GateKind::Deviation), ["retry", "replan", "stop"]);
        assert_eq!(ids(GateKind::MergeReview), ["approve", "reject", "abort"]);
        assert_eq!(ids(GateKind::Question), ["answer", "default", "decline"]);
        assert_eq!(
            serde_json::to_value(PlanChoice::RequestChanges).expect("serializes"),
            "request_changes"
        );
        let err = GateChoice::parse(GateKind::ToolCall, "maybe").expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "option 'maybe' is not offered by this gate (offered: yes, always, no)"
        );
    }

    #[test]
    fn a_decision_must_pick_an_offered_option() {
        let opts = merge_review_options();
        assert_eq!(check_decision(&opts, "approve", None), Ok(()));
        let err = check_decision(&opts, "merge", None).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "option 'merge' is not offered by this gate (offered: approve, reject, abort)"
        );
    }

    #[test]
    fn reject_needs_a_non_blank_reason() {
        let opts = merge_review_options();
        assert!(matches!(
            check_decision(&opts, "reject", None),
            Err(DecisionError::ContextRequired(_))
        ));
        assert!(matches!(
            check_decision(&opts, "reject", Some("   ")),
            Err(DecisionError::ContextRequired(_))
        ));
        assert_eq!(
            check_decision(&opts, "reject", Some("breaks the API")),
            Ok(())
        );
    }
}
