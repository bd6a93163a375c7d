//! `overseer serve --web`: the real binary serves browsers beside its
//! socket, says where, tells pairing codes the address, and refuses plain
//! HTTP off loopback before the engine opens.

mod common;

use common::*;
use std::io::BufRead;
use std::process::Stdio;

#[test]
fn serve_web_serves_browsers_and_pairing_names_its_address() {
    let h = Home::new();
    let mut child = h
        .cmd(&["serve", "--web", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let stderr = child.stderr.take().expect("stderr");
    let serve = Serve(child);
    // Read on its own thread to the end: the engine keeps its stderr.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let url = rx
        .iter()
        .find_map(|l| {
            l.strip_prefix("serving browsers on ")
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_owned)
        })
        .expect("the address it serves browsers on");
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
