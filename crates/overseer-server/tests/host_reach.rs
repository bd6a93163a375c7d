//! What a host can do to this desktop through the app's link and the ssh
//! Overseer starts (issue 37, "hosts cannot reach back"), against a fake
//! `ssh` on PATH (a real child process: a Perl script that records its
//! argv and carries its stdio to a Unix socket the test serves as the
//! host's bridge) and real OpenSSH's own reading of the options (`ssh -G`):
//!
//! - every ssh and scp is started with forwarding off, a connect timeout
//!   and keep-alives, over a config that says otherwise;
//! - a host whose engine refuses the link's connection number (another
//!   process there took the link's id) does not keep the link out: it
//!   comes back at once as a link of a new id;
//! - a host flooding events: a reader fallen behind skips the backlog and
//!   the link says to re-read the host (its `resync` grows), at most once
//!   a second.

use overseer_core::{ApiError, EngineEvent, ErrorCode};
use overseer_server::api::{Call, Request, ServerLine};
use overseer_server::remote::handshake::{Hello, Welcome, VERSION};
use overseer_server::remote::registry::{Target, SSH_OPTIONS};
use overseer_server::remote::{setup, Host, HostLinkState, Link, LinkOptions};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

const KEY: &str = "5d1c2f3e4a5b6c7d8e9f0a1b2c3d4e5f5d1c2f3e4a5b6c7d8e9f0a1b2c3d4e5f";

/// The fake `ssh`: records its argv in `DIR/<dest>.argv` (one line, args
/// split by 0x1f) and carries its stdin and stdout to `DIR/<dest>.sock`.
const FAKE_SSH: &str = r#"#!/usr/bin/perl
use strict;
use warnings;
use IO::Socket::UNIX;
my $dir = "@DIR@";
my $at = 0;
for my $i (0 .. $#ARGV) { if ($ARGV[$i] eq '--') { $at = $i; last } }
my $dest = $ARGV[$at - 1];
$dest =~ s/.*\@//;
open(my $log, '>>', "$dir/$dest.argv") or die "argv log: $!";
print $log join("\x1f", @ARGV), "\n";
close $log;
my $s = IO::Socket::UNIX->new(Peer => "$dir/$dest.sock");
if (!$s) { print STDERR "ssh: connect to host $dest port 22: Connection refused\n"; exit 255; }
my $pid = fork();
if ($pid == 0) {
    my $buf;
    while (sysread(STDIN, $buf, 65536)) { syswrite($s, $buf) or last; }
    shutdown($s, 1);
    exit 0;
}
my $buf;
while (my $n = sysread($s, $buf, 65536)) {
    my $off = 0;
    while ($off < $n) {
        my $w = syswrite(STDOUT, $buf, $n - $off, $off);
        last unless defined $w;
        $off += $w;
    }
}
kill 'TERM', $pid;
exit 0;
"#;

/// The fake `scp`: records its argv in `DIR/scp.argv`.
const FAKE_SCP: &str = r#"#!/usr/bin/perl
open(my $log, '>>', "@DIR@/scp.argv") or die "argv log: $!";
print $log join("\x1f", @ARGV), "\n";
exit 0;
"#;

/// The directory of the fakes, first on this test process's PATH (set
/// once, before any ssh is started).
fn fakes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir").keep();
        for (name, text) in [("ssh", FAKE_SSH), ("scp", FAKE_SCP)] {
            let path = dir.join(name);
            std::fs::write(&path, text.replace("@DIR@", &dir.display().to_string()))
                .expect("write the fake");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the fake");
        }
        let path = std::env::var("PATH").unwrap_or_default();
        std::env::set_var("PATH", format!("{}:{path}", dir.display()));
        dir
    })
}

/// A host entry whose ssh destination is `dest` (the fake's socket name).
fn host(dest: &str, ssh_config: Option<PathBuf>) -> Host {
    Host {
        name: dest.to_owned(),
        user: Some("me".to_owned()),
        address: dest.to_owned(),
        port: Some(2222),
        ssh_config,
        dir: "/home/me/.local/share/overseer".to_owned(),
        version: VERSION.to_owned(),
        engine_key: KEY.to_owned(),
        service: "detached".to_owned(),
        added_at: 0,
    }
}

