//! A connection as the web transport's caps and checks see it: its peer,
//! what it is doing, and the deadlines its requests have. Below both the
//! listener (`listen`, which admits connections) and the routes (`routes`,
//! which say what a request carries), so neither imports the other's.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a TLS handshake, or a request's headers, may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request's body may take, in all.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The peer address of the connection a request came on (an extension of
/// every request).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// What a connection is doing, as the caps see it (an extension of every
/// request: `routes::guard` says when a request carries a credential the
/// engine knows, and when its body is in).
pub struct ConnState {
    /// Serving a request (its headers in, and its body, or a credential
    /// the engine knows): not to be closed for another.
    busy: AtomicBool,
    /// Its last request carried a credential the engine knows.
    trusted: AtomicBool,
    /// When it last became idle, in ms after `epoch`.
    pub(crate) since: AtomicU64,
    epoch: Instant,
}

impl ConnState {
    pub(crate) fn new(epoch: Instant) -> ConnState {
        ConnState {
            busy: AtomicBool::new(false),
            trusted: AtomicBool::new(false),
            since: AtomicU64::new(elapsed_ms(epoch)),
            epoch,
        }
    }

    /// Whether a new connection may take its place.
    pub(crate) fn idle(&self) -> bool {
        !self.busy.load(Ordering::Acquire) && !self.trusted.load(Ordering::Acquire)
    }

    /// A request's credential was checked: `known` when the engine knows
    /// it (the connection is kept from now on, its body read as busy);
    /// otherwise it stays idle until its body is in.
    pub fn credential(&self, known: bool) {
        self.trusted.store(known, Ordering::Release);
        self.busy.store(known, Ordering::Release);
    }

    /// The request's body is in: it is being served.
    pub fn serving(&self) {
        self.busy.store(true, Ordering::Release);
    }

    /// The request is answered: idle from now (unless trusted).
    pub(crate) fn answered(&self) {
        self.since.store(elapsed_ms(self.epoch), Ordering::Release);
        self.busy.store(false, Ordering::Release);
    }
}

pub(crate) fn elapsed_ms(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The state of the connection a request came on (an extension of every
/// request).
#[derive(Clone)]
pub struct Conn(pub Arc<ConnState>);
