//! Decisions exist only with their signed record.
//!
//! A decision lives in three tables: the gate's row (`gates.decided_*`), the
//! gate's decision history (`gate_decisions`) and the votes and notes with
//! their rationale (`decisions`). Each was written in the same transaction as
//! a signed audit record saying the same thing, and the rows name that record
//! (`audit_seq`). Anyone who can write the database file but does not hold the
//! signing key can change the rows, not the records. So a row counts only when
//! its record verifies (hashes, signature, link to the record before it) and
//! says the same thing: same gate, run, option, context, actor and time.
//!
//! [`DecisionBook`] does that check; the store uses it where the engine acts
//! on a decision ([`crate::WriteTx::effect_decision`], votes, timers), in the
//! "Why?" story, and in `audit verify`, which checks every row.

use crate::audit::{self, AuditProblem, AuditRecord};
use crate::chain;
use crate::Keyring;
use overseer_core::audit::{AuditPayload, DecisionPayload, SecurityPayload};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// Which table a decision row lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum DecisionTable {
    /// The gate's own row: its current decision.
    Gates,
    /// The gate's decision history.
    GateDecisions,
    /// Votes, timers' choices and the engine's notes, with their rationale.
    Decisions,
}

impl DecisionTable {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionTable::Gates => "gates",
            DecisionTable::GateDecisions => "gate_decisions",
            DecisionTable::Decisions => "decisions",
        }
    }
}

/// What is wrong between a decision row and its signed record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case", tag = "problem")]
pub enum DecisionProblem {
    /// No signed record backs the row: it was written outside Overseer.
    NoRecord,
    /// The row names a record that does not verify on its own.
    RecordNotVerified { why: AuditProblem },
    /// The row names a record about something else (another gate, run or
    /// kind of record).
    WrongRecord { detail: String },
    /// The record says something else than the row.
    Differs {
        field: String,
        row: String,
        record: String,
    },
    /// Another row already claims the same record (a copied row).
    RecordReused { other_row_id: i64 },
    /// The signed record says the gate was decided; the row says pending.
    DecisionErased { option: String, by: String },
}

/// A decision row that its signed record does not back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct DecisionMismatch {
    pub table: DecisionTable,
    /// The row's id (for `gates`, the gate id).
    pub row_id: i64,
    pub gate_id: Option<i64>,
    pub run_id: Option<i64>,
    /// The record the row names, or the one that should back it.
    pub audit_seq: Option<i64>,
    /// What the row claims, in words (`'approve' by user:cli at 1700000000000`).
    pub claim: String,
    #[serde(flatten)]
    pub problem: DecisionProblem,
}

impl fmt::Display for DecisionMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.table {
            DecisionTable::Gates => format!("gate {}'s decision", self.row_id),
            DecisionTable::GateDecisions => format!(
                "gate {}'s decision history row {}",
                self.gate_id.unwrap_or_default(),
                self.row_id
            ),
            DecisionTable::Decisions => match self.gate_id {
                Some(g) => format!("decision {} on gate {g}", self.row_id),
                None => format!(
                    "decision {} on run {}",
                    self.row_id,
                    self.run_id.unwrap_or_default()
                ),
            },
        };
        let seq = self
            .audit_seq
            .map_or_else(String::new, |s| format!(" (audit record #{s})"));
        match &self.problem {
            DecisionProblem::NoRecord => write!(
                f,
                "{what} ({}) has no signed audit record: it was written into the database outside Overseer and is not acted on",
                self.claim
            ),
            DecisionProblem::RecordNotVerified { why } => write!(
                f,
                "{what} ({}){seq}: its audit record does not verify ({why:?}): the record was edited or forged",
                self.claim
            ),
            DecisionProblem::WrongRecord { detail } => write!(
                f,
                "{what} ({}){seq}: it names an audit record about something else ({detail}): the row was written outside Overseer",
                self.claim
            ),
            DecisionProblem::Differs { field, row, record } => write!(
                f,
                "{what}{seq}: the database says {field} = {row}, its signed record says {record}: the row was changed outside Overseer"
            ),
            DecisionProblem::RecordReused { other_row_id } => write!(
                f,
                "{what} ({}){seq}: row {other_row_id} already claims that record: the row was copied outside Overseer",
                self.claim
            ),
            DecisionProblem::DecisionErased { option, by } => write!(
                f,
                "{what}{seq}: the database says pending, but its signed record says '{option}' by {by}: the decision was erased outside Overseer"
            ),
        }
    }
}

/// A gate's decision as its row holds it.
#[derive(Debug, Clone)]
pub(crate) struct GateRow {
    pub id: i64,
    pub run_id: i64,
    pub kind: String,
    pub status: String,
    pub option: Option<String>,
    pub context: Option<String>,
    pub by: Option<String>,
    pub at: Option<i64>,
    /// The device column, as stored (JSON).
    pub device: Option<String>,
}

