//! Webhooks, end to end: a real engine sends to real HTTP receivers on
//! loopback (hyper), which check what arrives as a user's receiver would:
//! the signature recomputed with the hook's secret, the retries' gaps, a
//! receiver that hangs.

use crate::common;

use common::*;
use hmac::Mac;
use overseer_core::{Actor, ErrorCode, GateKind, RunState};
use overseer_engine::{
    DeliveryStatus, NotificationKind, NotificationSettings, WebhookBatch, WebhookBatchKind,
    WebhookBody, WebhookDelivery, WebhookEvent,
};
use overseer_store::WorkspaceSettings;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Retries after 300 ms, then 1.5 s, 7.5 s...; a receiver has 1 s; each
/// event its own request (no batching: these tests count requests per
/// event; batching has tests of its own below).
const FAST: &str = "[webhooks]\nfirst_retry_ms = 300\ntimeout_seconds = 1\nbatch_window_ms = 0\n";

/// How a receiver answers one request.
#[derive(Clone, Copy, Debug)]
enum Reply {
    Status(u16),
    /// Never answers (within the test).
    Hang,
}

/// One request as it arrived.
#[derive(Clone, Debug)]
struct Received {
    at: Instant,
    headers: hyper::HeaderMap,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    fn body(&self) -> WebhookBody {
        serde_json::from_slice(&self.body).expect("the body is a WebhookBody")
    }
}

