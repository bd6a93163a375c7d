//! Serving browsers switched on and off from the engine's setting (Settings,
//! "Browsers and phones"), as the app's embedded engine does: the contract's
//! `set_web_serving` as the window's owner, carried out by the web
//! transport's [`BrowserHost`] on a real TCP port, over a real SQLite file,
//! answered to a real HTTP client.

use crate::common;

use common::Served;
use overseer_core::web::{WebSettings, WebStatus};
use overseer_core::{Actor, ApiError, EngineEvent};
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use overseer_server::api::{op, Operation};
use overseer_web::BrowserHost;
use std::sync::Arc;
use std::time::Duration;

fn open(paths: &Paths) -> Arc<Engine> {
    Arc::new(
        Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine"),
    )
}

/// A loopback port nothing listens on.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The engine started as the app starts it: its host's way to serve browsers.
fn start(rt: &tokio::runtime::Runtime, engine: &Arc<Engine>) -> WebStatus {
    let engine = engine.clone();
    rt.block_on(async move {
        tokio::task::spawn_blocking(move || {
            engine.serve_browsers(Arc::new(BrowserHost::new(&engine)))
        })
        .await
    })
    .expect("serve_browsers")
}

/// `set_web_serving` as the contract carries it for `actor`.
fn set(
    rt: &tokio::runtime::Runtime,
    engine: &Arc<Engine>,
    actor: Actor,
    settings: WebSettings,
) -> Result<WebStatus, ApiError> {
    let engine = engine.clone();
    rt.block_on(
        engine
            .clone()
            .carry_out(move |e| op::SetWebServing { settings }.perform(e, &actor)),
    )
}

fn on(addr: &str) -> WebSettings {
    WebSettings {
        enabled: true,
        addr: addr.to_owned(),
        ..WebSettings::default()
    }
}