impl GateRow {
    fn claim(&self) -> String {
        match (&self.option, &self.by, self.at) {
            (Some(o), Some(b), Some(a)) => format!("'{o}' by {b} at {a}"),
            _ => format!("status {}", self.status),
        }
    }

    fn is_decided(&self) -> bool {
        self.status != "pending"
    }
}

const GATE_ROW_SELECT: &str = "SELECT id, run_id, kind, status, decided_option, decided_context,
        decided_by, decided_at, decided_device FROM gates";

fn gate_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GateRow> {
    Ok(GateRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        kind: r.get(2)?,
        status: r.get(3)?,
        option: r.get(4)?,
        context: r.get(5)?,
        by: r.get(6)?,
        at: r.get(7)?,
        device: r.get(8)?,
    })
}

pub(crate) fn read_gate_row(conn: &Connection, id: i64) -> rusqlite::Result<Option<GateRow>> {
    conn.prepare_cached(&format!("{GATE_ROW_SELECT} WHERE id = ?1"))?
        .query_row([id], gate_row)
        .optional()
}

/// A row of `gate_decisions`.
#[derive(Debug, Clone)]
struct HistoryRow {
    id: i64,
    gate_id: i64,
    option: String,
    context: Option<String>,
    actor: String,
    at: i64,
    audit_seq: i64,
    device: Option<String>,
}

const HISTORY_SELECT: &str =
    "SELECT id, gate_id, option, context, actor, at, audit_seq, device FROM gate_decisions";

fn history_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HistoryRow> {
    Ok(HistoryRow {
        id: r.get(0)?,
        gate_id: r.get(1)?,
        option: r.get(2)?,
        context: r.get(3)?,
        actor: r.get(4)?,
        at: r.get(5)?,
        audit_seq: r.get(6)?,
        device: r.get(7)?,
    })
}

/// A row of `decisions`.
#[derive(Debug, Clone)]
pub(crate) struct DecisionRow {
    pub id: i64,
    pub run_id: i64,
    pub gate_id: Option<i64>,
    pub actor: String,
    pub verdict: String,
    pub option: Option<String>,
    pub rationale: Option<String>,
    pub correction: Option<String>,
    pub rule_ref: Option<String>,
    pub model_id: Option<String>,
    pub prompt_version: Option<String>,
    pub confidence: Option<f64>,
    pub source_event: Option<String>,
    pub at: i64,
    pub audit_seq: i64,
    /// JSON, as the column keeps it.
    pub provenance: Option<String>,
    /// JSON, as the column keeps it.
    pub device: Option<String>,
}

const DECISION_ROW_SELECT: &str = "SELECT id, run_id, gate_id, actor, verdict, option, rationale,
        correction, rule_ref, model_id, prompt_version, confidence, source_event, at, audit_seq,
        provenance, device
        FROM decisions";

fn decision_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DecisionRow> {
    Ok(DecisionRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        gate_id: r.get(2)?,
        actor: r.get(3)?,
        verdict: r.get(4)?,
        option: r.get(5)?,
        rationale: r.get(6)?,
        correction: r.get(7)?,
        rule_ref: r.get(8)?,
        model_id: r.get(9)?,
        prompt_version: r.get(10)?,
        confidence: r.get(11)?,
        source_event: r.get(12)?,
        at: r.get(13)?,
        audit_seq: r.get(14)?,
        provenance: r.get(15)?,
        device: r.get(16)?,
    })
}

/// Reads records and checks each once: hashes, signature, and link to the
/// record before it. Records below `verified_below` were already checked by
/// a pass over the whole chain.
pub(crate) struct DecisionBook<'c> {
    conn: &'c Connection,
    keyring: &'c Keyring,
    verified_below: i64,
    /// Which row first claimed each record.
    claimed: HashMap<i64, (DecisionTable, i64)>,
    /// Records read and checked ahead ([`Self::prefetch`]).
    checked: Checked,
}

/// Records read and checked ahead, by seq (`None`: there is no such record).
type Checked = HashMap<i64, Option<(AuditRecord, Option<AuditProblem>)>>;

/// A record's payload, parsed once (`None`: of no kind Overseer writes).
struct Signed<'r> {
    record: &'r AuditRecord,
    payload: Option<AuditPayload>,
}

/// A record's payload, typed; `None` when it is of no kind Overseer writes.
fn payload_of(record: &AuditRecord) -> Option<AuditPayload> {
    AuditPayload::parse(&record.payload).ok()
}

/// A record's kind, as a mismatch names it.
fn kind_of(p: Option<&AuditPayload>) -> &'static str {
    p.map_or("?", AuditPayload::kind)
}

/// The gate a record names, as a mismatch shows it: `-` when it names
/// none, `null` for a decision on no gate.
fn gate_shown(p: Option<&AuditPayload>) -> String {
    match p {
        Some(AuditPayload::Decision(d)) => d.gate_id.map_or("null".to_owned(), |g| g.to_string()),
        other => other
            .and_then(AuditPayload::gate_id)
            .map_or("-".to_owned(), |g| g.to_string()),
    }
}

