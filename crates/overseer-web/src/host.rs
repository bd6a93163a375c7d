//! Serving browsers as the engine's setting says ([`BrowserHost`]): what
//! the app and `overseer serve` hand the engine
//! ([`Engine::serve_browsers`]), so switching it on in Settings serves the
//! window's page here, and switching it off closes the port.

use crate::listen::{bind, TlsFiles, WebConfig, WebError};
use overseer_core::{ApiError, ErrorCode, FieldError};
use overseer_engine::{Engine, WebHost, WebServing, WebSettings};
use std::sync::{mpsc, Arc, Mutex, Weak};
use std::time::Duration;

/// How long stopping waits for the listener to close.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Serves browsers for an engine with this crate, on the runtime it is
/// called in.
pub struct BrowserHost {
    /// Weak: the engine keeps its host.
    engine: Weak<Engine>,
}

impl BrowserHost {
    pub fn new(engine: &Arc<Engine>) -> BrowserHost {
        BrowserHost {
            engine: Arc::downgrade(engine),
        }
    }
}

impl WebHost for BrowserHost {
    fn serve(&self, settings: &WebSettings) -> Result<WebServing, ApiError> {
        let engine = self
            .engine
            .upgrade()
            .ok_or_else(|| ApiError::new(ErrorCode::EngineUnavailable, "the engine is closing"))?;
        let addr = settings.addr.parse().map_err(|_| {
            field_error(
                ErrorCode::InvalidInput,
                "addr",
                format!("{:?} is not an address and a port", settings.addr),
            )
        })?;
        let tls = match (&settings.tls_cert, &settings.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: cert.into(),
                key: key.into(),
            }),
            _ => None,
        };
        let server = bind(&WebConfig {
            addr,
            tls,
            public_origins: settings.public_origins.clone(),
        })
        .map_err(api_error)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            ApiError::new(
                ErrorCode::Internal,
                "serving browsers was asked outside the engine's runtime",
            )
        })?;
        let url = server.url();
        let (done, stopped) = mpsc::channel::<()>();
        let task = runtime.spawn(async move {
            // Dropped with the task: tells `Stop` the listener is closed.
            let _done = done;
            server.run(engine).await
        });
        Ok(WebServing {
            url,
            serving: Box::new(Stop {
                task,
                stopped: Mutex::new(stopped),
            }),
        })
    }
}

/// Stops serving when dropped, and waits (a little) until it has.
struct Stop {
    task: tokio::task::JoinHandle<()>,
    stopped: Mutex<mpsc::Receiver<()>>,
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.task.abort();
        // A runtime with one thread, this one, could not drop the task
        // while we wait: it closes right after.
        let one_thread = tokio::runtime::Handle::try_current().is_ok_and(|h| {
            matches!(
                h.runtime_flavor(),
                tokio::runtime::RuntimeFlavor::CurrentThread
            )
        });
        if !one_thread {
            let stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
            let _ = stopped.recv_timeout(STOP_WAIT);
        }
    }
}

fn field_error(code: ErrorCode, field: &str, message: String) -> ApiError {
    let mut e = ApiError::new(code, message.clone());
    e.fields = vec![FieldError::new(field, message)];
    e
}

/// Why serving cannot start, typed: the address in use is a `conflict`;
/// the rest name the setting to fix.
fn api_error(e: WebError) -> ApiError {
    let message = e.to_string();
    match &e {
        WebError::PlainOffLoopback(_) => field_error(ErrorCode::InvalidInput, "addr", message),
        WebError::Tls { field, .. } => field_error(ErrorCode::InvalidInput, field, message),
        WebError::Origin(_) => field_error(ErrorCode::InvalidInput, "public_origins", message),
        WebError::Bind { addr, source } if source.kind() == std::io::ErrorKind::AddrInUse => {
            field_error(
                ErrorCode::Conflict,
                "addr",
                format!(
                    "cannot listen on {addr}: the address is in use (another program, or \
                     another Overseer, listens on that port): stop it, or choose another port"
                ),
            )
        }
        WebError::Bind { .. } => field_error(ErrorCode::InvalidInput, "addr", message),
    }
}
