//! The scripted model server (`tests/real-agents/model-server.mjs`): the
//! real agent adapters' model endpoint, offline.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `tests/real-agents` of this repository (the adapters, the server, its scripts).
pub fn real_agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real-agents")
}

/// An adapter's binary (`node_modules/.bin/NAME`, resolved); a missing
/// install fails the test, never skips it.
pub fn adapter(name: &str) -> PathBuf {
    let bin = real_agents_dir().join("node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: the real adapters are not installed. Run `scripts/setup.sh` \
         (or `cd tests/real-agents && npm ci`) and run the tests again",
        bin.display()
    );
    std::fs::canonicalize(&bin).expect("the adapter's path")
}

/// The server, stopped when dropped.
pub struct ModelServer {
    child: Child,
    pub port: u16,
    /// One JSON line per request.
    pub log: PathBuf,
    /// The address it listens on.
    pub host: String,
    /// The network namespace it runs in, when it is "another machine".
    outside: Option<Outside>,
}

/// A network namespace joined to this one by a veth pair: a server there is
/// reached from here (and through a run's slirp4netns) as another machine
/// on the network would be, at an address that is not this machine's own
/// (a run's network keeps those out of reach). Removed when dropped.
struct Outside {
    name: String,
}

impl Outside {
    fn new() -> (Outside, String) {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        assert!(
            is_root(),
            "a run with its private network reaches a model server on another machine: the \
             test makes one with a network namespace and a veth pair, which needs root \
             (run the tests as root, as CI does)"
        );
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let name = format!("ovs-model-{pid}-{n}");
        // 198.18.0.0/15 (benchmarking): never anyone's real network. One
        // /30 per namespace, apart per process and per server.
        let net = (pid % 64) * 4 + n % 4;
        let (a, b) = (net / 256, net % 256);
        let (here, there) = (
            format!("198.{}.{b}.1", 18 + a),
            format!("198.{}.{b}.2", 18 + a),
        );
        let short = format!("ovm{}x{n}", pid % 100_000);
        let ip = |args: &[&str]| {
            let out = Command::new("ip")
                .args(args)
                .output()
                .expect("ip (iproute2) runs");
            assert!(
                out.status.success(),
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let outside = Outside { name: name.clone() };
        ip(&[
            "link", "add", &short, "type", "veth", "peer", "name", "eth0", "netns", &name,
        ]);
        ip(&["addr", "add", &format!("{here}/30"), "dev", &short]);
        ip(&["link", "set", &short, "up"]);
        let (there_net, ns) = (format!("{there}/30"), name.as_str());
        ip(&["-n", ns, "addr", "add", &there_net, "dev", "eth0"]);
        ip(&["-n", ns, "link", "set", "eth0", "up"]);
        ip(&["-n", ns, "link", "set", "lo", "up"]);
        (outside, there)
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        // Its veth pair goes with it.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl ModelServer {
    /// Serves `script` (a file of `tests/real-agents/scripts`) on `host`
    /// (an address of this machine), a free port, logging to `log`.
    pub fn start(script: &str, log: &Path, host: &str) -> ModelServer {
        Self::spawn(script, log, host, None)
    }

    /// Serves `script` from "another machine" (a network namespace of its
    /// own, joined to this one): what a run with its private network
    /// reaches, as it reaches a vendor's API. Needs root.
    pub fn start_outside(script: &str, log: &Path) -> ModelServer {
        let (outside, host) = Outside::new();
        Self::spawn(script, log, &host, Some(outside))
    }

    fn spawn(script: &str, log: &Path, host: &str, outside: Option<Outside>) -> ModelServer {
        let base = real_agents_dir();
        let script = base.join("scripts").join(script);
        assert!(script.exists(), "no script {}", script.display());
        let mut cmd = match &outside {
            Some(o) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &o.name, "node"]);
                c
            }
            None => Command::new("node"),
        };
        let mut child = cmd
            .arg(base.join("model-server.mjs"))
            .arg("--script")
            .arg(&script)
            .arg("--log")
            .arg(log)
            .args(["--port", "0", "--host", host])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node model-server.mjs (is node installed?)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the model server did not start: {line:?}"));
        ModelServer {
            child,
            port,
            log: log.to_owned(),
            host: host.to_owned(),
            outside,
        }
    }

    /// The log's lines of the agent's main requests (those with its tools).
    pub fn main_requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"main\":true"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // After the server: the namespace goes once nothing is in it.
        self.outside.take();
    }
}