/// The run a record names as `run_id`, as a mismatch shows it.
fn run_shown(p: Option<&AuditPayload>) -> String {
    p.and_then(AuditPayload::run_id)
        .map_or("-".to_owned(), |r| r.to_string())
}

fn shown(v: Option<&str>) -> String {
    v.map_or_else(|| "(none)".to_owned(), |s| format!("'{s}'"))
}

impl<'c> DecisionBook<'c> {
    pub(crate) fn new(conn: &'c Connection, keyring: &'c Keyring) -> Self {
        DecisionBook {
            conn,
            keyring,
            verified_below: 0,
            claimed: HashMap::new(),
            checked: HashMap::new(),
        }
    }

    /// Reads and checks the records at `seqs` all at once, their signatures
    /// in batches across every core, for the row checks that follow (the
    /// same verdicts as checking each when it is needed, faster).
    pub(crate) fn prefetch(&mut self, seqs: impl IntoIterator<Item = i64>) -> rusqlite::Result<()> {
        let mut wanted: Vec<i64> = seqs
            .into_iter()
            .filter(|s| *s >= self.verified_below && !self.checked.contains_key(s))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut records = Vec::with_capacity(wanted.len());
        for seq in wanted {
            match audit::record_at(self.conn, seq)? {
                Some(r) => records.push(r),
                None => {
                    self.checked.insert(seq, None);
                }
            }
        }
        let mut before: HashMap<i64, Option<AuditRecord>> = HashMap::new();
        for r in &records {
            let seq = r.seq - 1;
            if seq >= 1 && !before.contains_key(&seq) {
                before.insert(seq, audit::record_at(self.conn, seq)?);
            }
        }
        let pairs: Vec<(&AuditRecord, Option<&AuditRecord>)> = records
            .iter()
            .map(|r| (r, before.get(&(r.seq - 1)).and_then(Option::as_ref)))
            .collect();
        let problems = chain::check_records(self.keyring, &pairs);
        for (record, problem) in records.into_iter().zip(problems) {
            self.checked.insert(record.seq, Some((record, problem)));
        }
        Ok(())
    }

    /// A book that starts with the records another one read and checked.
    fn with_checked(mut self, checked: Checked) -> Self {
        self.checked = checked;
        self
    }

    /// The records this book read and checked, for the next one.
    fn into_checked(self) -> Checked {
        self.checked
    }

    /// Claims start afresh: rows checked from here on may claim records
    /// rows checked before claimed (each gate's rows among themselves).
    fn forget_claims(&mut self) {
        self.claimed.clear();
    }

    /// Records `1..verified_below` verified by a pass over the whole chain.
    pub(crate) fn trusting_chain_below(mut self, verified_below: i64) -> Self {
        self.verified_below = verified_below;
        self
    }

    /// The record at `seq` and what checking it found.
    fn record(&self, seq: i64) -> rusqlite::Result<Option<(AuditRecord, Option<AuditProblem>)>> {
        if let Some(checked) = self.checked.get(&seq) {
            return Ok(checked.clone());
        }
        let Some(record) = audit::record_at(self.conn, seq)? else {
            return Ok(None);
        };
        let problem = if seq < self.verified_below {
            None
        } else {
            let prev = if seq > 1 {
                audit::record_at(self.conn, seq - 1)?
            } else {
                None
            };
            chain::check_record(self.keyring, &record, prev.as_ref())
        };
        Ok(Some((record, problem)))
    }

    /// Whether another row already claims `seq`; claims it otherwise.
    fn claim(&mut self, seq: i64, table: DecisionTable, row_id: i64) -> Option<i64> {
        match self.claimed.get(&seq) {
            Some((t, id)) if (*t, *id) != (table, row_id) => Some(*id),
            Some(_) => None,
            None => {
                self.claimed.insert(seq, (table, row_id));
                None
            }
        }
    }

    /// The record a history or decision row names, verified, with its
    /// payload; or why it cannot back the row (another row claimed it, it is
    /// missing, it does not verify).
    fn backing(
        &mut self,
        seq: i64,
        table: DecisionTable,
        row_id: i64,
    ) -> rusqlite::Result<Result<(AuditRecord, Option<AuditPayload>), DecisionProblem>> {
        if let Some(other) = self.claim(seq, table, row_id) {
            return Ok(Err(DecisionProblem::RecordReused {
                other_row_id: other,
            }));
        }
        let Some((record, problem)) = self.record(seq)? else {
            return Ok(Err(DecisionProblem::NoRecord));
        };
        if let Some(why) = problem {
            return Ok(Err(DecisionProblem::RecordNotVerified { why }));
        }
        let payload = payload_of(&record);
        Ok(Ok((record, payload)))
    }

