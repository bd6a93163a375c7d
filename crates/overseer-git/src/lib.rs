//! Git, through the `git` command: a repository of its own for each run,
//! diffs for review read from it, and a merge into the user's repository that
//! never touches uncommitted work in the user's checkout.
//!
//! **Every git command the engine runs is hardened here, in one place**
//! ([`Git`]): a cleared environment (only `PATH`, the locale, and git's own
//! switches that turn off the system and global configuration, with `HOME`
//! pointing at a directory that does not exist), hooks off
//! (`core.hooksPath=/dev/null`), no fsmonitor, no untracked cache, only the
//! `file` transport, no lazy fetch of a partial clone's objects, objects
//! checked on transfer, no signing programs, no
//! credential helpers, and every filter, merge and diff driver that the
//! repository's configuration defines neutralised (its commands set to empty,
//! filters not required), so nothing a run writes into a repository's
//! configuration or `.git/hooks` is ever executed by the engine. Diffs add
//! `--no-ext-diff --no-textconv`; commits add `--no-verify`.
//!
//! A run's repository is a fresh `git init --template=` (no hook templates,
//! no remote, no alternates) holding a copy of exactly the objects its base
//! commit reaches (`pack-objects --revs` in the user's repository writing a
//! pack into the run's; see [`copy_history`]), then the run's branch
//! checked out at the base commit. Review reads the run's repository; only a merge
//! the user (or their rules) approved writes to the user's repository: the
//! reviewed commit is fetched into a hidden ref (`refs/overseer/runs/N`),
//! merged without a working tree (`git merge-tree --write-tree`, git 2.38+),
//! committed with `commit-tree`, and moved onto the base branch with a
//! compare-and-set (`update-ref NEW OLD`) when the base is not checked out, or
//! a fast-forward (`merge --ff-only`) when it is checked out and clean. A
//! conflict or a dirty checkout changes nothing.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{0} is not a git repository: run `git init` there, or pick the repository's folder")]
    NotARepo(PathBuf),
    #[error("cannot run git ({0}); install git and make sure it is on PATH")]
    Missing(std::io::Error),
    #[error("`git {args}` failed in {dir}: {stderr}")]
    Failed {
        args: String,
        dir: PathBuf,
        stderr: String,
    },
    #[error("merging {branch} into {base} conflicts in: {files}. Nothing was changed; reject the run, or merge its branch yourself from the run's repository")]
    Conflict {
        branch: String,
        base: String,
        files: String,
    },
    #[error("{base} is checked out in {checkout} with uncommitted changes; commit or stash them, then approve again. Nothing was changed")]
    DirtyCheckout { base: String, checkout: PathBuf },
    #[error("{base} moved while merging; approve again to merge onto the new {base}")]
    BaseMoved { base: String },
    #[error("{dir} exists but is not this run's repository ({why}); move it away or remove it, then resume the run")]
    NotRunRepo { dir: PathBuf, why: String },
    #[error("cannot create or remove {dir}: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What a failed git step means to a client: a bad input, a conflict with
/// the user's work, or the engine's own fault.
impl From<GitError> for overseer_core::ApiError {
    fn from(e: GitError) -> Self {
        let code = match e {
            GitError::NotARepo(_) | GitError::NotRunRepo { .. } => {
                overseer_core::ErrorCode::InvalidInput
            }
            GitError::Conflict { .. }
            | GitError::DirtyCheckout { .. }
            | GitError::BaseMoved { .. } => overseer_core::ErrorCode::Conflict,
            GitError::Missing(_) | GitError::Failed { .. } | GitError::Io { .. } => {
                overseer_core::ErrorCode::Internal
            }
        };
        overseer_core::ApiError::new(code, e.to_string())
    }
}

/// Configuration given on every command line: it wins over any file.
const HARDENING: &[&str] = &[
    // Hooks: a directory that cannot exist, so no hook is ever found.
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    // Only local paths as remotes: no ssh (core.sshCommand), no ext::.
    "protocol.allow=never",
    "protocol.file.allow=always",
    "transfer.fsckObjects=true",
    // Fetching into a repository with alternates would run this command.
    "core.alternateRefsCommand=true",
    // Programs git would start on its own.
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "merge.verifySignatures=false",
    "log.showSignature=false",
    "credential.helper=",
    "core.pager=cat",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    // The engine's own commits.
    "user.name=Overseer",
    "user.email=overseer@localhost",
];

/// Where git looks for a user's configuration: nowhere that exists.
const NO_HOME: &str = "/nonexistent/overseer-git-home";

/// git's full path on the engine's PATH (looked up each time; the bare
/// name if it is not found, so that spawning says git is missing). See
/// [`hardened_command`] for why a full path.
pub fn program() -> std::path::PathBuf {
    let path = std::env::var("PATH").ok();
    overseer_contain::process::resolve_program(Path::new("git"), path.as_deref())
        .unwrap_or_else(|| std::path::PathBuf::from("git"))
}

