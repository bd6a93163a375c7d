//! A real engine on a temp dir (real SQLite file) serving browsers on a
//! real TCP port, a real HTTP client (ureq) and a real WebSocket client
//! (tokio-tungstenite).
#![allow(dead_code)]

use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use overseer_web::{TlsFiles, WebConfig};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct Served {
    pub rt: tokio::runtime::Runtime,
    pub engine: Arc<Engine>,
    /// `http://127.0.0.1:PORT`: also the Origin of the engine's own page.
    pub base: String,
    pub addr: SocketAddr,
    pub agent: ureq::Agent,
    pub dir: tempfile::TempDir,
}

/// The engine, serving browsers on a free loopback port over plain HTTP.
pub fn served() -> Served {
    served_with(None, None)
}

/// The engine serving with `tls` (and then trusting `root` as its client).
pub fn served_with(tls: Option<TlsFiles>, root: Option<&[u8]>) -> Served {
    serve(tls, root, None)
}

/// The engine serving over plain HTTP, each socket's heartbeat every `beat`.
pub fn served_beating(beat: Duration) -> Served {
    serve(None, None, Some(beat))
}

/// A temp dir with an engine's data and config dirs, and a runtime of two
/// threads (as the app's).
pub fn engine_dirs() -> (tempfile::TempDir, Paths, tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths {
        data_dir: dir.path().join("data"),
        config_dir: dir.path().join("config"),
    };
    std::fs::create_dir_all(&paths.config_dir).expect("config dir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    (dir, paths, rt)
}

fn serve(tls: Option<TlsFiles>, root: Option<&[u8]>, beat: Option<Duration>) -> Served {
    let (dir, paths, rt) = engine_dirs();
    let engine = Arc::new(
        Engine::open(paths, Arc::new(SystemClock), Arc::new(LogNotifier)).expect("engine"),
    );
    let scheme = if tls.is_some() { "https" } else { "http" };
    let server = overseer_web::bind(&WebConfig {
        addr: "127.0.0.1:0".parse().expect("addr"),
        tls,
        public_origins: Vec::new(),
    })
    .expect("bind");
    let server = match beat {
        Some(beat) => server.heartbeat_every(beat),
        None => server,
    };
    let addr = server.local_addr();
    rt.spawn(server.serve(engine.clone()));
    let mut config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)));
    if let Some(root) = root {
        let cert = ureq::tls::Certificate::from_pem(root).expect("root certificate");
        config = config.tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::Specific(Arc::new(vec![
                    cert.to_owned()
                ])))
                .build(),
        );
    }
    Served {
        rt,
        engine,
        base: format!("{scheme}://{addr}"),
        addr,
        agent: config.build().into(),
        dir,
    }
}

/// The device cookie's name.
pub const COOKIE: &str = overseer_web::auth::COOKIE;

/// The headers a paired page sends with `credential` (`<cookie half>.<origin
/// half>`, as [`pair_credential`] gives it): the cookie, and its origin's
/// half as `X-Overseer-Device`. A credential without a `.` goes as the
/// cookie alone (a made-up one, or half of one).
pub fn credential_headers(credential: &str) -> Vec<(&'static str, String)> {
    match credential.split_once('.') {
        Some((cookie, half)) => vec![
            ("cookie", format!("{COOKIE}={cookie}")),
            (overseer_web::auth::HEADER, half.to_owned()),
        ],
        None => vec![("cookie", format!("{COOKIE}={credential}"))],
    }
}

/// The whole credential a pairing answer gave: its cookie's half (from the
/// `Set-Cookie`) and the page's half (the body's `key`), joined as the
/// helpers take them.
pub fn pair_credential(a: &Answer) -> Option<String> {
    let cookie = a
        .cookies
        .iter()
        .find_map(|c| c.split(';').next()?.strip_prefix(&format!("{COOKIE}=")))?;
    let key = a.body["key"].as_str()?;
    Some(format!("{cookie}.{key}"))
}

/// The offered WebSocket protocols that carry a page's half of `credential`
/// (none for a credential without one).
pub fn socket_protocols(credential: &str) -> Option<String> {
    credential
        .split_once('.')
        .map(|(_, half)| format!("overseer, overseer-device.{half}"))
}

/// An answer: its status, its JSON body (Null when not JSON), its
/// Set-Cookie headers.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub cookies: Vec<String>,
    pub headers: Vec<(String, String)>,
}

impl Answer {
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or_default()
    }
}

fn answer(mut r: ureq::http::Response<ureq::Body>) -> Answer {
    let status = r.status().as_u16();
    let cookies = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    Answer {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        cookies,
        headers,
    }
}

impl Served {
    /// POST `body` to `path` with this Origin (None: none) and cookie.
    pub fn post_from(
        &self,
        origin: Option<&str>,
        cookie: Option<&str>,
        path: &str,
        body: &[u8],
    ) -> Answer {
        let mut request = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        for (name, value) in cookie.map(credential_headers).unwrap_or_default() {
            request = request.header(name, value);
        }
        answer(request.send(body).expect("POST"))
    }

    /// POST from the engine's own page.
    pub fn post(&self, cookie: Option<&str>, path: &str, body: &Value) -> Answer {
        let body = serde_json::to_vec(body).expect("json");
        self.post_from(Some(&self.base.clone()), cookie, path, &body)
    }

