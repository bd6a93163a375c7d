//! Supervision in the store: gates that carry the supervisor's authority and a
//! timer, votes and decisions with their rationale, and effects.
//!
//! The user always wins, and that is enforced here, inside the write
//! transaction: every vote (human or supervisor) is checked and resolved with
//! [`overseer_core::supervision`]'s pure rules against the votes already stored
//! for the gate, so two deciders racing on one gate are serialised by
//! `BEGIN IMMEDIATE` and the loser sees the winner's vote.

use crate::decision::DecisionInput;
use crate::{read, Store, StoreError, WriteTx};
use overseer_core::audit::{AuditPayload, DecisionPayload, Overrides};
use overseer_core::rules::Provenance;
use overseer_core::supervision::{
    accept_vote, resolve, Autonomy, DecisionRecord, PendingEffect, Resolution, Verdict, Vote,
    VoteRefused,
};
use overseer_core::{
    check_decision, Actor, GateBody, GateChoice, GateId, GateKind, GateOption, GateView, Millis,
    RunId, ToolCallChoice,
};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// Everything needed to open a gate.
#[derive(Debug, Clone)]
pub struct GateSpec {
    pub run_id: RunId,
    /// The gate's kind and what it is about.
    pub body: GateBody,
    pub title: String,
    pub options: Vec<GateOption>,
    /// The supervisor's authority on this gate, fixed when it opens.
    pub authority: Option<Autonomy>,
    /// The option that counts as "approve" (for co-signing).
    pub approve_option: Option<String>,
    /// A timer: at `auto_at`, if no human has acted, this choice is made.
    pub auto: Option<(Millis, GateChoice)>,
    /// The external asker's own id for this ask (see `gate_by_ask_key`).
    pub ask_key: Option<String>,
}

impl GateSpec {
    pub fn kind(&self) -> GateKind {
        self.body.kind()
    }

    pub fn new(run_id: RunId, body: GateBody, title: &str, options: Vec<GateOption>) -> Self {
        GateSpec {
            run_id,
            body,
            title: title.to_owned(),
            options,
            authority: None,
            approve_option: None,
            auto: None,
            ask_key: None,
        }
    }
}

/// What a vote did.
#[derive(Debug, Clone)]
pub struct VoteOutcome {
    pub gate: GateView,
    pub decision_id: i64,
    /// The gate's decision changed (it was decided, or a human overrode the
    /// supervisor's decision).
    pub decided: bool,
    /// A supervisor's vote that came after a human decided: recorded (signed,
    /// and in "Why?" as overruled), and changing nothing.
    pub late: bool,
}

/// The verdict a human's choice amounts to: choosing the approve option (or
/// "always") approves; anything else rejects.
pub fn verdict_of_choice(approve_option: Option<&str>, option: &str) -> Verdict {
    if Some(option) == approve_option || option == ToolCallChoice::Always.as_str() {
        Verdict::Approve
    } else {
        Verdict::Reject
    }
}

const DECISION_SELECT: &str = "
    SELECT id, run_id, gate_id, actor, verdict, option, rationale, correction, rule_ref,
           model_id, prompt_version, confidence, source_event, audit_seq, at, provenance, device
    FROM decisions";

type RawDecision = (
    DecisionRecord,
    String,         // actor
    String,         // verdict
    Option<String>, // provenance
    Option<String>, // device
);