/// Every argv the fake ssh was started with for `dest`.
fn argvs(file: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\x1f').map(str::to_owned).collect())
        .collect()
}

/// Whether `argv` carries every option of [`SSH_OPTIONS`] as `-o OPTION`,
/// before the destination.
fn hardened(argv: &[String], dest: &str) {
    let end = argv
        .iter()
        .position(|a| a.ends_with(dest) || a.contains(&format!("{dest}:")))
        .unwrap_or(argv.len());
    for option in SSH_OPTIONS {
        assert!(
            argv[..end]
                .windows(2)
                .any(|w| w[0] == "-o" && w[1] == *option),
            "-o {option} missing before the destination: {argv:?}"
        );
    }
}

/// One bridge connection the fake host accepted: the client's hello, and
/// its lines each way.
struct Bridge {
    hello: Hello,
    calls: mpsc::UnboundedReceiver<Call>,
    lines: mpsc::UnboundedSender<String>,
}

impl Bridge {
    fn send(&self, line: &ServerLine) {
        let _ = self
            .lines
            .send(serde_json::to_string(line).expect("a line"));
    }

    /// The subscription's call: its id and the link's connection.
    async fn subscription(&mut self) -> (u64, overseer_server::api::LinkConnection) {
        let call = tokio::time::timeout(Duration::from_secs(10), self.calls.recv())
            .await
            .expect("the link subscribes")
            .expect("a call");
        match call.request {
            Request::SubscribeAs {
                link: Some(link), ..
            } => (call.id, link),
            other => panic!("the link's first call is not subscribe_as: {other:?}"),
        }
    }

    /// Answers every call from now on (a ping with "pong", the rest with null).
    fn answer_the_rest(mut self) -> mpsc::UnboundedSender<String> {
        let lines = self.lines.clone();
        tokio::spawn(async move {
            while let Some(call) = self.calls.recv().await {
                let result = match call.request {
                    Request::Ping => serde_json::json!("pong"),
                    _ => serde_json::Value::Null,
                };
                self.send(&ServerLine::reply(call.id, Ok(result)));
            }
        });
        lines
    }
}

/// Accepts the next bridge on `listener`: reads the hello, answers the
/// welcome with the pinned key, then carries lines.
async fn accept(listener: &UnixListener) -> Bridge {
    let (stream, _) = tokio::time::timeout(Duration::from_secs(15), listener.accept())
        .await
        .expect("the link's ssh connects")
        .expect("accept");
    serve_bridge(stream).await
}

async fn serve_bridge(stream: UnixStream) -> Bridge {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    reader.read_line(&mut line).await.expect("the hello");
    let hello: Hello = serde_json::from_str(line.trim()).expect("a hello");
    let welcome = Welcome {
        engine_version: VERSION.to_owned(),
        engine_key: Some(KEY.to_owned()),
        engine_instance: Some("fake-1".to_owned()),
        refused: None,
    };
    let mut first = serde_json::to_vec(&welcome).expect("welcome");
    first.push(b'\n');
    write.write_all(&first).await.expect("write the welcome");
    let (lines, mut out) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(mut l) = out.recv().await {
            l.push('\n');
            if write.write_all(l.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let (calls_tx, calls) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if let Ok(call) = serde_json::from_str::<Call>(line.trim()) {
                if calls_tx.send(call).is_err() {
                    return;
                }
            }
        }
    });
    Bridge {
        hello,
        calls,
        lines,
    }
}

