//! The crate's integration tests, one binary (each module was a test
//! binary of its own, each linking the same crates again: disk and link
//! time on CI). Run one part with `cargo test -p overseer-store --test store MODULE::`.

mod common;

mod activity;
mod audit_tamper;
mod changes;
mod group_commit;
mod merges;
mod old_records;
mod run_story;
mod runs_and_gates;
mod signed_decisions;
mod snapshot;
mod supervision;
