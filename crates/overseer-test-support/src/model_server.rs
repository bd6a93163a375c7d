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
}

impl ModelServer {
    /// Serves `script` (a file of `tests/real-agents/scripts`) on `host`
    /// (an address of this machine), a free port, logging to `log`.
    pub fn start(script: &str, log: &Path, host: &str) -> ModelServer {
        let base = real_agents_dir();
        let script = base.join("scripts").join(script);
        assert!(script.exists(), "no script {}", script.display());
        let mut child = Command::new("node")
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
    }
}
