//! Migrations, tracked in `PRAGMA user_version`.
//!
//! Each entry of [`MIGRATIONS`] moves the schema one version up and runs in its
//! own transaction. A database whose version is above what this build knows is
//! refused before anything is written to it. (Hand-written rather than a crate:
//! it is thirty lines, and we need the newer-version refusal to be ours.)

use crate::StoreError;
use rusqlite::Connection;
use std::path::Path;

const MIGRATIONS: &[&str] = &[
    // 1: the spine: workspaces, tasks, runs, gates, the audit log.
    r#"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT;
    INSERT INTO meta(key, value) VALUES ('db_id', lower(hex(randomblob(16))));

    CREATE TABLE workspaces (
        id         INTEGER PRIMARY KEY,
        name       TEXT NOT NULL UNIQUE,
        path       TEXT NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE tasks (
        id           INTEGER PRIMARY KEY,
        workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
        title        TEXT NOT NULL,
        prompt       TEXT NOT NULL,
        stage        TEXT NOT NULL DEFAULT 'default',
        created_at   INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE runs (
        id           INTEGER PRIMARY KEY,
        task_id      INTEGER NOT NULL REFERENCES tasks(id),
        agent        TEXT NOT NULL,
        state        TEXT NOT NULL,
        state_since  INTEGER NOT NULL,
        created_at   INTEGER NOT NULL,
        release_note TEXT
    ) STRICT;
    CREATE INDEX runs_by_state ON runs(state);

    CREATE TABLE run_transitions (
        id         INTEGER PRIMARY KEY,
        run_id     INTEGER NOT NULL REFERENCES runs(id),
        from_state TEXT NOT NULL,
        to_state   TEXT NOT NULL,
        event      TEXT NOT NULL,
        actor      TEXT NOT NULL,
        at         INTEGER NOT NULL,
        audit_seq  INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX run_transitions_by_run ON run_transitions(run_id);

    CREATE TABLE gates (
        id              INTEGER PRIMARY KEY,
        run_id          INTEGER NOT NULL REFERENCES runs(id),
        kind            TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('pending', 'decided')),
        title           TEXT NOT NULL,
        options         TEXT NOT NULL,
        payload         TEXT NOT NULL DEFAULT '{}',
        opened_at       INTEGER NOT NULL,
        auto_at         INTEGER,
        auto_decision   TEXT,
        decided_option  TEXT,
        decided_context TEXT,
        decided_by      TEXT,
        decided_at      INTEGER
    ) STRICT;
    CREATE INDEX gates_pending ON gates(status, run_id);

    CREATE TABLE gate_decisions (
        id        INTEGER PRIMARY KEY,
        gate_id   INTEGER NOT NULL REFERENCES gates(id),
        option    TEXT NOT NULL,
        context   TEXT,
        actor     TEXT NOT NULL,
        at        INTEGER NOT NULL,
        audit_seq INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX gate_decisions_by_gate ON gate_decisions(gate_id);

    CREATE TABLE audit_log (
        seq          INTEGER PRIMARY KEY,
        prev_hash    TEXT NOT NULL,
        payload      TEXT NOT NULL,
        payload_hash TEXT NOT NULL,
        actor        TEXT NOT NULL,
        at           INTEGER NOT NULL,
        record_hash  TEXT NOT NULL,
        signature    TEXT NOT NULL
    ) STRICT;

    CREATE TABLE audit_checkpoints (
        id        INTEGER PRIMARY KEY,
        count     INTEGER NOT NULL,
        head_hash TEXT NOT NULL,
        at        INTEGER NOT NULL,
        signature TEXT NOT NULL
    ) STRICT;
    "#,
    // 2: runs do work: worktrees, run options, the activity timeline.
    r#"
    ALTER TABLE workspaces ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE runs ADD COLUMN worktree TEXT;
    ALTER TABLE runs ADD COLUMN branch TEXT;
    ALTER TABLE runs ADD COLUMN base_ref TEXT;
    ALTER TABLE runs ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE runs ADD COLUMN resumed_from INTEGER REFERENCES runs(id);

    CREATE TABLE run_events (
        id      INTEGER PRIMARY KEY,
        run_id  INTEGER NOT NULL REFERENCES runs(id),
        at      INTEGER NOT NULL,
        kind    TEXT NOT NULL,
        payload TEXT NOT NULL
    ) STRICT;
    CREATE INDEX run_events_by_run ON run_events(run_id, id);
    "#,
    // 3: supervision: per-task settings, the supervisor's authority on each
    // gate, decisions with their rationale (the "Why?" story), effects.
    r#"
    ALTER TABLE tasks ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE gates ADD COLUMN authority TEXT;
    ALTER TABLE gates ADD COLUMN approve_option TEXT;
    ALTER TABLE gates ADD COLUMN effected_at INTEGER;
    CREATE INDEX gates_timers ON gates(status, auto_at);

    CREATE TABLE decisions (
        id             INTEGER PRIMARY KEY,
        run_id         INTEGER NOT NULL REFERENCES runs(id),
        gate_id        INTEGER REFERENCES gates(id),
        actor          TEXT NOT NULL,
        verdict        TEXT NOT NULL,
        option         TEXT,
        rationale      TEXT,
        correction     TEXT,
        rule_ref       TEXT,
        model_id       TEXT,
        prompt_version TEXT,
        confidence     REAL,
        source_event   TEXT,
        at             INTEGER NOT NULL,
        audit_seq      INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX decisions_by_gate ON decisions(gate_id, id);
    CREATE INDEX decisions_by_run ON decisions(run_id, id);
    "#,
    // 4: each row names its run's latest gate (the "Why?" of a decided run).
    r#"
    CREATE INDEX gates_by_run ON gates(run_id, id);
    "#,
    // 5: runs in repositories of their own: the commit a run started from,
    // the commit its review showed, and each merge's intent recorded before
    // git runs (so a crash between git and the database never merges twice).
    r#"
    ALTER TABLE runs ADD COLUMN base_commit TEXT;
    ALTER TABLE runs ADD COLUMN reviewed_tip TEXT;

    CREATE TABLE merges (
        run_id       INTEGER PRIMARY KEY REFERENCES runs(id),
        base_ref     TEXT NOT NULL,
        base_before  TEXT NOT NULL,
        tip          TEXT NOT NULL,
        merge_commit TEXT,
        status       TEXT NOT NULL CHECK (status IN ('started', 'done')),
        outcome      TEXT,
        actor        TEXT NOT NULL,
        started_at   INTEGER NOT NULL,
        done_at      INTEGER
    ) STRICT;
    CREATE INDEX merges_by_tip ON merges(tip);
    "#,
    // 6: agents from outside (hooks, MCP) as runs of their own origin;
    // an asker's key on each gate (asked again after a reconnect, it finds
    // the same gate); agent-to-agent messages through the hub.
    r#"
    ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'launched';
    ALTER TABLE runs ADD COLUMN session_id TEXT;
    ALTER TABLE runs ADD COLUMN cwd TEXT;
    CREATE INDEX runs_by_session ON runs(origin, session_id) WHERE session_id IS NOT NULL;

    ALTER TABLE gates ADD COLUMN ask_key TEXT;
    CREATE INDEX gates_by_ask_key ON gates(run_id, ask_key) WHERE ask_key IS NOT NULL;

    CREATE TABLE messages (
        id             INTEGER PRIMARY KEY,
        from_run       INTEGER REFERENCES runs(id),
        sender         TEXT NOT NULL,
        recipient      TEXT NOT NULL CHECK (recipient IN ('supervisor', 'user', 'broadcast', 'run')),
        to_run         INTEGER REFERENCES runs(id),
        body           TEXT NOT NULL,
        correlation_id TEXT,
        status         TEXT NOT NULL CHECK (status IN ('delivered', 'blocked')),
        blocked_reason TEXT,
        at             INTEGER NOT NULL,
        audit_seq      INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX messages_by_run ON messages(from_run, id);
    CREATE INDEX messages_to_run ON messages(to_run, id);
    "#,
    // 7: steering waits in the database for the run's next turn (it used to
    // be lost on a restart).
    r#"
    CREATE TABLE steering (
        id       INTEGER PRIMARY KEY,
        run_id   INTEGER NOT NULL REFERENCES runs(id),
        text     TEXT NOT NULL,
        actor    TEXT NOT NULL,
        at       INTEGER NOT NULL,
        taken_at INTEGER
    ) STRICT;
    CREATE INDEX steering_waiting ON steering(run_id) WHERE taken_at IS NULL;
    "#,
    // 8: the latest signed decision of a gate is found by index, not by
    // scanning the log (at start every unacted gate is checked: with
    // thousands of gates the scans took minutes).
    r#"
    CREATE INDEX audit_gate_decided ON audit_log(json_extract(payload, '$.gate_id'), seq)
        WHERE json_extract(payload, '$.type') = 'gate_decided';
    "#,
    // 9: where each launched run is (planning, which step of which plan),
    // so that a restarted engine carries the run on instead of dropping it.
    r#"
    CREATE TABLE run_progress (
        run_id     INTEGER PRIMARY KEY REFERENCES runs(id),
        checkpoint TEXT NOT NULL,
        at         INTEGER NOT NULL
    ) STRICT;
    "#,
    // 10: a permission rule's decision keeps which rules decided and their
    // layers, typed (JSON: [{"layer": "task", "rule": "Edit(src/**)"}]).
    // NULL for other decisions and for rows written before: their rationale
    // names the layer in words.
    r#"
    ALTER TABLE decisions ADD COLUMN provenance TEXT;
    "#,
    // 11: the pending gates in id order, a page at a time, and how many
    // gates there are of each status kept by triggers (`gates list` with
    // 2,000 pending asks costs what it does with 10: no count scans them).
    r#"
    CREATE INDEX gates_by_status ON gates(status, id);
    CREATE TABLE gate_counts (
        status TEXT PRIMARY KEY,
        n      INTEGER NOT NULL
    ) STRICT;
    INSERT INTO gate_counts(status, n) SELECT status, COUNT(*) FROM gates GROUP BY status;
    CREATE TRIGGER gate_counts_insert AFTER INSERT ON gates BEGIN
        INSERT INTO gate_counts(status, n) VALUES (NEW.status, 1)
            ON CONFLICT(status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER gate_counts_update AFTER UPDATE OF status ON gates
        WHEN OLD.status IS NOT NEW.status BEGIN
        UPDATE gate_counts SET n = n - 1 WHERE status = OLD.status;
        INSERT INTO gate_counts(status, n) VALUES (NEW.status, 1)
            ON CONFLICT(status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER gate_counts_delete AFTER DELETE ON gates BEGIN
        UPDATE gate_counts SET n = n - 1 WHERE status = OLD.status;
    END;
    "#,
    // 12: paired devices (browsers, phones) and the one-time codes that pair
    // them: credentials and codes are kept only as SHA-256 hashes; a run of
    // wrong codes locks pairing out for a while (`pairing_lockout`, one
    // row). A decision made through a device names it (JSON `{"id", "name"}`,
    // as its signed record says; NULL for the local owner's and older rows).
    r#"
    CREATE TABLE devices (
        id              INTEGER PRIMARY KEY,
        person          TEXT NOT NULL,
        name            TEXT NOT NULL,
        credential_hash TEXT NOT NULL UNIQUE,
        created_at      INTEGER NOT NULL,
        last_seen_at    INTEGER,
        revoked_at      INTEGER,
        revoked_by      TEXT
    ) STRICT;

    CREATE TABLE pairing_codes (
        id          INTEGER PRIMARY KEY,
        code_hash   TEXT NOT NULL,
        person      TEXT NOT NULL,
        device_name TEXT NOT NULL,
        issued_by   TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        redeemed_at INTEGER,
        device_id   INTEGER REFERENCES devices(id)
    ) STRICT;
    CREATE INDEX pairing_codes_by_hash ON pairing_codes(code_hash);

    CREATE TABLE pairing_lockout (
        id           INTEGER PRIMARY KEY CHECK (id = 1),
        failures     INTEGER NOT NULL,
        locked_until INTEGER
    ) STRICT;
    INSERT INTO pairing_lockout(id, failures) VALUES (1, 0);

    ALTER TABLE gates ADD COLUMN decided_device TEXT;
    ALTER TABLE gate_decisions ADD COLUMN device TEXT;
    ALTER TABLE decisions ADD COLUMN device TEXT;
    "#,
    // 13: webhooks: each hook (its URL, its secret, the event kinds it gets),
    // each delivery queued for it (pending until delivered or given up on;
    // a restarted engine goes on with the pending ones) and
    // each attempt (its time, HTTP status or error, duration). `event_key`
    // names what a delivery is about (a gate opened, a run finished): the
    // same thing is never queued twice for a hook, also not when a
    // restart tells of every pending gate again.
    r#"
    CREATE TABLE webhooks (
        id         INTEGER PRIMARY KEY,
        url        TEXT NOT NULL,
        secret     TEXT NOT NULL,
        events     TEXT NOT NULL,
        enabled    INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE webhook_deliveries (
        id         INTEGER PRIMARY KEY,
        webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event      TEXT NOT NULL,
        event_key  TEXT,
        body       TEXT NOT NULL,
        status     TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts   INTEGER NOT NULL DEFAULT 0,
        next_at    INTEGER,
        note       TEXT,
        created_at INTEGER NOT NULL,
        UNIQUE (webhook_id, event_key)
    ) STRICT;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_at);
    CREATE INDEX webhook_deliveries_by_hook ON webhook_deliveries(webhook_id, id);
    CREATE TABLE webhook_attempts (
        id          INTEGER PRIMARY KEY,
        delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        at          INTEGER NOT NULL,
        status_code INTEGER,
        error       TEXT,
        duration_ms INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts(delivery_id, id);
    "#,
    // 14: each run's latest usage as its agent reported it (context used and
    // size, cumulative cost and currency: core's `RunUsage` as JSON; NULL
    // until the agent reports any).
    r#"
    ALTER TABLE runs ADD COLUMN usage TEXT;
    "#,
    // 15: pairing codes are burned rather than pairing locked: after too
    // many wrong tries while codes are outstanding, those codes are burned
    // (`burned_at`); `pairing_lockout.failures` counts the wrong tries
    // against the outstanding codes, its `locked_until` is no longer set, and
    // a lock left from before is lifted.
    r#"
    ALTER TABLE pairing_codes ADD COLUMN burned_at INTEGER;
    UPDATE pairing_lockout SET failures = 0, locked_until = NULL;
    "#,
    // 16: an autonomous supervisor's decision waiting for its grace period
    // (core's `PendingEffect` as JSON: option, verdict, by, at, rationale;
    // NULL when none). The signed vote behind it is in `decisions`; this
    // only says when it takes effect.
    r#"
    ALTER TABLE gates ADD COLUMN pending_effect TEXT;
    "#,
    // 17: an inbox item snoozed until a time (NULL: not snoozed). A snoozed
    // gate asks nothing until then: it is out of the inbox and "needs you".
    r#"
    ALTER TABLE gates ADD COLUMN snoozed_until INTEGER;
    CREATE INDEX gates_snoozed ON gates(status, snoozed_until);
    "#,
    // 18: a consultation's link to the run that asked it (`consult`: a
    // read-only child run; NULL for every other run).
    r#"
    ALTER TABLE runs ADD COLUMN parent_run_id INTEGER REFERENCES runs(id);
    CREATE INDEX runs_by_parent ON runs(parent_run_id) WHERE parent_run_id IS NOT NULL;
    "#,
    // 19: a broadcast scoped to a workspace or a task (`recipient` gains
    // 'workspace' and 'task', with the one they name). SQLite cannot widen
    // a CHECK constraint in place: the table is rebuilt, its rows kept.
    r#"
    CREATE TABLE messages_scoped (
        id             INTEGER PRIMARY KEY,
        from_run       INTEGER REFERENCES runs(id),
        sender         TEXT NOT NULL,
        recipient      TEXT NOT NULL CHECK (recipient IN ('supervisor', 'user', 'broadcast', 'run', 'workspace', 'task')),
        to_run         INTEGER REFERENCES runs(id),
        to_workspace   INTEGER REFERENCES workspaces(id),
        to_task        INTEGER REFERENCES tasks(id),
        body           TEXT NOT NULL,
        correlation_id TEXT,
        status         TEXT NOT NULL CHECK (status IN ('delivered', 'blocked')),
        blocked_reason TEXT,
        at             INTEGER NOT NULL,
        audit_seq      INTEGER NOT NULL,
        CHECK ((recipient = 'workspace') = (to_workspace IS NOT NULL)),
        CHECK ((recipient = 'task') = (to_task IS NOT NULL))
    ) STRICT;
    INSERT INTO messages_scoped(id, from_run, sender, recipient, to_run, body, correlation_id,
                                status, blocked_reason, at, audit_seq)
        SELECT id, from_run, sender, recipient, to_run, body, correlation_id,
               status, blocked_reason, at, audit_seq
        FROM messages;
    DROP TABLE messages;
    ALTER TABLE messages_scoped RENAME TO messages;
    CREATE INDEX messages_by_run ON messages(from_run, id);
    CREATE INDEX messages_to_run ON messages(to_run, id);
    CREATE INDEX messages_to_workspace ON messages(to_workspace, id) WHERE to_workspace IS NOT NULL;
    CREATE INDEX messages_to_task ON messages(to_task, id) WHERE to_task IS NOT NULL;
    "#,
    // 20: what each person may do (`people`): a role the owner gives
    // (`approver`, in the workspaces named as a JSON array, NULL: every one;
    // or `observer`). The people paired before roles existed become
    // approvers of every workspace, marked `migrated` so the engine says so
    // once at start and Settings shows it; they lose only the owner's powers.
    r#"
    CREATE TABLE people (
        person     TEXT PRIMARY KEY,
        role       TEXT NOT NULL CHECK (role IN ('approver', 'observer')),
        workspaces TEXT,
        set_by     TEXT NOT NULL,
        set_at     INTEGER NOT NULL,
        migrated   INTEGER NOT NULL DEFAULT 0
    ) STRICT;
    INSERT INTO people(person, role, workspaces, set_by, set_at, migrated)
        SELECT DISTINCT person, 'approver', NULL, 'engine', 0, 1 FROM devices;
    "#,
    // 21: pairing codes are kept under a keyed hash: HMAC-SHA256 with a
    // random key of this database (`pairing_key`, one row, made by the
    // store with the first code issued after this), so a copy of the
    // database no longer lets the small code space be tried one by one.
    // The codes outstanding from before were hashed without a key: they
    // are deleted (invalidated: the owner makes a new one), and the used
    // ones keep no hash. Wrong tries are counted in the engine's memory
    // now, not written each: `pairing_lockout` goes.
    r#"
    CREATE TABLE pairing_key (
        id  INTEGER PRIMARY KEY CHECK (id = 1),
        key BLOB NOT NULL
    ) STRICT;
    DELETE FROM pairing_codes WHERE redeemed_at IS NULL;
    UPDATE pairing_codes SET code_hash = 'retired';
    DROP TABLE pairing_lockout;
    "#,
    // 22: who started a task, found fast: the actor of its signed
    // `task_created` record (two-person merges ask it at each approval).
    r#"
    CREATE INDEX audit_task_created ON audit_log(json_extract(payload, '$.task_id'))
        WHERE json_extract(payload, '$.type') = 'task_created';
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the schema up to [`SCHEMA_VERSION`] in one IMMEDIATE transaction
/// with the version read inside it: two processes opening a fresh database
/// at once cannot both migrate (the second waits for the lock, then finds
/// the work done), and a crash leaves the old version whole.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let sql_err = |e| StoreError::from_sqlite(e, path);
    let version = |c: &Connection| -> Result<i64, StoreError> {
        c.pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql_err)
    };
    let newer = |found: i64| StoreError::NewerSchema {
        path: path.to_owned(),
        found,
        supported: SCHEMA_VERSION,
    };
    // Up to date (the common case): no write lock taken.
    let seen = version(conn)?;
    if seen > SCHEMA_VERSION {
        return Err(newer(seen));
    }
    if seen == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_err)?;
    let current = version(&tx)?;
    if current > SCHEMA_VERSION {
        return Err(newer(current));
    }
    for sql in MIGRATIONS.iter().skip(current.max(0) as usize) {
        tx.execute_batch(sql).map_err(sql_err)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(sql_err)?;
    tx.commit().map_err(sql_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every migration applies on a fresh database, leaves it consistent, and
    /// the result is at the version this build claims.
    #[test]
    fn migrations_apply_cleanly_one_by_one() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        migrate(&mut conn, Path::new(":memory:")).expect("migrate");
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(v, SCHEMA_VERSION);
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity");
        assert_eq!(ok, "ok");
        {
            let mut fk = conn.prepare("PRAGMA foreign_key_check").expect("fk check");
            assert!(!fk.exists([]).expect("fk rows"), "dangling foreign keys");
        }
        // Running again is a no-op, not an error.
        migrate(&mut conn, Path::new(":memory:")).expect("second migrate");
    }

    /// An existing database upgrades in place and keeps its rows.
    #[test]
    fn each_migration_upgrades_a_database_of_the_version_before() {
        for from in 1..SCHEMA_VERSION {
            let mut conn = Connection::open_in_memory().expect("open");
            for sql in MIGRATIONS.iter().take(from as usize) {
                conn.execute_batch(sql).expect("old migration");
            }
            conn.pragma_update(None, "user_version", from)
                .expect("version");
            conn.execute(
                "INSERT INTO workspaces(name, path, created_at) VALUES ('w', '/tmp/w', 1)",
                [],
            )
            .expect("row");
            migrate(&mut conn, Path::new(":memory:")).expect("upgrade");
            let kept: String = conn
                .query_row("SELECT path FROM workspaces WHERE name = 'w'", [], |r| {
                    r.get(0)
                })
                .expect("row kept");
            assert_eq!(kept, "/tmp/w");
        }
    }

    /// The migration scoping broadcasts rebuilds `messages` to widen its
    /// CHECK: every message is kept, and a scope must name what it scopes to.
    #[test]
    fn scoped_broadcasts_keep_the_messages_from_before() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        // The version before it, wherever merges put it.
        let before = MIGRATIONS
            .iter()
            .position(|m| m.contains("CREATE TABLE messages_scoped"))
            .expect("the migration");
        for sql in MIGRATIONS.iter().take(before) {
            conn.execute_batch(sql).expect("old migration");
        }
        conn.pragma_update(None, "user_version", before as i64)
            .expect("version");
        conn.execute_batch(
            "INSERT INTO messages(sender, recipient, body, status, at, audit_seq)
             VALUES ('user:cli', 'broadcast', 'before', 'delivered', 1, 1);",
        )
        .expect("a message from before");
        migrate(&mut conn, Path::new(":memory:")).expect("upgrade");
        let kept: (String, String) = conn
            .query_row(
                "SELECT recipient, body FROM messages WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("kept");
        assert_eq!(kept, ("broadcast".to_owned(), "before".to_owned()));
        let unnamed = conn.execute(
            "INSERT INTO messages(sender, recipient, body, status, at, audit_seq)
             VALUES ('user:cli', 'workspace', 'to nowhere', 'delivered', 2, 2)",
            [],
        );
        assert!(
            unnamed.is_err(),
            "a workspace broadcast names its workspace"
        );
    }

    #[test]
    fn a_database_from_a_newer_version_is_refused_untouched() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 3)
            .expect("set version");
        let err = migrate(&mut conn, Path::new("x.db")).expect_err("refused");
        assert!(
            matches!(err, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 3)
        );
        assert!(err.to_string().contains("upgrade Overseer"));
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .expect("count");
        assert_eq!(tables, 0, "nothing may be written to a newer database");
    }
}
