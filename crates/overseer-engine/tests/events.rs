//! What a write tells others, and when: a timeline entry that could not be
//! written is logged with what was lost, never dropped in silence.

mod common;

use overseer_core::message::MessageTo;
use overseer_core::Actor;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Everything the engine logged while a closure ran (on this thread).
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<u8>>>);

impl Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logged {
    fn during<T>(&self, f: impl FnOnce() -> T) -> T {
        let me = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || me.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

#[tokio::test]
async fn a_timeline_entry_that_cannot_be_written_is_logged_with_what_was_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, _paths, _server) = common::served(dir.path());
    let runs = engine.seed_demo(&Actor::cli(), false).expect("seed");
    let live = runs
        .iter()
        .copied()
        .find(|r| !engine.run(*r).expect("run").state.is_released())
        .expect("the demo fleet has a live run");
    // The timeline refuses every entry from now on (a full disk, a broken
    // file would do the same); messages themselves are still stored.
    overseer_store::Store::open(
        &engine.paths().db(),
        overseer_store::Keyring::load_or_create(&engine.paths().config_dir).expect("key"),
    )
    .expect("store")
    .raw_connection()
    .execute_batch(
        "CREATE TRIGGER no_timeline BEFORE INSERT ON run_events
         BEGIN SELECT RAISE(ABORT, 'the timeline is full'); END;",
    )
    .expect("trigger");

    let logged = Logged::default();
    let sent = logged.during(|| {
        engine.send_message(
            MessageTo::Run { run: live },
            "please rebase onto main",
            None,
            &Actor::cli(),
        )
    });

    sent.expect("the message itself is stored");
    let text = logged.text();
    assert!(
        text.contains("WARN")
            && text.contains("a timeline entry was not recorded")
            && text.contains("message_received")
            && text.contains("please rebase onto main")
            && text.contains("the timeline is full"),
        "the lost entry is logged with its kind, its text and why: {text}"
    );
}
