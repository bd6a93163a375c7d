//! Landlock scopes around everything a run starts: no connection to an
//! abstract Unix socket created outside the run, no signal to a process
//! outside it (`LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET` and
//! `LANDLOCK_SCOPE_SIGNAL`, Landlock ABI 6, Linux 6.12+).
//!
//! Why: abstract sockets have no path, so bubblewrap's hidden directories do
//! not cover them, and while a run shares the host's network namespace it
//! reaches every one of them: the X server's `@/tmp/.X11-unix/X<n>` (a run
//! typed its own approval into the window through it) and, on systems whose
//! session bus is abstract, D-Bus (a run had the bus start a process outside
//! the sandbox). Scoped, those connects fail with EPERM.
//!
//! The ruleset is made in the engine (it allocates) and enforced in the
//! child between fork and exec ([`enforce_before_exec`]): `bwrap` and all it
//! starts are in one Landlock domain per spawn. Processes of the same run
//! (the same spawn) still talk to each other; sockets by path are not
//! affected (the agent's own socket is one).

use super::ScopeStatus;
use landlock::{
    Access, CompatLevel, Compatible, LandlockStatus, Ruleset, RulesetAttr, RulesetCreated,
    RulesetStatus, Scope, ABI,
};
use std::sync::OnceLock;

/// What stays open on a system without the scopes, in words.
pub const LEAVES_OPEN: &str = "a run can connect to abstract Unix sockets outside it \
     (the X server of your desktop, a session D-Bus started by dbus-launch) and signal your \
     processes; a run on its own network (network = \"none\") is still cut off from them";

/// The ruleset every run's processes are put under (None: not supported here).
fn ruleset(level: CompatLevel) -> Result<RulesetCreated, String> {
    Ruleset::default()
        .set_compatibility(level)
        .scope(Scope::from_all(ABI::V6))
        .and_then(|r| r.create())
        .map_err(|e| e.to_string())
}

/// Whether this kernel enforces both scopes: enforced for real on a
/// throwaway thread (a Landlock domain binds the thread that asks for it
/// and its future children, nothing else of this process).
pub fn probe() -> ScopeStatus {
    let tried = std::thread::spawn(|| {
        ruleset(CompatLevel::BestEffort)
            .and_then(|r| r.restrict_self().map_err(|e| e.to_string()))
            .map(|s| (s.ruleset, s.landlock))
    })
    .join();
    let (ruleset_status, landlock) = match tried {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return ScopeStatus::Missing {
                why: format!("Landlock refused the scopes: {e}"),
                leaves_open: LEAVES_OPEN.to_owned(),
            }
        }
        Err(_) => {
            return ScopeStatus::Missing {
                why: "the Landlock probe failed".to_owned(),
                leaves_open: LEAVES_OPEN.to_owned(),
            }
        }
    };
    match (ruleset_status, landlock) {
        (RulesetStatus::FullyEnforced, LandlockStatus::Available { effective_abi, .. }) => {
            ScopeStatus::Available {
                abi: effective_abi as u32,
            }
        }
        (_, LandlockStatus::Available { effective_abi, .. }) => ScopeStatus::Missing {
            why: format!(
                "this kernel's Landlock (ABI {}) has no scopes: they need ABI 6, Linux 6.12 or newer",
                effective_abi as u32
            ),
            leaves_open: LEAVES_OPEN.to_owned(),
        },
        (_, LandlockStatus::NotEnabled) => ScopeStatus::Missing {
            why: "Landlock is built into this kernel but not enabled (add `landlock` to the \
                  kernel's `lsm=` boot parameter)"
                .to_owned(),
            leaves_open: LEAVES_OPEN.to_owned(),
        },
        (_, LandlockStatus::NotImplemented) => ScopeStatus::Missing {
            why: "this kernel has no Landlock (it needs Linux 6.12 or newer built with \
                  CONFIG_SECURITY_LANDLOCK)"
                .to_owned(),
            leaves_open: LEAVES_OPEN.to_owned(),
        },
    }
}

/// Whether the scopes are enforced on this machine (probed once).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| matches!(super::probe().scopes, ScopeStatus::Available { .. }))
}

/// Puts the child of `cmd` (and all it will start) under the scopes before
/// it execs, when this machine has them; the spawn fails when a scope the
/// probe found cannot be enforced.
#[allow(unsafe_code)]
pub fn enforce_before_exec(cmd: &mut tokio::process::Command) -> Result<(), String> {
    if !available() {
        return Ok(());
    }
    let mut ruleset = Some(ruleset(CompatLevel::HardRequirement)?);
    // SAFETY: the closure runs in the forked child before exec. It makes two
    // system calls (prctl(PR_SET_NO_NEW_PRIVS), landlock_restrict_self) on a
    // descriptor made by the parent, closes it, and allocates nothing: the
    // error is a raw OS error.
    unsafe {
        cmd.pre_exec(
            move || match ruleset.take().map(RulesetCreated::restrict_self) {
                None | Some(Ok(_)) => Ok(()),
                Some(Err(_)) => Err(std::io::Error::from_raw_os_error(1)),
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::{UnixListener, UnixStream};

    /// An abstract socket made here (outside any run) cannot be reached
    /// from a child under the scopes, and a signal to this process fails;
    /// the same child without the scopes reaches both.
    #[test]
    fn a_scoped_child_cannot_reach_abstract_sockets_or_signal_outside() {
        if !available() {
            // The machines this project is tested on have Landlock ABI 6+
            // (docs/security.md); elsewhere the probe must say why.
            let status = probe();
            assert!(matches!(status, ScopeStatus::Missing { ref why, .. } if !why.is_empty()));
            return;
        }
        use std::os::linux::net::SocketAddrExt;
        let name = format!("overseer-scope-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
            .expect("abstract name");
        let listener = UnixListener::bind_addr(&addr).expect("bind abstract");
        // Keep accepting so a connect that gets through is seen as such.
        std::thread::spawn(move || for _ in listener.incoming() {});
        let _ = UnixStream::connect_addr(&addr).expect("reachable from outside a run");
        let connect = format!(
            "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0{name}')\n    print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n"
        );
        let signal = format!(
            "kill -0 {} 2>/dev/null && echo signalled || echo no-signal",
            std::process::id()
        );
        let run = |scoped: bool, program: &str, args: &[&str]| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                if scoped {
                    enforce_before_exec(&mut cmd).expect("scoped");
                }
                let out = cmd.output().await.expect("the child runs");
                String::from_utf8_lossy(&out.stdout).trim().to_owned()
            })
        };
        assert_eq!(run(false, "python3", &["-c", &connect]), "connected");
        assert_eq!(run(false, "sh", &["-c", &signal]), "signalled");
        assert_eq!(run(true, "python3", &["-c", &connect]), "refused 1");
        assert_eq!(run(true, "sh", &["-c", &signal]), "no-signal");
        // Nothing of the engine's own threads was restricted by the probe or
        // the spawns: it still reaches the socket.
        let _ = UnixStream::connect_addr(&addr).expect("still reachable here");
    }
}
