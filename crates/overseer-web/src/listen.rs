//! Where the web transport listens, and how: loopback by default; any other
//! address only with TLS (a certificate and key the user gives, PEM). Plain
//! HTTP off loopback is refused at start: a device credential, and every
//! decision, would cross the network in clear. Behind `tailscale serve` or
//! a reverse proxy that terminates TLS, the engine listens on loopback and
//! the proxy forwards to it.
//!
//! Connections are accepted here, at most [`MAX_CONNECTIONS`] at once and
//! at most [`MAX_PER_ADDRESS`] from one peer address ([`MAX_FROM_LOOPBACK`]
//! from this machine: every loopback address counts as one,
//! [`crate::throttle::key`]); each TLS handshake and each request's headers
//! within [`HANDSHAKE_TIMEOUT`], each request's body within
//! [`BODY_TIMEOUT`] (`routes`).
//!
//! At a cap, a new connection takes the place of the oldest one that is
//! doing nothing for anybody: waiting for a request's headers, between
//! requests, or sending a body without a device credential (it is closed).
//! A connection serving a request, or one whose last request carried a
//! credential the engine knows, is never closed for another. If none can
//! go, the new one is closed at once. So slow clients ("slowloris": a byte
//! of headers or body now and then) hold nothing a browser needs: its new
//! connection sends its request at once and is served; theirs are the
//! oldest idle ones, closed first. On loopback the owner's browser and a
//! local flood are one address, which is why the cap there replaces
//! rather than refuses.
pub use crate::conn::{Conn, ConnState, Peer, BODY_TIMEOUT, HANDSHAKE_TIMEOUT};
use crate::routes::{router, Web};
use overseer_engine::Engine;
use overseer_server::server::AcceptBackoff;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_rustls::rustls;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 512;
/// Connections served at once from one peer address (an IP address; its
/// port aside; an IPv6 address by its /64).
pub const MAX_PER_ADDRESS: usize = 32;
/// Connections served at once from this machine (every loopback address
/// is one): a browser's tabs (six connections per host each), and a proxy
/// on loopback forwarding many browsers. Large, because the owner's
/// browser and any local flood share it: a new connection survives as
/// many newer ones taking an idle place as this, time enough to send its
/// request.
pub const MAX_FROM_LOOPBACK: usize = 256;

/// A certificate chain and its private key, PEM files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct WebConfig {
    pub addr: SocketAddr,
    pub tls: Option<TlsFiles>,
    /// The origins (`https://box.tailnet.ts.net`) a TLS-terminating proxy
    /// serves this engine at, forwarding to its loopback address: requests
    /// from those pages are answered too. The first is the URL announced
    /// for pairing.
    pub public_origins: Vec<String>,
}

/// `url` as an origin (`scheme://host[:port]`, lowercase), or why not.
fn origin_of(url: &str) -> Result<String, WebError> {
    overseer_core::web::check_origin(url).map_err(WebError::Origin)
}

