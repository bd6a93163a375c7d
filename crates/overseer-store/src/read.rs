//! Read models. Used by `&Store` and inside write transactions alike.

use crate::{Store, StoreError};
use overseer_core::supervision::Autonomy;
use overseer_core::view::attention_rank;
use overseer_core::Activity;
use overseer_core::{
    Actor, GateDecision, GateId, GateKind, GateOption, GateStatus, GateView, PendingGate, RunId,
    RunState, RunView,
};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// Whether a pending gate `g` asks something of the user: every kind does
/// except an `info` item, which only tells (core's `AskKind::Info`, declared
/// in the gate's payload), and a gate the user snoozed (until it wakes).
macro_rules! gate_asks {
    () => {
        "(json_extract(g.payload, '$.ask_kind') IS NOT 'info' AND g.snoozed_until IS NULL)"
    };
}

/// The pending gate a run's row shows (`g`): the oldest that asks something,
/// else the oldest info item.
macro_rules! shown_pending_gate {
    () => {
        concat!(
            "FROM gates g WHERE g.run_id = r.id AND g.status = 'pending' ORDER BY (",
            gate_asks!(),
            ") IS 0, g.id LIMIT 1"
        )
    };
}

/// Whether run `r` needs the user: it waits for review, or a pending gate
/// asks something. The one definition of "needs you": rows, counts and the
/// dashboard's order keys all select it.
macro_rules! needs_you {
    () => {
        concat!(
            "(r.state = 'pending_review' OR EXISTS (SELECT 1 FROM gates g WHERE g.run_id = r.id AND g.status = 'pending' AND ",
            gate_asks!(),
            "))"
        )
    };
}

