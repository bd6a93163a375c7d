//! The bridge's handshake, both sides' lines, and the client's side of it:
//! `ssh HOST DIR/current/overseer bridge`, one line each way before any byte
//! reaches the host's engine. The client sends [`Hello`] (its version); the
//! bridge answers [`Welcome`] (its engine's version, instance and audit
//! signing public key), or the same with `refused` and exits. The client
//! checks the major version and the pinned key before it sends anything.

use super::registry::{quote, Host, Target};
use super::HostError;
use serde::{Deserialize, Serialize};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// This binary's version: the bridge's and, as they are installed together,
/// its engine's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The longest handshake line read.
const HELLO_MAX: u64 = 4096;

/// The client's first line.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    /// The client's version.
    pub overseer_bridge: String,
    /// A persistent link's id (the same at each of its reconnections): the
    /// bridge ends that link's earlier bridge on the host before it answers
    /// (see [`supersede`]). None for a one-shot client (`--host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// Whether `link` is a link id a bridge takes (it names a file).
pub fn valid_link(link: &str) -> bool {
    !link.is_empty()
        && link.len() <= 64
        && link.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Ends link `link`'s earlier bridge on this host, if one still runs, and
/// records this process as its bridge (`DIR/bridges/LINK.pid`).
///
/// When a link is cut, its old connection is not over on the host: sshd
/// and the old bridge wait, and the client's kernel still holds what the
/// client wrote just before the cut (a decision, say) and sends it again
/// once the network is back, even though the client's ssh is gone. Ended
/// here, before the new bridge answers, that old session delivers nothing
/// more to the engine; what it delivered and the engine has not read yet is
/// refused once the new connection subscribes (the server's link fence). A
/// decision the client then reads back as pending stays not applied.
pub fn supersede(bridges: &std::path::Path, link: &str) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if !valid_link(link) {
        return Err(std::io::Error::other(format!(
            "{link:?} is not a link id (letters, digits and '-', at most 64)"
        )));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(bridges)?;
    let file = bridges.join(format!("{link}.pid"));
    if let Some(pid) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok())
        .filter(|p| *p != std::process::id() as i32)
    {
        if is_bridge(pid) {
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
            // Gone once its command line is (a zombie's is empty).
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while is_bridge(pid) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    std::fs::write(&file, std::process::id().to_string())
}

/// Whether process `pid` is an `overseer bridge`.
fn is_bridge(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.split(|b| *b == 0).any(|arg| arg == b"bridge"))
        .unwrap_or(false)
}

/// The bridge's first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Welcome {
    pub engine_version: String,
    /// The engine's audit signing public key (hex), when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_key: Option<String>,
    /// Which engine process answers (its pid and start time): another
    /// one after the host's engine restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_instance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refused>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refused {
    /// `version_mismatch`, `engine_unavailable` or `bad_handshake`.
    pub code: String,
    pub message: String,
}

/// The major version of `v` (`1.4.2` -> `1`).
pub fn major(v: &str) -> &str {
    v.trim().split('.').next().unwrap_or("")
}

/// Reads one handshake line of at most [`HELLO_MAX`] bytes (empty at EOF).
pub async fn read_line<R: AsyncRead + Unpin>(r: &mut BufReader<R>) -> std::io::Result<String> {
    let mut line = String::new();
    r.take(HELLO_MAX).read_line(&mut line).await?;
    Ok(line)
}

/// Why a bridge could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The bridge answered and refused (see [`Refused::code`]).
    Refused(Refused),
    /// ssh or the bridge failed before answering: what they said.
    Failed(String),
}

impl OpenError {
    /// What to tell the user about host `name`.
    pub fn message(&self, name: &str) -> String {
        super::inert(&self.said(name))
    }

    fn said(&self, name: &str) -> String {
        match self {
            OpenError::Failed(e) => e.clone(),
            OpenError::Refused(r) if r.code == "version_mismatch" => format!(
                "host {name} refused this overseer ({VERSION}): {}. Upgrade the host: \
                 overseer hosts upgrade {name}",
                r.message.split(';').next().unwrap_or(&r.message)
            ),
            OpenError::Refused(r) => format!("host {name}: {}", r.message),
        }
    }
}

/// An open bridge: the host engine's socket protocol over ssh's pipes.
pub struct Bridge {
    pub reader: BufReader<ChildStdout>,
    pub writer: ChildStdin,
    /// The `ssh` process (killed when dropped).
    pub child: Child,
    pub welcome: Welcome,
    /// What ssh wrote on its stderr so far (the last 64 KiB at most).
    pub said: Arc<Mutex<Vec<u8>>>,
}

impl Bridge {
    /// What ssh said, trimmed (empty when nothing).
    pub fn ssh_said(&self) -> String {
        said_text(&self.said)
    }
}

fn said_text(said: &Mutex<Vec<u8>>) -> String {
    said.lock()
        .map(|s| String::from_utf8_lossy(&s).trim().to_owned())
        .unwrap_or_default()
}

/// `ssh HOST DIR/current/overseer bridge` and its handshake; `extra` goes
/// before ssh's destination (options such as `-o ServerAliveInterval=5`).
pub async fn open(
    target: &Target,
    dir: &str,
    name: &str,
    extra: &[String],
) -> Result<Bridge, OpenError> {
    open_link(target, dir, name, extra, None).await
}

