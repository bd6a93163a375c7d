//! Sending deliveries: one scheduler thread of the engine's own picks the
//! due deliveries from the database and starts one thread per attempt, at
//! most one attempt in flight per hook. An attempt ends within the hook's
//! timeout (`[webhooks] timeout_seconds`, default 10 s), so a hook that
//! hangs holds up only its own deliveries, and never the engine, whose
//! threads only queue.
//!
//! A burst to one hook goes in few requests: after a request to a hook,
//! the events for it that come within its batch window (`[webhooks]
//! batch_window_ms`, default 5 s) wait for the window's end and go
//! together, as one [`super::WebhookBatch`]; the first event of a quiet
//! hook goes at once, alone and unchanged. A retry due keeps its schedule
//! and takes along whatever else is due for its hook.
//!
//! The retry schedule (`[webhooks]` in `overseer.toml`): 6 attempts, the
//! first at once, then after 2 s, 10 s, 50 s, 250 s and 1,250 s (each wait
//! five times the one before); then the delivery is given up on (`failed`,
//! with the last error in its log). A 2xx answer delivers; anything else
//! (another status, a redirect, a timeout, a refused connection) is a
//! failed attempt.

use crate::engine::Shared;
use hmac::{Hmac, Mac};
use overseer_store::webhooks::{AttemptOutcome, AttemptRow, DeliveryRow, WebhookRow};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The longest the scheduler sleeps without being woken.
const IDLE_WAIT: Duration = Duration::from_secs(5);

/// How many due deliveries the scheduler looks at each time.
const BATCH: u32 = 64;

/// A hook's secret: 32 random bytes, as hex.
pub(crate) fn new_secret() -> String {
    use rand_core::RngCore;
    let mut bytes = [0u8; 32];
    rand_core::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The signature header's value for `body` sent at `t` (Unix seconds):
/// `t=<t>,v1=<hex of HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, t: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length: this cannot fail.
    let mut mac = match Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return format!("t={t},v1="),
    };
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

impl Shared {
    /// Starts the delivery thread (once). It holds the engine weakly and
    /// ends when the engine is gone or stopping.
    pub(crate) fn start_webhooks(self: &Arc<Self>) {
        {
            let mut state = self.webhooks.lock();
            if state.started || state.stopping {
                return;
            }
            state.started = true;
        }
        let engine = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("webhooks".into())
            .spawn(move || schedule(engine));
        if let Err(e) = spawned {
            tracing::warn!("no webhook delivery thread (webhooks wait in the database): {e}");
            self.webhooks.lock().started = false;
        }
    }
}

fn schedule(engine: Weak<Shared>) {
    loop {
        let Some(shared) = engine.upgrade() else {
            return;
        };
        let state = shared.webhooks.state.clone();
        let now = shared.clock.now();
        let seen = {
            let s = shared.webhooks.lock();
            if s.stopping {
                return;
            }
            s.woken
        };
        let window = shared.config.webhooks.batch_window().as_millis() as i64;
        // The earliest end of a batch window some due event waits for.
        let mut held: Option<i64> = None;
        let due = shared.store().due_deliveries(now, BATCH);
        match due {
            Ok(due) => {
                let mut looked = std::collections::HashSet::new();
                for d in due {
                    let hook = d.webhook_id;
                    if !looked.insert(hook) || shared.webhooks.lock().busy.contains(&hook) {
                        continue;
                    }
                    let members = if window > 0 {
                        match shared
                            .store()
                            .due_for_webhook(hook, now, super::batch::MAX_BATCH)
                        {
                            Ok(m) if !m.is_empty() => m,
                            Ok(_) => continue,
                            Err(e) => {
                                tracing::warn!("webhook {hook}: deliveries not read: {e}");
                                continue;
                            }
                        }
                    } else {
                        vec![d]
                    };
                    let retrying = members.iter().any(|m| m.attempts > 0);
                    {
                        let mut s = shared.webhooks.lock();
                        if s.stopping || s.busy.contains(&hook) {
                            continue;
                        }
                        // New events within the window after the last
                        // request wait for its end, to go together; a retry
                        // keeps its schedule (and takes them along).
                        let opens = s.last_sent.get(&hook).map(|at| at + window);
                        if let Some(opens) = opens.filter(|o| window > 0 && *o > now && !retrying) {
                            held = Some(held.map_or(opens, |h| h.min(opens)));
                            continue;
                        }
                        s.busy.insert(hook);
                    }
                    let on = shared.clone();
                    let started = std::thread::Builder::new()
                        .name("webhook-attempt".into())
                        .spawn(move || {
                            // Read, and the store's lock let go, before
                            // the attempt.
                            let row = on.store().webhook(hook);
                            match row {
                                Ok(row) if row.enabled => attempt(&on, &row, &members),
                                // Disabled since the deliveries were read:
                                // they were given up on, not sent.
                                Ok(_) => {}
                                Err(e) => tracing::debug!("webhook {hook} is gone: {e}"),
                            }
                            on.webhooks.lock().busy.remove(&hook);
                            on.webhooks.wake();
                        });
                    if let Err(e) = started {
                        tracing::warn!("webhook {hook}: no thread for an attempt: {e}");
                        shared.webhooks.lock().busy.remove(&hook);
                    }
                }
            }
            Err(e) => tracing::warn!("webhook deliveries not read: {e}"),
        }
        let next = shared.store().next_delivery_at().ok().flatten();
        let mut wait = match next {
            Some(at) if at > now => Duration::from_millis((at - now) as u64).min(IDLE_WAIT),
            // Due but its hook is busy: the attempt's end wakes us.
            _ => IDLE_WAIT,
        };
        if let Some(opens) = held {
            wait = wait.min(Duration::from_millis((opens - now).max(1) as u64));
        }
        drop(shared);
        let (lock, cv) = &*state;
        let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        if guard.woken == seen && !guard.stopping {
            let _ = cv.wait_timeout(guard, wait);
        }
    }
}