const RUN_SELECT: &str = concat!("
    SELECT r.id, r.task_id, t.title, w.name, r.agent, r.state, r.state_since, r.created_at,
           r.release_note,
           (SELECT g.id ", shown_pending_gate!(), "),
           (SELECT g.kind ", shown_pending_gate!(), "),
           (SELECT e.payload FROM run_events e WHERE e.run_id = r.id AND e.kind = 'plan' ORDER BY e.id DESC LIMIT 1),
           (SELECT json_group_array(json(s.payload)) FROM
               (SELECT e.payload FROM run_events e WHERE e.run_id = r.id AND e.kind = 'sensor' ORDER BY e.id) s),
           (SELECT g.id FROM gates g WHERE g.run_id = r.id ORDER BY g.id DESC LIMIT 1),
           (SELECT g.kind FROM gates g WHERE g.run_id = r.id ORDER BY g.id DESC LIMIT 1),
           r.origin, r.session_id, r.cwd,
           (SELECT json_object('ask_kind', json_extract(g.payload, '$.ask_kind'), 'auto_at', g.auto_at)
              ", shown_pending_gate!(), "),
           ", needs_you!(), ",
           r.usage,
           COALESCE(json_extract(t.settings, '$.max_cost'), json_extract(w.settings, '$.max_cost')),
           r.parent_run_id
    FROM runs r
    JOIN tasks t ON t.id = r.task_id
    JOIN workspaces w ON w.id = t.workspace_id");

const GATE_SELECT: &str = "
    SELECT id, run_id, kind, status, title, options, opened_at,
           decided_option, decided_context, decided_by, decided_at, payload,
           auto_at, auto_decision, authority, effected_at, decided_device, pending_effect,
           snoozed_until,
           (SELECT json_object('verdict', d.verdict, 'option', d.option,
                               'rationale', d.rationale, 'by', d.actor, 'at', d.at)
              FROM decisions d
             WHERE d.gate_id = gates.id AND d.actor LIKE 'supervisor%'
             ORDER BY d.id DESC LIMIT 1)
    FROM gates";

/// A row as stored, before its text columns are checked.
struct RawRun {
    view: RunView,
    state: String,
    gate: Option<(GateId, String)>,
    plan: Option<String>,
    sensors: Option<String>,
    last_gate: Option<(GateId, String)>,
    origin: String,
    session: Option<overseer_core::session::ExternalSession>,
    /// The pending gate's declared ask kind and timer, as JSON.
    gate_terms: Option<String>,
    /// The agent's latest usage report, as JSON.
    usage: Option<String>,
}

fn raw_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRun> {
    let gate_id: Option<GateId> = r.get(9)?;
    let gate_kind: Option<String> = r.get(10)?;
    Ok(RawRun {
        view: RunView {
            id: r.get(0)?,
            task_id: r.get(1)?,
            task_title: r.get(2)?,
            workspace: r.get(3)?,
            agent: r.get(4)?,
            state: RunState::Queued,
            state_since: r.get(6)?,
            created_at: r.get(7)?,
            needs_you: r.get(19)?,
            attention_rank: 0,
            release_note: r.get(8)?,
            pending_gate: None,
            current_step: None,
            sensors: None,
            last_gate: None,
            origin: overseer_core::RunOrigin::Launched,
            session: None,
            actions: Default::default(),
            usage: None,
            max_cost: r.get(21)?,
            parent: r.get(22)?,
        },
        usage: r.get(20)?,
        origin: r.get(15)?,
        gate_terms: r.get(18)?,
        session: {
            let id: Option<String> = r.get(16)?;
            let cwd: Option<String> = r.get(17)?;
            id.map(|session_id| overseer_core::session::ExternalSession {
                session_id,
                cwd: cwd.unwrap_or_default(),
            })
        },
        state: r.get(5)?,
        gate: gate_id.zip(gate_kind),
        plan: r.get(11)?,
        sensors: r.get(12)?,
        last_gate: {
            let id: Option<GateId> = r.get(13)?;
            let kind: Option<String> = r.get(14)?;
            id.zip(kind)
        },
    })
}

fn finish_run(raw: RawRun, path: &Path) -> Result<RunView, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.to_owned(),
        detail,
    };
    let mut view = raw.view;
    view.state = RunState::from_db(&raw.state)
        .ok_or_else(|| corrupt(format!("run {} has unknown state '{}'", view.id, raw.state)))?;
    let gate = |g: Option<(GateId, String)>| {
        g.map(|(id, kind)| {
            let kind = GateKind::parse(&kind)
                .ok_or_else(|| corrupt(format!("gate {id} has unknown kind '{kind}'")))?;
            Ok(PendingGate {
                id,
                kind,
                ask_kind: overseer_core::ask_kind(kind, None, None),
            })
        })
        .transpose()
    };
    view.origin = overseer_core::RunOrigin::parse(&raw.origin).ok_or_else(|| {
        corrupt(format!(
            "run {} has unknown origin '{}'",
            view.id, raw.origin
        ))
    })?;
    view.session = raw.session;
    view.pending_gate = gate(raw.gate)?;
    if let Some(g) = view.pending_gate.as_mut() {
        let terms: serde_json::Value = raw
            .gate_terms
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let auto_at = terms.get("auto_at").and_then(serde_json::Value::as_i64);
        let declared = terms
            .get("ask_kind")
            .and_then(serde_json::Value::as_str)
            .and_then(overseer_core::AskKind::parse);
        g.ask_kind = overseer_core::ask_kind(g.kind, declared, auto_at);
    }
    view.last_gate = gate(raw.last_gate)?;
    // Checked when it was written; a text that does not parse shows as no
    // usage, it never makes the run unreadable.
    view.usage = raw.usage.and_then(|u| serde_json::from_str(&u).ok());
    view.attention_rank = attention_rank(view.state, view.needs_you, view.state_since);
    view.actions = overseer_core::view::run_actions(view.state, view.origin);
    // Agent-reported progress: text that does not parse shows as no progress,
    // it never makes the run unreadable.
    view.current_step = raw
        .plan
        .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
        .and_then(|p| {
            let Activity::Plan { entries } = Activity::decode("plan", p) else {
                return None;
            };
            overseer_core::view::current_step(&entries)
        });
    view.sensors = raw
        .sensors
        .and_then(|s| serde_json::from_str::<Vec<serde_json::Value>>(&s).ok())
        .and_then(|s| {
            let runs: Vec<_> = s
                .into_iter()
                .filter_map(|p| {
                    let Activity::Sensor(run) = Activity::decode("sensor", p) else {
                        return None;
                    };
                    Some(run)
                })
                .collect();
            overseer_core::view::sensor_summary(&runs)
        });
    Ok(view)
}

pub(crate) fn run(conn: &Connection, path: &Path, id: RunId) -> Result<RunView, StoreError> {
    let raw = conn
        .prepare_cached(&format!("{RUN_SELECT} WHERE r.id = ?1"))
        .and_then(|mut s| s.query_row(params![id], raw_run).optional())
        .map_err(|e| StoreError::from_sqlite(e, path))?
        .ok_or(StoreError::NotFound {
            what: "run",
            id: id.into(),
        })?;
    finish_run(raw, path)
}

