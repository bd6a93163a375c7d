//! The crate's integration tests, one binary (each module was a test
//! binary of its own, each linking the same crates again: disk and link
//! time on CI). Run one part with `cargo test -p overseer-cli --test cli MODULE::`.

mod common;

mod chaos;
mod cli;
mod devices;
mod grace;
mod hooks;
mod host_agents;
mod host_faults;
mod host_link;
mod host_reach;
mod hosts;
mod mcp;
mod supervisor;
mod web;