    /// The latest `gate_decided` record about `gate`, if any (by the
    /// `audit_gate_decided` index: one lookup, whatever the log's length).
    pub(crate) fn latest_gate_record(&mut self, gate: i64) -> rusqlite::Result<Option<i64>> {
        self.conn
            .prepare_cached(
                "SELECT seq FROM audit_log
                 WHERE json_extract(payload, '$.type') = 'gate_decided'
                   AND json_extract(payload, '$.gate_id') = ?1
                 ORDER BY seq DESC LIMIT 1",
            )?
            .query_row(params![gate], |r| r.get(0))
            .optional()
    }

    /// Checks a gate's row against the latest signed `gate_decided` record
    /// about it (`latest`): a decided row must match it, a pending row must
    /// have none (else its decision was erased).
    pub(crate) fn check_gate(
        &mut self,
        row: &GateRow,
        latest: Option<i64>,
    ) -> rusqlite::Result<Option<DecisionMismatch>> {
        let mismatch = |audit_seq, problem| DecisionMismatch {
            table: DecisionTable::Gates,
            row_id: row.id,
            gate_id: Some(row.id),
            run_id: Some(row.run_id),
            audit_seq,
            claim: row.claim(),
            problem,
        };
        let Some(seq) = latest else {
            return Ok(row
                .is_decided()
                .then(|| mismatch(None, DecisionProblem::NoRecord)));
        };
        let Some((record, problem)) = self.record(seq)? else {
            return Ok(row
                .is_decided()
                .then(|| mismatch(None, DecisionProblem::NoRecord)));
        };
        if let Some(why) = problem {
            return Ok(Some(mismatch(
                Some(seq),
                DecisionProblem::RecordNotVerified { why },
            )));
        }
        let signed = Signed {
            record: &record,
            payload: payload_of(&record),
        };
        if !row.is_decided() {
            let option = match &signed.payload {
                Some(AuditPayload::GateDecided { option, .. }) => option.as_str(),
                _ => "?",
            };
            return Ok(Some(mismatch(
                Some(seq),
                DecisionProblem::DecisionErased {
                    option: option.to_owned(),
                    by: record.actor.clone(),
                },
            )));
        }
        Ok(gate_differs(row, &signed).map(|p| mismatch(Some(seq), p)))
    }

    fn check_history(&mut self, row: &HistoryRow) -> rusqlite::Result<Option<DecisionMismatch>> {
        let mismatch = |problem| DecisionMismatch {
            table: DecisionTable::GateDecisions,
            row_id: row.id,
            gate_id: Some(row.gate_id),
            run_id: None,
            audit_seq: Some(row.audit_seq),
            claim: format!("'{}' by {} at {}", row.option, row.actor, row.at),
            problem,
        };
        let (record, payload) =
            match self.backing(row.audit_seq, DecisionTable::GateDecisions, row.id)? {
                Ok(found) => found,
                Err(problem) => return Ok(Some(mismatch(problem))),
            };
        let (option, context, device) = match &payload {
            Some(AuditPayload::GateDecided {
                gate_id,
                option,
                context,
                device,
                ..
            }) if i64::from(*gate_id) == row.gate_id => (option, context, device),
            other => {
                return Ok(Some(mismatch(DecisionProblem::WrongRecord {
                    detail: format!(
                        "a {} record about gate {}",
                        kind_of(other.as_ref()),
                        gate_shown(other.as_ref())
                    ),
                })));
            }
        };
        let fields = [
            ("option", Some(row.option.as_str()), Some(option.as_str())),
            ("context", row.context.as_deref(), context.as_deref()),
            (
                "actor",
                Some(row.actor.as_str()),
                Some(record.actor.as_str()),
            ),
        ];
        for (field, r, s) in fields {
            if r != s {
                return Ok(Some(mismatch(DecisionProblem::Differs {
                    field: field.to_owned(),
                    row: shown(r),
                    record: shown(s),
                })));
            }
        }
        if let Some(problem) = device_differs(row.device.as_deref(), device.as_ref()) {
            return Ok(Some(mismatch(problem)));
        }
        if row.at != record.at {
            return Ok(Some(mismatch(DecisionProblem::Differs {
                field: "at".to_owned(),
                row: row.at.to_string(),
                record: record.at.to_string(),
            })));
        }
        Ok(None)
    }

