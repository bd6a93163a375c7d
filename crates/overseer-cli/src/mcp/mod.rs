//! `overseer mcp`: a stdio MCP server of human-in-the-loop tools
//! (`ask_user`, `request_plan_approval`, `report_step`, `send_message`,
//! `read_messages`; PROTOCOLS.md section 3, docs/mcp.md).
//!
//! Each tool call is one `Request::Session` to the engine; the MCP client
//! is an external session (origin `mcp`) and its blocking asks are gates in
//! the same inbox as launched runs. The tool result is the answer.

mod engine;
mod tools;

use engine::{AskError, Asker};
use overseer_core::{RunOrigin, SessionRef};
use overseer_engine::Paths;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct McpArgs {
    /// The session id this client shows under in Overseer (default: a new
    /// one per `overseer mcp` process)
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The directory the client works in (default: the current directory)
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The agent's name in the fleet (default: the MCP client's own name from
    /// its `initialize`)
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// The engine's socket to ask (default: overseer.sock in the data dir)
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// While a call waits and the engine goes away (a restart), how long to
    /// keep reconnecting before the call fails
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    reconnect_seconds: u64,
    /// How often a waiting call sends a progress notification (when the
    /// client asked for progress with a progressToken)
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    progress_seconds: u64,
}

/// What `overseer mcp` tells the client about itself (`instructions`).
const INSTRUCTIONS: &str = "Overseer supervises coding agents and puts every human decision in one inbox. \
Use ask_user for questions only the user can answer, request_plan_approval before larger changes, report_step \
after each step of an approved plan, send_message / read_messages to talk with the supervisor or the user, and \
consult to ask another configured agent a question (read-only, on a snapshot of your repository). \
ask_user, request_plan_approval, report_step and consult wait for their answer, which can take minutes.";

struct Server {
    asker: Asker,
    session_id: String,
    cwd: PathBuf,
    agent: Option<String>,
    /// Random per process: with a call counter and the MCP request id it
    /// makes each call's key (a client may reuse request ids once answered;
    /// a reused key would find the old, decided gate).
    key_prefix: String,
    calls: std::sync::atomic::AtomicU64,
    progress_every: Duration,
}

