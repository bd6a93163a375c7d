//! The browser transport against a real engine, over real HTTP and a real
//! WebSocket: what a browser that is not paired, or a page of another site,
//! or a bad request gets.

use crate::common;

use common::{connect_from, refused_status, served, served_with};
use serde_json::json;
use std::process::Command;
use std::time::Duration;

#[test]
fn an_unpaired_browser_is_refused_a_call_and_the_socket_even_on_loopback() {
    let s = served();
    let a = s.call(None, "list_runs", json!({}));
    assert_eq!((a.status, a.code()), (401, "unauthorized"), "{a:?}");
    assert!(
        a.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("pair"),
        "the refusal says how to pair: {a:?}"
    );
    // A made-up credential is no better.
    let a = s.call(Some("0123456789abcdef"), "list_runs", json!({}));
    assert_eq!((a.status, a.code()), (401, "unauthorized"), "{a:?}");
    let me = s.get(None, "/api/me");
    assert_eq!((me.status, me.code()), (401, "unauthorized"), "{me:?}");
    let e = s.socket(None).expect_err("an unpaired socket is refused");
    assert_eq!(refused_status(&e), Some(401), "{e}");
}

#[test]
fn a_page_of_another_site_is_refused_with_403_and_no_cors_headers() {
    let s = served();
    for origin in [Some("http://evil.example"), Some("null"), None] {
        let a = s.post_from(origin, None, "/api/call/list_runs", b"{}");
        assert_eq!(
            (a.status, a.code()),
            (403, "forbidden"),
            "{origin:?}: {a:?}"
        );
        assert!(
            !a.headers
                .iter()
                .any(|(k, _)| k.starts_with("access-control-")),
            "no CORS header: {a:?}"
        );
        let a = s.post_from(origin, None, "/api/pair", br#"{"code":"ABCD-EFGH"}"#);
        assert_eq!(
            a.status, 403,
            "{origin:?}: pairing from another site: {a:?}"
        );
    }
    let e = s
        .socket_from("http://evil.example", None)
        .expect_err("another site's socket is refused");
    assert_eq!(refused_status(&e), Some(403), "{e}");
    // A page of another site reaching 127.0.0.1 under its own name (DNS
    // rebinding) names itself in Host and Origin alike: refused on loopback.
    let a = s
        .agent
        .post(format!("{}/api/call/list_runs", s.base))
        .header("host", "evil.example")
        .header("origin", "http://evil.example")
        .send(b"{}".as_slice())
        .expect("POST");
    assert_eq!(a.status().as_u16(), 403);
}

#[test]
fn an_oversized_body_gets_413_an_unknown_command_404_a_socket_only_one_404() {
    let s = served();
    let big = vec![b' '; (1 << 20) + 1];
    let a = s.post_from(Some(&s.base), None, "/api/call/list_runs", &big);
    assert_eq!((a.status, a.code()), (413, "invalid_input"), "{a:?}");
    let a = s.post_from(Some(&s.base), None, "/api/pair", &big);
    assert_eq!(a.status, 413, "{a:?}");
    let a = s.call(None, "no_such_command", json!({}));
    assert_eq!((a.status, a.code()), (404, "not_found"), "{a:?}");
    // The table's socket-only operations are not the window's: not here.
    for command in ["start_task", "seed_demo", "supervisor_vote"] {
        let a = s.call(None, command, json!({}));
        assert_eq!((a.status, a.code()), (404, "not_found"), "{command}: {a:?}");
    }
    let a = s.get(None, "/api/nothing");
    assert_eq!((a.status, a.code()), (404, "not_found"), "{a:?}");
}

#[test]
fn a_malformed_pairing_request_gets_400_with_the_contracts_error() {
    let s = served();
    for body in [&b"{not json"[..], br#"{"kode": 1}"#, b"[]"] {
        let a = s.post_from(Some(&s.base), None, "/api/pair", body);
        assert_eq!((a.status, a.code()), (400, "invalid_input"), "{a:?}");
        assert!(a.body["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
}

#[test]
fn the_ui_is_served_with_the_apps_security_headers() {
    let s = served();
    let page = s
        .agent
        .get(format!("{}/runs/7", s.base))
        .call()
        .expect("GET");
    let h = page.headers();
    let header = |name: &str| h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("x-frame-options").as_deref(), Some("DENY"));
    assert_eq!(header("referrer-policy").as_deref(), Some("no-referrer"));
    assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    assert!(header("content-security-policy").is_some_and(|c| c.contains("frame-ancestors 'none'")));
    if overseer_web::assets::BUILT {
        assert_eq!(page.status().as_u16(), 200);
        assert!(header("content-type").is_some_and(|c| c.starts_with("text/html")));
    } else {
        assert_eq!(
            page.status().as_u16(),
            503,
            "a build without ui/dist says so"
        );
    }
}

#[test]
fn plain_http_on_a_non_loopback_address_is_refused_at_start_naming_the_alternatives() {
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:8765"] {
        let e = overseer_web::bind(&overseer_web::WebConfig {
            addr: addr.parse().expect("addr"),
            tls: None,
            public_origins: Vec::new(),
        })
        .err()
        .expect("refused");
        let message = e.to_string();
        for named in [
            "--tls-cert",
            "tailscale serve",
            "reverse proxy",
            "127.0.0.1",
        ] {
            assert!(message.contains(named), "{addr}: {message}");
        }
    }
}

fn openssl(args: &[&str], dir: &std::path::Path) {
    let made = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command (apt-get install openssl)");
    assert!(made.status.success(), "openssl {args:?}: {made:?}");
}

/// A certificate for 127.0.0.1 and its key, signed by a CA of the test's
/// own (`ca.pem`, what the client trusts), made with the `openssl` command.
fn certificate(dir: &std::path::Path) -> overseer_web::TlsFiles {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "1",
        "-subj",
        "/CN=overseer test CA",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca-key.pem", "-out", "ca.pem"]);
    openssl(&ca, dir);
    let mut csr = vec!["req", "-new", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "key.pem", "-out", "cert.csr"]);
    openssl(&csr, dir);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n",
    )
    .expect("ext");
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "cert.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "ext.cnf",
            "-out",
            "cert.pem",
        ],
        dir,
    );
    overseer_web::TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

