//! Timeline entries already in users' databases keep showing after the
//! entries became typed: each row decodes, in order, none dropped; what this
//! build cannot read is kept as it was stored, and the fleet columns still
//! read the plan and sensor rows.

use crate::common;

use common::Fixture;
use overseer_core::activity::{Activity, SensorRun, UnrecognizedEntry};
use serde_json::json;

#[test]
fn old_rows_decode_and_none_is_dropped() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    // Rows as older builds wrote them, straight into the file.
    let rows: [(&str, &str); 7] = [
        ("message", r#"{"text":"hello"}"#),
        (
            "plan",
            r#"{"entries":[{"content":"Read","status":"completed"},{"content":"Write","status":"in_progress"}]}"#,
        ),
        ("sensor", r#"{"command":"npm test","passed":false}"#),
        ("teleport", r#"{"text":"beamed up"}"#),
        ("message", r#"{"body":"an older shape"}"#),
        ("log", "not json at all"),
        (
            "sensor",
            r#"{"command":"npm test","passed":true,"exit_code":0,"output":"ok"}"#,
        ),
    ];
    {
        let conn = rusqlite::Connection::open(f.db_path()).expect("open the file");
        for (i, (kind, payload)) in rows.iter().enumerate() {
            conn.execute(
                "INSERT INTO run_events(run_id, at, kind, payload) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![run, 2_000 + i64::try_from(i).expect("small"), kind, payload],
            )
            .expect("insert an old row");
        }
    }
    let store = f.reopen();
    let events = store.run_events(run, 0, 100).expect("read the timeline");
    let entries: Vec<Activity> = events.into_iter().map(|e| e.entry).collect();
    assert_eq!(entries.len(), rows.len(), "{entries:?}");
    assert_eq!(
        entries[0],
        Activity::Message {
            text: "hello".into()
        }
    );
    let Activity::Plan { entries: plan } = &entries[1] else {
        panic!(
            "a plan without priorities still reads as a plan: {:?}",
            entries[1]
        );
    };
    assert_eq!(plan[1].content, "Write");
    assert_eq!(
        entries[2],
        Activity::Sensor(SensorRun {
            command: "npm test".into(),
            exit_code: None,
            passed: false,
            output: String::new(),
        })
    );
    assert_eq!(
        entries[3],
        Activity::Unrecognized(UnrecognizedEntry {
            kind: "teleport".into(),
            payload: json!({"text": "beamed up"}),
        })
    );
    assert_eq!(
        entries[4],
        Activity::Unrecognized(UnrecognizedEntry {
            kind: "message".into(),
            payload: json!({"body": "an older shape"}),
        })
    );
    assert_eq!(
        entries[5],
        Activity::Unrecognized(UnrecognizedEntry {
            kind: "log".into(),
            payload: json!("not json at all"),
        })
    );
    // Kept as stored: the window's default case shows its text.
    assert_eq!(
        entries[3].encode(),
        ("teleport".to_owned(), json!({"text": "beamed up"}))
    );
    assert_eq!(entries[3].text(), "beamed up");

    // The fleet row reads the same rows: the step in progress, and each
    // command's latest result.
    let view = store.run(run).expect("the run's row");
    assert_eq!(view.current_step.as_deref(), Some("Write"));
    let sensors = view.sensors.expect("sensors ran");
    assert_eq!((sensors.passed, sensors.failed), (1, 0));
}

#[test]
fn an_entry_is_stored_as_its_kind_and_payload() {
    let mut f = Fixture::new();
    let run = f.pending_review_run(1_000);
    let entry = Activity::StepStarted {
        step: 2,
        text: "Write the greeting".into(),
    };
    f.store
        .write(|tx| tx.record_run_event(run, &entry, 3_000))
        .expect("record");
    let conn = rusqlite::Connection::open(f.db_path()).expect("open the file");
    let (kind, payload): (String, String) = conn
        .query_row(
            "SELECT kind, payload FROM run_events WHERE run_id = ?1",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the row");
    assert_eq!(kind, "step_started");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&payload).expect("json"),
        json!({"step": 2, "text": "Write the greeting"})
    );
    let back = f.store.run_events(run, 0, 10).expect("read");
    assert_eq!(back[0].entry, entry);
}
