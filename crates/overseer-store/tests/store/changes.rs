//! A write transaction says what it changed: the events its changes cause,
//! recorded as it writes and handed back only once it is committed, and the
//! gates it changed, told to their watcher right after the commit. A write
//! that is rolled back tells nothing.

use crate::common;

use common::Fixture;
use overseer_core::{
    Actor, EngineEvent, GateBody, GateId, GateKind, GateOption, ReleaseReason, RunEvent, RunId,
    RunState,
};
use overseer_store::StoreError;
use std::sync::{Arc, Mutex};

/// A running run with a pending tool-call gate.
fn running_with_gate(f: &mut Fixture) -> (RunId, GateId) {
    let a = Actor::Engine;
    f.store
        .write(|tx| {
            let ws = tx.ensure_workspace("demo", "/tmp/demo", &a, 0)?;
            let task = tx.create_task(ws, "Fix the flaky test", "make it pass", &a, 0)?;
            let run = tx.create_run(task, "demo", &a, 0)?;
            tx.transition(run, RunEvent::Claim, None, &a, 0)?;
            tx.transition(run, RunEvent::Start, None, &a, 0)?;
            let gate = tx.open_gate(
                run,
                "Edit a file",
                &[GateOption::new("yes", "Yes"), GateOption::new("no", "No")],
                &GateBody::empty(GateKind::ToolCall),
                &Actor::Agent("demo".into()),
                0,
            )?;
            Ok((run, gate))
        })
        .expect("seed")
}

/// Every batch of gates the writer told its watcher about.
fn watch_gates(f: &Fixture) -> Arc<Mutex<Vec<Vec<GateId>>>> {
    let told = Arc::new(Mutex::new(Vec::new()));
    let t = told.clone();
    f.store
        .writer()
        .on_gates_changed(Box::new(move |g| t.lock().expect("lock").push(g.to_vec())));
    told
}

#[test]
fn a_release_tells_the_gates_it_closed_then_the_run_as_it_ends() {
    let mut f = Fixture::new();
    let (run, gate) = running_with_gate(&mut f);
    let told = watch_gates(&f);

    let ((), changes) = f
        .store
        .write_changes(|tx| {
            tx.transition(
                run,
                RunEvent::Fail,
                Some("the agent crashed"),
                &Actor::Engine,
                9,
            )?;
            Ok(())
        })
        .expect("fail the run");

    let events = changes.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events[0],
        EngineEvent::GateDecided {
            gate_id: gate,
            run_id: run,
            kind: GateKind::ToolCall,
        },
        "the gate the release closed"
    );
    let EngineEvent::RunChanged { run: row } = &events[1] else {
        panic!("the run's row last: {events:?}")
    };
    assert_eq!(row.id, run);
    assert_eq!(
        row.state,
        RunState::Released {
            reason: ReleaseReason::Failed
        },
        "the row as the transaction left it"
    );
    assert!(row.pending_gate.is_none());
    assert_eq!(changes.gates(), &[gate]);
    assert_eq!(*told.lock().expect("lock"), vec![vec![gate]]);
}

#[test]
fn a_write_that_fails_tells_nothing_and_wakes_no_waiter() {
    let mut f = Fixture::new();
    let (run, gate) = running_with_gate(&mut f);
    let told = watch_gates(&f);

    // Decides the gate, writes a timeline entry, then fails: rolled back.
    let failed = f.store.write_changes(|tx| {
        tx.decide_gate(gate, "yes", None, &Actor::Engine, 5)?;
        tx.record_run_event(
            run,
            &overseer_core::Activity::Thought {
                text: "never kept".into(),
            },
            5,
        )?;
        Err::<(), _>(StoreError::InvalidInput("changed my mind".into()))
    });

    assert!(matches!(failed, Err(StoreError::InvalidInput(_))));
    assert!(
        told.lock().expect("lock").is_empty(),
        "no waiter is woken by a rolled-back decision"
    );
    assert!(f.store.gate(gate).expect("gate").decision.is_none());

    // The same decision, kept: told once, with its events.
    let (_, changes) = f
        .store
        .write_changes(|tx| tx.decide_gate(gate, "yes", None, &Actor::Engine, 6))
        .expect("decide");
    assert!(changes.events().contains(&EngineEvent::GateDecided {
        gate_id: gate,
        run_id: run,
        kind: GateKind::ToolCall,
    }));
    assert!(
        !changes
            .events()
            .iter()
            .any(|e| matches!(e, EngineEvent::RunActivity { .. })),
        "nothing of the rolled-back write: {:?}",
        changes.events()
    );
    assert_eq!(*told.lock().expect("lock"), vec![vec![gate]]);
}