    /// `POST path` with `body` from the engine's own page, made on a
    /// connection of its own from `source` (an address of this host:
    /// 127.0.0.2 is one too on Linux), as a browser on another machine
    /// would.
    pub fn post_via(&self, source: &str, cookie: Option<&str>, path: &str, body: &Value) -> Answer {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = body.to_string();
        let cookie: String = cookie
            .map(credential_headers)
            .unwrap_or_default()
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: {base}\r\n{cookie}\
             Content-Type: application/json\r\nContent-Length: {len}\r\n\
             Connection: close\r\n\r\n{body}",
            addr = self.addr,
            base = self.base,
            len = body.len(),
        );
        let answer = self.rt.block_on(async {
            let mut stream = connect_from(source, self.addr).await;
            stream.write_all(request.as_bytes()).await.expect("request");
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await.expect("answer");
            answer
        });
        let answer = String::from_utf8_lossy(&answer);
        let (head, body) = answer
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.strip_prefix("HTTP/1.1 "))
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect();
        Answer {
            status,
            body: serde_json::from_str(body).unwrap_or(Value::Null),
            cookies: headers
                .iter()
                .filter(|(k, _)| k == "set-cookie")
                .map(|(_, v)| v.clone())
                .collect(),
            headers,
        }
    }

    /// The status of `POST /api/call/<command>` from `source` (see
    /// [`Served::post_via`]).
    pub fn call_from(&self, source: &str, cookie: &str, command: &str, args: Value) -> u16 {
        self.post_via(source, Some(cookie), &format!("/api/call/{command}"), &args)
            .status
    }

    /// `POST /api/call/<command>` from the engine's own page.
    pub fn call(&self, cookie: Option<&str>, command: &str, args: Value) -> Answer {
        self.post(cookie, &format!("/api/call/{command}"), &args)
    }

    pub fn get(&self, cookie: Option<&str>, path: &str) -> Answer {
        let mut request = self.agent.get(format!("{}{path}", self.base));
        for (name, value) in cookie.map(credential_headers).unwrap_or_default() {
            request = request.header(name, value);
        }
        answer(request.call().expect("GET"))
    }

    /// Opens `/api/events` from `origin` with `cookie`.
    pub fn socket_from(
        &self,
        origin: &str,
        cookie: Option<&str>,
    ) -> Result<Socket, tungstenite::Error> {
        use tungstenite::client::IntoClientRequest;
        let url = format!("ws://{}/api/events", self.addr);
        let mut request = url.into_client_request()?;
        request
            .headers_mut()
            .insert("origin", origin.parse().expect("origin"));
        if let Some(cookie) = cookie {
            socket_credential(&mut request, cookie);
        }
        self.rt
            .block_on(tokio_tungstenite::connect_async(request))
            .map(|(socket, _)| socket)
    }

    pub fn socket(&self, cookie: Option<&str>) -> Result<Socket, tungstenite::Error> {
        self.socket_from(&self.base.clone(), cookie)
    }

    /// The next text frame as JSON, within `limit`; None when the socket
    /// closed (with its close frame, if any) or nothing came.
    pub fn next_frame(&self, socket: &mut Socket, limit: Duration) -> Frame {
        use futures::StreamExt;
        self.rt.block_on(async {
            loop {
                match tokio::time::timeout(limit, socket.next()).await {
                    Err(_) => return Frame::Nothing,
                    Ok(None) | Ok(Some(Err(_))) => return Frame::Ended(None),
                    Ok(Some(Ok(tungstenite::Message::Text(t)))) => {
                        return Frame::Json(serde_json::from_str(&t).expect("json frame"))
                    }
                    Ok(Some(Ok(tungstenite::Message::Close(c)))) => {
                        return Frame::Ended(c.map(|c| u16::from(c.code)))
                    }
                    Ok(Some(Ok(_))) => continue,
                }
            }
        })
    }
}

#[derive(Debug)]
pub enum Frame {
    Json(Value),
    /// Closed, with the close code when a close frame came.
    Ended(Option<u16>),
    Nothing,
}

/// Puts `credential` on a WebSocket upgrade as a browser's page does: the
/// cookie, and its origin's half among the offered protocols.
pub fn socket_credential(request: &mut tungstenite::handshake::client::Request, credential: &str) {
    let cookie = credential.split_once('.').map_or(credential, |(c, _)| c);
    request.headers_mut().insert(
        "cookie",
        format!("{COOKIE}={cookie}").parse().expect("cookie"),
    );
    if let Some(protocols) = socket_protocols(credential) {
        request.headers_mut().insert(
            "sec-websocket-protocol",
            protocols.parse().expect("protocols"),
        );
    }
}

/// The HTTP status a refused WebSocket upgrade got.
pub fn refused_status(e: &tungstenite::Error) -> Option<u16> {
    match e {
        tungstenite::Error::Http(response) => Some(response.status().as_u16()),
        _ => None,
    }
}

/// A TCP connection to the server from `source` (an address of this host).
pub async fn connect_from(source: &str, server: SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("source"))
        .expect("bind the source address");
    socket.connect(server).await.expect("connect")
}