/// Waits until the link is live with a `resync` of `want`.
async fn live_with(link: &Link, want: u64, within: Duration) {
    let mut states = link.watch();
    let reached = tokio::time::timeout(within, async {
        loop {
            if let HostLinkState::Live { resync, .. } = &*states.borrow_and_update() {
                if *resync == want {
                    return;
                }
            }
            if states.changed().await.is_err() {
                panic!("the link's state ended");
            }
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "the link was not live with resync {want} within {within:?}: {:?}",
        link.state()
    );
}

fn listener(dest: &str) -> UnixListener {
    let path = fakes().join(format!("{dest}.sock"));
    let _ = std::fs::remove_file(&path);
    UnixListener::bind(&path).expect("bind the fake host's socket")
}

/// Every ssh and scp Overseer starts (the app's link, a setup's steps,
/// the binary's copy) is given forwarding off, a connect timeout and
/// keep-alives; real OpenSSH reads them over a config that asks for
/// agent and X11 forwarding, port forwardings and a local command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ssh_overseer_starts_forwards_nothing_and_times_out() {
    let dir = fakes();
    // The link's ssh (its argv recorded as it connects).
    let dest = "argv-link";
    let sock = listener(dest);
    let link = Link::start(host(dest, None), LinkOptions::default());
    let mut bridge = accept(&sock).await;
    let (id, _) = bridge.subscription().await;
    bridge.send(&ServerLine::reply(id, Ok(serde_json::Value::Null)));
    live_with(&link, 0, Duration::from_secs(10)).await;
    link.stop();
    let runs = argvs(&dir.join(format!("{dest}.argv")));
    assert_eq!(runs.len(), 1, "{runs:?}");
    hardened(&runs[0], dest);

    // A setup's step over ssh (`hosts add`, `upgrade`, `remove`, `start`:
    // `setup::sh`), here to a host that refuses the connection.
    let target = host("argv-setup", None).target();
    let refused = setup::sh(&target, "checking the host", "true")
        .await
        .expect_err("nothing listens for argv-setup");
    assert!(
        refused.message.contains("Connection refused"),
        "{}",
        refused.message
    );
    let runs = argvs(&dir.join("argv-setup.argv"));
    assert_eq!(runs.len(), 1, "{runs:?}");
    hardened(&runs[0], "argv-setup");

    // The binary's copy (scp).
    setup::scp(&target, Path::new("/bin/true"), "/tmp/x")
        .await
        .expect("the fake scp");
    let runs = argvs(&dir.join("scp.argv"));
    assert_eq!(runs.len(), 1, "{runs:?}");
    hardened(&runs[0], "argv-setup");

    // What real OpenSSH makes of those options over a hostile config.
    let config = dir.join("hostile_config");
    std::fs::write(
        &config,
        "Host *\n  ForwardAgent yes\n  ForwardX11 yes\n  LocalForward 1234 localhost:22\n  \
         RemoteForward 2345 localhost:22\n  DynamicForward 1080\n  PermitLocalCommand yes\n  \
         LocalCommand touch /tmp/overseer-pwned\n  ConnectTimeout 600\n  ServerAliveInterval 0\n",
    )
    .expect("config");
    let target = Target {
        user: Some("me".into()),
        address: "box.example".into(),
        port: None,
        ssh_config: Some(config),
    };
    let mut args = target.config_args();
    args.extend(["-G".to_owned(), target.dest()]);
    let Ok(out) = std::process::Command::new("/usr/bin/ssh")
        .args(&args)
        .output()
    else {
        eprintln!("SKIPPED the ssh -G part: no /usr/bin/ssh (apt-get install openssh-client)");
        return;
    };
    assert!(
        out.status.success(),
        "ssh -G {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout).to_lowercase();
    for want in [
        "forwardagent no",
        "forwardx11 no",
        "clearallforwardings yes",
        "permitlocalcommand no",
        "connecttimeout 10",
        "serveraliveinterval 15",
        "serveralivecountmax 3",
    ] {
        assert!(
            said.lines().any(|l| l.trim() == want),
            "ssh -G does not say {want:?}:\n{said}"
        );
    }
    for gone in ["localforward ", "remoteforward ", "dynamicforward "] {
        assert!(
            !said.lines().any(|l| l.starts_with(gone)),
            "ssh -G still forwards ({gone}):\n{said}"
        );
    }
}

/// The host's engine refuses the link's connection (another process on
/// the host subscribed with its id and a higher number, or a number it
/// takes as too far ahead): the link reconnects at once as a link of a new
/// id, numbered from 0; refused again at once, it waits as after any
/// failure (never spins); then live, its first time (`resync` 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_number_never_keeps_the_link_out() {
    let dest = "renumber";
    let sock = listener(dest);
    let link = Link::start(host(dest, None), LinkOptions::default());
    let mut first = accept(&sock).await;
    let (id, conn) = first.subscription().await;
    assert_eq!(conn.number, 0);
    assert_eq!(first.hello.link.as_deref(), Some(conn.link.as_str()));
    let refused_at = Instant::now();
    first.send(&ServerLine::reply(
        id,
        Err(ApiError::new(
            ErrorCode::Conflict,
            "connection 18446744073709551615 of link ... subscribed already",
        )),
    ));
    let mut second = accept(&sock).await;
    let (id, again) = second.subscription().await;
    assert_ne!(again.link, conn.link, "the link took a new id");
    assert_eq!(again.number, 0, "numbered from 0 again");
    assert_eq!(second.hello.link.as_deref(), Some(again.link.as_str()));
    let took = refused_at.elapsed();
    assert!(
        took < Duration::from_millis(900),
        "reconnected after {took:?}, not at once (the retry wait is 1 s)"
    );
    // Refused again (too far ahead: an engine that refuses every link):
    // the link waits as after any failure instead of spinning.
    let refused_at = Instant::now();
    second.send(&ServerLine::reply(
        id,
        Err(ApiError::new(ErrorCode::InvalidInput, "too far ahead")),
    ));
    let mut third = accept(&sock).await;
    let waited = refused_at.elapsed();
    assert!(
        waited >= Duration::from_millis(900),
        "a second refusal in a row reconnected after {waited:?}, not after the retry wait"
    );
    let (id, last) = third.subscription().await;
    assert_ne!(last.link, again.link);
    assert_eq!(last.number, 0);
    third.send(&ServerLine::reply(id, Ok(serde_json::Value::Null)));
    live_with(&link, 0, Duration::from_secs(5)).await;
    let _third = third.answer_the_rest();
    link.stop();
}

fn event(name: &str) -> ServerLine {
    ServerLine::Event {
        event: Box::new(EngineEvent::WorkspaceChanged {
            name: name.to_owned(),
        }),
    }
}

/// A host floods events and a reader falls behind: the reader is told it
/// missed some, skips what waited (the next event it reads is one sent
/// after), and the link's live state says to re-read the host (`resync`
/// grows); a second overflow right after is told at most a second after
/// the first. The link stays live and answers calls throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_events_is_capped_and_the_window_resyncs() {
    use tokio::sync::broadcast::error::RecvError;
    let dest = "flood";
    let sock = listener(dest);
    let link = Link::start(host(dest, None), LinkOptions::default());
    let mut bridge = accept(&sock).await;
    let (id, _) = bridge.subscription().await;
    bridge.send(&ServerLine::reply(id, Ok(serde_json::Value::Null)));
    live_with(&link, 0, Duration::from_secs(10)).await;
    let lines = bridge.answer_the_rest();
    let flood = |tag: &str| {
        for i in 0..overseer_server::remote::link::QUEUE * 4 {
            let _ = lines.send(serde_json::to_string(&event(&format!("{tag}-{i}"))).expect("line"));
        }
    };
    let mut events = link.events();

    // The flood, then a call: its answer comes after every event of the
    // flood, so the link has taken them all by then.
    let t = Instant::now();
    flood("first");
    let pong = link
        .call(Request::Ping)
        .await
        .expect("a call during a flood");
    assert_eq!(pong, serde_json::json!("pong"));
    eprintln!(
        "{} events from the host taken in {:?}",
        overseer_server::remote::link::QUEUE * 4,
        t.elapsed()
    );
    match events.recv().await {
        Err(RecvError::Lagged(n)) => assert!(n > 0),
        other => panic!("the reader was not told it fell behind: {other:?}"),
    }
    live_with(&link, 1, Duration::from_secs(2)).await;
    let first_resync = Instant::now();
    let _ = lines.send(serde_json::to_string(&event("after")).expect("line"));
    let next = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("the event after the flood");
    assert_eq!(
        next.expect("an event"),
        EngineEvent::WorkspaceChanged {
            name: "after".into()
        },
        "the backlog was dropped: the next event is the one sent after"
    );

    // A second overflow at once: told, but not before a second after the first.
    flood("second");
    link.call(Request::Ping).await.expect("a call");
    assert!(matches!(events.recv().await, Err(RecvError::Lagged(_))));
    if first_resync.elapsed() < Duration::from_millis(800) {
        assert!(
            matches!(link.state(), HostLinkState::Live { resync: 1, .. }),
            "a second resync within a second of the first: {:?}",
            link.state()
        );
    }
    live_with(&link, 2, Duration::from_secs(3)).await;
    assert!(
        first_resync.elapsed() >= Duration::from_millis(900),
        "resynced again {:?} after the first",
        first_resync.elapsed()
    );
    link.stop();
}