    /// Checks a vote or note against the `decision` record it names.
    pub(crate) fn check_decision(
        &mut self,
        row: &DecisionRow,
    ) -> rusqlite::Result<Option<DecisionMismatch>> {
        let mismatch = |problem| DecisionMismatch {
            table: DecisionTable::Decisions,
            row_id: row.id,
            gate_id: row.gate_id,
            run_id: Some(row.run_id),
            audit_seq: Some(row.audit_seq),
            claim: format!(
                "{}{} by {} at {}",
                row.verdict,
                row.option
                    .as_deref()
                    .map(|o| format!(" '{o}'"))
                    .unwrap_or_default(),
                row.actor,
                row.at
            ),
            problem,
        };
        let (record, p) = match self.backing(row.audit_seq, DecisionTable::Decisions, row.id)? {
            Ok(found) => found,
            Err(problem) => return Ok(Some(mismatch(problem))),
        };
        let d: &DecisionPayload = match &p {
            Some(AuditPayload::Decision(d))
                if i64::from(d.run_id) == row.run_id && d.gate_id.map(i64::from) == row.gate_id =>
            {
                d
            }
            other => {
                return Ok(Some(mismatch(DecisionProblem::WrongRecord {
                    detail: format!(
                        "a {} record about run {} and gate {}",
                        kind_of(other.as_ref()),
                        run_shown(other.as_ref()),
                        gate_shown(other.as_ref())
                    ),
                })));
            }
        };
        // The rationale column holds the rationale, else the human's context;
        // records written before the context was signed do not carry it.
        let rationale_signed = match (&d.context, d.rationale.as_deref()) {
            (Some(c), r) => Some(r.or(c.as_deref())),
            (None, Some(r)) => Some(Some(r)),
            (None, None) => None,
        };
        let mut fields = vec![
            (
                "actor",
                Some(row.actor.as_str()),
                Some(record.actor.as_str()),
            ),
            (
                "verdict",
                Some(row.verdict.as_str()),
                Some(d.verdict.as_str()),
            ),
            ("option", row.option.as_deref(), d.option.as_deref()),
            (
                "correction",
                row.correction.as_deref(),
                d.correction.as_deref(),
            ),
            ("rule_ref", row.rule_ref.as_deref(), d.rule_ref.as_deref()),
            ("model_id", row.model_id.as_deref(), d.model_id.as_deref()),
            (
                "prompt_version",
                row.prompt_version.as_deref(),
                d.prompt_version.as_deref(),
            ),
            (
                "source_event",
                row.source_event.as_deref(),
                d.source_event.as_deref(),
            ),
        ];
        if let Some(signed) = rationale_signed {
            fields.push(("rationale", row.rationale.as_deref(), signed));
        }
        for (field, r, s) in fields {
            if r != s {
                return Ok(Some(mismatch(DecisionProblem::Differs {
                    field: field.to_owned(),
                    row: shown(r),
                    record: shown(s),
                })));
            }
        }
        // The rules and layers, compared as typed values (the column's JSON
        // as the store writes it; anything else differs).
        let signed = crate::decision::provenance_text(d.provenance.as_ref());
        let same_provenance = match (&row.provenance, &d.provenance) {
            (None, None) => true,
            (Some(text), Some(p)) => {
                serde_json::from_str::<overseer_core::rules::Provenance>(text)
                    .ok()
                    .as_ref()
                    == Some(p)
            }
            _ => false,
        };
        if !same_provenance {
            return Ok(Some(mismatch(DecisionProblem::Differs {
                field: "provenance".to_owned(),
                row: shown(row.provenance.as_deref()),
                record: shown(signed.as_deref()),
            })));
        }
        if let Some(problem) = device_differs(row.device.as_deref(), d.device.as_ref()) {
            return Ok(Some(mismatch(problem)));
        }
        let confidence = d.confidence;
        if !same_float(row.confidence, confidence) {
            let show = |c: Option<f64>| c.map_or_else(|| "(none)".to_owned(), |c| c.to_string());
            return Ok(Some(mismatch(DecisionProblem::Differs {
                field: "confidence".to_owned(),
                row: show(row.confidence),
                record: show(confidence),
            })));
        }
        if row.at != record.at {
            return Ok(Some(mismatch(DecisionProblem::Differs {
                field: "at".to_owned(),
                row: row.at.to_string(),
                record: record.at.to_string(),
            })));
        }
        Ok(None)
    }
}

/// Two confidences the same up to how JSON parsing rounds: the record holds
/// the shortest decimal that reads back exactly, but serde_json's default
/// parser may land an ulp or two away from it.
fn same_float(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() <= 8.0 * f64::EPSILON * a.abs().max(b.abs()).max(1.0),
        _ => false,
    }
}

/// How a row's device column differs from the device its record signed, if
/// it does: compared as typed values (the column's JSON as the store writes
/// it; anything else differs). Records without a device back rows without.
fn device_differs(
    row: Option<&str>,
    signed: Option<&overseer_core::DeviceRef>,
) -> Option<DecisionProblem> {
    let same = match (row, signed) {
        (None, None) => true,
        (Some(text), Some(d)) => {
            serde_json::from_str::<overseer_core::DeviceRef>(text)
                .ok()
                .as_ref()
                == Some(d)
        }
        _ => false,
    };
    (!same).then(|| DecisionProblem::Differs {
        field: "device".to_owned(),
        row: shown(row),
        record: shown(crate::decision::device_text(signed).as_deref()),
    })
}

