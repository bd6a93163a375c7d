//! The crate's integration tests, one binary (each module was a test
//! binary of its own, each linking the same crates again: disk and link
//! time on CI). Run one part with `cargo test -p overseer-web --test web MODULE::`.

mod common;

mod bound;
mod chromium;
mod embedded;
mod flood;
mod paired;
mod roles;
mod web;
