//! `overseer hook`: the command Claude Code and Codex run for their hooks,
//! and installing it into their settings.

use overseer_engine::Paths;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum HookCommand {
    /// Handle one Claude Code hook event (JSON on stdin, the decision on stdout)
    Claude,
}

pub async fn run(paths: &Paths, cmd: HookCommand) -> anyhow::Result<ExitCode> {
    let _ = (paths, cmd);
    anyhow::bail!("hooks are being built")
}
