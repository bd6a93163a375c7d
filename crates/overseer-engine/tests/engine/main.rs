//! The engine's end-to-end tests, one binary: each module was a test
//! binary of its own (36 of them, ~70 MB each, most of it the same engine
//! linked again), which filled CI's disk and spent minutes linking.
//! Run one part with `cargo test -p overseer-engine --test engine MODULE::`.

mod common;

mod agent_reach;
mod agent_session;
mod auto_run;
mod broadcast_scope;
mod consult;
mod containment;
mod cost;
mod devices;
mod events;
mod external_sessions;
mod fleet_head;
mod flood;
mod full_disk;
mod gate_pages;
mod local_api;
mod merge;
mod modes;
mod operations;
mod orchestration;
mod owner_only;
mod persons;
mod planning;
mod read_only;
mod real_agents;
mod resolved_paths;
mod roles;
mod run_story;
mod security;
mod settings_check;
mod signed_decisions;
mod snooze;
mod supervision;
mod supervision_flow;
mod supervisor_messages;
mod ui_fixtures;
mod unasked;
mod urgency;
mod webhooks;