pub(crate) fn runs(conn: &Connection, path: &Path) -> Result<Vec<RunView>, StoreError> {
    let raws = conn
        .prepare_cached(&format!("{RUN_SELECT} ORDER BY r.id"))
        .and_then(|mut s| {
            s.query_map([], raw_run)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| StoreError::from_sqlite(e, path))?;
    raws.into_iter().map(|r| finish_run(r, path)).collect()
}

/// One run's place in the fleet dashboard, without its row: what the
/// first screen and the header counts need of every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOrderKey {
    pub id: RunId,
    pub state: RunState,
    pub needs_you: bool,
    /// Core's [`attention_rank`], as the row itself carries it.
    pub attention_rank: i64,
}

/// Every run's ordering columns for the fleet dashboard, in one scan (cheap
/// beside building every row): its state, whether it needs the user (the
/// same `needs_you!` the rows select) and its attention rank.
pub(crate) fn run_order_keys(
    conn: &Connection,
    path: &Path,
) -> Result<Vec<RunOrderKey>, StoreError> {
    let raws = conn
        .prepare_cached(concat!(
            "SELECT r.id, r.state, r.state_since, ",
            needs_you!(),
            " FROM runs r"
        ))
        .and_then(|mut s| {
            s.query_map([], |r| {
                Ok((
                    r.get::<_, RunId>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, bool>(3)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| StoreError::from_sqlite(e, path))?;
    raws.into_iter()
        .map(|(id, state, since, needs_you)| {
            let state = RunState::from_db(&state).ok_or_else(|| StoreError::Corrupt {
                path: path.to_owned(),
                detail: format!("run {id} has unknown state '{state}'"),
            })?;
            Ok(RunOrderKey {
                id,
                state,
                needs_you,
                attention_rank: attention_rank(state, needs_you, since),
            })
        })
        .collect()
}

/// How many runs need the user (the same `needs_you!` the rows select).
/// One query, for counts shown often.
pub(crate) fn needs_you_count(conn: &Connection, path: &Path) -> Result<usize, StoreError> {
    let n: i64 = conn
        .prepare_cached(concat!("SELECT COUNT(*) FROM runs r WHERE ", needs_you!()))
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(|e| StoreError::from_sqlite(e, path))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

struct RawGate {
    view: GateView,
    kind: String,
    status: String,
    options: String,
    payload: String,
    decided: Option<(String, Option<String>, String, i64)>,
    decided_device: Option<String>,
    authority: Option<String>,
    pending_effect: Option<String>,
    /// The supervisor's latest decision on the gate, as a JSON object.
    advice: Option<String>,
}

fn raw_gate(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawGate> {
    let option: Option<String> = r.get(7)?;
    let context: Option<String> = r.get(8)?;
    let by: Option<String> = r.get(9)?;
    let at: Option<i64> = r.get(10)?;
    Ok(RawGate {
        view: GateView {
            id: r.get(0)?,
            run_id: r.get(1)?,
            body: overseer_core::GateBody::empty(GateKind::Question),
            unreadable_payload: None,
            status: GateStatus::Pending,
            title: r.get(4)?,
            options: Vec::new(),
            opened_at: r.get(6)?,
            decision: None,
            auto_at: r.get(12)?,
            auto_option: r.get(13)?,
            authority: None,
            effected: r.get::<_, Option<i64>>(15)?.is_some(),
            ask_kind: overseer_core::gate::AskKind::Blocking,
            batch_option: None,
            pending_effect: None,
            snoozed_until: r.get(18)?,
            advice: None,
        },
        authority: r.get(14)?,
        kind: r.get(2)?,
        status: r.get(3)?,
        options: r.get(5)?,
        payload: r.get(11)?,
        decided: match (option, by, at) {
            (Some(o), Some(b), Some(a)) => Some((o, context, b, a)),
            _ => None,
        },
        decided_device: r.get(16)?,
        pending_effect: r.get(17)?,
        advice: r.get(19)?,
    })
}

fn finish_gate(raw: RawGate, path: &Path) -> Result<GateView, StoreError> {
    let id = raw.view.id;
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.to_owned(),
        detail: format!("gate {id}: {detail}"),
    };
    let mut view = raw.view;
    let kind = GateKind::parse(&raw.kind).ok_or_else(|| corrupt(format!("kind '{}'", raw.kind)))?;
    view.status = GateStatus::parse(&raw.status)
        .ok_or_else(|| corrupt(format!("status '{}'", raw.status)))?;
    view.options = serde_json::from_str::<Vec<GateOption>>(&raw.options)
        .map_err(|e| corrupt(format!("options: {e}")))?;
    // A payload an older version wrote in another shape still opens: kept
    // raw beside an empty payload of its kind, never an unreadable gate.
    (view.body, view.unreadable_payload) = overseer_core::GateBody::decode(kind, &raw.payload);
    view.ask_kind = view.body.ask_kind(view.auto_at);
    view.authority = match raw.authority {
        Some(a) => Some(Autonomy::parse(&a).ok_or_else(|| corrupt(format!("authority '{a}'")))?),
        None => None,
    };
    view.decision = match raw.decided {
        Some((option, context, by, at)) => {
            let device =
                crate::decision::device_of_text(raw.decided_device.as_deref()).map_err(corrupt)?;
            let actor = Actor::parse(&by).ok_or_else(|| corrupt(format!("actor '{by}'")))?;
            Some(GateDecision {
                option,
                context,
                actor: overseer_core::device::actor_through(actor, device.clone()),
                at,
                device,
            })
        }
        None => None,
    };
    view.batch_option = overseer_core::view::batch_choice(&view).map(|c| c.as_str().to_owned());
    // Only a pending gate waits for an effect: once decided, the decision
    // says who decided.
    // Shown only: a row that does not read as advice is left out, never a
    // reason to refuse the gate ("Why?" shows every decision as recorded).
    view.advice = raw.advice.and_then(|text| serde_json::from_str(&text).ok());
    if view.status == GateStatus::Pending {
        view.pending_effect = match raw.pending_effect {
            Some(text) => Some(
                serde_json::from_str(&text)
                    .map_err(|e| corrupt(format!("pending effect '{text}': {e}")))?,
            ),
            None => None,
        };
    }
    Ok(view)
}

pub(crate) fn gate(conn: &Connection, path: &Path, id: GateId) -> Result<GateView, StoreError> {
    let raw = conn
        .prepare_cached(&format!("{GATE_SELECT} WHERE id = ?1"))
        .and_then(|mut s| s.query_row(params![id], raw_gate).optional())
        .map_err(|e| StoreError::from_sqlite(e, path))?
        .ok_or(StoreError::NotFound {
            what: "gate",
            id: id.into(),
        })?;
    finish_gate(raw, path)
}

pub(crate) fn gates(
    conn: &Connection,
    path: &Path,
    only_pending: bool,
) -> Result<Vec<GateView>, StoreError> {
    let sql = if only_pending {
        format!("{GATE_SELECT} WHERE status = 'pending' ORDER BY id")
    } else {
        format!("{GATE_SELECT} ORDER BY id")
    };
    let raws = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map([], raw_gate)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| StoreError::from_sqlite(e, path))?;
    raws.into_iter().map(|r| finish_gate(r, path)).collect()
}

/// One page of gates in id order: at most `limit` after gate `after`
/// (pending ones only, or all), with how many match in all and how many
/// come after the page. The page is an indexed range of `gates_by_status`
/// (pending) or of the primary key, the total is read from `gate_counts`
/// (kept by triggers), and for the first page what is left is the total
/// less the page: the cost is the page's, not the number pending. (Only a
/// later page counts what comes after it, an indexed count of those.)
pub(crate) fn gates_page(
    conn: &Connection,
    path: &Path,
    only_pending: bool,
    after: Option<GateId>,
    limit: usize,
) -> Result<GatePage, StoreError> {
    // The inbox: a snoozed gate is not listed until it wakes.
    let filter = if only_pending {
        "status = 'pending' AND snoozed_until IS NULL AND"
    } else {
        ""
    };
    let after = after.map_or(0, i64::from);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let err = |e| StoreError::from_sqlite(e, path);
    let raws = conn
        .prepare_cached(&format!(
            "{GATE_SELECT} WHERE {filter} id > ?1 ORDER BY id LIMIT ?2"
        ))
        .and_then(|mut s| {
            s.query_map(params![after, limit], raw_gate)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(err)?;
    let count = |sql: &str, p: &[i64]| -> Result<usize, StoreError> {
        conn.prepare_cached(sql)
            .and_then(|mut s| s.query_row(rusqlite::params_from_iter(p), |r| r.get::<_, i64>(0)))
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(err)
    };
    let total = if only_pending {
        count(
            "SELECT COALESCE(SUM(n), 0) FROM gate_counts WHERE status = 'pending'",
            &[],
        )?
        .saturating_sub(count(
            "SELECT COUNT(*) FROM gates WHERE status = 'pending' AND snoozed_until IS NOT NULL",
            &[],
        )?)
    } else {
        count("SELECT COALESCE(SUM(n), 0) FROM gate_counts", &[])?
    };
    let remaining = if after == 0 {
        total.saturating_sub(raws.len())
    } else {
        let last = raws.last().map_or(after, |r| i64::from(r.view.id));
        count(
            &format!("SELECT COUNT(*) FROM gates WHERE {filter} id > ?1"),
            &[last],
        )?
    };
    let gates = raws
        .into_iter()
        .map(|r| finish_gate(r, path))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(GatePage {
        gates,
        total,
        remaining,
    })
}

/// A page of gates ([`Store::gates_page`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GatePage {
    pub gates: Vec<GateView>,
    /// How many gates match in all (pending ones, or every gate).
    pub total: usize,
    /// How many match after the page's last gate.
    pub remaining: usize,
}

/// Every pending gate of one run.
pub(crate) fn pending_gates_of_run(
    conn: &Connection,
    path: &Path,
    run: RunId,
) -> Result<Vec<GateView>, StoreError> {
    let raws = conn
        .prepare_cached(&format!(
            "{GATE_SELECT} WHERE status = 'pending' AND run_id = ?1 ORDER BY id"
        ))
        .and_then(|mut s| {
            s.query_map(params![run], raw_gate)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| StoreError::from_sqlite(e, path))?;
    raws.into_iter().map(|r| finish_gate(r, path)).collect()
}

/// The pending gate of `kind` on `run`, if there is one.
pub(crate) fn pending_gate_of(
    conn: &Connection,
    path: &Path,
    run: RunId,
    kind: GateKind,
) -> Result<Option<GateId>, StoreError> {
    conn.prepare_cached(
        "SELECT id FROM gates WHERE run_id = ?1 AND kind = ?2 AND status = 'pending' ORDER BY id LIMIT 1",
    )
    .and_then(|mut s| s.query_row(params![run, kind.as_str()], |r| r.get(0)).optional())
    .map_err(|e| StoreError::from_sqlite(e, path))
}

/// Read access on an open store.
impl Store {
    pub fn run(&self, id: RunId) -> Result<RunView, StoreError> {
        run(&self.conn, &self.path, id)
    }

    pub fn runs(&self) -> Result<Vec<RunView>, StoreError> {
        runs(&self.conn, &self.path)
    }

    /// Every run's place in the dashboard (state, needs you, attention
    /// rank), without building any row.
    pub fn run_order_keys(&self) -> Result<Vec<RunOrderKey>, StoreError> {
        run_order_keys(&self.conn, &self.path)
    }

    /// How many runs need the user (rows with `needs_you`), without
    /// building every row.
    pub fn needs_you_count(&self) -> Result<usize, StoreError> {
        needs_you_count(&self.conn, &self.path)
    }

    pub fn gate(&self, id: GateId) -> Result<GateView, StoreError> {
        gate(&self.conn, &self.path, id)
    }

    pub fn gates(&self, only_pending: bool) -> Result<Vec<GateView>, StoreError> {
        gates(&self.conn, &self.path, only_pending)
    }

    /// At most `limit` gates after `after`, in id order, with the counts
    /// (see [`GatePage`]).
    pub fn gates_page(
        &self,
        only_pending: bool,
        after: Option<GateId>,
        limit: usize,
    ) -> Result<GatePage, StoreError> {
        gates_page(&self.conn, &self.path, only_pending, after, limit)
    }

    /// Every pending gate of one run (an indexed read of that run's only).
    pub fn pending_gates_of_run(&self, run: RunId) -> Result<Vec<GateView>, StoreError> {
        pending_gates_of_run(&self.conn, &self.path, run)
    }

    /// How many gates of one run are pending (an indexed count).
    pub fn pending_count_of_run(&self, run: RunId) -> Result<usize, StoreError> {
        self.conn
            .prepare_cached("SELECT COUNT(*) FROM gates WHERE status = 'pending' AND run_id = ?1")
            .and_then(|mut s| s.query_row(params![run], |r| r.get::<_, i64>(0)))
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// Audit records from `from_seq` on, at most `limit`.
    pub fn audit_records(
        &self,
        from_seq: i64,
        limit: i64,
    ) -> Result<Vec<crate::AuditRecord>, StoreError> {
        crate::audit::read_records(&self.conn, from_seq, limit)
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }

    /// Number of records in the audit log.
    pub fn audit_len(&self) -> Result<i64, StoreError> {
        crate::audit::head(&self.conn)
            .map(|(seq, _)| seq)
            .map_err(|e| StoreError::from_sqlite(e, &self.path))
    }
}