fn refused(addr: &str) -> bool {
    matches!(
        std::net::TcpStream::connect_timeout(&addr.parse().expect("addr"), Duration::from_secs(5)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// A fresh engine on a temp dir, with a runtime of two threads (as the app's).
fn fresh() -> (
    tempfile::TempDir,
    Paths,
    tokio::runtime::Runtime,
    Arc<Engine>,
) {
    let (dir, paths, rt) = common::engine_dirs();
    let engine = open(&paths);
    (dir, paths, rt, engine)
}

#[test]
fn switched_on_it_serves_off_it_stops_and_it_comes_back_after_a_restart() {
    let (dir, paths, rt, engine) = fresh();
    let status = start(&rt, &engine);
    assert!(!status.serving, "off until switched on: {status:?}");
    assert_eq!(status.url, None);

    let addr = format!("127.0.0.1:{}", free_port());
    let url = format!("http://{addr}");
    let mut events = engine.subscribe();
    let status = set(&rt, &engine, Actor::app(), on(&addr)).expect("switched on");
    assert!(status.serving, "{status:?}");
    assert_eq!(status.url.as_deref(), Some(url.as_str()));
    assert_eq!(status.error, None);
    // Pushed, so Settings follows without asking.
    let pushed = rt.block_on(async {
        loop {
            match tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
                Ok(Ok(EngineEvent::WebServingChanged { status })) => return Some(status),
                Ok(Ok(_)) => continue,
                _ => return None,
            }
        }
    });
    assert_eq!(pushed.as_ref(), Some(&status), "the change is pushed");
    // A pairing now names the page to open (the window's QR code).
    let pairing = engine
        .pair_device("ana", "Ana's phone", &Actor::app())
        .expect("pair");
    assert_eq!(pairing.url.as_deref(), Some(url.as_str()));

    let served = Served {
        rt,
        engine: engine.clone(),
        base: url.clone(),
        addr: addr.parse().expect("addr"),
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into(),
        dir,
    };
    let page = served.get(None, "/");
    let csp = page
        .headers
        .iter()
        .any(|(k, _)| k == "content-security-policy");
    assert!(csp, "the web transport's page, with its policy: {page:?}");
    if overseer_web::assets::BUILT {
        assert_eq!(page.status, 200, "{page:?}");
    } else {
        assert_eq!(page.status, 503, "a build without the UI says so: {page:?}");
    }
    let me = served.get(None, "/api/me");
    assert_eq!((me.status, me.code()), (401, "unauthorized"), "{me:?}");
    // A browser's connection, kept alive after its answer: it must end
    // when serving stops.
    let mut socket = std::net::TcpStream::connect(&addr).expect("a connection while serving");
    {
        use std::io::{Read, Write};
        write!(socket, "GET /api/me HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("request");
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut buf = [0u8; 4096];
        let n = socket.read(&mut buf).expect("an answer");
        let head = String::from_utf8_lossy(&buf[..n]);
        assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    }

    // Off: the port is closed at once, and open connections end.
    let status = set(
        &served.rt,
        &engine,
        Actor::app(),
        WebSettings {
            enabled: false,
            ..on(&addr)
        },
    )
    .expect("switched off");
    assert!(!status.serving, "{status:?}");
    assert_eq!(status.url, None);
    assert!(refused(&addr), "nothing listens on {addr} once off");
    {
        use std::io::Read;
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut buf = [0u8; 16];
        let read = socket.read(&mut buf);
        assert!(
            matches!(read, Ok(0))
                || read
                    .as_ref()
                    .is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock
                        && e.kind() != std::io::ErrorKind::TimedOut),
            "an open connection is dropped when serving stops: {read:?}"
        );
    }
    let pairing = engine
        .pair_device("ana", "Ana's tablet", &Actor::app())
        .expect("pair");
    assert_eq!(pairing.url, None, "no page to name once off");

    // On again, then the engine restarts (the app closed and opened): it
    // serves again from its stored setting, on the same address.
    set(&served.rt, &engine, Actor::app(), on(&addr)).expect("on again");
    served.rt.block_on(engine.stop_agents());
    engine.shutdown().expect("shutdown");
    assert!(refused(&addr), "the port is free once the app closed");
    drop(engine);
    let Served {
        rt,
        agent,
        dir,
        base,
        addr: sock,
        engine: old,
        ..
    } = served;
    drop(old);
    let engine = open(&paths);
    let status = start(&rt, &engine);
    assert!(status.serving, "it comes back after a restart: {status:?}");
    assert_eq!(status.url.as_deref(), Some(url.as_str()));
    assert_eq!(status.settings, on(&addr));
    let served = Served {
        rt,
        engine: engine.clone(),
        base,
        addr: sock,
        agent,
        dir,
    };
    let me = served.get(None, "/api/me");
    assert_eq!((me.status, me.code()), (401, "unauthorized"), "{me:?}");
    served.rt.block_on(engine.stop_agents());
}

#[test]
fn plain_http_off_loopback_is_refused_with_why_and_nothing_changes() {
    let (_dir, _paths, rt, engine) = fresh();
    let rt = &rt;
    start(rt, &engine);
    let before = engine.web_settings();
    let port = free_port();
    let e = set(rt, &engine, Actor::app(), on(&format!("0.0.0.0:{port}")))
        .expect_err("plain HTTP on every address");
    assert_eq!(e.code, overseer_core::ErrorCode::InvalidInput, "{e:?}");
    assert_eq!(
        e.fields.first().map(|f| f.field.as_str()),
        Some("addr"),
        "{e:?}"
    );
    assert!(
        e.message
            .starts_with(&format!("refusing to serve plain HTTP on 0.0.0.0:{port}")),
        "{e}"
    );
    assert!(
        e.message.contains("tailscale serve"),
        "names the alternatives: {e}"
    );
    assert_eq!(engine.web_settings(), before, "nothing stored");
    assert!(refused(&format!("127.0.0.1:{port}")), "nothing listens");
    // A certificate without its key is named too.
    let mut half = on(&format!("0.0.0.0:{port}"));
    half.tls_cert = Some("cert.pem".into());
    let e = set(rt, &engine, Actor::app(), half).expect_err("no key");
    assert_eq!(
        e.fields.first().map(|f| f.field.as_str()),
        Some("tls_key"),
        "{e:?}"
    );
}

#[test]
fn an_address_in_use_or_a_missing_certificate_is_the_status_error_and_a_device_may_not_switch() {
    let (dir, _paths, rt, engine) = fresh();
    let rt = &rt;
    start(rt, &engine);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let status = set(rt, &engine, Actor::app(), on(&addr)).expect("kept");
    assert!(!status.serving, "{status:?}");
    let error = status.error.expect("why not");
    assert_eq!(error.code, overseer_core::ErrorCode::Conflict, "{error:?}");
    assert!(error.message.contains("in use"), "{error}");
    assert_eq!(
        engine.web_settings(),
        on(&addr),
        "the setting is kept for the next start"
    );

    let mut tls = on(&format!("127.0.0.1:{}", free_port()));
    tls.tls_cert = Some(dir.path().join("missing.pem").display().to_string());
    tls.tls_key = Some(dir.path().join("missing.key").display().to_string());
    let status = set(rt, &engine, Actor::app(), tls).expect("kept");
    let error = status.error.expect("why not");
    assert_eq!(
        error.fields.first().map(|f| f.field.as_str()),
        Some("tls_cert"),
        "{error:?}"
    );
    assert!(
        error.message.contains("missing.pem"),
        "names the file: {error}"
    );

    let (device, _) = {
        let pairing = engine
            .pair_device("eve", "Eve's phone", &Actor::app())
            .expect("pair");
        let paired = engine.redeem_pairing(&pairing.code).expect("redeem");
        (paired.device, pairing)
    };
    let e = set(rt, &engine, device.actor(), on("127.0.0.1:0")).expect_err("a device");
    assert_eq!(e.code, overseer_core::ErrorCode::Forbidden, "{e:?}");
    drop(taken);
}
