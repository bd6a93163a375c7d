//! Serving browsers from this engine, as the owner set it (Settings,
//! "Browsers and phones"): on or off, the address, TLS, public origins,
//! kept in the store so it survives restarts.
//!
//! The engine does not know the web transport (it sits above the engine):
//! the host that runs the engine (the app, `overseer serve`) hands it a
//! [`WebHost`], made with the web transport, through
//! [`Engine::serve_browsers`]. The engine asks it to serve when the setting
//! is switched on or changed, and at start when it is on; it drops what the
//! host returned to stop. What happened (the URL, or why not: the address in
//! use, a certificate that cannot be used) is recorded for pairing
//! ([`Records::set_web_url`](crate::Records::set_web_url)) and pushed as
//! [`EngineEvent::WebServingChanged`], so Settings follows it live.

use crate::Engine;
use overseer_core::web::{check_web_settings, WebSettings, WebStatus};
use overseer_core::{Actor, ApiError, EngineEvent, ErrorCode};
use std::sync::Arc;

/// Where the setting lives in the database's settings.
pub(crate) const WEB_KEY: &str = "web";

pub(crate) mod state;

use state::Now;
pub use state::{WebHost, WebServing};

impl Engine {
    /// The host's way to serve browsers: from now on the setting is
    /// carried out with it, at once when it is on. Call once, on a blocking
    /// thread inside the runtime (it may bind and spawn).
    pub fn serve_browsers(&self, host: Arc<dyn WebHost>) -> WebStatus {
        let _ = self.web.host.set(host);
        let settings = self.web_settings();
        if settings.enabled {
            self.apply_web(settings)
        } else {
            self.web_status()
        }
    }

    /// The setting as stored (off on loopback when never set).
    pub fn web_settings(&self) -> WebSettings {
        match self.store().setting(WEB_KEY) {
            Ok(Some(text)) => serde_json::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!("the stored web setting cannot be read ({e}): serving no browsers");
                WebSettings::default()
            }),
            Ok(None) => WebSettings::default(),
            Err(e) => {
                tracing::warn!("cannot read the web setting: {e}");
                WebSettings::default()
            }
        }
    }

    /// How serving browsers stands now.
    pub fn web_status(&self) -> WebStatus {
        let now = self.web.lock();
        self.status_of(self.web_settings(), &now)
    }

    fn status_of(&self, settings: WebSettings, now: &Now) -> WebStatus {
        let url = self.web_url();
        WebStatus {
            settings,
            // `overseer serve --web` serves without the setting: its URL
            // says it serves.
            serving: now.serving.is_some() || url.is_some(),
            url,
            error: now.error.clone(),
        }
    }

    /// Switches serving browsers on or off, or moves it, as the owner says
    /// (only the local owner may): checked (plain HTTP off loopback is
    /// refused with why, and nothing is stored), stored, then carried out
    /// by the host at once. Answers how it stands: an address in use or a
    /// certificate that cannot be used is its `error` (the setting is kept,
    /// and tried again at the next start).
    pub fn set_web_settings(
        &self,
        settings: WebSettings,
        actor: &Actor,
    ) -> Result<WebStatus, ApiError> {
        crate::devices::owner_only(actor, "change how browsers are served")?;
        let settings = check_web_settings(&settings).map_err(ApiError::invalid_fields)?;
        let text = serde_json::to_string(&settings)
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        let now = self.clock.now();
        self.write(|tx| tx.set_setting(WEB_KEY, &text, actor, now))?;
        Ok(self.apply_web(settings))
    }

    /// Stops serving browsers (the app closing): the port is free when it
    /// returns. The setting stays as it is.
    pub async fn stop_serving_browsers(&self) {
        let serving = self.web.lock().serving.take();
        if let Some(serving) = serving {
            self.set_web_url(None);
            // Dropping waits for the listener to close: not on a worker.
            let _ = tokio::task::spawn_blocking(move || drop(serving)).await;
        }
    }

    /// Stops what is served, starts `settings` with the host when on, and
    /// pushes how it stands.
    fn apply_web(&self, settings: WebSettings) -> WebStatus {
        let mut now = self.web.lock();
        // The old listener is closed before the new one binds: the same
        // port may be asked for again.
        if let Some(old) = now.serving.take() {
            drop(old);
            self.set_web_url(None);
        }
        now.error = None;
        if settings.enabled {
            match self.web.host.get() {
                Some(host) => match host.serve(&settings) {
                    Ok(serving) => {
                        self.set_web_url(serving.url.clone());
                        now.serving = Some(serving);
                    }
                    Err(e) => {
                        tracing::warn!("cannot serve browsers on {}: {e}", settings.addr);
                        now.error = Some(e);
                    }
                },
                None => {
                    now.error = Some(ApiError::new(
                        ErrorCode::EngineUnavailable,
                        "this engine was started without a way to serve browsers (as \
                         `overseer serve --web ADDR`, whose address wins): the setting is \
                         kept, and applies when the app or `overseer serve` starts without --web",
                    ))
                }
            }
        }
        let status = self.status_of(settings, &now);
        drop(now);
        self.publish(vec![EngineEvent::WebServingChanged {
            status: status.clone(),
        }]);
        status
    }
}