/// A real HTTP server on loopback that keeps every request and answers
/// from its script, then with `then`.
#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start(script: Vec<Reply>, then: Reply) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        Receiver::serve(listener, script, then)
    }

    /// One that answers 200 on `port` of loopback.
    async fn start_on(port: u16) -> Receiver {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the port again");
        Receiver::serve(listener, vec![], Reply::Status(200))
    }

    fn serve(listener: tokio::net::TcpListener, script: Vec<Reply>, then: Reply) -> Receiver {
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let kept = got.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let got = kept.clone();
                let script = script.clone();
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let got = got.clone();
                        let script = script.clone();
                        async move {
                            use http_body_util::BodyExt;
                            let at = Instant::now();
                            let headers = req.headers().clone();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes().to_vec())
                                .unwrap_or_default();
                            got.lock()
                                .expect("lock")
                                .push(Received { at, headers, body });
                            let reply = script.lock().expect("lock").pop_front().unwrap_or(then);
                            let status = match reply {
                                Reply::Status(s) => s,
                                Reply::Hang => {
                                    tokio::time::sleep(Duration::from_secs(30)).await;
                                    200
                                }
                            };
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .status(status)
                                    .body(http_body_util::Full::new(hyper::body::Bytes::from("ok")))
                                    .expect("response"),
                            )
                        }
                    },
                );
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver { url, got }
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().expect("lock").clone()
    }

    /// Waits (up to 20 s) until `pred` holds of what arrived.
    async fn wait(&self, what: &str, pred: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.got();
            if pred(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; got {} requests",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Checks the signature as a receiver would, with nothing of Overseer's:
/// `t=<secs>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, `t` recent.
fn verify(secret: &str, r: &Received) -> Result<(), String> {
    let header = r.header("x-overseer-signature");
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", x)) => t = Some(x.to_owned()),
            Some(("v1", x)) => v1 = Some(x.to_owned()),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return Err(format!("no t and v1 in {header:?}"));
    };
    let secs: u64 = t.parse().map_err(|_| format!("t {t:?} is not a number"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    if now.abs_diff(secs) > 300 {
        return Err(format!("t {secs} is not within 5 minutes of {now}"));
    }
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(t.as_bytes());
    mac.update(b".");
    mac.update(&r.body);
    let sent = hex::decode(&v1).map_err(|e| format!("v1 is not hex: {e}"))?;
    mac.verify_slice(&sent)
        .map_err(|_| "the signature does not match".to_owned())
}

/// An engine with `config` whose desktop notifications go to the log.
async fn quiet_world(config: &str) -> World {
    world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        config,
    )
    .await
}

/// A hook to `rx` that gets every kind.
fn every_kind(w: &World, rx: &Receiver) -> overseer_engine::WebhookAdded {
    w.engine
        .add_webhook(&rx.url, &[], &Actor::cli())
        .expect("add")
}

async fn deliveries_until(
    w: &World,
    hook: i64,
    what: &str,
    pred: impl Fn(&[WebhookDelivery]) -> bool,
) -> Vec<WebhookDelivery> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = w.engine.webhook_deliveries(hook, None).expect("log");
        if pred(&log) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {log:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn reviews(w: &World) -> Vec<overseer_core::RunId> {
    let mut ids: Vec<_> = w
        .engine
        .runs()
        .expect("runs")
        .into_iter()
        .filter(|r| r.state == RunState::PendingReview)
        .map(|r| r.id)
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_event_arrives_signed_and_a_kind_not_subscribed_does_not() {
    let w = quiet_world(FAST).await;
    let reviews_rx = Receiver::start(vec![], Reply::Status(200)).await;
    let blocking_rx = Receiver::start(vec![], Reply::Status(200)).await;
    let for_reviews = w
        .engine
        .add_webhook(
            &reviews_rx.url,
            &[WebhookEvent::RunPendingReview],
            &Actor::cli(),
        )
        .expect("add");
    let for_blocking = w
        .engine
        .add_webhook(
            &blocking_rx.url,
            &[WebhookEvent::AgentQuestionBlocking],
            &Actor::cli(),
        )
        .expect("add");
    assert_eq!(for_reviews.secret.len(), 64, "32 random bytes as hex");
    assert_ne!(for_reviews.secret, for_blocking.secret);

    // The demo fleet, settled: runs waiting for review, and released ones.
    w.engine.seed_demo(&Actor::cli(), true).expect("seed");
    let want = reviews(&w);
    assert!(!want.is_empty(), "the settled fleet has runs in review");
    let got = reviews_rx
        .wait("a request per run in review", |g| g.len() >= want.len())
        .await;
    let mut runs = Vec::new();
    for r in &got {
        verify(&for_reviews.secret, r).unwrap_or_else(|e| panic!("{e}: {r:?}"));
        assert!(
            verify(&for_blocking.secret, r).is_err(),
            "another hook's secret does not verify it"
        );
        let body = r.body();
        assert_eq!(body.event, WebhookEvent::RunPendingReview);
        assert_eq!(r.header("x-overseer-event"), "run_pending_review");
        assert_eq!(r.header("content-type"), "application/json");
        let run = body.run_id.expect("a run");
        let view = w.engine.run(run).expect("run");
        assert_eq!(body.title, format!("Run {run} is ready for review"));
        assert_eq!(r.header("x-title"), body.title, "ntfy's title");
        assert_eq!(body.text, view.task_title);
        assert_eq!(body.workspace.as_deref(), Some(view.workspace.as_str()));
        assert_eq!(body.task_id, Some(view.task_id));
        let gate = body.gate_id.expect("the review's gate");
        assert_eq!(w.engine.gate(gate).expect("gate").run_id, run);
        runs.push(run);
    }
    runs.sort();
    assert_eq!(runs, want, "one request per run in review, each once");

    // A tampered body no longer verifies.
    let mut tampered = got[0].clone();
    tampered.body.push(b' ');
    assert!(verify(&for_reviews.secret, &tampered).is_err());

    let log = deliveries_until(&w, for_reviews.webhook.id, "all delivered", |l| {
        l.len() == want.len() && l.iter().all(|d| d.status == DeliveryStatus::Delivered)
    })
    .await;
    assert!(log
        .iter()
        .all(|d| d.attempts.len() == 1 && d.attempts[0].status_code == Some(200)));

    // Nothing blocking happened: the other hook got nothing, not even the
    // reviews and releases everyone else heard of.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(blocking_rx.got().is_empty(), "{:?}", blocking_rx.got());
    assert!(w
        .engine
        .webhook_deliveries(for_blocking.webhook.id, None)
        .expect("log")
        .is_empty());

    // A blocking ask reaches it; the reviews' hook hears nothing of it.
    let before = reviews_rx.got().len();
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let got = blocking_rx.wait("the plan's ask", |g| !g.is_empty()).await;
    verify(&for_blocking.secret, &got[0]).expect("signed with its own secret");
    let body = got[0].body();
    assert_eq!(body.event, WebhookEvent::AgentQuestionBlocking);
    assert_eq!(body.run_id, Some(run));
    assert_eq!(body.gate_id, Some(plan.id));
    assert_eq!(body.workspace.as_deref(), Some("demo"));
    assert_eq!(got[0].header("x-priority"), "4", "it stops an agent");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(reviews_rx.got().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_failing_twice_gets_three_attempts_with_growing_gaps() {
    let w = quiet_world(FAST).await;
    let rx = Receiver::start(
        vec![Reply::Status(500), Reply::Status(503)],
        Reply::Status(200),
    )
    .await;
    let hook = every_kind(&w, &rx);
    assert_eq!(
        hook.webhook.events,
        WebhookEvent::SUBSCRIBABLE.to_vec(),
        "no events named: every kind"
    );
    let asked = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let first = w
        .engine
        .test_webhook(hook.webhook.id, &Actor::cli())
        .expect("test");
    assert_eq!(first.event, WebhookEvent::Test);
    assert!(
        (first.created_at - asked).abs() < 5_000,
        "queued when asked: {first:?}"
    );
    assert_eq!(first.status, DeliveryStatus::Pending, "{first:?}");
    assert_eq!(first.attempts.len(), 1);
    assert_eq!(first.attempts[0].status_code, Some(500));
    assert_eq!(
        first.attempts[0].error.as_deref(),
        Some("the receiver answered 500")
    );

    let got = rx.wait("three attempts", |g| g.len() >= 3).await;
    let log = deliveries_until(&w, hook.webhook.id, "delivered", |l| {
        l.first()
            .is_some_and(|d| d.status == DeliveryStatus::Delivered)
    })
    .await;
    assert_eq!(log.len(), 1, "one delivery, attempted three times");
    let codes: Vec<Option<u16>> = log[0].attempts.iter().map(|a| a.status_code).collect();
    assert_eq!(codes, [Some(500), Some(503), Some(200)]);
    assert_eq!(log[0].next_at, None);

    tokio::time::sleep(Duration::from_millis(300)).await;
    let got_now = rx.got();
    assert_eq!(got_now.len(), 3, "nothing after it was delivered");
    let ids: Vec<String> = got
        .iter()
        .map(|r| r.header("x-overseer-delivery"))
        .collect();
    assert!(ids.iter().all(|i| *i == log[0].id.to_string()), "{ids:?}");
    for r in &got {
        verify(&hook.secret, r).expect("every attempt is signed");
        assert_eq!(r.body().event, WebhookEvent::Test);
    }
    let first_gap = got[1].at - got[0].at;
    let second_gap = got[2].at - got[1].at;
    assert!(
        first_gap >= Duration::from_millis(300),
        "the first retry waits 300 ms: {first_gap:?}"
    );
    assert!(
        second_gap >= Duration::from_millis(1500),
        "the second waits five times as long: {second_gap:?}"
    );
    assert!(
        second_gap > first_gap * 3,
        "{first_gap:?} then {second_gap:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_hangs_delays_neither_another_hook_nor_the_engine() {
    // A receiver has 5 s here: long enough to see everything else go on
    // while one hangs.
    let config = "[webhooks]\nfirst_retry_ms = 300\ntimeout_seconds = 5\nbatch_window_ms = 0\n";
    let w = quiet_world(config).await;
    let hanging = Receiver::start(vec![], Reply::Hang).await;
    let quick = Receiver::start(vec![], Reply::Status(204)).await;
    let kinds = [WebhookEvent::RunPendingReview, WebhookEvent::RunFinished];
    let slow_hook = w
        .engine
        .add_webhook(&hanging.url, &kinds, &Actor::cli())
        .expect("add");
    let quick_hook = w
        .engine
        .add_webhook(&quick.url, &kinds, &Actor::cli())
        .expect("add");

    w.engine.seed_demo(&Actor::cli(), true).expect("seed");
    let in_review = reviews(&w);
    hanging.wait("its first request", |g| !g.is_empty()).await;

    // The engine decides and tells while the receiver holds its request.
    let rejected = in_review[0];
    let began = Instant::now();
    w.engine
        .reject_run(rejected, "not now", &Actor::cli())
        .expect("reject");
    let took = began.elapsed();
    assert!(
        took < Duration::from_millis(1000),
        "a decision does not wait for a receiver: {took:?}"
    );
    let got = quick
        .wait("every review and the rejected run's end", |g| {
            g.iter().any(|r| {
                let b = r.body();
                b.event == WebhookEvent::RunFinished && b.run_id == Some(rejected)
            }) && g
                .iter()
                .filter(|r| r.body().event == WebhookEvent::RunPendingReview)
                .count()
                >= in_review.len()
        })
        .await;
    assert!(!got.is_empty());
    let slow_log = w
        .engine
        .webhook_deliveries(slow_hook.webhook.id, Some(200))
        .expect("log");
    assert!(
        slow_log.iter().all(|d| d.attempts.is_empty()),
        "the other hook got everything while the hanging one's first attempt went on: \
         {slow_log:#?}"
    );
    assert_eq!(hanging.got().len(), 1, "one attempt at a time per hook");
    assert!(w
        .engine
        .webhook_deliveries(quick_hook.webhook.id, Some(200))
        .expect("log")
        .iter()
        .all(|d| d.status == DeliveryStatus::Delivered));

    let log = deliveries_until(&w, slow_hook.webhook.id, "a timed-out attempt", |l| {
        l.iter().any(|d| !d.attempts.is_empty())
    })
    .await;
    let tried = log
        .iter()
        .find(|d| !d.attempts.is_empty())
        .expect("attempted");
    let a = &tried.attempts[0];
    assert_eq!(a.status_code, None);
    assert!(
        a.error
            .as_deref()
            .is_some_and(|e| e.contains("no answer within 5 s")),
        "{a:?}"
    );
    assert!(
        (4900..9000).contains(&a.duration_ms),
        "the attempt ended at its timeout: {a:?}"
    );
    assert_eq!(tried.status, DeliveryStatus::Pending, "it will be retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn muted_kinds_and_a_muted_channel_are_not_delivered() {
    let desktop = Arc::new(Captured::default());
    let w = world_with(WorkspaceSettings::default(), desktop.clone(), FAST).await;
    let rx = Receiver::start(vec![], Reply::Status(200)).await;
    let hook = every_kind(&w, &rx);
    // The desktop muted whole, webhooks' run_finished muted.
    w.engine
        .set_notifications(
            NotificationSettings {
                desktop_muted: true,
                webhook_muted: vec![WebhookEvent::RunFinished],
                ..Default::default()
            },
            &Actor::app(),
        )
        .expect("mute");
    w.engine.seed_demo(&Actor::cli(), true).expect("seed");
    let want = reviews(&w).len();
    let released = w
        .engine
        .runs()
        .expect("runs")
        .iter()
        .filter(|r| matches!(r.state, RunState::Released { .. }))
        .count();
    assert!(released > 0, "the settled fleet has released runs");
    rx.wait("the reviews", |g| {
        g.iter()
            .filter(|r| r.body().event == WebhookEvent::RunPendingReview)
            .count()
            >= want
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kinds: Vec<WebhookEvent> = rx.got().iter().map(|r| r.body().event).collect();
    assert!(
        !kinds.contains(&WebhookEvent::RunFinished),
        "run_finished is muted on webhooks, though {released} runs were released: {kinds:?}"
    );
    assert!(
        !desktop
            .0
            .lock()
            .expect("lock")
            .iter()
            .any(|n| n.kind == NotificationKind::RunPendingReview),
        "the desktop is muted"
    );

    // Webhooks muted whole; the desktop on again. A blocking ask shows on
    // the desktop and is sent to no hook.
    w.engine
        .set_notifications(
            NotificationSettings {
                webhooks_muted: true,
                ..Default::default()
            },
            &Actor::app(),
        )
        .expect("mute webhooks");
    let before = w
        .engine
        .webhook_deliveries(hook.webhook.id, Some(200))
        .expect("log")
        .len();
    let run = start(&w, "happy");
    pending_gate(&w, run, GateKind::Plan).await;
    for _ in 0..100 {
        if desktop
            .0
            .lock()
            .expect("lock")
            .iter()
            .any(|n| n.kind == NotificationKind::AgentQuestionBlocking)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(desktop
        .0
        .lock()
        .expect("lock")
        .iter()
        .any(|n| n.kind == NotificationKind::AgentQuestionBlocking && n.run_id == run));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        w.engine
            .webhook_deliveries(hook.webhook.id, Some(200))
            .expect("log")
            .len(),
        before,
        "nothing queued while webhooks are muted"
    );
    // A test still goes out: the user asked for it.
    let test = w
        .engine
        .test_webhook(hook.webhook.id, &Actor::cli())
        .expect("test");
    assert_eq!(test.status, DeliveryStatus::Delivered);

    // Muting `test` itself is refused, by field.
    let err = w
        .engine
        .set_notifications(
            NotificationSettings {
                webhook_muted: vec![WebhookEvent::Test],
                ..Default::default()
            },
            &Actor::app(),
        )
        .expect_err("a test cannot be muted");
    assert_eq!(err.code, ErrorCode::InvalidInput);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_that_are_not_http_are_refused_with_what_to_give_instead() {
    let w = quiet_world(FAST).await;
    for bad in [
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "ntfy.sh/my-topic",
        "http://",
        "https://exa mple.com/",
        "",
    ] {
        let err = w
            .engine
            .add_webhook(bad, &[], &Actor::cli())
            .expect_err(bad);
        assert_eq!(err.code, ErrorCode::InvalidInput, "{bad}: {}", err.message);
        assert!(
            err.message.contains("give an http:// or https:// URL"),
            "{bad}: {}",
            err.message
        );
    }
    let err = w
        .engine
        .add_webhook("https://ntfy.sh/t", &[WebhookEvent::Test], &Actor::cli())
        .expect_err("test is not subscribed to");
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(
        w.engine.webhooks().expect("list").is_empty(),
        "nothing stored"
    );
    // Upper-case schemes are schemes too.
    w.engine
        .add_webhook("HTTPS://ntfy.sh/my-topic", &[], &Actor::cli())
        .expect("https");
    let err = w
        .engine
        .test_webhook(99, &Actor::cli())
        .expect_err("no such hook");
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(
        err.message.contains("overseer webhooks list"),
        "{}",
        err.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_pending_when_the_engine_stops_is_sent_after_it_starts_again() {
    let mut w = quiet_world(FAST).await;
    // A port where nothing listens yet.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/hook");
    let hook = w.engine.add_webhook(&url, &[], &Actor::cli()).expect("add");
    let first = w
        .engine
        .test_webhook(hook.webhook.id, &Actor::cli())
        .expect("test");
    assert_eq!(first.status, DeliveryStatus::Pending);
    assert_eq!(first.attempts[0].status_code, None, "refused: {first:?}");
    restart(&mut w).await;
    assert_eq!(
        w.engine
            .webhook_deliveries(hook.webhook.id, None)
            .expect("log")[0]
            .status,
        DeliveryStatus::Pending,
        "kept while the engine was down"
    );
    // The receiver comes up; the restarted engine goes on with the delivery.
    let rx = Receiver::start_on(port).await;
    let got = rx.wait("the pending test", |g| !g.is_empty()).await;
    verify(&hook.secret, &got[0]).expect("signed");
    assert_eq!(got[0].header("x-overseer-delivery"), first.id.to_string());
    deliveries_until(&w, hook.webhook.id, "delivered after the restart", |l| {
        l[0].status == DeliveryStatus::Delivered && l[0].attempts.len() >= 2
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_that_tells_of_pending_gates_again_sends_nothing_twice() {
    let mut w = quiet_world(FAST).await;
    let rx = Receiver::start(vec![], Reply::Status(200)).await;
    let hook = w
        .engine
        .add_webhook(&rx.url, &[WebhookEvent::RunPendingReview], &Actor::cli())
        .expect("add");
    w.engine.seed_demo(&Actor::cli(), true).expect("seed");
    let want = reviews(&w).len();
    rx.wait("every review", |g| g.len() >= want).await;
    restart(&mut w).await;
    // The new engine notifies again about every pending gate (the desktop
    // shows them again); the hook was told already.
    assert!(w.engine.renotify_pending().expect("again") >= want);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(rx.got().len(), want, "nothing sent twice");
    assert_eq!(
        w.engine
            .webhook_deliveries(hook.webhook.id, None)
            .expect("log")
            .len(),
        want
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_hook_gets_nothing_and_enabled_again_gets_what_comes_next() {
    let w = quiet_world(FAST).await;
    // The first request fails: its retry (after 300 ms) is pending when
    // the hook is disabled.
    let rx = Receiver::start(vec![Reply::Status(500)], Reply::Status(200)).await;
    let hook = every_kind(&w, &rx);
    let id = hook.webhook.id;
    let first = w.engine.test_webhook(id, &Actor::cli()).expect("test");
    assert_eq!(first.status, DeliveryStatus::Pending, "{first:?}");

    // Only the owner at the machine may turn it off.
    let err = w
        .engine
        .set_webhook_enabled(id, false, &Actor::User("ana".into()))
        .expect_err("not the local owner");
    assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
    assert!(w.engine.webhooks().expect("list")[0].enabled);
    // Nor may a person through a paired device choose where what the engine
    // tells goes: add, test, remove are the owner's too.
    let ana = Actor::User("ana".into());
    for refused in [
        w.engine
            .add_webhook("http://127.0.0.1:9/elsewhere", &[], &ana)
            .map(|_| ()),
        w.engine.test_webhook(id, &ana).map(|_| ()),
        w.engine.remove_webhook(id, &ana).map(|_| ()),
    ] {
        let err = refused.expect_err("not the local owner");
        assert_eq!(err.code, ErrorCode::Forbidden, "{}", err.message);
    }
    assert_eq!(w.engine.webhooks().expect("list").len(), 1);
    // Listed to ana, a hook's URL keeps only where it goes (its path may be
    // the secret: an ntfy topic); the owner sees it whole.
    let seen = &w.engine.webhooks_seen_by(&ana).expect("list")[0];
    let host = rx
        .url
        .strip_suffix("/hook")
        .expect("the receiver's URL ends in /hook");
    assert_eq!(seen.url, format!("{host}/…"));
    let whole = &w.engine.webhooks_seen_by(&Actor::app()).expect("list")[0];
    assert_eq!(whole.url, hook.webhook.url);

    let off = w
        .engine
        .set_webhook_enabled(id, false, &Actor::cli())
        .expect("disable");
    assert!(!off.enabled);
    assert!(!w.engine.webhooks().expect("list")[0].enabled, "listed off");
    let log = w.engine.webhook_deliveries(id, None).expect("log");
    assert_eq!(log.len(), 1, "the log is kept: {log:#?}");
    assert_eq!(log[0].status, DeliveryStatus::Failed, "{log:#?}");
    assert_eq!(
        log[0].note.as_deref(),
        Some("not sent: the hook was disabled")
    );

    // Events while it is off: nothing queued, nothing sent, the pending
    // retry neither; a test is refused saying how to turn it on.
    w.engine.seed_demo(&Actor::cli(), true).expect("seed");
    let err = w
        .engine
        .test_webhook(id, &Actor::cli())
        .expect_err("disabled");
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(
        err.message.contains("overseer webhooks enable"),
        "{}",
        err.message
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        rx.got().len(),
        1,
        "only the first attempt, before disabling"
    );
    assert_eq!(w.engine.webhook_deliveries(id, None).expect("log").len(), 1);

    // On again: what happens from now on arrives, signed with the same
    // secret; what was given up on is not sent.
    let on = w
        .engine
        .set_webhook_enabled(id, true, &Actor::cli())
        .expect("enable");
    assert!(on.enabled);
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let got = rx
        .wait("the plan's ask", |g| {
            g.iter().skip(1).any(|r| {
                serde_json::from_slice::<WebhookBody>(&r.body)
                    .is_ok_and(|b| b.gate_id == Some(plan.id))
            })
        })
        .await;
    for r in &got[1..] {
        verify(&hook.secret, r).expect("the secret was kept");
        assert_ne!(
            r.header("x-overseer-delivery"),
            first.id.to_string(),
            "the delivery given up on is not sent"
        );
    }
    let log = w.engine.webhook_deliveries(id, Some(200)).expect("log");
    assert!(log.iter().any(|d| d.id == first.id), "the old log is kept");
}

/// Batching after a request: 3 s; retries after 300 ms.
const BATCHED: &str =
    "[webhooks]\nfirst_retry_ms = 300\ntimeout_seconds = 2\nbatch_window_ms = 3000\n";

/// The events one request carries, each with its delivery id: a batch's
/// list, or the one event of a plain body (its id from the header).
fn carried(r: &Received) -> Vec<(i64, WebhookBody)> {
    let value: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
    if value.get("kind").and_then(|k| k.as_str()) == Some("batch") {
        let batch: WebhookBatch = serde_json::from_value(value).expect("a WebhookBatch");
        assert_eq!(batch.kind, WebhookBatchKind::Batch);
        assert_eq!(batch.count, batch.events.len(), "count says how many");
        assert_eq!(r.header("x-overseer-event"), "batch");
        let ids: Vec<String> = batch
            .events
            .iter()
            .map(|e| e.delivery.to_string())
            .collect();
        assert_eq!(r.header("x-overseer-delivery"), ids.join(","));
        assert_eq!(r.header("x-title"), batch.title);
        for e in &batch.events {
            assert!(
                batch
                    .text
                    .contains(&format!("{}: {}", e.body.title, e.body.text)),
                "the plain-text summary lists {:?}: {:?}",
                e.body.title,
                batch.text
            );
        }
        batch
            .events
            .into_iter()
            .map(|e| (e.delivery, e.body))
            .collect()
    } else {
        let id = r.header("x-overseer-delivery").parse().expect("one id");
        vec![(id, r.body())]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_to_one_hook_arrives_in_few_requests_carrying_every_event() {
    let w = quiet_world(BATCHED).await;
    // The first request is answered, the second (the batch) fails once:
    // its retry carries the same events again.
    let rx = Receiver::start(
        vec![Reply::Status(200), Reply::Status(500)],
        Reply::Status(200),
    )
    .await;
    let hook = every_kind(&w, &rx);
    let id = hook.webhook.id;
    // A request (a test) opens the hook's window...
    let test = w.engine.test_webhook(id, &Actor::cli()).expect("test");
    assert_eq!(test.status, DeliveryStatus::Delivered);
    // ...within which a burst comes: every run of the settled fleet in
    // review or released at once.
    w.engine.seed_demo(&Actor::cli(), true).expect("seed");
    let log = deliveries_until(&w, id, "every event delivered", |l| {
        l.len() > 1 && l.iter().all(|d| d.status == DeliveryStatus::Delivered)
    })
    .await;
    let n = log.len();
    assert!(n >= 8, "a burst of events: {n}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = rx.got();
    let sizes: Vec<usize> = got.iter().map(|r| carried(r).len()).collect();
    eprintln!(
        "{n} events arrived in {} requests carrying {sizes:?}",
        got.len()
    );
    for r in &got {
        verify(&hook.secret, r).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    }
    assert_eq!(
        got.len(),
        3,
        "{n} events in 3 requests (the test alone, the burst batched, the batch's retry), \
         carrying {sizes:?}"
    );
    assert_eq!(sizes[0], 1, "the test went alone");
    // Every event arrived in a request that was answered 2xx, once.
    let mut ids: Vec<i64> = [&got[0], &got[2]]
        .into_iter()
        .flat_map(carried)
        .map(|(id, _)| id)
        .collect();
    ids.sort();
    let mut want: Vec<i64> = log.iter().map(|d| d.id).collect();
    want.sort();
    assert_eq!(ids, want, "each event once, over the requests answered");
    let failed: Vec<i64> = carried(&got[1]).into_iter().map(|(i, _)| i).collect();
    let retried: Vec<i64> = carried(&got[2]).into_iter().map(|(i, _)| i).collect();
    assert_eq!(failed.len(), n - 1, "the burst went as one batch");
    assert_eq!(retried, failed, "the retry carries the same batch");
    let gap = got[2].at - got[1].at;
    assert!(
        gap >= Duration::from_millis(300) && gap < Duration::from_millis(2500),
        "retried on the retry schedule, not held for the window: {gap:?}"
    );
    // Each event of the batch, in the log, has the batch's two attempts.
    for d in log.iter().filter(|d| failed.contains(&d.id)) {
        let codes: Vec<Option<u16>> = d.attempts.iter().map(|a| a.status_code).collect();
        assert_eq!(codes, [Some(500), Some(200)], "{d:?}");
    }
    // What the batch carries is what each event alone would have said.
    for (delivery, body) in got.iter().flat_map(carried) {
        let d = log.iter().find(|d| d.id == delivery).expect("logged");
        assert_eq!(body.title, d.title);
        assert_eq!(body.event, d.event);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_event_arrives_at_once_with_its_body_unchanged() {
    // A window far longer than the test waits: a lone event must not wait
    // for it.
    let config = "[webhooks]\nfirst_retry_ms = 300\ntimeout_seconds = 2\nbatch_window_ms = 30000\n";
    let w = quiet_world(config).await;
    let rx = Receiver::start(vec![], Reply::Status(200)).await;
    let hook = w
        .engine
        .add_webhook(
            &rx.url,
            &[WebhookEvent::AgentQuestionBlocking],
            &Actor::cli(),
        )
        .expect("add");
    let run = start(&w, "happy");
    let plan = pending_gate(&w, run, GateKind::Plan).await;
    let got = rx.wait("the plan's ask", |g| !g.is_empty()).await;
    assert_eq!(got.len(), 1);
    verify(&hook.secret, &got[0]).expect("signed");
    // The body of one event, as before batching: no `kind`, the fields of
    // a WebhookBody and nothing else.
    let value: serde_json::Value = serde_json::from_slice(&got[0].body).expect("JSON");
    let mut keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "at",
            "event",
            "gate_id",
            "run_id",
            "task_id",
            "text",
            "title",
            "urgency",
            "workspace"
        ]
    );
    let body = got[0].body();
    assert_eq!(body.event, WebhookEvent::AgentQuestionBlocking);
    assert_eq!(body.gate_id, Some(plan.id));
    assert_eq!(
        body.urgency,
        Some(overseer_engine::Urgency::Critical),
        "a blocking ask"
    );
    assert_eq!(got[0].header("x-overseer-event"), "agent_question_blocking");
    let log = deliveries_until(&w, hook.webhook.id, "delivered", |l| {
        l.len() == 1 && l[0].status == DeliveryStatus::Delivered
    })
    .await;
    assert_eq!(got[0].header("x-overseer-delivery"), log[0].id.to_string());
    let waited = log[0].attempts[0].at - log[0].created_at;
    assert!(
        waited < 1_000,
        "sent at once, not after the 30 s window: {waited} ms after it was queued"
    );
}

/// A question item reaches webhooks at the urgency chosen for questions
/// (`X-Priority` 2 for low, with `urgency` in the body), and a silent one
/// reaches no hook, while a blocking ask still goes at 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_reaches_webhooks_at_its_chosen_urgency_and_a_silent_one_not_at_all() {
    use overseer_engine::{NotificationSettings, Urgency, UrgencySettings};
    let w = quiet_world(
        "[webhooks]\nbatch_window_ms = 0\n[notifications.urgency]\nquestion = \"low\"\n",
    )
    .await;
    let rx = Receiver::start(vec![], Reply::Status(200)).await;
    every_kind(&w, &rx);
    let timed = overseer_store::TaskSettings {
        question_timeout_seconds: Some(600),
        ..Default::default()
    };
    let low = start_with(&w, "questions", timed.clone());
    pending_gate(&w, low, GateKind::Question).await;
    let got = rx
        .wait("the low question", |g| {
            g.iter().any(|r| r.body().run_id == Some(low))
        })
        .await;
    let asked = got
        .iter()
        .find(|r| r.body().run_id == Some(low))
        .expect("received");
    assert_eq!(asked.body().urgency, Some(Urgency::Low));
    assert_eq!(asked.header("x-priority"), "2");

    w.engine
        .set_notifications(
            NotificationSettings {
                urgency: UrgencySettings {
                    question: Some(Urgency::Silent),
                    ..Default::default()
                },
                ..Default::default()
            },
            &Actor::app(),
        )
        .expect("silent questions");
    let silent = start_with(&w, "questions", timed);
    pending_gate(&w, silent, GateKind::Question).await;
    // A blocking ask after it: once it arrived, the silent one would have too.
    let blocking = start(&w, "questions");
    pending_gate(&w, blocking, GateKind::Question).await;
    let got = rx
        .wait("the blocking question", |g| {
            g.iter().any(|r| r.body().run_id == Some(blocking))
        })
        .await;
    let asked = got
        .iter()
        .find(|r| r.body().run_id == Some(blocking))
        .expect("received");
    assert_eq!(asked.header("x-priority"), "4", "a blocking ask");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !rx.got()
            .iter()
            .any(|r| r.body().run_id == Some(silent) && r.body().gate_id.is_some()),
        "a silent question reaches no hook"
    );
}
