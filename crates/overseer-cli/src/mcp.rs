//! `overseer mcp`: a stdio MCP server of human-in-the-loop tools.

use overseer_engine::Paths;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct McpArgs {}

pub async fn run(paths: &Paths, args: McpArgs) -> anyhow::Result<ExitCode> {
    let _ = (paths, args);
    anyhow::bail!("the MCP server is being built")
}
