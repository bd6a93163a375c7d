//! What every handler shares.

use overseer_engine::Engine;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// `/api` requests of paired devices (a credential the engine knows)
/// served at once; more get 429 at once (a flood is refused, the engine's
/// threads stay free for everyone else).
pub const MAX_IN_FLIGHT: usize = 32;

/// `/api` requests without a known credential (pairing, a browser asking
/// who it is, anything refused) served at once: a pool of their own, so
/// they never take a paired device's slot. Each is short (its body was
/// read before it takes a slot, and a pairing try is one read): more wait
/// for a slot, in order, up to [`ANONYMOUS_WAIT`], then get 429.
pub const MAX_ANONYMOUS_IN_FLIGHT: usize = 8;

/// How long a request without a credential waits for a slot.
pub const ANONYMOUS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How often the server sends a heartbeat frame and a ping on an event
/// socket ([`crate::events`]).
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);

/// Event sockets one device may hold open at once (tabs, a phone and its
/// reconnects): an upgraded socket leaves the connection caps behind, so
/// without this one paired device could open them without end.
pub const MAX_SOCKETS_PER_DEVICE: usize = 8;

/// The transport's state: the engine, how browsers reach it, the request slots.
#[derive(Clone)]
pub struct Web {
    pub engine: Arc<Engine>,
    /// `http` or `https`: what the browser's Origin names.
    pub scheme: &'static str,
    /// Serving on loopback: only loopback host names are answered on
    /// `/api` (a page of another site whose name resolves to 127.0.0.1,
    /// "DNS rebinding", is refused).
    pub loopback: bool,
    /// The origins a TLS-terminating proxy serves this engine at
    /// (`https://box.tailnet.ts.net`): their pages are answered too.
    pub public_origins: Arc<[String]>,
    /// This engine process's id, sent in the socket's hello.
    pub instance: Arc<str>,
    /// How often a socket's heartbeat is sent ([`HEARTBEAT`]).
    pub heartbeat: std::time::Duration,
    /// Wrong pairing codes per address.
    pub pairing: Arc<crate::throttle::PairingThrottle>,
    /// Event sockets open per device.
    pub sockets: crate::counts::Counts<overseer_core::DeviceId>,
    /// Changes (closes) when serving stops: every WebSocket ends with it.
    pub closed: tokio::sync::watch::Receiver<()>,
    in_flight: Arc<Semaphore>,
    anonymous: Arc<Semaphore>,
}

/// The device a request's credential names, found by the checks before
/// its handler (`routes::guard`; an extension of the request). `None`: it
/// carries no credential the engine knows.
#[derive(Clone)]
pub struct Known(pub Option<overseer_core::DeviceView>);

impl Web {
    pub fn new(
        engine: Arc<Engine>,
        scheme: &'static str,
        loopback: bool,
        public_origins: Vec<String>,
        closed: tokio::sync::watch::Receiver<()>,
    ) -> Web {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Web {
            engine,
            scheme,
            loopback,
            public_origins: public_origins.into(),
            instance: format!("{:x}-{nanos:x}", std::process::id()).into(),
            heartbeat: HEARTBEAT,
            pairing: Arc::default(),
            sockets: crate::counts::Counts::default(),
            closed,
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            anonymous: Arc::new(Semaphore::new(MAX_ANONYMOUS_IN_FLIGHT)),
        }
    }

    /// The slots of the paired devices' `/api` requests served at once.
    pub fn in_flight(&self) -> Arc<Semaphore> {
        self.in_flight.clone()
    }

    /// The slots of the `/api` requests without a known credential.
    pub fn anonymous(&self) -> Arc<Semaphore> {
        self.anonymous.clone()
    }
}
