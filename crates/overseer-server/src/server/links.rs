//! The fence between a persistent link's connections.
//!
//! A window's link to this host reaches the engine through `overseer
//! bridge`, one connection after another as the network comes and goes.
//! When a link is cut with a decision in flight, the client reads the gate
//! back once it has reconnected and tells the user whether the decision
//! was applied. The new bridge ends the old one first
//! (`remote::handshake::supersede`), but what the old bridge had already
//! written may still wait, unread, in the engine's end of its socket.
//! Carried out after the client read the gate as pending, that call would
//! be applied after the user was told it was not.
//!
//! So each subscription of a link names its connection's number, higher at
//! each reconnection. When a connection subscribes it becomes its link's
//! newest: it waits for the calls of the link's earlier connections that
//! are being carried out (their effect is then in what the client reads
//! next), and from then on none of theirs is carried out. Each call of a
//! link's connection runs holding a read guard of the link's lock; the
//! subscription takes the write guard.

use crate::api::LinkConnection;
use overseer_core::{ApiError, ErrorCode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedRwLockReadGuard, RwLock};

/// The newest connection's number of each link, while a connection of the
/// link is open (at most the engine's connections, plus links that left
/// recently).
#[derive(Default)]
pub(super) struct Links {
    newest: Mutex<HashMap<String, Arc<RwLock<Option<u64>>>>>,
}

/// Past this many links remembered, those with no connection open are
/// forgotten.
const REMEMBERED: usize = 1024;

/// A subscribed connection's place in its link.
pub(super) struct Fenced {
    link: String,
    number: u64,
    newest: Arc<RwLock<Option<u64>>>,
}

/// What a call holds while it is carried out: the link's read guard.
pub(super) type Admitted = OwnedRwLockReadGuard<Option<u64>>;

impl Links {
    /// Makes `conn` its link's newest connection, once the calls of the
    /// link's earlier connections now being carried out are done. Refused
    /// when a newer connection of the link subscribed already, or the link
    /// id is not one.
    pub(super) async fn enter(&self, conn: &LinkConnection) -> Result<Fenced, ApiError> {
        if !crate::remote::handshake::valid_link(&conn.link) {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "{:?} is not a link id (letters, digits and '-', at most 64)",
                    conn.link
                ),
            ));
        }
        let newest = {
            let mut links = self.newest.lock().map_err(|_| {
                ApiError::new(
                    ErrorCode::Internal,
                    "the engine's table of links broke; restart the engine",
                )
            })?;
            if links.len() >= REMEMBERED && !links.contains_key(&conn.link) {
                links.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            links.entry(conn.link.clone()).or_default().clone()
        };
        let mut current = newest.write().await;
        if let Some(n) = *current {
            if n >= conn.number {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!(
                        "connection {} of link {} subscribed already, and this is connection \
                         {}: it is over; reconnect",
                        n, conn.link, conn.number
                    ),
                ));
            }
        }
        *current = Some(conn.number);
        drop(current);
        Ok(Fenced {
            link: conn.link.clone(),
            number: conn.number,
            newest,
        })
    }
}

impl Fenced {
    /// Lets one call of this connection be carried out, holding what is
    /// returned until it is done; refused once a newer connection of the
    /// link subscribed.
    pub(super) async fn admit(&self) -> Result<Admitted, ApiError> {
        let guard = self.newest.clone().read_owned().await;
        if *guard != Some(self.number) {
            return Err(ApiError::new(
                ErrorCode::EngineUnavailable,
                format!(
                    "connection {} of link {} was replaced by a newer one: this call was not \
                     carried out (the link reads what happened on its new connection)",
                    self.number, self.link
                ),
            ));
        }
        Ok(guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn conn(link: &str, number: u64) -> LinkConnection {
        LinkConnection {
            link: link.to_owned(),
            number,
        }
    }

    /// A call of the old connection being carried out when the new one
    /// subscribes finishes first (the new connection then reads its
    /// effect); the old connection's next call is refused.
    #[tokio::test]
    async fn a_new_connection_waits_for_the_old_ones_call_in_flight_and_then_fences_it() {
        let links = Arc::new(Links::default());
        let old = links.enter(&conn("lk-1", 0)).await.expect("first");
        let in_flight = old.admit().await.expect("the only connection calls");
        let entering = {
            let links = links.clone();
            tokio::spawn(async move { links.enter(&conn("lk-1", 1)).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !entering.is_finished(),
            "the new connection subscribed while a call of the old one was carried out"
        );
        drop(in_flight);
        let new = entering.await.expect("task").expect("newest");
        let refused = old.admit().await.expect_err("the old connection is fenced");
        assert_eq!(refused.code, ErrorCode::EngineUnavailable);
        assert!(new.admit().await.is_ok());
        // Another link is its own.
        let other = links.enter(&conn("lk-2", 0)).await.expect("other link");
        assert!(other.admit().await.is_ok());
        assert!(
            links.enter(&conn("../x", 5)).await.is_err(),
            "not a link id"
        );
    }

    /// Links with no connection left are forgotten past the bound; those
    /// with one are kept (their fence still matters).
    #[tokio::test]
    async fn links_with_no_connection_are_forgotten_past_the_bound() {
        let links = Links::default();
        let kept = links.enter(&conn("kept", 3)).await.expect("kept");
        for i in 0..REMEMBERED {
            drop(
                links
                    .enter(&conn(&format!("gone-{i}"), 0))
                    .await
                    .expect("link"),
            );
        }
        let len = links.newest.lock().expect("lock").len();
        assert!(len <= REMEMBERED, "{len} links remembered");
        assert!(
            links.enter(&conn("kept", 2)).await.is_err(),
            "a link with an open connection keeps its newest number"
        );
        assert!(kept.admit().await.is_ok());
    }
}
