//! An ssh test host ([`overseer_test_support::ssh_host::TestHost`]) for tests
//! that are not written in Rust (the window's, in `tests/e2e`): it starts the
//! host, prints one JSON line saying how to reach it, then obeys lines on
//! stdin until stdin closes, when it removes everything it made.
//!
//! Printed: `{"user", "addr", "url", "home", "ssh_config"}` (`ssh -F
//! ssh_config`, or `OVERSEER_SSH_CONFIG` for `overseer hosts`).
//! Lines read: `cut` (the link goes down), `restore` (it comes back); each
//! is answered with `ok` once done. Needs root, as the host does.

use overseer_test_support::ssh_host::TestHost;
use std::io::{BufRead, Write};

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn main() {
    let host = TestHost::start();
    let mut out = std::io::stdout().lock();
    let line = format!(
        "{{\"user\":{},\"addr\":{},\"url\":{},\"home\":{},\"ssh_config\":{}}}",
        quote(&host.user),
        quote(&host.addr),
        quote(&host.url()),
        quote(&host.home.to_string_lossy()),
        quote(&host.ssh_config().to_string_lossy()),
    );
    if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
        return;
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "cut" => host.cut(),
            "restore" => host.restore(),
            "" => continue,
            other => {
                eprintln!("overseer-test-host: unknown command {other:?} (cut, restore)");
                continue;
            }
        }
        if writeln!(out, "ok").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    // Dropping the host removes its user, namespace, sshd and files.
}
