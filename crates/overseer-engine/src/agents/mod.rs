//! The ways an agent reaches us from outside Overseer, each translating its
//! protocol into core's session asks ([`overseer_core::SessionAsk`]):
//! - [`external`]: the engine side: a session's fleet row, its asks as gates.
//! - [`messages`]: agent-to-agent messages through the hub.
//! - Claude Code's and Codex's hook formats (the `overseer hook` command) are
//!   `overseer_hooks`, which the CLI uses; the engine sees their asks here.
//!
//! (Agents Overseer launches speak ACP: [`overseer_acp`].)

pub mod external;
pub mod messages;

use std::path::{Path, PathBuf};

/// The `overseer` command line binary: `$OVERSEER_CLI`, else beside this
/// program (an install puts them together; in a build, `target/debug`,
/// also one level up from a test binary in `deps/`).
pub fn overseer_cli() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OVERSEER_CLI").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return overseer_contain::is_executable(&p).then_some(p);
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let found = [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .map(|d| d.join("overseer"))
        .find(|p| overseer_contain::is_executable(p));
    found
}

/// Overseer's own MCP server for a launched run's session: `overseer mcp`
/// asking through the run's socket (`socket`, as the agent sees it).
pub(crate) fn mcp_server(
    bin: &Path,
    socket: &Path,
    work: &overseer_store::RunWork,
    worktree: &Path,
) -> agent_client_protocol::v1::schema::McpServer {
    let args = [
        "mcp",
        "--socket",
        &socket.to_string_lossy(),
        "--session",
        &format!("run-{}", work.run_id),
        "--agent",
        &work.agent,
        "--cwd",
        &worktree.to_string_lossy(),
    ]
    .map(str::to_owned)
    .to_vec();
    agent_client_protocol::v1::schema::McpServer::Stdio(
        agent_client_protocol::v1::schema::McpServerStdio::new("overseer", bin).args(args),
    )
}