fn random_hex(bytes: usize) -> String {
    use rand_core::RngCore;
    let mut b = vec![0u8; bytes];
    rand_core::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

pub async fn run(paths: &Paths, args: McpArgs) -> anyhow::Result<ExitCode> {
    let prefix = random_hex(8);
    let cwd = match args.cwd {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => std::env::current_dir()
            .map_err(|e| {
                anyhow::anyhow!("cannot read the current directory ({e}); pass an absolute --cwd")
            })?
            .join(dir),
        None => std::env::current_dir().map_err(|e| {
            anyhow::anyhow!("cannot read the current directory ({e}); pass --cwd DIR")
        })?,
    };
    let session_id = match args.session.as_deref().map(str::trim) {
        Some(s) if s.is_empty() || s.len() > 256 || s.chars().any(char::is_control) => {
            anyhow::bail!(
                "--session must be 1 to 256 printable characters; leave it out for a new session id per process"
            )
        }
        Some(s) => s.to_owned(),
        None => format!("mcp-{prefix}"),
    };
    let server = Server {
        asker: Asker {
            socket: args.socket.unwrap_or_else(|| paths.socket()),
            reconnect_for: Duration::from_secs(args.reconnect_seconds),
        },
        session_id,
        cwd,
        agent: args.agent.filter(|a| !a.trim().is_empty()),
        key_prefix: prefix,
        calls: std::sync::atomic::AtomicU64::new(0),
        progress_every: Duration::from_secs(args.progress_seconds.max(1)),
    };
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!(
            "overseer mcp is an MCP server: it speaks JSON-RPC on stdin and stdout and is meant to be \
             started by an MCP client (e.g. `claude mcp add overseer -- overseer mcp`; see docs/mcp.md). \
             Waiting for a client's messages; Ctrl-D ends."
        );
    }
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("the MCP client did not start a session: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| anyhow::anyhow!("the MCP session ended with an error: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn tool_list() -> Vec<Tool> {
    tools::specs()
        .into_iter()
        .map(|s| {
            let object = |v: serde_json::Value| match v {
                serde_json::Value::Object(m) => Arc::new(m),
                _ => Arc::new(serde_json::Map::new()),
            };
            let annotations = ToolAnnotations::with_title(s.title)
                .read_only(s.read_only)
                .destructive(false)
                .open_world(false);
            Tool::new(s.name, s.description, object(s.input))
                .with_title(s.title)
                .with_annotations(annotations)
                .with_raw_output_schema(object(s.output))
        })
        .collect()
}

fn result(outcome: tools::Outcome) -> CallToolResult {
    let mut r = if outcome.is_error {
        CallToolResult::error(vec![ContentBlock::text(outcome.text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(outcome.text)])
    };
    r.structured_content = outcome.structured;
    r
}

fn not_running(tool: &str, socket: &std::path::Path, detail: Option<&str>) -> String {
    let what = match tool {
        tools::ASK_USER => "Ask the user your questions directly in this conversation instead",
        tools::REQUEST_PLAN_APPROVAL => {
            "Show the user your plan directly in this conversation and ask whether to go ahead"
        }
        tools::REPORT_STEP => "Tell the user directly what you did and ask whether to go on",
        tools::CONSULT => "Answer the question yourself from what you can read",
        _ => "Talk to the user directly in this conversation instead",
    };
    let why = match detail {
        Some(d) => d.to_owned(),
        None => format!("no engine at {}", socket.display()),
    };
    format!(
        "Overseer is not running ({why}), so nobody can answer through it. {what}; \
         do not call Overseer's tools again until the user says Overseer is running (they start it with \
         `overseer serve` or by opening the Overseer app)."
    )
}

impl Server {
    fn agent_name(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        self.agent.clone().or_else(|| {
            context
                .meta
                .client_info()
                .map(|i| i.name)
                .or_else(|| context.peer.peer_info().map(|p| p.client_info.name.clone()))
                .filter(|n| !n.trim().is_empty())
        })
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let tool = request.name.to_string();
        if !tools::specs().iter().any(|s| s.name == tool) {
            return Err(McpError::invalid_params(
                format!("there is no tool named {tool:?}; list the tools with tools/list"),
                None,
            ));
        }
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let key = format!("mcp-{}-{n}-{}", self.key_prefix, context.id);
        let ask = match tools::to_ask(&tool, request.arguments, key) {
            Ok(ask) => ask,
            Err(fix) => return Ok(result(tools::Outcome::error(fix))),
        };
        let session = SessionRef {
            origin: RunOrigin::Mcp,
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
            agent: self.agent_name(&context),
        };
        let progress = if tools::blocks(&tool) {
            context.meta.get_progress_token()
        } else {
            None
        };
        let asked = self.asker.ask(&session, &ask, tools::retryable(&tool));
        tokio::pin!(asked);
        let started = Instant::now();
        let mut ticks = 0u32;
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::now() + self.progress_every,
            self.progress_every,
        );
        let answer = loop {
            tokio::select! {
                answer = &mut asked => break answer,
                _ = context.ct.cancelled() => {
                    // Dropping the ask closes its engine connection: the
                    // engine withdraws the gate. rmcp sends no response to
                    // a cancelled request, so this result is never seen.
                    tracing::info!("{tool} call {} cancelled by the client", context.id);
                    return Ok(result(tools::Outcome::error("cancelled by the client")));
                }
                _ = ticker.tick(), if progress.is_some() => {
                    ticks += 1;
                    if let Some(token) = progress.clone() {
                        let waited = started.elapsed().as_secs();
                        let note = ProgressNotificationParam::new(token, f64::from(ticks))
                            .with_message(format!("waiting for an answer in Overseer ({waited} s so far)"));
                        if let Err(e) = context.peer.notify_progress(note).await {
                            tracing::debug!("progress notification: {e}");
                        }
                    }
                }
            }
        };
        let outcome = match answer {
            Ok(answer) => tools::render(&tool, answer),
            Err(AskError::NotRunning { detail }) => {
                tools::Outcome::error(not_running(&tool, &self.asker.socket, detail.as_deref()))
            }
            Err(AskError::Lost { detail }) if tool == tools::CONSULT => tools::Outcome::error(format!(
                "The connection to Overseer dropped during the consultation ({detail}); its answer is lost. \
                 Call consult again if you still need it, once Overseer is running."
            )),
            Err(AskError::Lost { detail }) if !tools::retryable(&tool) => tools::Outcome::error(format!(
                "The connection to Overseer dropped while sending ({detail}); the message may or may not \
                 have been stored. Ask the user whether it arrived before sending it again."
            )),
            Err(AskError::Lost { detail }) => tools::Outcome::error(format!(
                "Overseer stopped answering ({detail}); nothing was decided. Ask the user directly in this \
                 conversation instead, or call {tool} again once Overseer is running."
            )),
            Err(AskError::Refused(e)) => tools::Outcome::error(format!(
                "Overseer refused this {tool} call: {}",
                e.message
            )),
        };
        Ok(result(outcome))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("overseer", env!("CARGO_PKG_VERSION")).with_title("Overseer"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await.map(Into::into)
    }
}