/// The environment every git command starts from: nothing of the engine's.
///
/// git is named by its full path (looked up on the engine's PATH each time):
/// a bare name with the environment's PATH set makes the standard library
/// fork the whole engine instead of spawning (`posix_spawn` cannot search a
/// PATH other than the parent's), and copying the engine's memory map for
/// each of a run's ~50 git commands was most of the engine's CPU with 50
/// agents starting at once.
fn hardened_command() -> Command {
    let mut cmd = Command::new(program());
    cmd.env_clear();
    for key in ["PATH", "LANG", "LC_ALL"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd.env("HOME", NO_HOME)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        // What is reviewed and merged is the objects themselves.
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        // A partial clone's missing objects are never fetched on demand: that
        // fetch would run the `remote.<name>.uploadpack` the repository's
        // configuration names (git 2.45+; older gits ignore it).
        .env("GIT_NO_LAZY_FETCH", "1")
        .stdin(Stdio::null());
    for c in HARDENING {
        cmd.arg("-c").arg(c);
    }
    cmd
}

/// How much less CPU a git command gets than the engine and the agents
/// when they compete for it (a nice value, the lowest priority): answering
/// an agent waits on no git command, so with a fleet starting or finishing
/// at once, the fleet's git work (clones, checkouts, commits) must not
/// delay the answers. Idle cores still run git at full speed; git the user
/// waits on runs at the engine's priority ([`foreground`]). (With 50
/// runs finishing at once and git at nice 10, twenty-odd git processes
/// still outweighed the engine's threads: rule answers p99 72-143 ms; at
/// 19, with the bench's own polling fixed too, 17-20 ms.)
const GIT_NICENESS: i32 = 19;

thread_local! {
    /// Whether this thread's git commands are work the user waits on.
    static FOREGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the git commands it makes (on this thread) at the engine's
/// own priority, not [`GIT_NICENESS`]: work the user is waiting on, a diff on
/// screen or the merge they approved, must not crawl behind a build they
/// run beside the app.
pub fn foreground<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            FOREGROUND.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FOREGROUND.with(|c| c.replace(true)));
    f()
}

/// Lowers a git child's CPU priority to [`GIT_NICENESS`], unless it is
/// [`foreground`] work. Best effort: a git that already exited, or a system
/// that refuses, just runs as is.
fn yield_cpu(child: &std::process::Child) {
    if FOREGROUND.with(std::cell::Cell::get) {
        return;
    }
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::setpriority_process(Some(pid), GIT_NICENESS);
    }
}

/// Runs a git command to its end, its output captured, at background
/// priority, off the runtime's workers.
fn background_output(mut cmd: Command) -> Result<Output, GitError> {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(GitError::Missing)?;
    yield_cpu(&child);
    overseer_contain::blocking::off_worker(|| child.wait_with_output()).map_err(GitError::Missing)
}

/// The state of a repository's own configuration files, as far as it
/// decides the drivers `git config` would list: the files' identity, size
/// and change times. Only for a plain `.git` directory whose configuration
/// includes nothing (anything else is asked of git every time).
#[derive(Clone, PartialEq, Eq)]
struct ConfigStamp {
    git_dir: PathBuf,
    /// `config`, then `config.worktree`: None where there is none.
    files: Vec<Option<FileStamp>>,
}

/// A file's identity, size and change times.
#[derive(Clone, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl ConfigStamp {
    fn of(git_dir: &Path) -> Option<ConfigStamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(git_dir).ok()?;
        // A `.git` file (a linked worktree, a submodule) or a symlink points
        // elsewhere; a `commondir` shares another repository's config.
        if !meta.is_dir() || git_dir.join("commondir").exists() {
            return None;
        }
        let mut files = Vec::new();
        for name in ["config", "config.worktree"] {
            let path = git_dir.join(name);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_file() => {
                    // An include may name any file, changed without a trace here.
                    let text = std::fs::read(&path).ok()?;
                    if text
                        .to_ascii_lowercase()
                        .windows(7)
                        .any(|w| w == b"include")
                    {
                        return None;
                    }
                    files.push(Some(FileStamp {
                        dev: m.dev(),
                        ino: m.ino(),
                        size: m.size(),
                        modified: (m.mtime(), m.mtime_nsec()),
                        changed: (m.ctime(), m.ctime_nsec()),
                    }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => files.push(None),
                // A directory or a symlink where a config file should be.
                Ok(_) | Err(_) => return None,
            }
        }
        Some(ConfigStamp {
            git_dir: git_dir.to_owned(),
            files,
        })
    }
}

/// Drivers found by `git config`, by repository, with the state of its
/// configuration then. A run's dozens of git commands each opened the
/// repository and asked git for its drivers first: a third of the engine's
/// git processes.
type KnownDrivers =
    std::sync::Mutex<std::collections::HashMap<PathBuf, (ConfigStamp, Vec<(String, String)>)>>;

fn known_drivers() -> &'static KnownDrivers {
    static KNOWN: std::sync::OnceLock<KnownDrivers> = std::sync::OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

/// The drivers git listed for this repository, if its configuration files
/// are exactly as they were then.
fn drivers_known(stamp: &ConfigStamp) -> Option<Vec<(String, String)>> {
    let known = known_drivers()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    known
        .get(&stamp.git_dir)
        .filter(|(then, _)| then == stamp)
        .map(|(_, neutral)| neutral.clone())
}

/// Remembers what git listed, with the state read before asking it (so a
/// change while git ran is seen as a change next time).
fn remember_drivers(stamp: ConfigStamp, neutral: &[(String, String)]) {
    let mut known = known_drivers()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Runs' repositories come and go: start over past a large fleet's worth.
    if known.len() >= 1024 {
        known.clear();
    }
    known.insert(stamp.git_dir.clone(), (stamp, neutral.to_vec()));
}

/// One repository as the engine's git sees it, with the drivers its
/// configuration defines neutralised for every command run through it.
pub struct Git {
    /// What names the repository: `-C DIR`, or `--git-dir --work-tree`.
    at: Vec<OsString>,
    dir: PathBuf,
    /// Overrides for the repository's own drivers (as `GIT_CONFIG_*`, so a
    /// driver's name can hold any character).
    neutral: Vec<(String, String)>,
}

