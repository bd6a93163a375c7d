//! The desktop shell: embeds the engine, registers one-line commands over it,
//! forwards engine events to the web view, and shows OS notifications. No
//! business logic lives here.

mod commands;
mod hosts;
mod notifier;
mod notify_bus;
mod tray;
mod webview;

use overseer_engine::{Engine, Paths, SystemClock};
use overseer_server::server;
use std::sync::Arc;
use std::time::Duration;
use tauri::Manager;

/// Builds the app around an already opened engine; with a listener, the local
/// API is served beside the window.
pub fn builder(
    engine: Arc<Engine>,
    listener: Option<server::Listener>,
    on_open: Option<notifier::OnOpen>,
    host_notify: Option<hosts::HostNotify>,
) -> tauri::Builder<tauri::Wry> {
    tauri::Builder::default()
        .manage(engine)
        .invoke_handler(commands::handler())
        .setup(move |app| {
            let engine = app.state::<Arc<Engine>>().inner().clone();
            if let Some(listener) = listener {
                tauri::async_runtime::spawn(server::serve(engine.clone(), listener));
                // Only the engine that owns the socket drives agents.
                let driver = engine.clone();
                tauri::async_runtime::spawn(async move {
                    driver.start_orchestrator(std::sync::Arc::new(overseer_server::RunSockets));
                });
                // Browsers and phones, when Settings switched it on (now and
                // whenever it is switched): served by the web transport.
                let web = engine.clone();
                tauri::async_runtime::spawn(async move {
                    let host = std::sync::Arc::new(overseer_web::BrowserHost::new(&web));
                    let served =
                        tokio::task::spawn_blocking(move || web.serve_browsers(host)).await;
                    if let Ok(overseer_core::web::WebStatus { error: Some(e), .. }) = served {
                        tracing::warn!("cannot serve browsers as Settings say: {e}");
                    }
                });
            }
            if let Some(on_open) = on_open {
                let handle = app.handle().clone();
                let _ = on_open.set(Box::new(move |run, host| {
                    if let Some(w) = handle.get_webview_window("main") {
                        let _ = w.unminimize();
                        let _ = w.show();
                        let _ = w.set_focus();
                    }
                    if let Err(e) = commands::events::on_open_request(
                        &handle,
                        &overseer_server::api::OpenRun { run_id: run, host },
                    ) {
                        tracing::warn!("cannot ask the window to open run {run}: {e}");
                    }
                }));
            }
            if let Some(w) = app.get_webview_window("main") {
                webview::tune(&w);
            }
            tray::install(app.handle(), engine.clone());
            // A link to every host this machine knows (following hosts.json
            // as it changes), pushed to the window.
            let paths = engine.paths().clone();
            let notify = host_notify.unwrap_or_else(|| std::sync::Arc::new(|_: &str, _| {}));
            let sink = std::sync::Arc::new(hosts::WindowSink {
                handle: app.handle().clone(),
                engine: engine.clone(),
                notify,
            });
            let links = tauri::async_runtime::block_on(async move {
                hosts::HostLinks::start(&paths, hosts::SetupOptions::default(), sink)
            });
            app.manage(links);
            let handle = app.handle().clone();
            // Push every engine event to the window, in commit order.
            let mut rx = engine.subscribe();
            tauri::async_runtime::spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                loop {
                    match rx.recv().await {
                        Ok(event) => {
                            if let Err(e) = commands::events::subscribe(&handle, &event) {
                                tracing::warn!("cannot push an event to the window: {e}");
                            }
                        }
                        Err(RecvError::Lagged(n)) => {
                            tracing::warn!("the window fell {n} events behind")
                        }
                        Err(RecvError::Closed) => break,
                    }
                }
            });
            // Periodic signed checkpoints of the audit log.
            let ticker = engine.clone();
            tauri::async_runtime::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_secs(30));
                loop {
                    every.tick().await;
                    // It fsyncs: not on a worker the agents' answers need.
                    let engine = ticker.clone();
                    match tokio::task::spawn_blocking(move || engine.checkpoint_if_moved()).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => tracing::warn!("checkpoint: {e}"),
                        Err(e) => tracing::warn!("checkpoint: {e}"),
                    }
                }
            });
            Ok(())
        })
}

