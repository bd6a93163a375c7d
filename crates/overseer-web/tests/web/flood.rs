//! No one without a credential can lock anyone out: a real engine serving
//! over real TCP, while 200 slow clients hold connections (a byte of
//! headers or of a `POST /api/pair` body now and then) and wrong pairing
//! codes flood in from rotating 127.x.y.z addresses (every one of them is
//! this machine, one address), a paired browser still decides a gate within
//! a second and the owner pairs a fresh code on loopback. Each slow or
//! flooding client reconnects at once when it is closed, as an attacker
//! would.

use crate::common;

use overseer_core::Actor;
use overseer_engine::{Clock, Engine, LogNotifier, SystemClock};
use overseer_web::WebConfig;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a new code is spared by burns
/// (`overseer_store::devices::BURN_GRACE`).
const BURN_GRACE: i64 = 60 * 1000;

/// The wall clock, moved forward by the test.
#[derive(Default)]
struct Later(AtomicI64);

impl Clock for Later {
    fn now(&self) -> i64 {
        SystemClock.now() + self.0.load(Ordering::SeqCst)
    }
}

struct Server {
    rt: tokio::runtime::Runtime,
    engine: Arc<Engine>,
    clock: Arc<Later>,
    addr: SocketAddr,
    base: String,
    _dir: tempfile::TempDir,
}

fn serve() -> Server {
    let (dir, paths, rt) = common::engine_dirs();
    let clock = Arc::new(Later::default());
    let engine =
        Arc::new(Engine::open(paths, clock.clone(), Arc::new(LogNotifier)).expect("engine"));
    let server = overseer_web::bind(&WebConfig {
        addr: "127.0.0.1:0".parse().expect("addr"),
        tls: None,
        public_origins: Vec::new(),
    })
    .expect("bind");
    let addr = server.local_addr();
    rt.spawn(server.serve(engine.clone()));
    Server {
        rt,
        engine,
        clock,
        addr,
        base: format!("http://{addr}"),
        _dir: dir,
    }
}

/// A real HTTP client of its own (its own connections).
fn browser() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// `POST path` from the engine's own page with `credential` (if any):
/// the status, the body, the Set-Cookie headers.
fn post(
    agent: &ureq::Agent,
    s: &Server,
    credential: Option<&str>,
    path: &str,
    body: &Value,
) -> common::Answer {
    let mut request = agent
        .post(format!("{}{path}", s.base))
        .header("origin", &s.base)
        .header("content-type", "application/json");
    for (name, value) in credential
        .map(common::credential_headers)
        .unwrap_or_default()
    {
        request = request.header(name, value);
    }
    let mut r = request.send(body.to_string()).expect("an answer");
    common::Answer {
        status: r.status().as_u16(),
        cookies: r
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect(),
        headers: Vec::new(),
        body: serde_json::from_str(&r.body_mut().read_to_string().unwrap_or_default())
            .unwrap_or(Value::Null),
    }
}

/// The n-th of the rotating loopback addresses (127.x.y.z, never .0 or
/// .255 last).
fn rotating(n: u64) -> String {
    let n = n % (250 * 250 * 250);
    format!(
        "127.{}.{}.{}",
        1 + n / 62_500 % 250,
        n / 250 % 250,
        1 + n % 250
    )
}

/// A connection from `source`, or None (the test's own sockets may run
/// short for a moment under the flood: it tries again).
async fn connect(source: &str, server: SocketAddr) -> Option<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket.bind(format!("{source}:0").parse().ok()?).ok()?;
    socket.connect(server).await.ok()
}

#[derive(Default)]
struct Tally {
    /// Slow connections opened (each reconnect counts).
    slow_opened: AtomicU64,
    /// Wrong codes answered 401 / 429, and flood connections closed
    /// before an answer.
    unauthorized: AtomicU64,
    limited: AtomicU64,
    cut: AtomicU64,
}