impl Git {
    /// The repository that contains `dir` (the user's checkout).
    pub fn open(dir: &Path) -> Result<Git, GitError> {
        let mut at = vec![OsString::from("-C"), dir.as_os_str().to_owned()];
        // An explicit work tree: a `core.worktree` in its configuration
        // cannot point the engine's `git add` at files elsewhere.
        if dir.join(".git").exists() {
            at = vec![
                OsString::from("--git-dir"),
                dir.join(".git").into_os_string(),
                OsString::from("--work-tree"),
                dir.as_os_str().to_owned(),
            ];
        }
        let mut git = Git {
            at,
            dir: dir.to_owned(),
            neutral: Vec::new(),
        };
        let stamp = ConfigStamp::of(&dir.join(".git"));
        git.neutral = match stamp.as_ref().and_then(drivers_known) {
            Some(neutral) => neutral,
            None => {
                let neutral = git.drivers()?;
                if let Some(stamp) = stamp {
                    remember_drivers(stamp, &neutral);
                }
                neutral
            }
        };
        Ok(git)
    }

    /// Every filter, merge and diff driver the configuration defines (its
    /// own file, anything it includes, the worktree's), turned off.
    fn drivers(&self) -> Result<Vec<(String, String)>, GitError> {
        let out = self.output(&[
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            r"^(filter|merge|diff)\..+\.[a-z]+$",
        ])?;
        match out.status.code() {
            Some(0) => {}
            // No such key.
            Some(1) => return Ok(Vec::new()),
            _ => return Err(self.failed("config --get-regexp", &out)),
        }
        let mut drivers: Vec<(String, String)> = Vec::new();
        for key in String::from_utf8_lossy(&out.stdout).split('\0') {
            let key = key.trim();
            let Some((driver, _)) = key.rsplit_once('.') else {
                continue;
            };
            if drivers.iter().any(|(d, _)| d == driver) {
                continue;
            }
            let Some((section, _)) = driver.split_once('.') else {
                continue;
            };
            drivers.push((driver.to_owned(), section.to_owned()));
        }
        let mut neutral = Vec::new();
        for (driver, section) in drivers {
            let off: &[(&str, &str)] = match section.as_str() {
                "filter" => &[
                    ("clean", ""),
                    ("smudge", ""),
                    ("process", ""),
                    ("required", "false"),
                ],
                // A merge driver with no command makes a content conflict.
                "merge" => &[("driver", "")],
                "diff" => &[("command", ""), ("textconv", "")],
                _ => &[],
            };
            for (var, value) in off {
                neutral.push((format!("{driver}.{var}"), (*value).to_owned()));
            }
        }
        Ok(neutral)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = hardened_command();
        if !self.neutral.is_empty() {
            cmd.env("GIT_CONFIG_COUNT", self.neutral.len().to_string());
            for (i, (k, v)) in self.neutral.iter().enumerate() {
                cmd.env(format!("GIT_CONFIG_KEY_{i}"), k);
                cmd.env(format!("GIT_CONFIG_VALUE_{i}"), v);
            }
        }
        cmd.args(&self.at).args(args);
        cmd
    }

    fn output(&self, args: &[&str]) -> Result<Output, GitError> {
        background_output(self.command(args))
    }

    /// Runs git with `input` on its stdin.
    fn output_with(&self, args: &[&str], input: &str) -> Result<Output, GitError> {
        self.output_with_env(args, input, &[])
    }

    /// [`Git::output_with`] with these variables set too.
    fn output_with_env(
        &self,
        args: &[&str],
        input: &str,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<Output, GitError> {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(GitError::Missing)?;
        yield_cpu(&child);
        overseer_contain::blocking::off_worker(|| {
            if let Some(mut stdin) = child.stdin.take() {
                // A git that exits early closes its stdin: its status says why.
                let _ = stdin.write_all(input.as_bytes());
            }
            child.wait_with_output()
        })
        .map_err(GitError::Missing)
    }

    fn failed(&self, args: &str, out: &Output) -> GitError {
        GitError::Failed {
            args: args.to_owned(),
            dir: self.dir.clone(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        }
    }

    /// Runs git and returns trimmed stdout, or the error with git's own words.
    fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let out = self.output(args)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
        } else {
            Err(self.failed(&args.join(" "), &out))
        }
    }

    /// Exit 0 is yes, 1 is no, anything else an error.
    fn test(&self, args: &[&str]) -> Result<bool, GitError> {
        let out = self.output(args)?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(self.failed(&args.join(" "), &out)),
        }
    }

    /// The commit `rev` names.
    fn commit_of(&self, rev: &str) -> Result<String, GitError> {
        self.run(&[
            "rev-parse",
            "--verify",
            "--end-of-options",
            &format!("{rev}^{{commit}}"),
        ])
    }

    /// Those of `commits` that are commits in this repository.
    fn present(&self, commits: &[String]) -> Result<Vec<String>, GitError> {
        if commits.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = commits.iter().map(|c| format!("{c}\n")).collect();
        let out = self.output_with(
            &["cat-file", "--batch-check=%(objectname) %(objecttype)"],
            &input,
        )?;
        if !out.status.success() {
            return Err(self.failed("cat-file --batch-check", &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_suffix(" commit").map(str::to_owned))
            .collect())
    }

    fn has_commit(&self, sha: &str) -> Result<bool, GitError> {
        let out = self.output(&["cat-file", "-e", &format!("{sha}^{{commit}}")])?;
        Ok(out.status.success())
    }
}