/// Opens the engine on the data dir, serves the local API beside the window,
/// and runs the app until its window closes.
pub fn run() -> Result<(), String> {
    webview::before_start();
    // `--data-dir DIR` / `--config-dir DIR`, like the CLI (else the
    // OVERSEER_* environment, else XDG).
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(std::path::PathBuf::from)
    };
    let paths = Paths::resolve(arg("--data-dir"), arg("--config-dir"))?;
    let desktop = notifier::DesktopNotifier::start();
    let on_open = desktop.on_open.clone();
    let deciding = desktop.deciding.clone();
    let host_notify = desktop.for_hosts();
    let engine = Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(desktop))
            .map_err(|e| e.to_string())?,
    );
    // A notification's buttons decide on this engine (weakly: it holds the
    // notifier).
    let _ = deciding.set(Arc::downgrade(&engine));
    let listener = server::bind(&paths.socket()).map_err(|e| e.to_string())?;
    let app = builder(
        engine.clone(),
        Some(listener),
        Some(on_open),
        Some(host_notify),
    )
    .build(tauri::generate_context!())
    .map_err(|e| format!("cannot start the window: {e}"))?;
    // SIGTERM and SIGINT close the app as its window would: cleanly.
    let handle = app.handle().clone();
    tauri::async_runtime::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("cannot listen for SIGTERM: the app exits only from its window");
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        handle.exit(0);
    });
    app.run(move |_, event| {
        if let tauri::RunEvent::Exit = event {
            // No agent outlives the app (their runs are found interrupted,
            // and resumable, at the next start).
            let stopped = tauri::async_runtime::block_on(engine.stop_agents());
            if stopped > 0 {
                tracing::info!("stopped {stopped} agents at exit");
            }
            if let Err(e) = engine.shutdown() {
                tracing::warn!("final checkpoint: {e}");
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The window's security settings are part of the product: agent output is
    //! untrusted, so no inline script, no eval, and commands only where granted.

    fn json(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect("valid JSON")
    }

    #[test]
    fn the_csp_forbids_inline_script_and_eval() {
        let conf = json(include_str!("../tauri.conf.json"));
        let csp = &conf["app"]["security"]["csp"];
        let all = csp.to_string();
        assert!(!all.contains("unsafe-inline"), "{all}");
        assert!(!all.contains("unsafe-eval"), "{all}");
        assert_eq!(csp["script-src"], "'self'");
        assert_eq!(csp["style-src"], "'self'");
        assert_eq!(csp["object-src"], "'none'");
        assert!(csp["connect-src"]
            .as_str()
            .is_some_and(|s| s.contains("ipc:")));
    }

    // The commands, the build manifest's list, the capability and the
    // window's client are all generated from the contract's one table
    // (crates/overseer-api); the checked-in capability and client are
    // compared with a fresh generation by crates/overseer-server/tests/contract.rs.

    #[test]
    fn engine_commands_are_granted_to_the_main_window_only() {
        let cap = json(include_str!("../capabilities/main.json"));
        assert_eq!(cap["windows"], serde_json::json!(["main"]));
        let perms: Vec<&str> = cap["permissions"]
            .as_array()
            .expect("permissions")
            .iter()
            .filter_map(|p| p.as_str())
            .collect();
        for cmd in overseer_api::WINDOW_COMMANDS
            .iter()
            .map(|c| c.replace('_', "-"))
        {
            assert!(
                perms.contains(&format!("allow-{cmd}").as_str()),
                "{cmd} not granted"
            );
        }
        assert!(
            perms
                .iter()
                .all(|p| !p.ends_with(":default") || p.starts_with("core:event")),
            "no blanket default permissions: {perms:?}"
        );
    }
}