/// Holds a connection open, sending one byte of a `POST /api/pair` body
/// (or of its headers) each second; reconnects at once when closed.
async fn slow_client(n: u64, addr: SocketAddr, body: bool, stop: Arc<AtomicBool>, t: Arc<Tally>) {
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let Some(mut stream) = connect(&rotating(n * 1000 + round), addr).await else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        t.slow_opened.fetch_add(1, Ordering::Relaxed);
        let start = if body {
            format!(
                "POST /api/pair HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
                 Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{{"
            )
        } else {
            format!("POST /api/pair HTTP/1.1\r\nHost: {addr}\r\n")
        };
        if stream.write_all(start.as_bytes()).await.is_err() {
            continue;
        }
        let mut buf = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            tokio::select! {
                // Closed, or answered (a timeout): start over.
                _ = stream.read(&mut buf) => break,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {
                    let byte: &[u8] = if body { b" " } else { b"X" };
                    if stream.write_all(byte).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// Sends wrong codes, one connection each, from rotating addresses.
async fn code_flood(n: u64, addr: SocketAddr, stop: Arc<AtomicBool>, t: Arc<Tally>) {
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let source = rotating(7_000_000 + n * 100_000 + round);
        let Some(mut stream) = connect(&source, addr).await else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let body = format!("{{\"code\":\"WRNG-{:04}\"}}", round % 10_000);
        let request = format!(
            "POST /api/pair HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(request.as_bytes()).await.is_err() {
            t.cut.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let mut answer = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
        let head = String::from_utf8_lossy(answer.get(..12).unwrap_or_default()).into_owned();
        match (read, head.as_str()) {
            (Ok(Ok(_)), "HTTP/1.1 401") => t.unauthorized.fetch_add(1, Ordering::Relaxed),
            (Ok(Ok(_)), "HTTP/1.1 429") => t.limited.fetch_add(1, Ordering::Relaxed),
            _ => t.cut.fetch_add(1, Ordering::Relaxed),
        };
    }
}

fn wrong_tries(t: &Tally) -> u64 {
    t.unauthorized.load(Ordering::Relaxed) + t.limited.load(Ordering::Relaxed)
}

#[test]
fn a_paired_browser_decides_and_the_owner_pairs_while_slow_clients_and_a_code_flood_run() {
    let s = serve();
    // Ana's browser, paired before the attack, with a pending gate to decide.
    let ana = browser();
    let code = s.engine.start_pairing("ana", "laptop").expect("code").code;
    let paired = post(&ana, &s, None, "/api/pair", &json!({ "code": code }));
    assert_eq!(paired.status, 200, "{paired:?}");
    let credential = common::pair_credential(&paired).expect("a credential");
    s.engine
        .seed_demo(&Actor::cli(), false)
        .expect("demo fleet");
    let gates = post(
        &ana,
        &s,
        Some(&credential),
        "/api/call/list_gates",
        &json!({ "pendingOnly": true }),
    );
    assert_eq!(gates.status, 200, "{gates:?}");
    let pending: Vec<Value> = gates.body["gates"].as_array().cloned().unwrap_or_default();
    assert!(pending.len() >= 2, "two pending gates: {gates:?}");

    // The attack, on threads of its own.
    let attack = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    for n in 0..200 {
        attack.spawn(slow_client(
            n,
            s.addr,
            n % 2 == 0,
            stop.clone(),
            tally.clone(),
        ));
    }
    let flooders = 16;
    for n in 0..flooders {
        attack.spawn(code_flood(n, s.addr, stop.clone(), tally.clone()));
    }
    std::thread::sleep(Duration::from_secs(2));
    let before = wrong_tries(&tally);
    assert!(
        tally.slow_opened.load(Ordering::Relaxed) >= 200,
        "every slow client is connected"
    );
    assert!(before > 100, "the code flood runs: {before} wrong codes");

    // The paired browser decides within a second: on the connection it
    // holds, and on a new one (a browser opens more).
    let decide = |agent: &ureq::Agent, gate: &Value| {
        let started = Instant::now();
        let a = post(
            agent,
            &s,
            Some(&credential),
            "/api/call/decide_gate",
            &json!({
                "gateId": gate["id"],
                "option": gate["options"][0]["id"],
                "context": "under attack",
            }),
        );
        (a, started.elapsed())
    };
    let (held, on_held) = decide(&ana, &pending[0]);
    assert_eq!(held.status, 200, "{held:?}");
    let (fresh, on_fresh) = decide(&browser(), &pending[1]);
    assert_eq!(fresh.status, 200, "{fresh:?}");
    let started = Instant::now();
    let listed = post(
        &browser(),
        &s,
        Some(&credential),
        "/api/call/list_runs",
        &json!({}),
    );
    let on_list = started.elapsed();
    assert_eq!(listed.status, 200, "{listed:?}");
    for took in [on_held, on_fresh, on_list] {
        assert!(took < Duration::from_secs(1), "a call took {took:?}");
    }

    // The owner issues a code and types it a few seconds later, on
    // loopback (the flood's own address), its wrong codes flowing all
    // the while: far more than the 20 that burned every code before.
    let issued = s.engine.start_pairing("owner", "phone").expect("code").code;
    let at_issue = wrong_tries(&tally);
    std::thread::sleep(Duration::from_secs(3));
    let owner = browser();
    let started = Instant::now();
    let mut answer = post(&owner, &s, None, "/api/pair", &json!({ "code": issued }));
    // Refused at once only if every slot without a credential is taken:
    // retried as a browser would.
    while answer.status == 429 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
        answer = post(&owner, &s, None, "/api/pair", &json!({ "code": issued }));
    }
    let to_pair = started.elapsed();
    let during = wrong_tries(&tally) - at_issue;
    assert_eq!(answer.status, 200, "the owner pairs: {answer:?}");
    assert!(
        during > 20,
        "the flood went on while the code was out: {during} wrong codes"
    );
    assert!(
        to_pair < Duration::from_secs(10),
        "pairing took {to_pair:?}"
    );
    let owner_credential = common::pair_credential(&answer).expect("a credential");
    let me = post(
        &owner,
        &s,
        Some(&owner_credential),
        "/api/call/list_runs",
        &json!({}),
    );
    assert_eq!(me.status, 200, "{me:?}");

    let elapsed = Duration::from_secs(2) + on_held + on_fresh + on_list + Duration::from_secs(3);
    let total = wrong_tries(&tally);
    stop.store(true, Ordering::Relaxed);
    attack.shutdown_timeout(Duration::from_secs(2));
    println!(
        "under 200 slow clients ({} connections opened) and {flooders} code flooders from \
         rotating 127.x.y.z: decided on a held connection in {on_held:?}, on a new one in \
         {on_fresh:?}, listed runs in {on_list:?}; the owner paired in {to_pair:?} a code \
         {during} wrong codes had come in against; {total} wrong codes in all (about {}/s), \
         {} of them 429, {} flood connections cut",
        tally.slow_opened.load(Ordering::Relaxed),
        total / elapsed.as_secs().max(1),
        tally.limited.load(Ordering::Relaxed),
        tally.cut.load(Ordering::Relaxed),
    );
    drop(s.rt);
}

/// Five wrong codes from this machine (from five different loopback
/// addresses) and its wrong codes get 429; the right code, from yet
/// another loopback address, still pairs.
#[test]
fn wrong_codes_from_rotating_loopback_addresses_count_as_one_and_a_right_code_still_pairs() {
    let s = serve();
    let right = s.engine.start_pairing("ana", "phone").expect("code").code;
    let agent = browser();
    let mut statuses = Vec::new();
    for n in 0..7 {
        let answer = s.rt.block_on(async {
            let mut stream = connect(&rotating(n * 977), s.addr).await.expect("connect");
            let body = format!("{{\"code\":\"WRNG-{n:04}\"}}");
            let request = format!(
                "POST /api/pair HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len(),
                addr = s.addr
            );
            stream.write_all(request.as_bytes()).await.expect("send");
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.expect("answer");
            answer
        });
        statuses.push(answer.get(9..12).unwrap_or_default().to_owned());
        if n == 6 {
            assert!(answer.contains("right code still pairs"), "{answer}");
        }
    }
    assert_eq!(statuses, ["401", "401", "401", "401", "401", "429", "429"]);
    let a = post(&agent, &s, None, "/api/pair", &json!({ "code": right }));
    assert_eq!(a.status, 200, "{a:?}");
}

/// The 20th wrong code burns the codes out for over a minute, never a
/// newer one: the owner's fresh code pairs however many came before.
#[test]
fn a_code_flood_burns_only_codes_past_their_first_minute() {
    let s = serve();
    let old = s.engine.start_pairing("ana", "phone").expect("code").code;
    s.clock.0.store(BURN_GRACE, Ordering::SeqCst);
    let young = s.engine.start_pairing("bo", "phone").expect("code").code;
    let agent = browser();
    let mut last = common::Answer {
        status: 0,
        body: Value::Null,
        cookies: Vec::new(),
        headers: Vec::new(),
    };
    for n in 0..20 {
        last = post(
            &agent,
            &s,
            None,
            "/api/pair",
            &json!({ "code": format!("WRNG-{n:04}") }),
        );
        assert!(matches!(last.status, 401 | 429), "{last:?}");
    }
    let _ = last;
    // This machine is over its share of wrong codes: 429, saying why.
    let a = post(&agent, &s, None, "/api/pair", &json!({ "code": old }));
    assert_eq!(a.status, 429, "{a:?}");
    assert!(a.body["message"]
        .as_str()
        .is_some_and(|m| m.contains("burned")));
    let a = post(&agent, &s, None, "/api/pair", &json!({ "code": young }));
    assert_eq!(a.status, 200, "the young code is spared: {a:?}");
}

/// A body that does not arrive gets 408 after the body's deadline, and
/// its connection is let go; the paired pool was never touched.
#[test]
fn a_body_that_never_arrives_gets_408_at_its_deadline() {
    let s = serve();
    let started = Instant::now();
    let answer = s.rt.block_on(async {
        let mut stream = connect("127.0.0.1", s.addr).await.expect("connect");
        let head = format!(
            "POST /api/pair HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
             Content-Length: 100\r\n\r\n{{",
            addr = s.addr
        );
        stream.write_all(head.as_bytes()).await.expect("send");
        let mut answer = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut answer))
            .await
            .expect("answered within 20 s")
            .expect("read");
        String::from_utf8_lossy(&answer[..n]).into_owned()
    });
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 10 s"), "{answer}");
    assert!(
        took >= overseer_web::listen::BODY_TIMEOUT && took < Duration::from_secs(15),
        "{took:?}"
    );
}

/// More slow clients than this machine may hold connections: each new one
/// takes the place of the oldest idle one (they churn among themselves),
/// never the place of the paired browser's connection, which is served.
#[test]
fn slow_clients_beyond_the_cap_take_each_others_places_never_a_paired_browsers() {
    let s = serve();
    let ana = browser();
    let code = s.engine.start_pairing("ana", "laptop").expect("code").code;
    let paired = post(&ana, &s, None, "/api/pair", &json!({ "code": code }));
    let credential = common::pair_credential(&paired).expect("a credential");
    let listed = |agent: &ureq::Agent| {
        let started = Instant::now();
        let a = post(
            agent,
            &s,
            Some(&credential),
            "/api/call/list_runs",
            &json!({}),
        );
        (a.status, started.elapsed())
    };
    // Its connection carries its credential from here on.
    assert_eq!(listed(&ana).0, 200);
    let attack = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let clients = overseer_web::listen::MAX_FROM_LOOPBACK as u64 + 100;
    for n in 0..clients {
        attack.spawn(slow_client(
            n,
            s.addr,
            n % 2 == 0,
            stop.clone(),
            tally.clone(),
        ));
    }
    std::thread::sleep(Duration::from_secs(2));
    let opened = tally.slow_opened.load(Ordering::Relaxed);
    let mut took = Vec::new();
    for _ in 0..5 {
        let (status, t) = listed(&ana);
        assert_eq!(status, 200);
        took.push(t);
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    attack.shutdown_timeout(Duration::from_secs(2));
    assert!(
        opened > clients,
        "they churned: {opened} connections for {clients} clients"
    );
    let slowest = took.iter().max().copied().unwrap_or_default();
    assert!(slowest < Duration::from_secs(1), "{took:?}");
    println!(
        "{clients} slow clients opened {opened} connections in 2 s; the paired browser's calls \
         took {took:?}"
    );
}
