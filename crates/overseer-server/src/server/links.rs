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
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, OwnedRwLockReadGuard, RwLock};

/// How far ahead of its link's newest connection a connection's number
/// may be (of a link this engine does not know: how high). A client adds
/// one at each reconnection, so it never comes near this; a process that
/// names a link it does not own cannot push the link's number out of its
/// owner's reach (2^64-1 would refuse every later connection).
pub(super) const AHEAD: u64 = 64;

/// The newest connection's number of each link, while a connection of the
/// link is open (at most the engine's connections, plus links that left
/// recently).
#[derive(Default)]
pub(super) struct Links {
    newest: Mutex<HashMap<String, Arc<Entry>>>,
}

/// One link's fence, and its newest number told to its connections (an
/// older one is told it was replaced, so its client reconnects instead of
/// having its calls refused while it thinks it is live).
struct Entry {
    fence: Arc<RwLock<Option<u64>>>,
    told: watch::Sender<Option<u64>>,
}

impl Default for Entry {
    fn default() -> Self {
        Entry {
            fence: Arc::default(),
            told: watch::channel(None).0,
        }
    }
}

/// Past this many links remembered, those with no connection open are
/// forgotten.
const REMEMBERED: usize = 1024;

/// A subscribed connection's place in its link.
pub(super) struct Fenced {
    link: String,
    number: u64,
    entry: Arc<Entry>,
}

/// What a call holds while it is carried out: the link's read guard.
pub(super) type Admitted = OwnedRwLockReadGuard<Option<u64>>;

impl Links {
    /// Makes `conn` its link's newest connection, once the calls of the
    /// link's earlier connections now being carried out are done. Refused
    /// (`conflict`) when a connection of the link with this number or a
    /// higher one subscribed already; refused (`invalid_input`) when the
    /// number is more than [`AHEAD`] past the link's newest (or, for a link
    /// this engine does not know, above [`AHEAD`]), or the link id is not
    /// one. A refused connection changes nothing: the link's owner, told
    /// either, starts a link of a new id (`remote::link`), which no other
    /// process has seen, so it always gets through.
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
        let entry = {
            let mut links = self.newest.lock().map_err(|_| {
                ApiError::new(
                    ErrorCode::Internal,
                    "the engine's table of links broke; restart the engine",
                )
            })?;
            if links.len() >= REMEMBERED && !links.contains_key(&conn.link) {
                links.retain(|_, entry| Arc::strong_count(entry) > 1);
            }
            links.entry(conn.link.clone()).or_default().clone()
        };
        let mut current = entry.fence.write().await;
        let newest = *current;
        if let Some(n) = newest {
            if n >= conn.number {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!(
                        "connection {} of link {} subscribed already, and this is connection \
                         {}: it is over; reconnect as a new link",
                        n, conn.link, conn.number
                    ),
                ));
            }
        }
        let highest = newest.map_or(AHEAD, |n| n.saturating_add(AHEAD));
        if conn.number > highest {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                format!(
                    "connection {} of link {} is too far ahead of the link (at most {highest} \
                     now): a link numbers its connections one after another; reconnect as a \
                     new link",
                    conn.number, conn.link
                ),
            ));
        }
        *current = Some(conn.number);
        entry.told.send_replace(Some(conn.number));
        drop(current);
        Ok(Fenced {
            link: conn.link.clone(),
            number: conn.number,
            entry,
        })
    }
}

impl Fenced {
    /// Lets one call of this connection be carried out, holding what is
    /// returned until it is done; refused once a newer connection of the
    /// link subscribed.
    pub(super) async fn admit(&self) -> Result<Admitted, ApiError> {
        let guard = self.entry.fence.clone().read_owned().await;
        if *guard != Some(self.number) {
            return Err(self.replaced_error());
        }
        Ok(guard)
    }

    /// Done once a newer connection of the link subscribed: the error to
    /// tell this one's client (on a line without id: the connection is
    /// over, and its client reconnects).
    pub(super) fn replaced(&self) -> impl Future<Output = ApiError> + Send + 'static {
        let mut told = self.entry.told.subscribe();
        let number = self.number;
        let error = ApiError::new(
            ErrorCode::EngineUnavailable,
            format!(
                "connection {} of link {} was replaced by a newer one: this connection is \
                 over (its calls are refused); reconnect",
                self.number, self.link
            ),
        );
        async move {
            // The sender lives as long as this connection's entry, which
            // this future does not hold: gone, the link is over too.
            let _ = told.wait_for(|n| *n != Some(number)).await;
            error
        }
    }

    fn replaced_error(&self) -> ApiError {
        ApiError::new(
            ErrorCode::EngineUnavailable,
            format!(
                "connection {} of link {} was replaced by a newer one: this call was not \
                 carried out (the link reads what happened on its new connection)",
                self.number, self.link
            ),
        )
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

    /// A number far ahead of the link is refused and changes nothing: the
    /// link's own next connection gets through, and a link of a new id
    /// always does. A connection replaced by a newer one is told so.
    #[tokio::test]
    async fn a_number_far_ahead_is_refused_and_never_locks_the_link() {
        let links = Links::default();
        let bogus = links
            .enter(&conn("lk-9", u64::MAX))
            .await
            .err()
            .expect("2^64-1 on a link never seen");
        assert_eq!(bogus.code, ErrorCode::InvalidInput, "{}", bogus.message);
        assert!(links.enter(&conn("lk-9", AHEAD + 1)).await.is_err());
        let first = links.enter(&conn("lk-9", 3)).await.expect("the owner's");
        let replaced = first.replaced();
        for far in [u64::MAX, 3 + AHEAD + 1] {
            let refused = links
                .enter(&conn("lk-9", far))
                .await
                .err()
                .expect("far ahead");
            assert_eq!(refused.code, ErrorCode::InvalidInput, "{}", refused.message);
        }
        assert!(first.admit().await.is_ok(), "still the newest");
        let next = links
            .enter(&conn("lk-9", 3 + AHEAD))
            .await
            .expect("within reach");
        let told = tokio::time::timeout(Duration::from_secs(5), replaced)
            .await
            .expect("the replaced connection is told");
        assert!(told.message.contains("replaced"), "{}", told.message);
        assert!(first.admit().await.is_err());
        assert!(next.admit().await.is_ok());
        let fresh = links.enter(&conn("lk-10", 0)).await.expect("a new id");
        assert!(fresh.admit().await.is_ok());
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
