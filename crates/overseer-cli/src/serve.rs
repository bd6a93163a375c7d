//! `overseer serve`: the engine headless, serving the local API (and, with
//! --web, the UI and the window's operations to paired browsers).

use overseer_core::ApiError;
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use overseer_server::server;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Also serve browsers and phones on ADDR (e.g. 127.0.0.1:8765). Loopback
    /// only, unless --tls-cert and --tls-key are given; every browser must be
    /// paired (`overseer devices pair`)
    #[arg(long, value_name = "ADDR")]
    web: Option<std::net::SocketAddr>,
    /// The TLS certificate chain (PEM) for --web
    #[arg(long, value_name = "PEM", requires = "web", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM) for --web
    #[arg(long, value_name = "PEM", requires = "web", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Where a TLS-terminating proxy serves --web (`tailscale serve`, a
    /// reverse proxy), e.g. https://box.tailnet.ts.net: pages of that origin
    /// are answered too, and it is the URL shown for pairing. Repeatable
    #[arg(long, value_name = "URL", requires = "web")]
    web_origin: Vec<String>,
}

pub async fn serve(paths: Paths, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Before the engine opens: an address that will be refused (plain HTTP
    // off loopback, an unusable certificate, a port in use) stops here.
    let web = bind_web(args)?;
    // Before anything else: a SIGTERM that arrives while the engine starts
    // (the socket may already answer) is a clean stop once it has started,
    // not the default death that leaves agents and no final checkpoint.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
            .map_err(ApiError::from)?,
    );
    let listener = server::bind(&paths.socket()).map_err(ApiError::from)?;
    eprintln!("overseer engine serving on {}", paths.socket().display());
    let server = tokio::spawn(server::serve(engine.clone(), listener));
    let web = web.map(|web| serve_web(web, &engine));
    if web.is_none() {
        serve_browsers_as_set(&engine).await?;
    }
    let orchestrator = engine.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
    let ticker = checkpoint_every_30s(engine.clone());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    ticker.abort();
    server.abort();
    if let Some(web) = &web {
        web.abort();
    }
    orchestrator.abort();
    let _ = server.await;
    engine.stop_agents().await;
    engine.shutdown()?;
    eprintln!("overseer engine stopped; audit checkpoint written");
    Ok(ExitCode::SUCCESS)
}

/// --web ADDR bound (with --tls-cert and --tls-key: over TLS); None without --web.
fn bind_web(args: ServeArgs) -> anyhow::Result<Option<overseer_web::WebServer>> {
    let web = match args.web {
        Some(addr) => {
            let tls = match (args.tls_cert, args.tls_key) {
                (Some(cert), Some(key)) => Some(overseer_web::TlsFiles { cert, key }),
                _ => None,
            };
            Some(overseer_web::bind(&overseer_web::WebConfig {
                addr,
                tls,
                public_origins: args.web_origin,
            })?)
        }
        None => None,
    };
    Ok(web)
}

/// Serves browsers on the address --web bound, said on stderr.
fn serve_web(web: overseer_web::WebServer, engine: &Arc<Engine>) -> JoinHandle<()> {
    match web.url() {
        Some(url) => {
            eprintln!("serving browsers on {url} (pair one with `overseer devices pair`)")
        }
        None => eprintln!(
            "serving browsers on {} (pair one with `overseer devices pair`)",
            web.local_addr()
        ),
    }
    tokio::spawn(web.serve(engine.clone()))
}

/// No --web: browsers are served as the stored setting says
/// (Settings, "Browsers and phones"), and follow its changes.
async fn serve_browsers_as_set(engine: &Arc<Engine>) -> anyhow::Result<()> {
    let host = engine.clone();
    let status = tokio::task::spawn_blocking(move || {
        host.serve_browsers(Arc::new(overseer_web::BrowserHost::new(&host)))
    })
    .await?;
    match (&status.error, &status.url) {
        (Some(e), _) => eprintln!(
            "not serving browsers as set ({}): {e}",
            status.settings.addr
        ),
        (None, Some(url)) if status.serving => {
            eprintln!("serving browsers on {url}, as set (pair one with `overseer devices pair`)")
        }
        _ => {}
    }
    Ok(())
}

/// Every 30 seconds, an audit checkpoint if the log moved.
fn checkpoint_every_30s(engine: Arc<Engine>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(30));
        loop {
            every.tick().await;
            // It fsyncs: not on a worker the agents' answers need.
            let engine = engine.clone();
            match tokio::task::spawn_blocking(move || engine.checkpoint_if_moved()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!("checkpoint: {e}"),
                Err(e) => tracing::warn!("checkpoint: {e}"),
            }
        }
    })
}