fn raw_decision(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawDecision> {
    Ok((
        DecisionRecord {
            id: r.get(0)?,
            run_id: r.get(1)?,
            gate_id: r.get(2)?,
            actor: Actor::Engine,
            verdict: Verdict::Escalate,
            option: r.get(5)?,
            rationale: r.get(6)?,
            correction: r.get(7)?,
            rule_ref: r.get(8)?,
            provenance: None,
            model_id: r.get(9)?,
            prompt_version: r.get(10)?,
            confidence: r.get(11)?,
            source_event: r.get(12)?,
            audit_seq: r.get(13)?,
            at: r.get(14)?,
            overruled_by: None,
            device: None,
        },
        r.get(3)?,
        r.get(4)?,
        r.get(15)?,
        r.get(16)?,
    ))
}

fn finish_decision(raw: RawDecision, path: &Path) -> Result<DecisionRecord, StoreError> {
    let (mut d, actor, verdict, provenance, device) = raw;
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.to_owned(),
        detail: format!("decision {}: {detail}", d.id),
    };
    d.device = crate::decision::device_of_text(device.as_deref()).map_err(corrupt)?;
    let actor = Actor::parse(&actor).ok_or_else(|| corrupt(format!("actor '{actor}'")))?;
    d.actor = overseer_core::device::actor_through(actor, d.device.clone());
    d.verdict = Verdict::parse(&verdict).ok_or_else(|| corrupt(format!("verdict '{verdict}'")))?;
    d.provenance = provenance
        .map(|p| {
            serde_json::from_str::<Provenance>(&p)
                .map_err(|e| corrupt(format!("provenance '{p}': {e}")))
        })
        .transpose()?;
    Ok(d)
}

fn query_decisions(
    conn: &Connection,
    path: &Path,
    filter: &str,
    id: i64,
) -> Result<Vec<DecisionRecord>, StoreError> {
    let raws = conn
        .prepare_cached(&format!(
            "{DECISION_SELECT} WHERE {filter} = ?1 ORDER BY id"
        ))
        .and_then(|mut s| {
            s.query_map([id], raw_decision)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| StoreError::from_sqlite(e, path))?;
    raws.into_iter().map(|r| finish_decision(r, path)).collect()
}

/// The votes on a gate: decisions by humans and the supervisor, in order.
/// Only votes their signed record backs count: a row written into the
/// database outside Overseer never co-signs, overrides or stops a timer.
fn votes(tx: &WriteTx<'_>, gate_id: GateId) -> Result<Vec<(Vote, Option<String>)>, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        path: tx.path().to_owned(),
        detail: format!("gate {gate_id}: {detail}"),
    };
    let mut out = Vec::new();
    for d in tx.signed_votes_of_gate(gate_id)? {
        let actor =
            Actor::parse(&d.actor).ok_or_else(|| corrupt(format!("actor '{}'", d.actor)))?;
        let device = crate::decision::device_of_text(d.device.as_deref()).map_err(corrupt)?;
        let actor = overseer_core::device::actor_through(actor, device);
        if !matches!(actor, Actor::User(_) | Actor::Supervisor(_)) {
            continue;
        }
        let verdict = Verdict::parse(&d.verdict)
            .ok_or_else(|| corrupt(format!("verdict '{}'", d.verdict)))?;
        out.push((
            Vote {
                actor,
                verdict,
                option: d.option,
                at: d.at,
            },
            d.rationale,
        ));
    }
    Ok(out)
}

/// The gate's approve option as its opener set it, else its kind's (gates
/// opened by the store itself, or without a supervisor, set none).
fn approve_option(
    conn: &Connection,
    path: &Path,
    gate: &GateView,
) -> Result<Option<String>, StoreError> {
    let set: Option<String> = conn
        .query_row(
            "SELECT approve_option FROM gates WHERE id = ?1",
            [gate.id],
            |r| r.get(0),
        )
        .optional()
        .map(Option::flatten)
        .map_err(|e| StoreError::from_sqlite(e, path))?;
    Ok(Some(set.unwrap_or_else(|| {
        gate.kind().approve_option().to_owned()
    })))
}

impl Store {
    /// Every decision on a gate, in order.
    pub fn decisions_of_gate(&self, gate_id: GateId) -> Result<Vec<DecisionRecord>, StoreError> {
        query_decisions(
            self.raw_connection(),
            self.path(),
            "gate_id",
            gate_id.into(),
        )
    }

    /// Every decision about a run (gates, rules, steps), in order.
    pub fn decisions_of_run(&self, run_id: RunId) -> Result<Vec<DecisionRecord>, StoreError> {
        query_decisions(self.raw_connection(), self.path(), "run_id", run_id.into())
    }

