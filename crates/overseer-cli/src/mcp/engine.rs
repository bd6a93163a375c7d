//! Asking the engine: one `Request::Session` per tool call, over its Unix
//! socket. A blocking ask keeps its connection open until a human (or the
//! supervisor) answers; if that connection drops (the engine restarts), the
//! same ask is asked again with the same key, so the engine finds the same
//! gate instead of opening another. Dropping the future drops the
//! connection, which is how a cancelled call withdraws its gate.

use overseer_core::{ApiError, ErrorCode, SessionAnswer, SessionAsk, SessionRef};
use overseer_server::api::Request;
use overseer_server::client::Client;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Why an ask got no answer.
#[derive(Debug)]
pub enum AskError {
    /// No engine listens on the socket (or it cannot be reached: `detail`).
    NotRunning { detail: Option<String> },
    /// The engine went away while the ask waited and did not come back in
    /// time (or the ask was not safe to repeat).
    Lost { detail: String },
    /// The engine refused the ask (bad input, a bug, an old engine).
    Refused(ApiError),
}

pub struct Asker {
    pub socket: PathBuf,
    /// How long to keep reconnecting after the engine went away mid-ask.
    pub reconnect_for: Duration,
}

/// A connection that lived at least this long proves the engine is up: the
/// reconnect window starts afresh when it drops.
const STABLE: Duration = Duration::from_secs(5);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl Asker {
    /// Asks and waits for the answer. `retry` says whether asking again
    /// after a lost connection is safe (a keyed ask, a read).
    pub async fn ask(
        &self,
        session: &SessionRef,
        ask: &SessionAsk,
        retry: bool,
    ) -> Result<SessionAnswer, AskError> {
        let mut client = match Client::connect(&self.socket).await {
            Ok(Some(c)) => c,
            Ok(None) => return Err(AskError::NotRunning { detail: None }),
            Err(e) if e.code == ErrorCode::EngineUnavailable => {
                return Err(AskError::NotRunning {
                    detail: Some(e.message),
                })
            }
            Err(e) => return Err(AskError::Refused(e)),
        };
        let mut lost_since: Option<Instant> = None;
        loop {
            let connected = Instant::now();
            let reply = client
                .call(Request::Session {
                    session: session.clone(),
                    ask: ask.clone(),
                })
                .await;
            match reply {
                Ok(value) => {
                    return serde_json::from_value(value).map_err(|e| {
                        AskError::Refused(ApiError::new(
                            ErrorCode::Internal,
                            format!("unreadable answer from the engine ({e}); is `overseer mcp` older than the engine? Use the same version for both"),
                        ))
                    })
                }
                Err(e) if e.code == ErrorCode::EngineUnavailable => {
                    if !retry {
                        return Err(AskError::Lost {
                            detail: e.message,
                        });
                    }
                    if connected.elapsed() >= STABLE {
                        lost_since = None;
                    }
                    let since = *lost_since.get_or_insert_with(Instant::now);
                    tracing::info!("engine connection lost ({}); reconnecting", e.message);
                    client = self.reconnect(since).await?;
                }
                Err(e) => return Err(AskError::Refused(e)),
            }
        }
    }

    async fn reconnect(&self, since: Instant) -> Result<Client, AskError> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let left = self.reconnect_for.saturating_sub(since.elapsed());
            if left.is_zero() {
                return Err(AskError::Lost {
                    detail: format!(
                        "Overseer's engine went away and did not come back within {} s",
                        self.reconnect_for.as_secs()
                    ),
                });
            }
            tokio::time::sleep(backoff.min(left)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            match Client::connect(&self.socket).await {
                Ok(Some(c)) => return Ok(c),
                Ok(None) => {}
                Err(e) => tracing::debug!("reconnect: {e}"),
            }
        }
    }
}
