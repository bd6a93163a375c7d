//! `overseer web status|on|off`: whether the running engine serves the
//! window to browsers and phones, as the app's Settings ("Browsers and
//! phones") switches it. The engine keeps the setting and serves (or stops)
//! at once; `overseer serve --web ADDR` overrides it for that engine.

use crate::act;
use crate::output::inert;
use clap::Subcommand;
use overseer_core::web::{WebSettings, WebStatus};
use overseer_engine::Paths;
use overseer_server::api::op;
use std::fmt::Write;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum WebCommand {
    /// Whether it serves, where, and why not when it cannot
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Serve browsers (what is not given stays as it was set)
    On {
        /// IP:PORT to listen on: loopback (127.0.0.1:8765), or any other
        /// address with --tls-cert and --tls-key
        #[arg(long, value_name = "IP:PORT")]
        addr: Option<String>,
        /// The TLS certificate chain (PEM)
        #[arg(long, value_name = "PEM", requires = "tls_key")]
        tls_cert: Option<String>,
        /// The TLS private key (PEM)
        #[arg(long, value_name = "PEM", requires = "tls_cert")]
        tls_key: Option<String>,
        /// Serve over plain HTTP again (drop the certificate and key)
        #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
        no_tls: bool,
        /// Where a TLS-terminating proxy serves this engine
        /// (https://box.tailnet.ts.net); repeat for more; replaces the list
        #[arg(long = "origin", value_name = "URL")]
        origins: Vec<String>,
    },
    /// Stop serving browsers (their pages are closed; devices stay paired)
    Off,
}

pub async fn run(paths: &Paths, cmd: WebCommand) -> anyhow::Result<ExitCode> {
    let status: WebStatus = match cmd {
        WebCommand::Status { json } => {
            let status: WebStatus = act(paths, op::WebServing {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
                return Ok(ExitCode::SUCCESS);
            }
            status
        }
        WebCommand::On {
            addr,
            tls_cert,
            tls_key,
            no_tls,
            origins,
        } => {
            let now: WebStatus = act(paths, op::WebServing {}).await?;
            let mut settings = now.settings;
            settings.enabled = true;
            if let Some(addr) = addr {
                settings.addr = addr;
            }
            if no_tls {
                settings.tls_cert = None;
                settings.tls_key = None;
            } else if tls_cert.is_some() {
                settings.tls_cert = tls_cert;
                settings.tls_key = tls_key;
            }
            if !origins.is_empty() {
                settings.public_origins = origins;
            }
            set(paths, settings).await?
        }
        WebCommand::Off => {
            let now: WebStatus = act(paths, op::WebServing {}).await?;
            set(
                paths,
                WebSettings {
                    enabled: false,
                    ..now.settings
                },
            )
            .await?
        }
    };
    print!("{}", status_text(&status));
    Ok(if status.error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn set(paths: &Paths, settings: WebSettings) -> anyhow::Result<WebStatus> {
    act(paths, op::SetWebServing { settings }).await
}

fn status_text(s: &WebStatus) -> String {
    let mut out = String::new();
    match (&s.url, s.serving) {
        (Some(url), true) => {
            let _ = writeln!(out, "serving browsers at {}", inert(url));
        }
        (None, true) => {
            let _ = writeln!(
                out,
                "serving browsers on {} (every address: name the URL people open with --origin)",
                inert(&s.settings.addr)
            );
        }
        (_, false) if s.settings.enabled => {
            let _ = writeln!(
                out,
                "switched on for {}, not serving",
                inert(&s.settings.addr)
            );
        }
        (_, false) => {
            let _ = writeln!(out, "not serving browsers (`overseer web on` to start)");
        }
    }
    if let Some(e) = &s.error {
        let code = serde_json::to_value(e.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = writeln!(out, "error ({code}): {}", inert(&e.message));
    }
    if s.serving {
        let _ = writeln!(
            out,
            "pair a browser or phone with `overseer devices pair --name \"...\"`"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(enabled: bool, serving: bool, url: Option<&str>) -> WebStatus {
        WebStatus {
            settings: WebSettings {
                enabled,
                ..WebSettings::default()
            },
            serving,
            url: url.map(str::to_owned),
            error: None,
        }
    }

    #[test]
    fn the_status_says_where_it_serves_or_why_not() {
        let on = status_text(&status(true, true, Some("http://127.0.0.1:8765/")));
        assert!(
            on.starts_with("serving browsers at http://127.0.0.1:8765/\n"),
            "{on}"
        );
        assert!(on.contains("devices pair"), "{on}");
        let off = status_text(&status(false, false, None));
        assert_eq!(off, "not serving browsers (`overseer web on` to start)\n");
        let mut failed = status(true, false, None);
        failed.error = Some(overseer_core::ApiError::new(
            overseer_core::ErrorCode::Conflict,
            "127.0.0.1:8765 is in use",
        ));
        let failed = status_text(&failed);
        assert!(
            failed.contains("switched on for 127.0.0.1:8765, not serving"),
            "{failed}"
        );
        assert!(
            failed.contains("error (conflict): 127.0.0.1:8765 is in use"),
            "{failed}"
        );
    }
}
