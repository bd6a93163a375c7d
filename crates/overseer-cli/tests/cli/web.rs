//! `overseer serve --web`: the real binary serves browsers beside its
//! socket, says where, tells pairing codes the address, and refuses plain
//! HTTP off loopback before the engine opens.

use crate::common;

use common::*;
use std::io::BufRead;
use std::process::Stdio;

/// `overseer serve` with `args`, once it says where it serves browsers
/// (its stderr read on its own thread to the end: the engine keeps it).
fn serving(h: &Home, args: &[&str]) -> (Serve, String) {
    let mut child = h.cmd(args).stderr(Stdio::piped()).spawn().expect("serve");
    let stderr = child.stderr.take().expect("stderr");
    let serve = Serve(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx
            .recv_timeout(left)
            .expect("`overseer serve` to say where it serves browsers, within 30 s");
        let url = line
            .strip_prefix("serving browsers on ")
            .and_then(|rest| rest.split([' ', ',']).next());
        if let Some(url) = url {
            return (serve, url.to_owned());
        }
    }
}

#[test]
fn serve_web_serves_browsers_and_pairing_names_its_address() {
    let h = Home::new();
    let (serve, url) = serving(&h, &["serve", "--web", "127.0.0.1:0"]);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    wait_for(&h.data().join("overseer.sock"));

    let shown = h.ok(&["devices", "pair", "--name", "phone", "--person", "ana"]);
    assert!(shown.contains(&url), "the pairing names {url}: {shown}");
    let code = shown
        .lines()
        .find_map(|l| l.strip_prefix("pairing code: "))
        .expect("code")
        .trim()
        .to_owned();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut paired = agent
        .post(format!("{url}/api/pair"))
        .header("origin", &url)
        .send_json(serde_json::json!({ "code": code }))
        .expect("POST /api/pair");
    assert_eq!(paired.status().as_u16(), 200);
    let device: serde_json::Value = paired.body_mut().read_json().expect("json");
    assert_eq!(device["device"]["person"], "ana");
    assert!(h.ok(&["devices", "list"]).contains("phone"));
    drop(serve);
}

#[test]
fn serve_web_refuses_plain_http_off_loopback_before_the_engine_opens() {
    let h = Home::new();
    let err = h.fails(&["serve", "--web", "0.0.0.0:0"]);
    for named in ["--tls-cert", "tailscale serve", "reverse proxy"] {
        assert!(err.contains(named), "{err}");
    }
    assert!(
        !h.data().join("overseer.db").exists(),
        "refused before the engine opened its database"
    );
    // A certificate without an address to serve it on is a usage error.
    let err = h.fails(&["serve", "--tls-cert", "cert.pem", "--tls-key", "key.pem"]);
    assert!(err.contains("--web"), "{err}");
}

#[test]
fn serve_without_web_serves_browsers_as_the_stored_setting_says_and_the_flag_wins() {
    use overseer_core::web::WebSettings;
    let h = Home::new();
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    // Switched on as Settings would (stored in the engine's database).
    {
        let config_dir = h.dir.path().join("config");
        std::fs::create_dir_all(&config_dir).expect("config dir");
        let paths = overseer_engine::Paths {
            data_dir: h.data(),
            config_dir,
        };
        let engine = overseer_engine::Engine::open(
            paths,
            std::sync::Arc::new(overseer_engine::SystemClock),
            std::sync::Arc::new(overseer_engine::LogNotifier),
        )
        .expect("engine");
        let on = WebSettings {
            enabled: true,
            addr: addr.clone(),
            ..WebSettings::default()
        };
        engine
            .set_web_settings(on, &overseer_core::Actor::cli())
            .expect("stored");
        engine.shutdown().expect("shutdown");
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let (serve, url) = serving(&h, &["serve"]);
    assert_eq!(url, format!("http://{addr}"), "as set");
    let me = agent.get(format!("{url}/api/me")).call().expect("GET");
    assert_eq!(me.status().as_u16(), 401);
    drop(serve);

    // --web wins over the setting: the stored address is not served.
    let (serve, url) = serving(&h, &["serve", "--web", "127.0.0.1:0"]);
    assert_ne!(url, format!("http://{addr}"));
    let stored = std::net::TcpStream::connect(&addr);
    assert!(
        stored.is_err(),
        "the stored address is not served: {stored:?}"
    );
    drop(serve);
}

#[test]
fn web_on_and_off_switch_a_running_engine_and_plain_http_off_loopback_is_refused() {
    let h = Home::new();
    let _serve = h.serve();
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    assert!(h.ok(&["web", "status"]).starts_with("not serving browsers"));

    let on = h.ok(&["web", "on", "--addr", &addr]);
    assert!(
        on.starts_with(&format!("serving browsers at http://{addr}")),
        "{on}"
    );
    let me = agent
        .get(format!("http://{addr}/api/me"))
        .call()
        .expect("GET");
    assert_eq!(me.status().as_u16(), 401, "served, and a device is needed");
    // A pairing now names the address.
    let pairing = h.ok(&["devices", "pair", "--name", "phone", "--person", "ana"]);
    assert!(
        pairing.contains(&format!("open http://{addr}")),
        "{pairing}"
    );

    // Any other address without TLS: refused, saying why; still serving.
    let why = h.fails(&["web", "on", "--addr", "0.0.0.0:0"]);
    assert!(
        why.contains("refusing to serve plain HTTP on 0.0.0.0:0"),
        "{why}"
    );
    assert!(std::net::TcpStream::connect(&addr).is_ok(), "still serving");

    let off = h.ok(&["web", "off"]);
    assert!(off.starts_with("not serving browsers"), "{off}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "{addr} still answers after `web off`"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
