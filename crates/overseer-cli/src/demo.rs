//! `overseer demo seed`: the demo fleet.

use crate::act;
use clap::Subcommand;
use overseer_engine::Paths;
use overseer_server::api::op;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum DemoCommand {
    /// Create a deterministic demo fleet with runs in every state
    Seed {
        /// Only runs waiting for review or released (what `make run` uses
        /// beside live demo agents)
        #[arg(long)]
        settled: bool,
        /// Instead of the demo fleet, this many runs in a realistic mix of
        /// states (for benchmarks)
        #[arg(long, value_name = "N")]
        runs: Option<u32>,
    },
}

/// `overseer demo seed [--settled] [--runs N]`.
pub async fn seed(paths: &Paths, settled: bool, runs: Option<u32>) -> anyhow::Result<ExitCode> {
    let ids: Vec<overseer_core::RunId> = act(paths, op::SeedDemo { settled, runs }).await?;
    println!(
        "seeded {} demo runs in {}",
        ids.len(),
        paths.data_dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
