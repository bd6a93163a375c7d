//! The web endpoint in a real browser: Chromium (Debian's `chromium` and
//! `chromium-driver`, which `make setup` installs), driven over WebDriver,
//! pairs with a code, keeps the device cookie (`__Host-` and `Secure`
//! although the page is plain HTTP on loopback: Chromium counts 127.0.0.1
//! and localhost as secure), never shows it to scripts (`HttpOnly`), sends
//! it back on calls and on the WebSocket beside the page's own half (a
//! header, an offered protocol), and gets the hello frame. A page on
//! another port is tested in tests/e2e/web/ports.test.mjs.

use crate::common;

use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// chromedriver on a free port, killed when dropped.
struct Driver {
    child: Child,
    base: String,
    agent: ureq::Agent,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{CHROMEDRIVER}: {e} (`make setup` installs chromium and chromium-driver)")
            });
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let driver = Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            agent,
        };
        let started = Instant::now();
        while driver
            .agent
            .get(format!("{}/status", driver.base))
            .call()
            .is_err()
        {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        driver
    }

    fn send(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let mut response = match method {
            "DELETE" => self.agent.delete(url).call(),
            _ => self.agent.post(url).send_json(body),
        }
        .expect("webdriver");
        let value: Value = response.body_mut().read_json().expect("webdriver json");
        value["value"].clone()
    }
}

/// In the page: pairs with `code`, then reads /api/me, calls list_runs and
/// opens the events socket; what each got.
const PAIR_IN_THE_PAGE: &str = r#"
const [code, done] = [arguments[0], arguments[arguments.length - 1]];
(async () => {
  const out = {};
  const json = {'Content-Type': 'application/json'};
  const pair = await fetch('/api/pair', {method: 'POST', headers: json, body: JSON.stringify({code})});
  out.pair = pair.status;
  const key = (await pair.json()).key;
  out.cookieSeenByScript = document.cookie;
  out.meWithoutKey = (await fetch('/api/me')).status;
  const me = await fetch('/api/me', {headers: {'X-Overseer-Device': key}});
  out.me = me.status;
  out.person = (await me.json()).device?.person ?? null;
  out.listRuns = (await fetch('/api/call/list_runs', {method: 'POST', headers: {...json, 'X-Overseer-Device': key}, body: '{}'})).status;
  const ws = new WebSocket(location.origin.replace('http', 'ws') + '/api/events', ['overseer', 'overseer-device.' + key]);
  ws.onmessage = (m) => { out.first = JSON.parse(m.data).channel; ws.close(); done(out); };
  ws.onerror = () => { out.first = 'error'; done(out); };
})().catch((e) => done({error: String(e)}));
"#;

#[test]
fn chromium_pairs_keeps_the_secure_cookie_on_loopback_and_gets_the_events() {
    let s = common::served();
    let driver = Driver::start();
    let session = driver.send(
        "POST",
        "/session",
        json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        }}}}),
    );
    let id = session["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {session}"))
        .to_owned();
    let session = format!("/session/{id}");
    driver.send(
        "POST",
        &format!("{session}/timeouts"),
        json!({"script": 20_000}),
    );
    let port = s.addr.port();
    for (host, person) in [("127.0.0.1", "ana"), ("localhost", "bo")] {
        let code = s
            .engine
            .start_pairing(person, &format!("chromium at {host}"))
            .expect("code")
            .code;
        driver.send(
            "POST",
            &format!("{session}/url"),
            json!({"url": format!("http://{host}:{port}/")}),
        );
        let got = driver.send(
            "POST",
            &format!("{session}/execute/async"),
            json!({"script": PAIR_IN_THE_PAGE, "args": [code]}),
        );
        assert_eq!(
            got,
            json!({
                "pair": 200,
                "cookieSeenByScript": "",
                "meWithoutKey": 401,
                "me": 200,
                "person": person,
                "listRuns": 200,
                "first": "overseer://hello",
            }),
            "at http://{host}:{port}"
        );
    }
    driver.send("DELETE", &session, Value::Null);
}