/// [`open`] for a persistent link: `link` (see [`Hello::link`]) ends that
/// link's earlier bridge on the host first.
pub async fn open_link(
    target: &Target,
    dir: &str,
    name: &str,
    extra: &[String],
    link: Option<&str>,
) -> Result<Bridge, OpenError> {
    let command = format!("exec {}/current/overseer bridge", quote(dir));
    let mut args: Vec<String> = extra.to_vec();
    args.extend(target.ssh_args(&command));
    let mut child = tokio::process::Command::new("ssh")
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            OpenError::Failed(format!(
                "cannot run `ssh` ({e}): install the OpenSSH client"
            ))
        })?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(OpenError::Failed("ssh started without its pipes".into()));
    };
    // ssh's own messages, kept for an error (and so ssh never blocks on them).
    let said = Arc::new(Mutex::new(Vec::new()));
    {
        let said = said.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = said.lock() {
                    if s.len() < 64 * 1024 {
                        s.extend_from_slice(&buf[..n]);
                    }
                }
            }
        });
    }
    let mut hello = serde_json::to_vec(&Hello {
        overseer_bridge: VERSION.to_owned(),
        link: link.map(str::to_owned),
    })
    .map_err(|e| OpenError::Failed(e.to_string()))?;
    hello.push(b'\n');
    // A write error means ssh is gone: what it said is read below.
    let _ = stdin.write_all(&hello).await;
    let _ = stdin.flush().await;
    let mut reader = BufReader::new(stdout);
    let line = read_line(&mut reader)
        .await
        .map_err(|e| OpenError::Failed(format!("cannot read from ssh: {e}")))?;
    let welcome: Welcome = match serde_json::from_str(line.trim()) {
        Ok(w) => w,
        Err(_) => {
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            let said = said_text(&said);
            return Err(OpenError::Failed(format!(
                "cannot reach host {name}'s engine ({} via ssh): {}",
                target.url(),
                if said.is_empty() {
                    format!("the bridge answered {:?}", line.trim())
                } else {
                    said
                }
            )));
        }
    };
    if let Some(r) = welcome.refused {
        return Err(OpenError::Refused(r));
    }
    if major(&welcome.engine_version) != major(VERSION) {
        return Err(OpenError::Refused(Refused {
            code: "version_mismatch".into(),
            message: format!("it runs overseer {}", welcome.engine_version),
        }));
    }
    Ok(Bridge {
        reader,
        writer: stdin,
        child,
        welcome,
        said,
    })
}

/// Whether the engine that answered signs with the key pinned for `host`.
pub fn check_key(host: &Host, welcome: &Welcome) -> Result<(), HostError> {
    let got = welcome.engine_key.as_deref().unwrap_or("");
    if got != host.engine_key {
        return Err(HostError(format!(
            "HOST KEY CHANGED: host {name}'s engine signs with a different key than the one \
             pinned when it was added (pinned {pinned}, now {now}). Someone else's engine may be \
             answering at {url}; nothing was sent to it. If the host's engine was reinstalled \
             on purpose, run `overseer hosts remove {name}` and `overseer hosts add {name} {url}` \
             to pin the new key",
            name = host.name,
            pinned = super::registry::fingerprint(&host.engine_key),
            now = super::registry::fingerprint(got),
            url = host.target().url()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process whose command line is an `overseer bridge`'s (`bridge` as an argument).
    fn fake_bridge() -> std::process::Child {
        std::process::Command::new("bash")
            // bash -c's own process stays (`; :`), named `overseer` with
            // `bridge` as an argument (`sleep 30 bridge` would exit at once:
            // GNU sleep refuses `bridge` as an interval).
            .args(["-c", "exec -a overseer bash -c 'sleep 30; :' bridge"])
            .spawn()
            .expect("spawn")
    }

    #[test]
    fn a_links_new_bridge_ends_its_earlier_one_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bridges = dir.path().join("bridges");
        let mut old = fake_bridge();
        std::thread::sleep(Duration::from_millis(100));
        std::fs::create_dir_all(&bridges).expect("mkdir");
        std::fs::write(bridges.join("lk-1.pid"), old.id().to_string()).expect("pid");
        // Another link's bridge, and a pid file naming a process that is not a bridge.
        let mut other = fake_bridge();
        std::fs::write(bridges.join("lk-2.pid"), other.id().to_string()).expect("pid");
        let mut stranger = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn");
        std::fs::write(bridges.join("lk-3.pid"), stranger.id().to_string()).expect("pid");

        supersede(&bridges, "lk-1").expect("superseded");
        let status = old.wait().expect("wait");
        assert!(
            !status.success(),
            "the earlier bridge was killed: {status:?}"
        );
        assert_eq!(
            std::fs::read_to_string(bridges.join("lk-1.pid")).expect("pid"),
            std::process::id().to_string()
        );
        supersede(&bridges, "lk-3").expect("not a bridge: left alone");
        assert!(
            other.try_wait().expect("try_wait").is_none(),
            "another link's bridge runs"
        );
        assert!(
            stranger.try_wait().expect("try_wait").is_none(),
            "a stranger runs"
        );
        assert!(supersede(&bridges, "../x").is_err(), "not a link id");
        let _ = other.kill();
        let _ = stranger.kill();
        let _ = other.wait();
        let _ = stranger.wait();
    }
}
