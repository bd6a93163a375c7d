//! A host cannot reach back into this desktop (issue 37, item 7):
//!
//! - a process on a host that names a window's link (its id is on the
//!   host: the bridge's pid file, its command line) cannot lock the link
//!   out with a number far ahead: refused by the real engine, over its
//!   real socket, and the link's owner always gets back in;
//! - `overseer --host NAME ...` against a host that never answers (a TCP
//!   socket that never speaks, a real OpenSSH host whose network is cut)
//!   fails within ssh's connect timeout, saying why;
//! - what a host says is made inert before this terminal shows it.

use crate::common;

use common::remote::{fails, ok};
use common::Home;
use overseer_core::{ErrorCode, OwnerSurface};
use overseer_server::api::{Call, LinkConnection, Request, ServerLine};
use overseer_test_support::ssh_host::TestHost;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// A raw client on the engine's socket.
struct Conn {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next: u64,
}

impl Conn {
    fn open(home: &Home) -> Conn {
        let stream = UnixStream::connect(home.data().join("overseer.sock")).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Conn {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            next: 1,
        }
    }

    fn send(&mut self, request: Request) -> u64 {
        let id = self.next;
        self.next += 1;
        let mut line = serde_json::to_vec(&Call { id, request }).expect("call");
        line.push(b'\n');
        self.writer.write_all(&line).expect("write");
        id
    }

    /// The next line that is not an event (None at the end of the stream).
    fn line(&mut self) -> Option<ServerLine> {
        loop {
            let mut text = String::new();
            match self.reader.read_line(&mut text) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => panic!("no line from the engine: {e}"),
            }
            let line: ServerLine = serde_json::from_str(text.trim()).expect("a server line");
            if !matches!(line, ServerLine::Event { .. }) {
                return Some(line);
            }
        }
    }

    /// Calls and waits for its answer.
    fn call(&mut self, request: Request) -> Result<serde_json::Value, overseer_core::ApiError> {
        let id = self.send(request);
        match self.line() {
            Some(ServerLine::Result {
                id: Some(got),
                result,
            }) if got == id => Ok(result),
            Some(ServerLine::Error {
                id: Some(got),
                error,
            }) if got == id => Err(error),
            other => panic!("not the answer to call {id}: {other:?}"),
        }
    }

    /// A new connection subscribed as connection `number` of `link`.
    fn subscribe(
        home: &Home,
        link: &str,
        number: u64,
    ) -> (Conn, Result<(), overseer_core::ApiError>) {
        let mut c = Conn::open(home);
        let outcome = c
            .call(Request::SubscribeAs {
                surface: OwnerSurface::App,
                link: Some(LinkConnection {
                    link: link.to_owned(),
                    number,
                }),
            })
            .map(|_| ());
        (c, outcome)
    }
}

/// A process that names a link with 2^64-1 (or any number far ahead) is
/// refused and changes nothing; one within reach can take the link over
/// (a same-user process can always disturb a link, as it can end its
/// bridge), but the link's connection is told at once, and its owner gets
/// back in as a link of a new id (what `remote::link` does when refused).
#[test]
fn a_link_number_far_ahead_never_locks_the_owner_out() {
    let home = Home::new();
    let _serve = home.serve();
    let link = "boot1234-1f-17e0-0";

    let (_, bogus) = Conn::subscribe(&home, link, u64::MAX);
    let bogus = bogus.expect_err("2^64-1 refused");
    assert_eq!(bogus.code, ErrorCode::InvalidInput, "{}", bogus.message);
    assert!(bogus.message.contains("too far ahead"), "{}", bogus.message);

    // The owner's link, numbered from 0, gets in after it.
    let (mut owner, entered) = Conn::subscribe(&home, link, 0);
    entered.expect("the owner's link is not locked out");
    assert_eq!(owner.call(Request::Ping).expect("ping"), "pong");

    // Far ahead of the link's newest: refused, the owner keeps its link.
    for far in [65, 1 << 40, u64::MAX] {
        let (_, refused) = Conn::subscribe(&home, link, far);
        let refused = refused.expect_err("far ahead");
        assert_eq!(refused.code, ErrorCode::InvalidInput, "{}", refused.message);
    }
    assert_eq!(owner.call(Request::Ping).expect("still the link's"), "pong");

    // Within reach: it takes the link over, and the owner's connection is
    // told on a line of its own (its client reconnects).
    let (_intruder, taken) = Conn::subscribe(&home, link, 1);
    taken.expect("a number within reach");
    let t = Instant::now();
    match owner.line() {
        Some(ServerLine::Error { id: None, error }) => {
            assert!(error.message.contains("replaced"), "{}", error.message)
        }
        other => panic!("the replaced connection was not told: {other:?}"),
    }
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "told after {:?}",
        t.elapsed()
    );
    let fenced = owner.call(Request::Ping).expect_err("fenced");
    assert_eq!(
        fenced.code,
        ErrorCode::EngineUnavailable,
        "{}",
        fenced.message
    );

    // The owner's next connection of the same link is refused (conflict),
    // and the link comes back under a new id.
    let (_, again) = Conn::subscribe(&home, link, 1);
    assert_eq!(again.expect_err("taken").code, ErrorCode::Conflict);
    let (mut back, entered) = Conn::subscribe(&home, "boot1234-1f-17e0-1", 0);
    entered.expect("a new id always gets in");
    assert_eq!(back.call(Request::Ping).expect("ping"), "pong");
}