/// How a decided gate's row differs from its latest signed record, if it does.
fn gate_differs(row: &GateRow, s: &Signed<'_>) -> Option<DecisionProblem> {
    let (kind, option, context, device) = match &s.payload {
        Some(AuditPayload::GateDecided {
            gate_id,
            run_id,
            kind,
            option,
            context,
            device,
            ..
        }) if i64::from(*gate_id) == row.id && i64::from(*run_id) == row.run_id => {
            (kind, option, context, device)
        }
        other => {
            return Some(DecisionProblem::WrongRecord {
                detail: format!("a {} record", kind_of(other.as_ref())),
            });
        }
    };
    let fields = [
        ("kind", Some(row.kind.as_str()), Some(kind.as_str())),
        ("option", row.option.as_deref(), Some(option.as_str())),
        ("context", row.context.as_deref(), context.as_deref()),
        (
            "decided_by",
            row.by.as_deref(),
            Some(s.record.actor.as_str()),
        ),
    ];
    for (field, r, signed) in fields {
        if r != signed {
            return Some(DecisionProblem::Differs {
                field: field.to_owned(),
                row: shown(r),
                record: shown(signed),
            });
        }
    }
    if let Some(mut problem) = device_differs(row.device.as_deref(), device.as_ref()) {
        if let DecisionProblem::Differs { field, .. } = &mut problem {
            "decided_device".clone_into(field);
        }
        return Some(problem);
    }
    if row.at != Some(s.record.at) {
        return Some(DecisionProblem::Differs {
            field: "decided_at".to_owned(),
            row: row
                .at
                .map_or_else(|| "(none)".to_owned(), |a| a.to_string()),
            record: s.record.at.to_string(),
        });
    }
    None
}

/// What the signed record says a gate's decision is (restoring a row).
pub(crate) struct SignedDecision {
    pub option: String,
    pub context: Option<String>,
    pub by: String,
    pub at: i64,
    pub device: Option<overseer_core::DeviceRef>,
}

impl DecisionBook<'_> {
    /// The decision the latest verifying `gate_decided` record gives `gate`.
    pub(crate) fn signed_decision(
        &mut self,
        latest: Option<i64>,
    ) -> rusqlite::Result<Option<SignedDecision>> {
        let Some(seq) = latest else { return Ok(None) };
        let Some((record, None)) = self.record(seq)? else {
            return Ok(None);
        };
        Ok(match payload_of(&record) {
            Some(AuditPayload::GateDecided {
                option,
                context,
                device,
                ..
            }) => Some(SignedDecision {
                option,
                context,
                by: record.actor.clone(),
                at: record.at,
                device,
            }),
            _ => None,
        })
    }
}

/// One gate checked for its acting: its row against its latest record.
/// Pending rows are not looked up (nothing acts on them).
fn check_gate_for_acting(
    book: &mut DecisionBook<'_>,
    gate: i64,
) -> rusqlite::Result<Option<(GateRow, DecisionMismatch, Option<SignedDecision>)>> {
    let Some(row) = read_gate_row(book.conn, gate)? else {
        return Ok(None);
    };
    if !row.is_decided() {
        return Ok(None);
    }
    let latest = book.latest_gate_record(gate)?;
    let Some(mismatch) = book.check_gate(&row, latest)? else {
        return Ok(None);
    };
    let signed = book.signed_decision(latest)?;
    Ok(Some((row, mismatch, signed)))
}

/// Every mismatch about one gate: its row (also a pending one whose decision
/// was erased), its history and its votes. For the "Why?" story.
pub(crate) fn check_one_gate(
    conn: &Connection,
    keyring: &Keyring,
    gate: i64,
) -> rusqlite::Result<Vec<DecisionMismatch>> {
    let mut book = DecisionBook::new(conn, keyring);
    let rows = GateRows::read(conn, &mut book, gate)?;
    book.prefetch(rows.seqs())?;
    rows.check(&mut book)
}

/// A gate's decision rows: its own, its history, its votes, with the
/// latest signed record about it.
struct GateRows {
    row: Option<GateRow>,
    latest: Option<i64>,
    history: Vec<HistoryRow>,
    decisions: Vec<DecisionRow>,
}

impl GateRows {
    fn read(conn: &Connection, book: &mut DecisionBook<'_>, gate: i64) -> rusqlite::Result<Self> {
        let row = read_gate_row(conn, gate)?;
        let latest = match row {
            Some(_) => book.latest_gate_record(gate)?,
            None => None,
        };
        let history = conn
            .prepare_cached(&format!("{HISTORY_SELECT} WHERE gate_id = ?1 ORDER BY id"))?
            .query_map([gate], history_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(GateRows {
            row,
            latest,
            history,
            decisions: decisions_of_gate(conn, gate)?,
        })
    }

    /// Every record the rows name.
    fn seqs(&self) -> impl Iterator<Item = i64> + '_ {
        self.latest
            .into_iter()
            .chain(self.history.iter().map(|h| h.audit_seq))
            .chain(self.decisions.iter().map(|d| d.audit_seq))
    }