/// The top of the repository that contains `path`.
pub fn repo_root(path: &Path) -> Result<PathBuf, GitError> {
    if !path.is_dir() {
        return Err(GitError::NotARepo(path.to_owned()));
    }
    let mut cmd = hardened_command();
    cmd.arg("-C")
        .arg(path)
        .args(["rev-parse", "--show-toplevel"]);
    let out = background_output(cmd)?;
    if !out.status.success() {
        return Err(GitError::NotARepo(path.to_owned()));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The branch checked out in `repo` (e.g. `main`).
pub fn current_branch(repo: &Path) -> Result<String, GitError> {
    Git::open(repo)?.run(&["symbolic-ref", "--short", "HEAD"])
}

/// The commit `rev` (a branch, a sha) names in `repo`.
pub fn commit_of(repo: &Path, rev: &str) -> Result<String, GitError> {
    Git::open(repo)?.commit_of(rev)
}

/// True when `dir` is a linked worktree of the user's repository (`.git` is
/// a file): a run created before runs had repositories of their own.
pub fn is_linked_worktree(dir: &Path) -> bool {
    dir.join(".git").is_file()
}

/// Creates the run's own repository at `dir`: a new repository holding only
/// the objects `base` (a commit) reaches, copied from `repo`, without hook
/// templates, a remote or alternates, on a new `branch` at `base`.
/// Idempotent for a repository that already exists on that branch (a
/// resumed run), also an older run's linked worktree; an older run's clone
/// that borrowed the user's objects is given copies of what it reaches and
/// stops borrowing ([`stop_borrowing`]).
pub fn create_run_repo(repo: &Path, dir: &Path, branch: &str, base: &str) -> Result<(), GitError> {
    let io = |source| GitError::Io {
        dir: dir.to_owned(),
        source,
    };
    if dir.join(".git").exists() {
        let run = Git::open(dir)?;
        if is_linked_worktree(dir) {
            let on = run.run(&["symbolic-ref", "--short", "HEAD"])?;
            if on == branch {
                return Ok(());
            }
            return Err(GitError::NotRunRepo {
                dir: dir.to_owned(),
                why: format!("a worktree on {on}, not {branch}"),
            });
        }
        stop_borrowing(&run, dir)?;
        let on = run.output(&["symbolic-ref", "--short", "HEAD"])?;
        if String::from_utf8_lossy(&on.stdout).trim() == branch
            && run.commit_of(&format!("refs/heads/{branch}")).is_ok()
        {
            return Ok(());
        }
        // Made, then interrupted before its branch was checked out.
        return finish_run_repo(&run, repo, branch, base);
    }
    if dir.exists() {
        let empty = std::fs::read_dir(dir).map_err(io)?.next().is_none();
        if !empty {
            return Err(GitError::NotRunRepo {
                dir: dir.to_owned(),
                why: "it has files but no .git".to_owned(),
            });
        }
    }
    std::fs::create_dir_all(dir).map_err(io)?;
    // The user's object format (sha1 or sha256): the copied objects' ids.
    let format = Git::open(repo)?.run(&["rev-parse", "--show-object-format"])?;
    let mut init = hardened_command();
    init.args(["init", "-q", "--template="])
        .arg(format!("--object-format={format}"))
        .arg("--")
        .arg(dir);
    let out = background_output(init)?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: "init --template=".to_owned(),
            dir: dir.to_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    finish_run_repo(&Git::open(dir)?, repo, branch, base)
}

/// A new run's repository becomes the run's: the history of the base commit
/// (resolved in the user's repository) copied in when it is not there yet,
/// then the run's branch checked out at it.
fn finish_run_repo(run: &Git, repo: &Path, branch: &str, base: &str) -> Result<(), GitError> {
    // A clone from before runs' repositories were made with `init` had an
    // `origin` pointing back at the user's repository.
    if run.run(&["remote"])?.lines().any(|r| r == "origin") {
        run.run(&["remote", "remove", "origin"])?;
    }
    if run.commit_of(&format!("refs/heads/{branch}")).is_ok() {
        return run.run(&["checkout", "-q", branch, "--"]).map(|_| ());
    }
    let user = Git::open(repo)?;
    let base = user.commit_of(base)?;
    if !run.has_commit(&base)? {
        copy_history(&user, run, &base)?;
    }
    run.run(&["checkout", "-q", "--no-track", "-b", branch, &base, "--"])
        .map(|_| ())
}

/// Copies into `run` every object `commit` reaches in `user`, and nothing
/// else: `git pack-objects --revs` in the user's repository (a walk from
/// that one commit: no other branch, no stash, no index, no unreachable
/// object) writing one pack and its index. pack-objects already knows every
/// object's id and reuses the user's deltas, so nothing is hashed or
/// resolved again (piping the pack into `index-pack` instead made a start
/// 1.4 s slower than the old `clone --shared` on a 66,000-object
/// repository, against 0.2-0.5 s this way; see `benches/run_repo.rs`).
///
/// The pack is made once per base commit, in [`BASES`] beside the runs'
/// repositories (hidden from runs with the rest of the data dir), and
/// hard-linked into each run's object directory: runs started from the same
/// commit share its pack on disk and only the first pays for it. A run
/// cannot change the shared file (its `.git` is read-only in the sandbox) and
/// the engine never repacks a run's repository made this way. A pack no run
/// links any more is removed when a later one is made.
///
/// pack-objects starts no hooks, filters or helpers, and
/// `uploadpack.packObjectsHook` belongs to upload-pack, which is not used
/// (no transport, no remote, nothing written to the user's repository).
/// A shallow repository's pack is not shared (its history is cut where that
/// repository's is) and its boundary is copied, so that the copy's history
/// ends where the user's does.
fn copy_history(user: &Git, run: &Git, commit: &str) -> Result<(), GitError> {
    let git_path = |git: &Git, what: &str| -> Result<PathBuf, GitError> {
        git.run(&["rev-parse", "--path-format=absolute", "--git-path", what])
            .map(PathBuf::from)
    };
    let pack_dir = git_path(run, "objects/pack")?;
    let shallow = git_path(user, "shallow")?;
    let boundary = match std::fs::read(&shallow) {
        Ok(boundary) => Some(boundary),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(GitError::Io {
                dir: shallow,
                source,
            })
        }
    };
    // `<data>/worktrees/.bases`, beside the runs' repositories.
    let bases = run
        .dir
        .parent()
        .map(|p| p.join(BASES))
        .filter(|_| boundary.is_none());
    let shared = match bases {
        Some(bases) => shared_pack(user, &bases, commit).ok(),
        None => None,
    };
    match shared {
        Some(files) => link_pack(&files, &pack_dir)?,
        None => write_pack(user, commit, &pack_dir.join("pack"))?,
    }
    if let Some(boundary) = boundary {
        let to = git_path(run, "shallow")?;
        std::fs::write(&to, boundary).map_err(|source| GitError::Io { dir: to, source })?;
    }
    Ok(())
}

/// Where the packs of runs' base commits are kept, beside the runs'
/// repositories.
pub const BASES: &str = ".bases";

/// How long an unused base pack (or an abandoned one being made) is kept.
const BASE_IDLE: std::time::Duration = std::time::Duration::from_secs(600);

/// `git pack-objects --revs` of `commit` in `user`, written as `base_name`
/// `-<hash>.pack/.idx/.rev`.
///
/// git writes a pack to a temporary file in the object directory it works
/// in, then renames it to `base_name`: across filesystems (the data dir on
/// another disk than the user's repository) that rename fails. So it works
/// in an empty object directory beside `base_name` (on its filesystem),
/// reading the user's objects as alternates: nothing is written to the
/// user's repository, and the user's deltas are still reused.
fn write_pack(user: &Git, commit: &str, base_name: &Path) -> Result<(), GitError> {
    let objects = PathBuf::from(user.run(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "objects",
    ])?);
    let parent = base_name.parent().unwrap_or(Path::new("."));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let scratch = parent.join(format!(".pack-objects-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(scratch.join("pack")).map_err(|source| GitError::Io {
        dir: scratch.clone(),
        source,
    })?;
    let name = base_name.to_string_lossy();
    let out = user.output_with_env(
        &[
            "pack-objects",
            "-q",
            "--revs",
            "--delta-base-offset",
            "--",
            &name,
        ],
        &format!("{commit}\n"),
        &[
            ("GIT_OBJECT_DIRECTORY", scratch.as_os_str()),
            ("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects.as_os_str()),
        ],
    );
    let _ = std::fs::remove_dir_all(&scratch);
    let out = out?;
    if !out.status.success() {
        return Err(user.failed("pack-objects --revs", &out));
    }
    Ok(())
}

/// The files of the shared pack of `commit` under `bases` (made now if there
/// is none): the pack first, its index last. Unused packs go first.
fn shared_pack(user: &Git, bases: &Path, commit: &str) -> Result<Vec<PathBuf>, GitError> {
    let io = |dir: &Path| {
        let dir = dir.to_owned();
        move |source| GitError::Io { dir, source }
    };
    std::fs::create_dir_all(bases).map_err(io(bases))?;
    forget_unused_packs(bases, commit);
    let dir = bases.join(commit);
    if !dir.is_dir() {
        // Made aside, then renamed into place: a pack directory is complete.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tmp = bases.join(format!(".tmp-{commit}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        let made = write_pack(user, commit, &tmp.join("pack"));
        // Another run made it meanwhile: theirs is as good.
        if made.is_err() || std::fs::rename(&tmp, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        made?;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(io(&dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("pack-"))
        })
        .collect();
    let rank = |p: &PathBuf| match p.extension().and_then(|e| e.to_str()) {
        Some("pack") => 0,
        Some("idx") => 2,
        _ => 1,
    };
    files.sort_by_key(rank);
    if !files.iter().any(|f| rank(f) == 0) || !files.iter().any(|f| rank(f) == 2) {
        return Err(GitError::Io {
            dir,
            source: std::io::Error::other("an incomplete base pack"),
        });
    }
    Ok(files)
}

/// Hard-links `files` into `pack_dir` (copies them where linking is refused),
/// in order: git sees a pack once its index is there.
fn link_pack(files: &[PathBuf], pack_dir: &Path) -> Result<(), GitError> {
    for file in files {
        let Some(name) = file.file_name() else {
            continue;
        };
        let to = pack_dir.join(name);
        if to.exists() {
            continue;
        }
        if std::fs::hard_link(file, &to).is_err() {
            std::fs::copy(file, &to).map_err(|source| GitError::Io {
                dir: pack_dir.to_owned(),
                source,
            })?;
        }
    }
    Ok(())
}

/// Removes the base packs no run's repository links any more (and packs
/// abandoned while being made), once they have been idle for [`BASE_IDLE`]:
/// a pack just made is linked by its run right after. Best effort.
fn forget_unused_packs(bases: &Path, keep: &str) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(bases) else {
        return;
    };
    let now = std::time::SystemTime::now();
    let idle = |m: &std::fs::Metadata| {
        let changed =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(m.ctime().max(0) as u64);
        now.duration_since(changed).is_ok_and(|d| d >= BASE_IDLE)
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == keep || !path.is_dir() {
            continue;
        }
        let files: Vec<std::fs::Metadata> = std::fs::read_dir(&path)
            .map(|d| d.flatten().filter_map(|e| e.metadata().ok()).collect())
            .unwrap_or_default();
        let unused = files.iter().all(|m| m.nlink() <= 1 && idle(m));
        let abandoned = name.starts_with(".tmp-") && entry.metadata().is_ok_and(|m| idle(&m));
        if (unused && !name.starts_with(".tmp-")) || abandoned {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// A run's repository made before runs' repositories held their own objects
/// borrowed the user's whole object store through `objects/info/alternates`:
/// it is given copies of what its own refs, reflogs and index reach (`git
/// repack -a -d`, which copies borrowed objects too), then stops borrowing.
/// Nothing of the user's other objects stays in reach.
fn stop_borrowing(run: &Git, dir: &Path) -> Result<(), GitError> {
    let alternates = run.run(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "objects/info/alternates",
    ])?;
    let alternates = PathBuf::from(alternates);
    if !alternates.exists() {
        return Ok(());
    }
    run.run(&["repack", "-a", "-d", "-q"])?;
    std::fs::remove_file(&alternates).map_err(|source| GitError::Io {
        dir: dir.to_owned(),
        source,
    })
}

/// Removes a run's repository (`overseer runs clean`). A run from before
/// runs had repositories of their own is a linked worktree of the user's
/// repository: that one is removed with `git worktree remove`, and its
/// branch deleted, as before.
pub fn remove_run_repo(repo: &Path, dir: &Path, branch: &str) -> Result<(), GitError> {
    if is_linked_worktree(dir) {
        let user = Git::open(repo)?;
        user.run(&["worktree", "remove", "--force", &dir.to_string_lossy()])?;
        user.run(&["worktree", "prune"])?;
        // Only a linked worktree's branch lives in the user's repository;
        // it may already be merged and deleted by the user: not an error.
        let _ = user.run(&["branch", "-D", "--", branch]);
        return Ok(());
    }
    if !dir.exists() {
        // Already gone (removed by hand): forget a worktree registered for it.
        Git::open(repo)?.run(&["worktree", "prune"])?;
        return Ok(());
    }
    std::fs::remove_dir_all(dir).map_err(|source| GitError::Io {
        dir: dir.to_owned(),
        source,
    })
}

/// Commits everything in the worktree that the agent left uncommitted.
pub fn commit_all(worktree: &Path, message: &str) -> Result<bool, GitError> {
    let git = Git::open(worktree)?;
    git.run(&["add", "-A"])?;
    if git.test(&[
        "diff",
        "--cached",
        "--quiet",
        "--no-ext-diff",
        "--no-textconv",
    ])? {
        return Ok(false);
    }
    git.run(&["commit", "-q", "--no-verify", "-m", message])?;
    Ok(true)
}

/// A commit of the worktree as it is now, uncommitted changes and new
/// files included (what `.gitignore` ignores left out), on top of its
/// `HEAD`, made without touching the worktree, its index or any branch: the
/// files are added to a copy of the index (`GIT_INDEX_FILE`), and the commit
/// is written with `commit-tree` and named by no ref. What a consultation
/// starts from.
pub fn snapshot(worktree: &Path) -> Result<String, GitError> {
    let git = Git::open(worktree)?;
    let index =
        PathBuf::from(git.run(&["rev-parse", "--path-format=absolute", "--git-path", "index"])?);
    let scratch = tempfile::Builder::new()
        .prefix("overseer-snapshot-index")
        .tempfile()
        .map_err(|source| GitError::Io {
            dir: std::env::temp_dir(),
            source,
        })?;
    if index.exists() {
        // The index's file stats: only what changed is hashed again.
        std::fs::copy(&index, scratch.path()).map_err(|source| GitError::Io {
            dir: index.clone(),
            source,
        })?;
    }
    let env = [("GIT_INDEX_FILE", scratch.path().as_os_str())];
    let with_scratch = |args: &[&str]| -> Result<String, GitError> {
        let out = git.output_with_env(args, "", &env)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
        } else {
            Err(git.failed(&args.join(" "), &out))
        }
    };
    with_scratch(&["add", "-A"])?;
    let tree = with_scratch(&["write-tree"])?;
    let head = git.commit_of("HEAD")?;
    git.run(&[
        "commit-tree",
        &tree,
        "-p",
        &head,
        "-m",
        "Overseer: the worktree as it was when a consultation started",
    ])
}

/// The commit `branch` points at in the run's repository.
pub fn branch_head(worktree: &Path, branch: &str) -> Result<String, GitError> {
    Git::open(worktree)?.commit_of(&format!("refs/heads/{branch}"))
}

/// One changed file in a run's diff.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct FileChange {
    pub path: String,
    pub additions: u64,
    pub deletions: u64,
}

/// Files changed on `to` since it left `from` (three-dot: the run's work only).
pub fn diff_stat(repo: &Path, from: &str, to: &str) -> Result<Vec<FileChange>, GitError> {
    let range = format!("{from}...{to}");
    let out = Git::open(repo)?.run(&[
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--numstat",
        "-z",
        &range,
        "--",
    ])?;
    let mut changes = Vec::new();
    for entry in out.split('\0').filter(|e| !e.is_empty()) {
        let mut parts = entry.splitn(3, '\t');
        let (Some(a), Some(d), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        changes.push(FileChange {
            path: path.to_owned(),
            additions: a.parse().unwrap_or(0),
            deletions: d.parse().unwrap_or(0),
        });
    }
    Ok(changes)
}

/// The files changed on `to` since it left `from` (three-dot: the run's work
/// only), each with how: a rename is a deletion and an addition, a type
/// change (a file becoming a symlink) a change.
pub fn changed_paths(
    repo: &Path,
    from: &str,
    to: &str,
) -> Result<Vec<(String, overseer_core::autorun::PathChange)>, GitError> {
    use overseer_core::autorun::PathChange;
    let range = format!("{from}...{to}");
    let out = Git::open(repo)?.run(&[
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--name-status",
        "-z",
        &range,
        "--",
    ])?;
    let mut fields = out.split('\0');
    let mut changes = Vec::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        if path.is_empty() {
            continue;
        }
        let change = match status.chars().next() {
            Some('A') => PathChange::Added,
            Some('D') => PathChange::Deleted,
            _ => PathChange::Changed,
        };
        changes.push((path.to_owned(), change));
    }
    Ok(changes)
}

/// The content of the file `path` at commit `rev`, when it is there and at
/// most `max` bytes (None: not there, not a file, or larger).
pub fn file_at(repo: &Path, rev: &str, path: &str, max: u64) -> Result<Option<String>, GitError> {
    let git = Git::open(repo)?;
    let object = format!("{rev}:{path}");
    let out = git.output(&["cat-file", "-s", &object])?;
    if !out.status.success() {
        return Ok(None);
    }
    let size: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(u64::MAX);
    if size > max {
        return Ok(None);
    }
    let out = git.output(&["cat-file", "blob", &object])?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// The unified diff of the run's work (`from...to`).
pub fn diff(repo: &Path, from: &str, to: &str) -> Result<String, GitError> {
    Git::open(repo)?.run(&[
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        &format!("{from}...{to}"),
        "--",
    ])
}

/// Where a run's changes start when its base commit was not recorded (a run
/// from before runs had repositories of their own): the commit its branch
/// was created at (the oldest entry of the branch's reflog); `base` when the
/// reflog is gone.
pub fn branch_start(repo: &Path, base: &str, branch: &str) -> String {
    Git::open(repo)
        .and_then(|git| {
            git.run(&[
                "reflog",
                "show",
                "--format=%H",
                &format!("refs/heads/{branch}"),
                "--",
            ])
        })
        .ok()
        .and_then(|log| log.lines().last().map(str::to_owned))
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| base.to_owned())
}

/// The commits of `to` that `from` and every one of `except` lack, newest
/// first (the run's own commits). An `except` the repository does not have
/// (another run's commit: each run's repository holds only its own history)
/// cannot be in `to`'s history and is left out.
pub fn commits_between(
    repo: &Path,
    from: &str,
    to: &str,
    except: &[String],
) -> Result<Vec<String>, GitError> {
    let git = Git::open(repo)?;
    let mut args = vec![
        "rev-list".to_owned(),
        "--end-of-options".to_owned(),
        to.to_owned(),
    ];
    args.push(format!("^{from}"));
    args.extend(git.present(except)?.iter().map(|e| format!("^{e}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = git.run(&args)?;
    Ok(out.lines().map(str::to_owned).collect())
}

/// Those of `commits` that `repo` has and that are reachable from `rev`.
pub fn reachable_from(repo: &Path, commits: &[String], rev: &str) -> Result<Vec<String>, GitError> {
    let git = Git::open(repo)?;
    let present = git.present(commits)?;
    let mut found = Vec::new();
    for c in present {
        if git.test(&["merge-base", "--is-ancestor", &c, rev])? {
            found.push(c);
        }
    }
    Ok(found)
}

/// True when `commit` is in `repo` and reachable from `rev`.
pub fn contains(repo: &Path, rev: &str, commit: &str) -> Result<bool, GitError> {
    let git = Git::open(repo)?;
    if !git.has_commit(commit)? {
        return Ok(false);
    }
    git.test(&["merge-base", "--is-ancestor", commit, rev])
}

/// The commit on `base`'s first-parent line that merged `tip`, if any.
pub fn merge_of(repo: &Path, base: &str, tip: &str) -> Result<Option<String>, GitError> {
    let out = Git::open(repo)?.run(&[
        "rev-list",
        "--first-parent",
        "--parents",
        "--max-count=10000",
        "--end-of-options",
        base,
    ])?;
    Ok(out.lines().find_map(|line| {
        let mut shas = line.split(' ');
        let commit = shas.next()?;
        shas.any(|p| p == tip).then(|| commit.to_owned())
    }))
}

/// Fetches `commit` from the run's repository at `from` into `into` (a hidden
/// ref such as `refs/overseer/runs/3`, never a branch) of the user's `repo`.
pub fn fetch_commit(repo: &Path, from: &Path, commit: &str, into: &str) -> Result<(), GitError> {
    let refspec = format!("+{commit}:{into}");
    let from = from.to_string_lossy();
    Git::open(repo)?
        .run(&[
            "fetch",
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            // Never a command named by the configuration of a remote.
            "--upload-pack=git-upload-pack",
            "--end-of-options",
            &from,
            &refspec,
        ])
        .map(|_| ())
}

/// Deletes a ref (the hidden one a merge fetched into); absent is fine.
pub fn delete_ref(repo: &Path, name: &str) -> Result<(), GitError> {
    Git::open(repo)?
        .run(&["update-ref", "-d", name])
        .map(|_| ())
}

/// Where `branch` is checked out, if anywhere (main checkout or a worktree).
fn checkout_of(git: &Git, branch: &str) -> Result<Option<PathBuf>, GitError> {
    let list = git.run(&["worktree", "list", "--porcelain"])?;
    let mut current: Option<PathBuf> = None;
    for line in list.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            current = Some(PathBuf::from(p));
        } else if line.strip_prefix("branch refs/heads/") == Some(branch) {
            return Ok(current);
        }
    }
    Ok(None)
}

/// A merge commit of `tip` onto `old` (the base's commit), written but not
/// yet on any branch; or why it cannot be made, with nothing changed.
/// `label` names the run's work in a conflict message.
pub fn merge_commit(
    repo: &Path,
    base: &str,
    old: &str,
    tip: &str,
    label: &str,
    message: &str,
) -> Result<String, GitError> {
    let git = Git::open(repo)?;
    if let Some(dir) = checkout_of(&git, base)? {
        let status = Git::open(&dir)?.run(&["status", "--porcelain", "--untracked-files=no"])?;
        if !status.is_empty() {
            return Err(GitError::DirtyCheckout {
                base: base.to_owned(),
                checkout: dir,
            });
        }
    }
    let out = git.output(&["merge-tree", "--write-tree", "--name-only", old, tip])?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let tree = lines.next().unwrap_or_default().trim().to_owned();
    match out.status.code() {
        Some(0) => {}
        Some(1) => {
            let files: Vec<&str> = lines
                .take_while(|l| !l.is_empty())
                .filter(|l| !l.trim().is_empty())
                .collect();
            return Err(GitError::Conflict {
                branch: label.to_owned(),
                base: base.to_owned(),
                files: files.join(", "),
            });
        }
        _ => return Err(git.failed("merge-tree --write-tree", &out)),
    }
    git.run(&["commit-tree", &tree, "-p", old, "-p", tip, "-m", message])
}

/// Moves `base` from `old` to `commit`: a fast-forward of the checkout when
/// the base is checked out (and clean), else a compare-and-set of the ref.
pub fn advance_base(repo: &Path, base: &str, old: &str, commit: &str) -> Result<(), GitError> {
    let git = Git::open(repo)?;
    let moved = || GitError::BaseMoved {
        base: base.to_owned(),
    };
    match checkout_of(&git, base)? {
        // Checked out and clean: a fast-forward updates the files the user
        // sees; it refuses when the base is no longer `old`.
        Some(dir) => {
            let checkout = Git::open(&dir)?;
            if checkout.commit_of("HEAD")? != old {
                return Err(moved());
            }
            checkout
                .run(&["merge", "--ff-only", "-q", "--no-verify", commit])
                .map_err(|e| match e {
                    GitError::Failed { .. } => moved(),
                    other => other,
                })?;
        }
        // Not checked out: move the ref only if nobody moved it meanwhile.
        None => {
            git.run(&["update-ref", &format!("refs/heads/{base}"), commit, old])
                .map_err(|_| moved())?;
        }
    }
    Ok(())
}

/// Merges `tip` (a commit or a ref of `repo`) into `base` (a merge commit), or
/// explains why it cannot and changes nothing. Returns the new commit of
/// `base`. The engine merges runs with [`merge_commit`] and [`advance_base`]
/// so that it can record the commit in between; this is both in one.
pub fn merge(repo: &Path, tip: &str, base: &str, message: &str) -> Result<String, GitError> {
    let git = Git::open(repo)?;
    let old = git.commit_of(&format!("refs/heads/{base}"))?;
    let tip_commit = git.commit_of(tip)?;
    let commit = merge_commit(repo, base, &old, &tip_commit, tip, message)?;
    advance_base(repo, base, &old, &commit)?;
    Ok(commit)
}

#[cfg(test)]
mod tests {
    use super::ConfigStamp;
    use std::process::Command;

    fn niceness(child: &std::process::Child) -> i32 {
        let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
        rustix::process::getpriority_process(Some(pid)).expect("getpriority")
    }

    /// The fleet's git work yields the CPU; git the user waits on (a
    /// diff, a merge) keeps the engine's priority, and only inside
    /// `foreground`.
    #[test]
    fn only_background_git_is_niced() {
        let mine = rustix::process::getpriority_process(None).expect("getpriority");
        let spawn = || Command::new("sleep").arg("5").spawn().expect("sleep");
        let mut background = spawn();
        super::yield_cpu(&background);
        let mut user = spawn();
        super::foreground(|| super::yield_cpu(&user));
        let mut after = spawn();
        super::yield_cpu(&after);
        let seen = [niceness(&background), niceness(&user), niceness(&after)];
        for c in [&mut background, &mut user, &mut after] {
            let _ = c.kill();
            let _ = c.wait();
        }
        assert_eq!(seen, [super::GIT_NICENESS, mine, super::GIT_NICENESS]);
    }

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    }

    /// The drivers git listed are reused only while the configuration is
    /// as it was: a driver added later changes the stamp, and a config
    /// that includes another file is never stamped.
    #[test]
    fn a_config_stamp_changes_with_the_config_and_includes_are_not_stamped() {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q"]);
        let git_dir = dir.path().join(".git");
        let before = ConfigStamp::of(&git_dir).expect("a plain repository is stamped");
        assert!(
            before == ConfigStamp::of(&git_dir).expect("again"),
            "unchanged"
        );
        git(dir.path(), &["config", "filter.evil.clean", "evil"]);
        let after = ConfigStamp::of(&git_dir).expect("stamped");
        assert!(before != after, "a new driver changes the stamp");
        git(dir.path(), &["config", "include.path", "/tmp/elsewhere"]);
        assert!(
            ConfigStamp::of(&git_dir).is_none(),
            "a config with an include is asked of git every time"
        );
        assert!(ConfigStamp::of(&dir.path().join("missing")).is_none());
    }
}
