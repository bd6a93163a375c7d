//! What the tests and benches of every crate share, so each fixture exists
//! once: the demo agent built for the caller's profile, git run with a
//! fixed identity, repositories in temp dirs, and waiting for a condition.
//!
//! Only for `[dev-dependencies]`: every function panics with a message that
//! says what failed, which is what a test wants.

pub mod model_server;
pub mod ssh_host;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The demo agent, built once per process in the caller's own profile
/// (`target/<profile>/overseer-demo-agent`, next to the test's `deps`
/// directory, whatever the target dir): a release bench gets a release agent.
pub fn demo_agent() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| built("overseer-demo-agent"))
}

/// The `overseer` command line binary, built once per process in the
/// caller's own profile like [`demo_agent`] (for a test outside its crate,
/// such as the app's, which installs it on a test host).
pub fn overseer_cli() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| built("overseer"))
}

/// The packages whose binaries the tests run, built together: `make app`
/// builds this same set, so the test's build and the Makefile's resolve the
/// same features and share one set of artifacts (built one package at a
/// time, each set of features is a build of its own, hundreds of MB on a CI
/// disk that has none to spare).
const BINARIES: [&str; 3] = [
    "overseer-cli",
    "overseer-demo-agent",
    "overseer-test-support",
];

/// Builds [`BINARIES`] in the caller's profile; the path of `bin`, one of
/// theirs.
fn built(bin: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test runs from target/<profile>/deps");
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "-q"])
        .args(BINARIES.iter().flat_map(|p| ["-p", p]))
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo build");
    assert!(status.success(), "cargo build of {BINARIES:?} failed");
    let bin = profile_dir.join(bin);
    assert!(bin.exists(), "{} missing after the build", bin.display());
    bin
}

/// Runs `git -C dir args` as a fixed user (no signing, whatever the
/// machine's config says) and returns its trimmed stdout; panics with git's
/// stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A git repository at `dir` (created if missing) on branch `main`, holding
/// `files` (paths relative to it, parents created) in one `init` commit;
/// with no files the commit is empty. Returns `dir`.
pub fn repo_with(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir).expect("create the repository's directory");
    git(dir, &["init", "-q", "-b", "main"]);
    for (path, body) in files {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("create a file's directory");
        }
        std::fs::write(&file, body).expect("write a file");
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "init"]);
    dir.to_owned()
}

/// Polls `f` every 50 ms until it gives a value; panics naming `what` after
/// `limit`.
pub fn eventually<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_holds_its_files_in_one_commit_on_main() {
        let dir = std::env::temp_dir().join(format!("ts-repo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        repo_with(&dir, &[("src/a.txt", "a\n"), ("README.md", "# r\n")]);
        assert_eq!(git(&dir, &["branch", "--show-current"]), "main");
        assert_eq!(git(&dir, &["rev-list", "--count", "HEAD"]), "1");
        assert_eq!(git(&dir, &["ls-files"]), "README.md\nsrc/a.txt");
        let empty = dir.join("empty");
        repo_with(&empty, &[]);
        assert_eq!(git(&empty, &["rev-list", "--count", "HEAD"]), "1");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    #[should_panic(expected = "timed out after")]
    fn waiting_names_what_never_came() {
        eventually("a value", Duration::from_millis(120), || None::<()>);
    }
}