/// A hosts.json naming one host at `address:port` (nothing installed: the
/// command fails before the key is checked).
fn hosts_json(home: &Home, name: &str, address: &str, port: u16) {
    std::fs::create_dir_all(home.data()).expect("data dir");
    let host = serde_json::json!({"hosts": [{
        "name": name, "user": "nobody", "address": address, "port": port,
        "ssh_config": null, "dir": "/nonexistent/overseer", "version": env!("CARGO_PKG_VERSION"),
        "engine_key": "00", "service": "detached", "added_at": 0
    }]});
    std::fs::write(home.data().join("hosts.json"), host.to_string()).expect("hosts.json");
}

/// A host whose sshd accepts the connection and never says a word: ssh
/// gives up within its ConnectTimeout (10 s; it covers the banner), and
/// the error names the host and what happened.
#[test]
fn a_host_that_never_answers_fails_within_the_connect_timeout() {
    let home = Home::new();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    hosts_json(&home, "silent", "127.0.0.1", port);
    let t = Instant::now();
    let out = home
        .cmd(&["--host", "silent", "runs", "list"])
        .env("HOME", home.dir.path())
        .output()
        .expect("run overseer");
    let took = t.elapsed();
    let said = String::from_utf8_lossy(&out.stderr);
    eprintln!("--host to a silent host failed after {took:?}: {said}");
    assert!(!out.status.success());
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(20),
        "failed after {took:?}, not ssh's ConnectTimeout of 10 s: {said}"
    );
    assert!(
        said.contains("silent") && said.contains("timed out"),
        "the error does not say which host and what happened: {said}"
    );
    drop(silent);
}

/// Real OpenSSH to a real host whose network is then cut (its packets
/// dropped): `--host` fails within the connect timeout instead of the
/// system's TCP timeout of minutes; and text the host says (an error
/// naming a path with ANSI escapes) reaches this terminal inert.
#[test]
fn a_cut_host_fails_fast_and_what_a_host_says_is_inert() {
    let host = TestHost::start();
    let home = Home::new();
    ok(&home, &host, &["hosts", "add", "h", &host.url()]);

    // The host's error names the hostile path: shown escaped.
    let hostile = "/nonexistent/\u{1b}[2J\u{1b}]0;owned\u{7}\rrepo";
    let said = fails(
        &home,
        &host,
        &["--host", "h", "workspace", "add", hostile, "--name", "x"],
    );
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{7}') && !said.contains('\r'),
        "control characters from the host reached the terminal: {said:?}"
    );
    assert!(
        said.contains("\\u{1b}[2J"),
        "the escape is shown escaped: {said}"
    );

    host.cut();
    let t = Instant::now();
    let said = fails(&home, &host, &["--host", "h", "runs", "list"]);
    let took = t.elapsed();
    host.restore();
    eprintln!("--host to a cut host failed after {took:?}: {said}");
    assert!(
        took < Duration::from_secs(20),
        "failed after {took:?}, not within ssh's ConnectTimeout of 10 s: {said}"
    );
    assert!(
        said.contains("h") && said.contains("timed out"),
        "the error does not say what happened: {said}"
    );
}