/// One attempt at `members` (one delivery, or several sent as one batch)
/// for `hook`, recorded with what it did to each. Blocks for at most the
/// hook's timeout.
pub(crate) fn attempt(shared: &Shared, hook: &WebhookRow, members: &[DeliveryRow]) {
    let config = &shared.config.webhooks;
    let at = shared.clock.now();
    // Any request to a hook, a test too, opens its batch window.
    shared.webhooks.lock().last_sent.insert(hook.id, at);
    let (request, carried) = super::batch::request(members, at);
    let members = &members[..carried];
    if members.is_empty() {
        return;
    }
    let started = Instant::now();
    let sent = post(hook, &request, at, config.timeout());
    let duration_ms = started.elapsed().as_millis() as i64;
    let (status_code, error) = match &sent {
        Ok(code) if (200..300).contains(code) => (Some(*code), None),
        Ok(code) if (300..400).contains(code) => (
            Some(*code),
            Some("redirected: webhooks do not follow redirects; give the final URL".to_owned()),
        ),
        Ok(code) => (Some(*code), Some(format!("the receiver answered {code}"))),
        Err(e) => (None, Some(e.clone())),
    };
    let ended = shared.clock.now();
    // Each event keeps its own count of attempts: one that has had all its
    // attempts is given up on, the others are tried again (together).
    let outcome = |d: &DeliveryRow| {
        let made = d.attempts + 1;
        if error.is_none() {
            AttemptOutcome::Delivered
        } else if made >= config.attempts() {
            AttemptOutcome::GaveUp {
                note: format!(
                    "given up after {made} attempts; the last: {}",
                    error.as_deref().unwrap_or("failed")
                ),
            }
        } else {
            let wait = config.retry_after(made).as_millis() as i64;
            AttemptOutcome::Retry {
                next_at: ended.saturating_add(wait),
            }
        }
    };
    let recorded = shared.write(|tx| {
        for d in members {
            let row = AttemptRow {
                delivery_id: d.id,
                at,
                status_code,
                error: error.clone(),
                duration_ms,
            };
            tx.record_attempt(&row, &outcome(d))?;
        }
        Ok(())
    });
    if let Err(e) = recorded {
        // The hook was removed meanwhile, or the disk is full: the
        // deliveries stay as they were (pending: tried again).
        tracing::warn!(
            webhook = hook.id,
            delivery = request.delivery,
            "a webhook attempt was not recorded: {e}"
        );
    }
}

/// Sends one request: the receiver's status, or why there is none.
fn post(
    hook: &WebhookRow,
    r: &super::batch::Request,
    at: i64,
    timeout: Duration,
) -> Result<u16, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(concat!("Overseer/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut request = agent
        .post(&hook.url)
        .header("content-type", "application/json")
        .header("x-overseer-event", &r.event)
        .header("x-overseer-delivery", &r.delivery)
        .header(
            "x-overseer-signature",
            &signature(&hook.secret, at.div_euclid(1000), r.body.as_bytes()),
        )
        .header("x-priority", &r.priority.to_string());
    if !r.title.is_empty() {
        request = request.header("x-title", &header_text(&r.title));
    }
    match request.send(r.body.as_bytes()) {
        Ok(response) => Ok(response.status().as_u16()),
        Err(ureq::Error::Timeout(_)) => Err(format!(
            "no answer within {} s (`[webhooks] timeout_seconds`)",
            timeout.as_secs()
        )),
        Err(ureq::Error::Io(io)) if io.kind() == std::io::ErrorKind::TimedOut => Err(format!(
            "no answer within {} s (`[webhooks] timeout_seconds`)",
            timeout.as_secs()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// A header's text: as is when it is printable ASCII, else RFC 2047
/// (`=?UTF-8?Q?...?=`), which ntfy decodes.
fn header_text(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return one_line;
    }
    let mut out = String::from("=?UTF-8?Q?");
    for b in one_line.bytes() {
        if b.is_ascii_alphanumeric() {
            out.push(b as char);
        } else {
            out.push_str(&format!("={b:02X}"));
        }
    }
    out.push_str("?=");
    out
}

#[cfg(test)]
mod tests {
    use super::{header_text, signature};

    #[test]
    fn the_signature_is_hmac_sha256_over_the_timestamp_a_dot_and_the_body() {
        // RFC 4231 test case 2 ("Jefe"), with the message split as ours is.
        let sig = signature("Jefe", 0, b"what do ya want for nothing?");
        let mac_of = |msg: &str| {
            use hmac::Mac;
            let mut m =
                hmac::Hmac::<sha2::Sha256>::new_from_slice(b"Jefe").expect("any key length");
            m.update(msg.as_bytes());
            hex::encode(m.finalize().into_bytes())
        };
        assert_eq!(
            sig,
            format!("t=0,v1={}", mac_of("0.what do ya want for nothing?"))
        );
        assert_eq!(
            mac_of("what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn titles_that_are_not_ascii_are_encoded_for_the_header() {
        assert_eq!(
            header_text("Run 3 asks permission"),
            "Run 3 asks permission"
        );
        assert_eq!(header_text("Käse\nx"), "=?UTF-8?Q?K=C3=A4se=20x?=");
    }
}