    /// Pending gates with a timer, soonest first: a gate's own timer, or
    /// the end of an autonomous decision's grace, which stands in for the
    /// gate's timer while it waits (see [`WriteTx::fire_timer`]).
    pub fn pending_timers(&self) -> Result<Vec<(GateId, Millis)>, StoreError> {
        self.raw_connection()
            .prepare_cached(
                "SELECT id, due FROM (
                    SELECT id, CASE WHEN pending_effect IS NOT NULL
                                    THEN json_extract(pending_effect, '$.at')
                                    ELSE auto_at END AS due
                    FROM gates WHERE status = 'pending'
                 ) WHERE due IS NOT NULL ORDER BY due",
            )
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| StoreError::from_sqlite(e, self.path()))
    }
}

impl WriteTx<'_> {
    /// Opens a gate with the supervisor's authority and an optional timer.
    pub fn open_gate_spec(
        &mut self,
        spec: &GateSpec,
        actor: &Actor,
        now: Millis,
    ) -> Result<GateId, StoreError> {
        let id = self.open_gate(
            spec.run_id,
            &spec.title,
            &spec.options,
            &spec.body,
            actor,
            now,
        )?;
        let (auto_at, auto_option) = match &spec.auto {
            Some((at, choice)) => (Some(*at), Some(choice.as_str())),
            None => (None, None),
        };
        if let Some((_, choice)) = &spec.auto {
            let option = choice.as_str();
            if choice.kind() != spec.kind() || !spec.options.iter().any(|o| o.id == option) {
                return Err(StoreError::InvalidInput(format!(
                    "gate timer option '{option}' is not one of the gate's options"
                )));
            }
        }
        self.conn()
            .execute(
                "UPDATE gates SET authority = ?1, approve_option = ?2, auto_at = ?3, auto_decision = ?4,
                                  ask_key = ?5
                 WHERE id = ?6",
                params![
                    spec.authority.map(Autonomy::as_str),
                    spec.approve_option,
                    auto_at,
                    auto_option,
                    spec.ask_key,
                    id
                ],
            )
            .map_err(|e| self.sql(e))?;
        if spec.authority.is_some() || spec.auto.is_some() {
            self.append_audit(
                actor,
                &AuditPayload::GateTerms {
                    gate_id: id,
                    authority: spec.authority.map(|a| a.as_str().to_owned()),
                    auto_at: Some(auto_at),
                    auto_option: Some(auto_option.map(str::to_owned)),
                },
                now,
            )?;
        }
        Ok(id)
    }

    /// Gives an open gate (one the store opened itself, like a merge review)
    /// the supervisor's authority, before anyone voted on it.
    pub fn set_gate_authority(
        &mut self,
        gate_id: GateId,
        authority: Option<Autonomy>,
        approve_option: Option<&str>,
        now: Millis,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE gates SET authority = ?1, approve_option = ?2
                 WHERE id = ?3 AND status = 'pending'
                   AND NOT EXISTS (SELECT 1 FROM decisions WHERE gate_id = ?3)",
                params![authority.map(Autonomy::as_str), approve_option, gate_id],
            )
            .map_err(|e| self.sql(e))?;
        if changed == 1 {
            self.append_audit(
                &Actor::Engine,
                &AuditPayload::GateTerms {
                    gate_id,
                    authority: authority.map(|a| a.as_str().to_owned()),
                    auto_at: None,
                    auto_option: None,
                },
                now,
            )?;
            self.gate_changed(gate_id);
        }
        Ok(())
    }

    /// Records a decision that is not a vote on a gate's outcome (a rule that
    /// allowed a tool call, a step verdict, an evaluator's failure), with its
    /// own audit record. Returns the decision's id.
    pub fn record_decision_note(
        &mut self,
        run_id: RunId,
        gate_id: Option<GateId>,
        actor: &Actor,
        input: &DecisionInput,
        now: Millis,
    ) -> Result<i64, StoreError> {
        let verdict = input.verdict.unwrap_or(Verdict::Advise);
        let seq = self.append_audit(
            actor,
            &AuditPayload::Decision(DecisionPayload {
                run_id,
                gate_id,
                verdict: verdict.as_str().to_owned(),
                option: input.option.clone(),
                rationale: input.rationale.clone(),
                context: Some(input.context.clone()),
                correction: input.correction.clone(),
                rule_ref: input.rule_ref.clone(),
                provenance: input.provenance.clone(),
                model_id: input.model_id.clone(),
                prompt_version: input.prompt_version.clone(),
                confidence: input.confidence,
                source_event: input.source_event.clone(),
                device: actor.device().cloned(),
            }),
            now,
        )?;
        self.conn()
            .prepare_cached(
                "INSERT INTO decisions(run_id, gate_id, actor, verdict, option, rationale, correction,
                    rule_ref, model_id, prompt_version, confidence, source_event, at, audit_seq,
                    provenance, device)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id,
                    gate_id,
                    actor.to_string(),
                    verdict.as_str(),
                    input.option,
                    input.rationale.as_deref().or(input.context.as_deref()),
                    input.correction,
                    input.rule_ref,
                    input.model_id,
                    input.prompt_version,
                    input.confidence,
                    input.source_event,
                    now,
                    seq,
                    crate::decision::provenance_text(input.provenance.as_ref()),
                    crate::decision::device_text(actor.device())
                ])
            })
            .map_err(|e| self.sql(e))?;
        Ok(self.conn().last_insert_rowid())
    }

    /// A vote on a gate, by a human or the supervisor. Checked and resolved in
    /// this transaction: the user always wins.
    pub fn vote(
        &mut self,
        gate_id: GateId,
        actor: &Actor,
        input: &DecisionInput,
        now: Millis,
    ) -> Result<VoteOutcome, StoreError> {
        self.vote_within(gate_id, actor, input, None, now)
    }

    /// [`WriteTx::vote`], where an autonomous supervisor's deciding vote
    /// takes effect only at `grace_until` (None: at once). Until then the
    /// gate stays pending with the vote as its [`PendingEffect`], open to
    /// humans, whose decision wins; [`WriteTx::take_effect`] settles it at
    /// the deadline.
    pub fn vote_within(
        &mut self,
        gate_id: GateId,
        actor: &Actor,
        input: &DecisionInput,
        grace_until: Option<Millis>,
        now: Millis,
    ) -> Result<VoteOutcome, StoreError> {
        self.reconcile_gate(gate_id, now)?;
        let gate = read::gate(self.conn(), self.path(), gate_id)?;
        let approve = approve_option(self.conn(), self.path(), &gate)?;
        let already = |gate: &GateView| {
            let (option, by) = gate
                .decision
                .as_ref()
                .map(|d| (d.option.clone(), d.who_and_when()))
                .unwrap_or_else(|| ("(none)".to_owned(), "nobody yet".to_owned()));
            StoreError::AlreadyDecided {
                gate_id,
                option,
                by,
            }
        };
        let verdict = match (actor, &input.option, input.verdict) {
            (Actor::User(_) | Actor::Person { .. }, Some(option), _) => {
                check_decision(&gate.options, option, input.context.as_deref())
                    .map_err(|source| StoreError::InvalidDecision { gate_id, source })?;
                verdict_of_choice(approve.as_deref(), option)
            }
            (Actor::User(_) | Actor::Person { .. }, None, _) => {
                return Err(StoreError::InvalidInput(
                    "a decision must pick one of the gate's options".to_owned(),
                ))
            }
            (Actor::Supervisor(_), option, verdict) => {
                if let Some(option) = option {
                    check_decision(&gate.options, option, Some("supervisor"))
                        .map_err(|source| StoreError::InvalidDecision { gate_id, source })?;
                }
                match (verdict, option) {
                    (Some(v), _) => v,
                    (None, Some(option)) => verdict_of_choice(approve.as_deref(), option),
                    (None, None) => {
                        return Err(StoreError::InvalidInput(
                            "a supervisor vote needs a verdict or an option".to_owned(),
                        ))
                    }
                }
            }
            (Actor::Engine | Actor::Agent(_), _, _) => {
                return Err(StoreError::InvalidInput(format!(
                    "{actor} cannot vote on gates: agents ask and report, the engine only runs timers"
                )))
            }
        };
        // The vote as it is recorded: with the verdict it amounts to.
        let recorded = DecisionInput {
            verdict: Some(verdict),
            ..input.clone()
        };
        // A gate closed by someone who is not a voter (a timer, the engine
        // cancelling it) is closed for everyone; a supervisor's autonomous
        // decision stays open to the human until its effect happens.
        if let Some(d) = &gate.decision {
            let overridable = actor.is_user()
                && gate.authority == Some(Autonomy::Autonomous)
                && matches!(d.actor, Actor::Supervisor(_))
                && !gate.effected;
            // The supervisor's vote after a human decided: kept as a trace
            // of the disagreement (or the agreement), deciding nothing.
            if matches!(actor, Actor::Supervisor(_)) && d.actor.is_user() {
                let decision_id =
                    self.record_decision_note(gate.run_id, Some(gate_id), actor, &recorded, now)?;
                return Ok(VoteOutcome {
                    gate,
                    decision_id,
                    decided: false,
                    late: true,
                });
            }
            if !overridable {
                return Err(already(&gate));
            }
        }
        let prior = votes(self, gate_id)?;
        let prior_votes: Vec<Vote> = prior.iter().map(|(v, _)| v.clone()).collect();
        let new = Vote {
            actor: actor.clone(),
            verdict,
            option: input.option.clone(),
            at: now,
        };
        if let Err(refused) = accept_vote(gate.authority, &prior_votes, gate.effected, &new) {
            return Err(match refused {
                VoteRefused::GateClosed | VoteRefused::UserAlreadyDecided => already(&gate),
                VoteRefused::NotAllowed(why) => StoreError::InvalidInput(why),
            });
        }
        let decision_id =
            self.record_decision_note(gate.run_id, Some(gate_id), actor, &recorded, now)?;
        let mut all = prior;
        all.push((new, input.context.clone().or(input.rationale.clone())));
        let all_votes: Vec<Vote> = all.iter().map(|(v, _)| v.clone()).collect();
        let decided = match resolve(gate.authority, approve.as_deref(), &all_votes) {
            Resolution::Pending { .. } => false,
            Resolution::Decided { option, by } => {
                let context = all
                    .iter()
                    .rev()
                    .find(|(v, _)| v.actor == by && v.option.as_deref() == Some(option.as_str()))
                    .and_then(|(_, c)| c.clone());
                let same = gate
                    .decision
                    .as_ref()
                    .is_some_and(|d| d.option == option && d.actor == by);
                let waits = grace_until.filter(|_| {
                    gate.decision.is_none()
                        && gate.authority == Some(Autonomy::Autonomous)
                        && matches!(by, Actor::Supervisor(_))
                });
                if let Some(at) = waits {
                    let effect = PendingEffect {
                        verdict: verdict_of_choice(approve.as_deref(), &option),
                        option,
                        by,
                        at,
                        rationale: context,
                    };
                    self.set_pending_effect(gate_id, Some(&effect))?;
                    false
                } else if same {
                    false
                } else if let Some(previous) = &gate.decision {
                    self.override_decision(&gate, previous, &option, context.as_deref(), &by, now)?;
                    true
                } else {
                    self.settle_gate(&gate, &option, context.as_deref(), &by, now)?;
                    true
                }
            }
        };
        // A vote shows on the run's row (waiting for the co-sign), decided
        // or not.
        self.run_changed(gate.run_id, false);
        Ok(VoteOutcome {
            gate: read::gate(self.conn(), self.path(), gate_id)?,
            decision_id,
            decided,
            late: false,
        })
    }

    /// A human replaces the supervisor's decision before it took effect.
    fn override_decision(
        &mut self,
        gate: &GateView,
        previous: &overseer_core::GateDecision,
        option: &str,
        context: Option<&str>,
        by: &Actor,
        now: Millis,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE gates SET decided_option = ?1, decided_context = ?2, decided_by = ?3, decided_at = ?4,
                        decided_device = ?6
                 WHERE id = ?5 AND status = 'decided' AND effected_at IS NULL",
                params![option, context, by.to_string(), now, gate.id, crate::decision::device_text(by.device())],
            )
            .map_err(|e| self.sql(e))?;
        if changed != 1 {
            return Err(StoreError::AlreadyDecided {
                gate_id: gate.id,
                option: previous.option.clone(),
                by: previous.who_and_when(),
            });
        }
        let overrides = Overrides {
            option: Some(previous.option.clone()),
            by: previous.actor.to_string(),
        };
        self.record_gate_decision(gate, option, context, by, Some(overrides), now)
    }

    /// The engine acts on a gate's decision: from now on nobody can change it.
    /// Returns the gate as it stands (a human's override made before this
    /// point is what the engine must act on). A decision its signed record
    /// does not back is not acted on: see [`WriteTx::effect_decision`].
    pub fn mark_effected(&mut self, gate_id: GateId, now: Millis) -> Result<GateView, StoreError> {
        Ok(self.effect_decision(gate_id, now)?.0)
    }

    /// [`WriteTx::mark_effected`], saying also what was wrong when the row's
    /// decision was not the one its signed record holds. Then the gate is
    /// as the record says (still pending when no record says anything), a
    /// signed `security_event` is recorded, and only a decision the record
    /// backs is marked effected.
    pub fn effect_decision(
        &mut self,
        gate_id: GateId,
        now: Millis,
    ) -> Result<(GateView, Option<crate::DecisionMismatch>), StoreError> {
        let forged = self.reconcile_gate(gate_id, now)?;
        let effected = self
            .conn()
            .execute(
                "UPDATE gates SET effected_at = ?1
                 WHERE id = ?2 AND status = 'decided' AND effected_at IS NULL",
                params![now, gate_id],
            )
            .map_err(|e| self.sql(e))?;
        if effected == 1 {
            self.gate_changed(gate_id);
        }
        Ok((read::gate(self.conn(), self.path(), gate_id)?, forged))
    }

    fn set_pending_effect(
        &mut self,
        gate_id: GateId,
        effect: Option<&PendingEffect>,
    ) -> Result<(), StoreError> {
        let text = effect
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StoreError::InvalidInput(format!("pending effect: {e}")))?;
        self.conn()
            .execute(
                "UPDATE gates SET pending_effect = ?1 WHERE id = ?2",
                params![text, gate_id],
            )
            .map_err(|e| self.sql(e))?;
        self.gate_changed(gate_id);
        Ok(())
    }

    /// An autonomous supervisor's decision whose grace period ended takes
    /// effect: the gate is decided by the supervisor (its signed
    /// `gate_decided` record, as a decision at once writes), once. Only
    /// while the gate is still pending, and only as the supervisor's signed
    /// vote says: a human who decided meanwhile won, and a pending effect
    /// no signed vote backs is dropped. Returns the decided gate, or `None`
    /// when nothing took effect.
    pub fn take_effect(
        &mut self,
        gate_id: GateId,
        now: Millis,
    ) -> Result<Option<GateView>, StoreError> {
        self.reconcile_gate(gate_id, now)?;
        let gate = read::gate(self.conn(), self.path(), gate_id)?;
        let Some(effect) = gate.pending_effect.clone() else {
            return Ok(None);
        };
        if gate.decision.is_some() || effect.at > now {
            return Ok(None);
        }
        let approve = approve_option(self.conn(), self.path(), &gate)?;
        let all = votes(self, gate_id)?;
        let all_votes: Vec<Vote> = all.iter().map(|(v, _)| v.clone()).collect();
        let backed = match resolve(gate.authority, approve.as_deref(), &all_votes) {
            Resolution::Decided { option, by } => {
                matches!(by, Actor::Supervisor(_)) && by == effect.by && option == effect.option
            }
            Resolution::Pending { .. } => false,
        };
        if !backed {
            // Written outside Overseer: dropped, the gate waits for a human.
            self.set_pending_effect(gate_id, None)?;
            return Ok(None);
        }
        let context = all
            .iter()
            .rev()
            .find(|(v, _)| v.actor == effect.by && v.option.as_deref() == Some(&effect.option))
            .and_then(|(_, c)| c.clone());
        self.settle_gate(&gate, &effect.option, context.as_deref(), &effect.by, now)?;
        self.set_pending_effect(gate_id, None)?;
        self.run_changed(gate.run_id, false);
        Ok(Some(read::gate(self.conn(), self.path(), gate_id)?))
    }

    /// Fires a gate's timer: decides it with the timer's option, once, and
    /// only if it is still pending and no human has acted on it. Returns the
    /// decided gate, or `None` when the timer no longer applies. A
    /// supervisor's decision waiting for its grace stands in for the timer:
    /// the supervisor decided before the timer ran out.
    pub fn fire_timer(
        &mut self,
        gate_id: GateId,
        now: Millis,
    ) -> Result<Option<GateView>, StoreError> {
        self.reconcile_gate(gate_id, now)?;
        let gate = read::gate(self.conn(), self.path(), gate_id)?;
        let (Some(at), Some(option)) = (gate.auto_at, gate.auto_option.clone()) else {
            return Ok(None);
        };
        if gate.decision.is_some() || at > now || gate.pending_effect.is_some() {
            return Ok(None);
        }
        let human_acted = votes(self, gate_id)?.iter().any(|(v, _)| v.actor.is_user());
        if human_acted {
            return Ok(None);
        }
        let approve = approve_option(self.conn(), self.path(), &gate)?;
        let waited = (at - gate.opened_at).max(0) / 1000;
        // A question says it expired, and which default applied.
        let rationale = if let overseer_core::GateBody::Question(q) = &gate.body {
            overseer_core::questions::expiry_note(q, &option, waited)
        } else {
            format!("nobody answered within {waited} s: the gate's timer chose '{option}'")
        };
        self.record_decision_note(
            gate.run_id,
            Some(gate_id),
            &Actor::Engine,
            &DecisionInput {
                verdict: Some(verdict_of_choice(approve.as_deref(), &option)),
                option: Some(option.clone()),
                rationale: Some(rationale.clone()),
                rule_ref: Some("timer".to_owned()),
                source_event: Some(format!("timer:{gate_id}")),
                ..DecisionInput::default()
            },
            now,
        )?;
        self.settle_gate(&gate, &option, Some(&rationale), &Actor::Engine, now)?;
        Ok(Some(read::gate(self.conn(), self.path(), gate_id)?))
    }

    /// A human stops a gate's timer: it will wait for a decision.
    pub fn hold_gate(
        &mut self,
        gate_id: GateId,
        actor: &Actor,
        now: Millis,
    ) -> Result<GateView, StoreError> {
        self.reconcile_gate(gate_id, now)?;
        let gate = read::gate(self.conn(), self.path(), gate_id)?;
        if let Some(d) = gate.decision {
            return Err(StoreError::AlreadyDecided {
                gate_id,
                by: d.who_and_when(),
                option: d.option,
            });
        }
        if gate.auto_at.is_none() && gate.pending_effect.is_none() {
            return Err(StoreError::InvalidInput(format!(
                "gate {gate_id} has no timer to stop; it already waits for you"
            )));
        }
        // The supervisor's pending decision is a timer too: held, it never
        // takes effect, and the gate waits for a human.
        self.conn()
            .execute(
                "UPDATE gates SET auto_at = NULL, auto_decision = NULL, pending_effect = NULL
                 WHERE id = ?1 AND status = 'pending'",
                [gate_id],
            )
            .map_err(|e| self.sql(e))?;
        self.append_audit(
            actor,
            &AuditPayload::GateTimerStopped {
                gate_id,
                run_id: gate.run_id,
                device: actor.device().cloned(),
            },
            now,
        )?;
        self.gate_changed(gate_id);
        self.run_changed(gate.run_id, false);
        read::gate(self.conn(), self.path(), gate_id)
    }
}