    /// Every mismatch among them (the gate's rows claim records among
    /// themselves).
    fn check(&self, book: &mut DecisionBook<'_>) -> rusqlite::Result<Vec<DecisionMismatch>> {
        book.forget_claims();
        let mut out = Vec::new();
        if let Some(row) = &self.row {
            out.extend(book.check_gate(row, self.latest)?);
        }
        for h in &self.history {
            out.extend(book.check_history(h)?);
        }
        for d in &self.decisions {
            out.extend(book.check_decision(d)?);
        }
        Ok(out)
    }
}

/// Every mismatch about one run: each of its gates (as [`check_one_gate`])
/// and its decisions that belong to no gate (rules, step verdicts, retries).
/// Every record they name is checked at once, signatures in batches.
pub(crate) fn check_one_run(
    conn: &Connection,
    keyring: &Keyring,
    run: i64,
) -> rusqlite::Result<Vec<DecisionMismatch>> {
    let gates: Vec<i64> = conn
        .prepare_cached("SELECT id FROM gates WHERE run_id = ?1 ORDER BY id")?
        .query_map([run], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut book = DecisionBook::new(conn, keyring);
    let mut per_gate = Vec::with_capacity(gates.len());
    for g in gates {
        per_gate.push(GateRows::read(conn, &mut book, g)?);
    }
    let loose = conn
        .prepare_cached(&format!(
            "{DECISION_ROW_SELECT} WHERE run_id = ?1 AND gate_id IS NULL ORDER BY id"
        ))?
        .query_map([run], decision_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    book.prefetch(
        per_gate
            .iter()
            .flat_map(GateRows::seqs)
            .chain(loose.iter().map(|d| d.audit_seq))
            .collect::<Vec<_>>(),
    )?;
    let mut out = Vec::new();
    for rows in &per_gate {
        out.extend(rows.check(&mut book)?);
    }
    book.forget_claims();
    for d in &loose {
        out.extend(book.check_decision(d)?);
    }
    Ok(out)
}

pub(crate) fn decisions_of_gate(
    conn: &Connection,
    gate: i64,
) -> rusqlite::Result<Vec<DecisionRow>> {
    conn.prepare_cached(&format!(
        "{DECISION_ROW_SELECT} WHERE gate_id = ?1 ORDER BY id"
    ))?
    .query_map([gate], decision_row)?
    .collect()
}

/// Every decision row of the database against its record, for `audit
/// verify`. `verified_below`: records before this seq were verified by the
/// chain pass (the first bad record, or one past the last).
pub(crate) fn check_all(
    conn: &Connection,
    keyring: &Keyring,
    verified_below: i64,
) -> rusqlite::Result<Vec<DecisionMismatch>> {
    let mut out = Vec::new();
    let mut book = DecisionBook::new(conn, keyring).trusting_chain_below(verified_below);
    // The latest gate_decided record of every gate, in one pass.
    let latest: HashMap<i64, i64> = conn
        .prepare(
            "SELECT json_extract(payload, '$.gate_id'), max(seq) FROM audit_log
             WHERE json_extract(payload, '$.type') = 'gate_decided'
             GROUP BY json_extract(payload, '$.gate_id')",
        )?
        .query_map([], |r| {
            Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, i64>(1)?))
        })?
        .filter_map(|r| match r {
            Ok((Some(g), s)) => Some(Ok((g, s))),
            Ok((None, _)) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<_>>()?;
    let gates = conn
        .prepare(&format!("{GATE_ROW_SELECT} ORDER BY id"))?
        .query_map([], gate_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for g in &gates {
        out.extend(book.check_gate(g, latest.get(&g.id).copied())?);
    }
    let history = conn
        .prepare(&format!("{HISTORY_SELECT} ORDER BY id"))?
        .query_map([], history_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for h in &history {
        out.extend(book.check_history(h)?);
    }
    let decisions = conn
        .prepare(&format!("{DECISION_ROW_SELECT} ORDER BY id"))?
        .query_map([], decision_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for d in &decisions {
        out.extend(book.check_decision(d)?);
    }
    Ok(out)
}

impl crate::WriteTx<'_> {
    /// Checks a decided gate's row against its latest signed record before
    /// anything acts on it. A row no verifying record backs is put back to
    /// what the signed record says (or to pending when no record says
    /// anything), with a signed `security_event` (`decision_without_record`)
    /// naming what was found. Returns what was wrong, if anything.
    pub fn reconcile_gate(
        &mut self,
        gate: overseer_core::GateId,
        now: overseer_core::Millis,
    ) -> Result<Option<DecisionMismatch>, crate::StoreError> {
        self.reconcile_gate_checked(gate, now, &mut Checked::new())
    }

    /// [`Self::reconcile_gate`], with the records `checked` ahead.
    fn reconcile_gate_checked(
        &mut self,
        gate: overseer_core::GateId,
        now: overseer_core::Millis,
        checked: &mut Checked,
    ) -> Result<Option<DecisionMismatch>, crate::StoreError> {
        let found = {
            let mut book = DecisionBook::new(self.conn(), self.keyring())
                .with_checked(std::mem::take(checked));
            let found = check_gate_for_acting(&mut book, gate.into());
            *checked = book.into_checked();
            found
        }
        .map_err(|e| self.sql(e))?;
        let Some((row, mismatch, signed)) = found else {
            return Ok(None);
        };
        let restored = match &signed {
            Some(d) => {
                self.conn()
                    .execute(
                        "UPDATE gates SET status = 'decided', decided_option = ?1,
                                decided_context = ?2, decided_by = ?3, decided_at = ?4,
                                decided_device = ?6
                         WHERE id = ?5",
                        params![
                            d.option,
                            d.context,
                            d.by,
                            d.at,
                            gate,
                            crate::decision::device_text(d.device.as_ref())
                        ],
                    )
                    .map_err(|e| self.sql(e))?;
                serde_json::json!({"status": "decided", "option": d.option, "by": d.by, "at": d.at})
            }
            None => {
                self.conn()
                    .execute(
                        "UPDATE gates SET status = 'pending', decided_option = NULL,
                                decided_context = NULL, decided_by = NULL, decided_at = NULL,
                                decided_device = NULL, effected_at = NULL
                         WHERE id = ?1",
                        [gate],
                    )
                    .map_err(|e| self.sql(e))?;
                serde_json::json!({"status": "pending"})
            }
        };
        self.append_audit(
            &overseer_core::Actor::Engine,
            &AuditPayload::SecurityEvent(SecurityPayload::DecisionWithoutRecord {
                gate_id: overseer_core::GateId(row.id),
                run_id: overseer_core::RunId(row.run_id),
                found: serde_json::json!({
                    "status": row.status,
                    "option": row.option,
                    "context": row.context,
                    "by": row.by,
                    "at": row.at,
                }),
                audit_seq: mismatch.audit_seq,
                problem: serde_json::to_value(&mismatch.problem).unwrap_or(Value::Null),
                restored,
                text: mismatch.to_string(),
            }),
            now,
        )?;
        // Pending again: the inbox shows it and the user is told again.
        let view = self.gate(gate)?;
        match view.decision {
            None => self.gate_opened(gate, view.run_id, view.kind()),
            Some(_) => {
                self.gate_changed(gate);
                self.run_changed(view.run_id, false);
            }
        }
        Ok(Some(mismatch))
    }

    /// The votes on a gate that their signed records back, each as its row.
    pub(crate) fn signed_votes_of_gate(
        &self,
        gate: overseer_core::GateId,
    ) -> Result<Vec<DecisionRow>, crate::StoreError> {
        let rows = decisions_of_gate(self.conn(), gate.into()).map_err(|e| self.sql(e))?;
        let mut book = DecisionBook::new(self.conn(), self.keyring());
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            // A row without its record does not count; `audit verify` and
            // "Why?" name it.
            if book
                .check_decision(&row)
                .map_err(|e| self.sql(e))?
                .is_none()
            {
                out.push(row);
            }
        }
        Ok(out)
    }
}

impl crate::WriteTx<'_> {
    /// [`Self::reconcile_gate`] on every decided gate nothing has acted on
    /// yet (at start, before recovery acts on any). Returns each gate that
    /// was put back, with what was wrong.
    pub fn reconcile_unacted(
        &mut self,
        now: overseer_core::Millis,
    ) -> Result<Vec<(overseer_core::GateView, DecisionMismatch)>, crate::StoreError> {
        let ids: Vec<i64> = self
            .conn()
            .prepare(
                // A released run's gates are never acted on again: a start
                // need not re-check them (their history only grows).
                "SELECT g.id FROM gates g JOIN runs r ON r.id = g.run_id
                 WHERE g.status = 'decided' AND g.effected_at IS NULL
                   AND r.state NOT LIKE 'released%' ORDER BY g.id",
            )
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| self.sql(e))?;
        // Their latest signed records are checked all at once (signatures
        // in batches, across cores), then each gate against its own.
        let mut checked = {
            let mut book = DecisionBook::new(self.conn(), self.keyring());
            let latest = ids
                .iter()
                .map(|&id| book.latest_gate_record(id))
                .collect::<rusqlite::Result<Vec<_>>>()
                .and_then(|latest| book.prefetch(latest.into_iter().flatten()));
            latest.map(|()| book.into_checked())
        }
        .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for id in ids {
            if let Some(m) =
                self.reconcile_gate_checked(overseer_core::GateId(id), now, &mut checked)?
            {
                out.push((self.gate(overseer_core::GateId(id))?, m));
            }
        }
        Ok(out)
    }
}