/// Why the web transport cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("{}", overseer_core::web::plain_http_refusal(*.0))]
    PlainOffLoopback(SocketAddr),
    /// `field` names the setting it is about (`tls_cert`, `tls_key`).
    #[error("TLS: {message}")]
    Tls {
        field: &'static str,
        message: String,
    },
    #[error("--web-origin: {0}")]
    Origin(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A bound web listener, ready to serve.
pub struct WebServer {
    listener: std::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    local: SocketAddr,
    public_origins: Vec<String>,
    heartbeat: Duration,
}

fn read_pem(what: &str, path: &std::path::Path) -> Result<Vec<u8>, WebError> {
    std::fs::read(path).map_err(|e| WebError::Tls {
        field: if what == "key" { "tls_key" } else { "tls_cert" },
        message: format!("cannot read the {what} {}: {e}", path.display()),
    })
}

/// The TLS configuration of `files`: rustls with the ring provider,
/// TLS 1.2 and 1.3, HTTP/1.1.
fn tls_config(files: &TlsFiles) -> Result<rustls::ServerConfig, WebError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let cert = read_pem("certificate", &files.cert)?;
    let key = read_pem("key", &files.key)?;
    let chain = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| WebError::Tls {
            field: "tls_cert",
            message: format!(
                "{} is not a PEM certificate chain: {e:?}",
                files.cert.display()
            ),
        })?;
    if chain.is_empty() {
        return Err(WebError::Tls {
            field: "tls_cert",
            message: format!(
                "{} holds no certificate (expected -----BEGIN CERTIFICATE-----)",
                files.cert.display()
            ),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| WebError::Tls {
        field: "tls_key",
        message: format!("{} is not a PEM private key: {e:?}", files.key.display()),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WebError::Tls {
            field: "tls_cert",
            message: e.to_string(),
        })?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| WebError::Tls {
            field: "tls_key",
            message: format!(
                "the certificate {} and the key {} do not go together: {e}",
                files.cert.display(),
                files.key.display()
            ),
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Binds `config.addr` (no runtime needed), refusing plain HTTP off
/// loopback and a certificate that cannot be used.
pub fn bind(config: &WebConfig) -> Result<WebServer, WebError> {
    let public_origins = config
        .public_origins
        .iter()
        .map(|o| origin_of(o))
        .collect::<Result<Vec<_>, _>>()?;
    let tls = match &config.tls {
        Some(files) => Some(Arc::new(tls_config(files)?)),
        None if !config.addr.ip().is_loopback() => {
            return Err(WebError::PlainOffLoopback(config.addr))
        }
        None => None,
    };
    let bind_error = |source| WebError::Bind {
        addr: config.addr,
        source,
    };
    let listener = std::net::TcpListener::bind(config.addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    Ok(WebServer {
        listener,
        tls,
        local,
        public_origins,
        heartbeat: crate::events::HEARTBEAT,
    })
}

impl WebServer {
    /// The address it listens on (with the port chosen for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The URL a browser opens: the first public origin, else the address
    /// (`None` when listening on every address: the host name is the
    /// user's to give with --web-origin).
    pub fn url(&self) -> Option<String> {
        if let Some(public) = self.public_origins.first() {
            return Some(public.clone());
        }
        if self.local.ip().is_unspecified() {
            return None;
        }
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        Some(format!("{scheme}://{}", self.local))
    }

    /// Sends each socket's heartbeat this often instead of every
    /// [`crate::events::HEARTBEAT`]: for tests, which cannot wait for it.
    #[doc(hidden)]
    pub fn heartbeat_every(mut self, every: Duration) -> Self {
        self.heartbeat = every.max(Duration::from_millis(10));
        self
    }

    /// Tells the engine its URL at once (pairing codes issued from now on
    /// name it), and serves until the returned future is dropped or its
    /// task aborted (then the URL is cleared).
    pub fn serve(self, engine: Arc<Engine>) -> impl std::future::Future<Output = ()> + Send {
        crate::auth::announce(&engine, self.url());
        let announced = Unannounce(engine.clone());
        let served = self.run(engine);
        async move {
            let _announced = announced;
            served.await
        }
    }

    /// Serves until the returned future is dropped or its task aborted:
    /// then the listener is closed and every connection (WebSockets too)
    /// dropped. Does not tell the engine its URL ([`WebServer::serve`] does).
    pub fn run(self, engine: Arc<Engine>) -> impl std::future::Future<Output = ()> + Send {
        // Dropped with the accept loop: every connection it started ends.
        let (open, closed) = tokio::sync::watch::channel(());
        async move {
            let _open = open;
            self.accept(engine, closed).await
        }
    }

    async fn accept(self, engine: Arc<Engine>, closed: tokio::sync::watch::Receiver<()>) {
        let listener = match tokio::net::TcpListener::from_std(self.listener) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!("cannot serve on {}: {e}", self.local);
                return;
            }
        };
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let mut web = Web::new(
            engine,
            scheme,
            self.local.ip().is_loopback(),
            self.public_origins,
            closed.clone(),
        );
        web.heartbeat = self.heartbeat;
        let app = router(web);
        let acceptor = self.tls.map(tokio_rustls::TlsAcceptor::from);
        let conns = Arc::new(Conns::default());
        let mut backoff = AcceptBackoff::default();
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => {
                    backoff.succeeded();
                    accepted
                }
                Err(e) => {
                    let (wait, log) = backoff.failed(&e);
                    if log {
                        tracing::warn!("web: accept failed: {e}");
                    }
                    if let Some(wait) = wait {
                        tokio::time::sleep(wait).await;
                    }
                    continue;
                }
            };
            // At a cap, it takes the oldest idle connection's place; if
            // none is idle, it is closed at once (the browser retries).
            let Some(mine) = conns.admit(peer.ip()) else {
                drop(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            let acceptor = acceptor.clone();
            let mut closed = closed.clone();
            let (state, evicted) = (mine.state.clone(), mine.evicted.clone());
            tokio::spawn(async move {
                let served = async move {
                    match acceptor {
                        Some(acceptor) => {
                            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                                .await
                            {
                                Ok(Ok(tls)) => connection(tls, peer, state, app).await,
                                Ok(Err(e)) => tracing::debug!("web: TLS handshake failed: {e}"),
                                Err(_) => tracing::debug!("web: TLS handshake timed out"),
                            }
                        }
                        None => connection(stream, peer, state, app).await,
                    }
                };
                // Serving stopped, or another connection took its place:
                // the connection ends.
                tokio::select! {
                    _ = served => {}
                    _ = closed.changed() => {}
                    _ = evicted.notified() => {}
                }
                drop(mine);
            });
        }
    }
}

/// Clears the engine's web URL when serving stops.
struct Unannounce(Arc<Engine>);

impl Drop for Unannounce {
    fn drop(&mut self) {
        crate::auth::announce(&self.0, None);
    }
}

/// The connections open, per [`crate::throttle::key`] of their peers.
struct Conns {
    open: Mutex<Open>,
    epoch: Instant,
}

#[derive(Default)]
struct Open {
    next: u64,
    conns: HashMap<u64, OpenConn>,
    per_key: HashMap<IpAddr, usize>,
}

struct OpenConn {
    key: IpAddr,
    state: Arc<ConnState>,
    evicted: Arc<tokio::sync::Notify>,
}

impl Default for Conns {
    fn default() -> Self {
        Conns {
            open: Mutex::default(),
            epoch: Instant::now(),
        }
    }
}

/// One admitted connection, counted until dropped.
struct Admitted {
    conns: Arc<Conns>,
    id: u64,
    state: Arc<ConnState>,
    /// Told when a new connection took its place.
    evicted: Arc<tokio::sync::Notify>,
}

impl Open {
    /// Closes the oldest idle connection (of `key`, or of anyone): false
    /// when none is idle.
    fn evict(&mut self, key: Option<IpAddr>) -> bool {
        let oldest = self
            .conns
            .iter()
            .filter(|(_, c)| key.is_none_or(|k| c.key == k) && c.state.idle())
            .min_by_key(|(_, c)| c.state.since.load(Ordering::Acquire))
            .map(|(id, _)| *id);
        match oldest.and_then(|id| self.remove(id)) {
            Some(gone) => {
                gone.evicted.notify_one();
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, id: u64) -> Option<OpenConn> {
        let gone = self.conns.remove(&id)?;
        if let Some(n) = self.per_key.get_mut(&gone.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_key.remove(&gone.key);
            }
        }
        Some(gone)
    }
}

impl Conns {
    /// Admits a connection from `ip`, closing the oldest idle one at a cap
    /// (this address's, then everyone's); `None` when none is idle.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Admitted> {
        let key = crate::throttle::key(ip);
        let cap = if crate::throttle::is_loopback(ip) {
            MAX_FROM_LOOPBACK
        } else {
            MAX_PER_ADDRESS
        };
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.per_key.get(&key).copied().unwrap_or(0) >= cap && !open.evict(Some(key)) {
            return None;
        }
        if open.conns.len() >= MAX_CONNECTIONS && !open.evict(None) {
            return None;
        }
        let id = open.next;
        open.next += 1;
        let state = Arc::new(ConnState::new(self.epoch));
        let evicted = Arc::new(tokio::sync::Notify::new());
        open.conns.insert(
            id,
            OpenConn {
                key,
                state: state.clone(),
                evicted: evicted.clone(),
            },
        );
        *open.per_key.entry(key).or_insert(0) += 1;
        Some(Admitted {
            conns: self.clone(),
            id,
            state,
            evicted,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.conns.open.lock().unwrap_or_else(|p| p.into_inner());
        open.remove(self.id);
    }
}

/// Serves one connection's HTTP/1.1 requests (and its WebSocket upgrade).
async fn connection<I>(io: I, peer: SocketAddr, state: Arc<ConnState>, app: axum::Router)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use tower::ServiceExt;
    let service =
        hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(Peer(peer));
            request.extensions_mut().insert(Conn(state.clone()));
            // Its headers are in: one claiming a credential is kept while
            // `routes::guard` checks it (which says what holds then).
            if crate::auth::credential(request.headers()).is_some() {
                state.serving();
            }
            let (app, state) = (app.clone(), state.clone());
            async move {
                let response = app.oneshot(request).await;
                // An upgraded connection leaves the caps when its upgrade
                // is through; until then it stays busy.
                let upgraded = response
                    .as_ref()
                    .is_ok_and(|r| r.status() == hyper::StatusCode::SWITCHING_PROTOCOLS);
                if !upgraded {
                    state.answered();
                }
                response
            }
        });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HANDSHAKE_TIMEOUT)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!("web: connection ended: {e}");
    }
}
