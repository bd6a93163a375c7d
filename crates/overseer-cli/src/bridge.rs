//! `overseer bridge`: stdin/stdout joined to this machine's engine socket,
//! for a client on another machine (`ssh HOST overseer bridge`), so a host
//! opens no port of its own.
//!
//! Before any byte reaches the engine, one handshake line each way: the
//! client sends [`Hello`] (its version); the bridge answers [`Welcome`]
//! (this engine's version and its audit signing public key, which the client
//! pins on first contact), or the same with `refused` and exits: a different
//! major version, no engine running, or no handshake. After the handshake
//! the bytes are the socket's own protocol, untouched. A persistent link
//! names itself in its hello: its earlier bridge here, left over from a cut
//! connection, is ended first (`handshake::supersede`).

use overseer_engine::Paths;
use overseer_server::remote::handshake::{
    major, read_line, supersede, Hello, Refused, Welcome, VERSION,
};
use std::process::ExitCode;
use tokio::io::{AsyncWriteExt, BufReader};

pub async fn run(paths: &Paths) -> anyhow::Result<ExitCode> {
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut stdout = tokio::io::stdout();
    let line = read_line(&mut stdin).await?;
    let refuse = |code: &str, message: String| Welcome {
        engine_version: VERSION.to_owned(),
        engine_key: None,
        engine_instance: None,
        refused: Some(Refused {
            code: code.to_owned(),
            message,
        }),
    };
    let answer = match serde_json::from_str::<Hello>(line.trim()) {
        Err(_) => Err(refuse(
            "bad_handshake",
            "this is `overseer bridge`: an overseer client sends \
             {\"overseer_bridge\": VERSION} first (use `overseer --host NAME ...`)"
                .to_owned(),
        )),
        Ok(hello) if major(&hello.overseer_bridge) != major(VERSION) => Err(refuse(
            "version_mismatch",
            format!(
                "this host runs overseer {VERSION} and your overseer is {}: different \
                 major versions do not talk; upgrade the host: overseer hosts upgrade NAME \
                 (NAME: what you called this host)",
                hello.overseer_bridge
            ),
        )),
        Ok(hello) => match hello.link.as_deref().map(|link| {
            supersede(&paths.data_dir.join("bridges"), link)
                .map_err(|e| format!("cannot end this link's earlier bridge here: {e}"))
        }) {
            Some(Err(m)) => Err(refuse("bad_handshake", m)),
            _ => connect(paths)
                .await
                .map_err(|m| refuse("engine_unavailable", m)),
        },
    };
    match answer {
        Err(welcome) => {
            let message = welcome
                .refused
                .as_ref()
                .map(|r| r.message.clone())
                .unwrap_or_default();
            write_line(&mut stdout, &welcome).await?;
            eprintln!("overseer bridge: {message}");
            Ok(ExitCode::FAILURE)
        }
        Ok((socket, key)) => {
            let welcome = Welcome {
                engine_version: VERSION.to_owned(),
                engine_key: Some(key),
                engine_instance: instance(&socket),
                refused: None,
            };
            write_line(&mut stdout, &welcome).await?;
            let (mut from_engine, mut to_engine) = socket.into_split();
            let up = async {
                let _ = tokio::io::copy(&mut stdin, &mut to_engine).await;
                // The client is done: the engine sees the end and closes.
                let _ = to_engine.shutdown().await;
                std::future::pending::<()>().await
            };
            let down = async {
                let _ = tokio::io::copy(&mut from_engine, &mut stdout).await;
                let _ = stdout.flush().await;
            };
            // Over when the engine closes (after the client's end, or its own).
            tokio::select! {
                _ = up => {}
                _ = down => {}
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn write_line(out: &mut tokio::io::Stdout, welcome: &Welcome) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec(welcome)?;
    bytes.push(b'\n');
    out.write_all(&bytes).await?;
    out.flush().await?;
    Ok(())
}

/// Which engine process answers on `socket`: its pid and start time (hex),
/// another after the engine restarted.
fn instance(socket: &tokio::net::UnixStream) -> Option<String> {
    let pid = socket.peer_cred().ok()?.pid()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22; the fields after the command name (which may hold spaces) start at 3.
    let started: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    Some(format!("{pid:x}-{started:x}"))
}

/// The engine's socket and its signing public key, or why not.
async fn connect(paths: &Paths) -> Result<(tokio::net::UnixStream, String), String> {
    let key_path = overseer_store::Keyring::key_path(&paths.config_dir);
    if !key_path.exists() {
        return Err(format!(
            "no engine has started on this host yet (no signing key at {}): start it with \
             `overseer hosts add` from your machine, or `overseer serve` here",
            key_path.display()
        ));
    }
    let socket = tokio::net::UnixStream::connect(paths.socket())
        .await
        .map_err(|e| {
            format!(
                "no engine answers on this host at {} ({e}): start it with `overseer hosts \
                 upgrade NAME` from your machine, or `overseer serve` here",
                paths.socket().display()
            )
        })?;
    let key = overseer_store::Keyring::load_or_create(&paths.config_dir)
        .map_err(|e| format!("cannot read this engine's signing key: {e}"))?
        .public_key_hex();
    Ok((socket, key))
}
