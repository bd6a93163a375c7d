//! What the engine keeps of serving browsers, and the host's hook
//! ([`WebHost`]) that serves them: apart from the engine's methods
//! (`mod.rs`), so the engine's state can hold it.

use overseer_core::web::WebSettings;
use overseer_core::ApiError;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// How the host serves browsers for the engine (`overseer_web::BrowserHost`).
pub trait WebHost: Send + Sync {
    /// Starts serving browsers as `settings` say (already checked: a
    /// loopback address, or TLS files), or says why it cannot, typed
    /// (`conflict`: the address is in use; `invalid_input` naming the
    /// field: a certificate that cannot be read or does not go with its
    /// key). Called on a blocking thread inside the engine's runtime.
    fn serve(&self, settings: &WebSettings) -> Result<WebServing, ApiError>;
}

/// Browsers served while this is kept.
pub struct WebServing {
    /// The page a browser opens (`None`: it listens on every address and no
    /// public origin names it).
    pub url: Option<String>,
    /// Stops serving when dropped: the listener is closed (the port free
    /// again) and every browser's connection dropped.
    pub serving: Box<dyn Send + Sync>,
}

/// What the engine keeps of serving browsers.
#[derive(Default)]
pub(crate) struct WebState {
    pub(super) host: OnceLock<Arc<dyn WebHost>>,
    now: Mutex<Now>,
}

#[derive(Default)]
pub(super) struct Now {
    pub(super) serving: Option<WebServing>,
    pub(super) error: Option<ApiError>,
}

impl WebState {
    pub(super) fn lock(&self) -> MutexGuard<'_, Now> {
        self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}