#[test]
fn tls_serves_with_the_users_certificate_and_a_bad_one_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = certificate(dir.path());
    let root = std::fs::read(dir.path().join("ca.pem")).expect("ca");
    let s = served_with(Some(files.clone()), Some(&root));
    assert!(s.base.starts_with("https://"), "{}", s.base);
    let a = s.call(None, "list_runs", json!({}));
    assert_eq!(
        (a.status, a.code()),
        (401, "unauthorized"),
        "over TLS: {a:?}"
    );
    let a = s.get(None, "/");
    assert!(a.status == 200 || a.status == 503, "{a:?}");
    // The same over plain HTTP to the TLS port gets nothing served.
    let plain = ureq::get(format!("http://{}/api/me", s.addr)).call();
    assert!(plain.is_err(), "plain HTTP on the TLS port: {plain:?}");

    // A key that is not the certificate's, and a file that is not PEM.
    let other_dir = dir.path().join("other");
    std::fs::create_dir_all(&other_dir).expect("mkdir");
    let other = certificate(&other_dir);
    for tls in [
        overseer_web::TlsFiles {
            cert: files.cert.clone(),
            key: other.key.clone(),
        },
        overseer_web::TlsFiles {
            cert: dir.path().join("nothing.pem"),
            key: files.key.clone(),
        },
    ] {
        let e = overseer_web::bind(&overseer_web::WebConfig {
            addr: "0.0.0.0:0".parse().expect("addr"),
            tls: Some(tls),
            public_origins: Vec::new(),
        })
        .err()
        .expect("refused");
        assert!(e.to_string().starts_with("TLS:"), "{e}");
    }
}

#[test]
fn behind_a_tls_proxy_the_public_origins_pages_are_answered_and_no_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = std::sync::Arc::new(
        overseer_engine::Engine::open(
            overseer_engine::Paths {
                data_dir: dir.path().join("data"),
                config_dir: dir.path().join("config"),
            },
            std::sync::Arc::new(overseer_engine::SystemClock),
            std::sync::Arc::new(overseer_engine::LogNotifier),
        )
        .expect("engine"),
    );
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = overseer_web::bind(&overseer_web::WebConfig {
        addr: "127.0.0.1:0".parse().expect("addr"),
        tls: None,
        public_origins: vec!["https://Box.tailnet.ts.net/".to_owned()],
    })
    .expect("bind");
    assert_eq!(server.url().as_deref(), Some("https://box.tailnet.ts.net"));
    let addr = server.local_addr();
    rt.spawn(server.serve(engine));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let post = |host: &str, origin: &str| {
        agent
            .post(format!("http://{addr}/api/call/list_runs"))
            .header("host", host)
            .header("origin", origin)
            .send(b"{}".as_slice())
            .expect("POST")
            .status()
            .as_u16()
    };
    let public = "https://box.tailnet.ts.net";
    // The proxy passes the browser's Host on, or names where it forwards:
    // past the Origin check either way (then 401: not paired).
    assert_eq!(post("box.tailnet.ts.net", public), 401);
    assert_eq!(post(&addr.to_string(), public), 401);
    assert_eq!(post("box.tailnet.ts.net", "https://evil.example"), 403);
    assert_eq!(post("evil.example", "http://evil.example"), 403);

    for bad in ["box.tailnet.ts.net", "ftp://box", "https://box/path"] {
        let e = overseer_web::bind(&overseer_web::WebConfig {
            addr: "127.0.0.1:0".parse().expect("addr"),
            tls: None,
            public_origins: vec![bad.to_owned()],
        })
        .err()
        .expect("refused");
        assert!(e.to_string().starts_with("--web-origin:"), "{e}");
    }
}

/// Whether the server closed `stream` (it sent nothing; an idle one stays
/// open).
async fn closed(stream: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_millis(300), stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[test]
fn connections_without_headers_cannot_lock_out_a_new_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = served();
    let addr = s.addr;
    // More idle connections (never a header) from 127.0.0.1 than the server
    // has slots in all.
    let flood = overseer_web::listen::MAX_CONNECTIONS + 44;
    let (held, answer) = s.rt.block_on(async move {
        let mut idle = Vec::new();
        for _ in 0..flood {
            idle.push(connect_from("127.0.0.1", addr).await);
        }
        // Another loopback address (this machine too: one address) is
        // served: its connection takes the oldest idle one's place.
        let mut other = connect_from("127.0.0.2", addr).await;
        other
            .write_all(
                format!("GET /api/me HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .expect("request");
        let mut answer = String::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(5), other.read_to_string(&mut answer)).await;
        // All at once: one by one would outlast the header deadline.
        let looks = futures::future::join_all(idle.iter_mut().map(closed)).await;
        let held = looks.iter().filter(|&&c| !c).count();
        (held, answer)
    });
    assert!(
        answer.starts_with("HTTP/1.1 401"),
        "the other address is answered (unpaired: 401): {answer:?}"
    );
    assert_eq!(
        held,
        overseer_web::listen::MAX_FROM_LOOPBACK - 1,
        "this machine holds its share of the slots, no more, less the one the new connection took"
    );
}
