//! Runs' own repositories and merges on real repositories in temp dirs, and
//! the engine's git hardened: a hook, an fsmonitor or a filter, merge or diff
//! driver written into the run's repository or the user's is never executed
//! by any git command the engine runs (each would leave a marker file).

use overseer_git::{self as git, GitError};
use overseer_test_support::git as sh;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    overseer_test_support::repo_with(
        d.path(),
        &[
            ("README.md", "hello\n"),
            ("notes.txt", "one\ntwo\nthree\nfour\nfive\n"),
        ],
    );
    d
}

/// A run's own repository with one committed change to `file`.
fn run_with_change(repo: &Path, data: &Path, branch: &str, file: &str, body: &str) -> PathBuf {
    let dir = data.join("worktrees").join(branch.replace('/', "-"));
    git::create_run_repo(repo, &dir, branch, "main").expect("run repository");
    fs::write(dir.join(file), body).expect("edit");
    assert!(git::commit_all(&dir, "agent work").expect("commit"));
    dir
}

/// Brings the run's reviewed commit into the user's repository as the engine
/// does, and merges it.
fn merge_run(repo: &Path, dir: &Path, branch: &str, message: &str) -> Result<String, GitError> {
    let tip = git::branch_head(dir, branch).expect("tip");
    git::fetch_commit(repo, dir, &tip, "refs/overseer/runs/1")?;
    let merged = git::merge(repo, "refs/overseer/runs/1", "main", message);
    git::delete_ref(repo, "refs/overseer/runs/1").expect("delete the hidden ref");
    merged
}

#[test]
fn a_folder_that_is_not_a_repository_is_refused_with_what_to_do() {
    let d = tempfile::tempdir().expect("tempdir");
    let err = git::repo_root(d.path()).expect_err("not a repo");
    assert!(matches!(err, GitError::NotARepo(_)));
    assert!(err.to_string().contains("git init"));
    let err = git::repo_root(&d.path().join("missing")).expect_err("missing");
    assert!(matches!(err, GitError::NotARepo(_)));
}

#[test]
fn each_run_works_in_a_repository_of_its_own_outside_the_users_checkout() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let base = sh(r.path(), &["rev-parse", "main"]);
    let dir = run_with_change(r.path(), data.path(), "overseer/run-1", "a.txt", "a\n");
    assert!(dir.starts_with(data.path()));
    assert!(
        dir.join(".git").is_dir(),
        "its own repository, not a worktree"
    );
    assert!(
        !r.path().join("a.txt").exists(),
        "the user's checkout is untouched"
    );
    // Nothing of the run in the user's repository: no worktree, no branch,
    // not its objects.
    assert_eq!(sh(r.path(), &["worktree", "list"]).lines().count(), 1);
    assert_eq!(sh(r.path(), &["branch", "--list", "overseer/*"]), "");
    let tip = git::branch_head(&dir, "overseer/run-1").expect("tip");
    assert!(!git::contains(r.path(), "main", &tip).expect("contains"));
    // Objects of its own (nothing borrowed); no remote back to the user's
    // repository; no hook templates.
    assert!(!dir.join(".git/objects/info/alternates").exists());
    assert_eq!(sh(&dir, &["remote"]), "");
    assert!(!dir.join(".git/hooks").exists());
    // The run's branch starts at the base commit; review reads the run's own
    // repository.
    assert_eq!(sh(&dir, &["rev-parse", "HEAD~1"]), base);
    let changes = git::diff_stat(&dir, &base, &tip).expect("stat");
    assert_eq!(
        changes,
        vec![git::FileChange {
            path: "a.txt".into(),
            additions: 1,
            deletions: 0
        }]
    );
    assert!(git::diff(&dir, &base, "refs/heads/overseer/run-1")
        .expect("diff")
        .contains("+a"));
    // Creating it again (a resumed run) is a no-op.
    git::create_run_repo(r.path(), &dir, "overseer/run-1", "main").expect("idempotent");
    assert_eq!(git::branch_head(&dir, "overseer/run-1").expect("tip"), tip);
    // A folder in the way is named, not overwritten.
    let other = data.path().join("worktrees/other");
    fs::create_dir_all(&other).expect("mkdir");
    fs::write(other.join("x"), "x").expect("write");
    let err = git::create_run_repo(r.path(), &other, "overseer/run-2", "main").expect_err("busy");
    assert!(matches!(err, GitError::NotRunRepo { .. }), "{err}");
}

#[test]
fn merging_into_a_clean_checked_out_base_updates_the_users_files() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(r.path(), data.path(), "overseer/run-1", "a.txt", "a\n");
    let commit = merge_run(r.path(), &dir, "overseer/run-1", "Merge run 1").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
    assert_eq!(
        fs::read_to_string(r.path().join("a.txt")).expect("merged file"),
        "a\n"
    );
    assert_eq!(sh(r.path(), &["status", "--porcelain"]), "");
    assert_eq!(
        sh(r.path(), &["for-each-ref", "refs/overseer"]),
        "",
        "the hidden ref is gone"
    );
    let tip = git::branch_head(&dir, "overseer/run-1").expect("tip");
    assert_eq!(
        git::merge_of(r.path(), "main", &tip).expect("merge_of"),
        Some(commit)
    );
}

#[test]
fn a_dirty_checkout_of_the_base_is_never_touched() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(r.path(), data.path(), "overseer/run-1", "a.txt", "a\n");
    fs::write(r.path().join("README.md"), "my uncommitted work\n").expect("dirty");
    let before = sh(r.path(), &["rev-parse", "main"]);
    let err = merge_run(r.path(), &dir, "overseer/run-1", "Merge").expect_err("dirty");
    assert!(matches!(err, GitError::DirtyCheckout { .. }), "{err}");
    assert!(err.to_string().contains("commit or stash"));
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), before);
    assert_eq!(
        fs::read_to_string(r.path().join("README.md")).expect("read"),
        "my uncommitted work\n"
    );
    assert!(!r.path().join("a.txt").exists());
}

#[test]
fn a_conflict_names_the_files_and_changes_nothing() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(
        r.path(),
        data.path(),
        "overseer/run-1",
        "README.md",
        "from the agent\n",
    );
    fs::write(r.path().join("README.md"), "from the user\n").expect("edit");
    sh(r.path(), &["commit", "-q", "-am", "user change"]);
    let before = sh(r.path(), &["rev-parse", "main"]);
    let err = merge_run(r.path(), &dir, "overseer/run-1", "Merge").expect_err("conflict");
    assert!(
        matches!(&err, GitError::Conflict { files, .. } if files.contains("README.md")),
        "{err}"
    );
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), before);
    assert_eq!(sh(r.path(), &["status", "--porcelain"]), "");
}

#[test]
fn merging_into_a_base_that_is_not_checked_out_moves_only_the_ref() {
    let r = repo();
    sh(r.path(), &["checkout", "-q", "-b", "feature"]);
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(r.path(), data.path(), "overseer/run-2", "b.txt", "b\n");
    let commit = merge_run(r.path(), &dir, "overseer/run-2", "Merge run 2").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
    assert_eq!(git::current_branch(r.path()).expect("branch"), "feature");
    assert!(
        !r.path().join("b.txt").exists(),
        "the checked-out branch is untouched"
    );
}

#[test]
fn a_base_moved_since_the_merge_commit_was_made_is_not_overwritten() {
    let r = repo();
    sh(r.path(), &["checkout", "-q", "-b", "feature"]);
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(r.path(), data.path(), "overseer/run-2", "b.txt", "b\n");
    let old = sh(r.path(), &["rev-parse", "main"]);
    let tip = git::branch_head(&dir, "overseer/run-2").expect("tip");
    git::fetch_commit(r.path(), &dir, &tip, "refs/overseer/runs/2").expect("fetch");
    let commit =
        git::merge_commit(r.path(), "main", &old, &tip, "run 2", "Merge run 2").expect("commit");
    // Someone commits to main in between.
    sh(r.path(), &["checkout", "-q", "main"]);
    sh(
        r.path(),
        &["commit", "-q", "--allow-empty", "-m", "meanwhile"],
    );
    let moved = sh(r.path(), &["rev-parse", "main"]);
    let err = git::advance_base(r.path(), "main", &old, &commit).expect_err("moved");
    assert!(matches!(err, GitError::BaseMoved { .. }), "{err}");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), moved);
}

#[test]
fn cleaning_a_run_removes_its_repository_and_leaves_the_users_alone() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(r.path(), data.path(), "overseer/run-3", "c.txt", "c\n");
    // The user made a branch of that name themselves: it is theirs.
    sh(r.path(), &["branch", "overseer/run-3"]);
    git::remove_run_repo(r.path(), &dir, "overseer/run-3").expect("clean");
    assert!(!dir.exists());
    assert_eq!(
        sh(r.path(), &["branch", "--list", "overseer/run-3"]),
        "overseer/run-3"
    );
    // Cleaning what is already gone is fine.
    git::remove_run_repo(r.path(), &dir, "overseer/run-3").expect("clean again");
}

#[test]
fn a_run_created_before_runs_had_repositories_still_works_and_cleans() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let wt = data.path().join("worktrees/old-run-4");
    fs::create_dir_all(wt.parent().expect("parent")).expect("mkdir");
    sh(
        r.path(),
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "overseer/run-4",
            &wt.to_string_lossy(),
            "main",
        ],
    );
    assert!(git::is_linked_worktree(&wt));
    // Resuming it keeps it as it is.
    git::create_run_repo(r.path(), &wt, "overseer/run-4", "main").expect("idempotent");
    fs::write(wt.join("d.txt"), "d\n").expect("edit");
    assert!(git::commit_all(&wt, "agent work").expect("commit"));
    let start = git::branch_start(&wt, "main", "overseer/run-4");
    assert_eq!(start, sh(r.path(), &["rev-parse", "main"]));
    let tip = git::branch_head(&wt, "overseer/run-4").expect("tip");
    assert_eq!(git::diff_stat(&wt, &start, &tip).expect("stat").len(), 1);
    let commit = merge_run(r.path(), &wt, "overseer/run-4", "Merge run 4").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
    git::remove_run_repo(r.path(), &wt, "overseer/run-4").expect("clean");
    assert!(!wt.exists());
    assert_eq!(sh(r.path(), &["worktree", "list"]).lines().count(), 1);
    assert_eq!(sh(r.path(), &["branch", "--list", "overseer/run-4"]), "");
}

// ---------------------------------------------------------------------------
// Attacks on the engine's own git: each writes a command that would leave a
// marker file; no engine git command may run it.

struct Marks(tempfile::TempDir);

impl Marks {
    fn new() -> Marks {
        Marks(tempfile::tempdir().expect("marks"))
    }

    /// A shell command that leaves the marker `name`.
    fn cmd(&self, name: &str) -> String {
        format!("touch {}", self.0.path().join(name).display())
    }

    /// An executable script that leaves the marker `name`.
    fn script(&self, path: &Path, name: &str) {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, format!("#!/bin/sh\n{}\ncat\n", self.cmd(name))).expect("script");
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    fn left(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.0.path())
            .expect("marks")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Writes hooks, an fsmonitor, a hooks path and filter, merge and diff
/// drivers (with the attributes that name them) into a repository's own
/// configuration, as something with write access to its `.git` would.
fn plant(repo: &Path, marks: &Marks, tag: &str) {
    let git_dir = PathBuf::from(sh(repo, &["rev-parse", "--absolute-git-dir"]));
    for hook in [
        "pre-commit",
        "commit-msg",
        "post-commit",
        "post-checkout",
        "post-merge",
        "pre-merge-commit",
        "reference-transaction",
        "pre-auto-gc",
    ] {
        marks.script(
            &git_dir.join("hooks").join(hook),
            &format!("{tag}-hook-{hook}"),
        );
    }
    let hooks = git_dir.join("elsewhere-hooks");
    marks.script(&hooks.join("post-commit"), &format!("{tag}-hooks-path"));
    let set = |k: &str, v: &str| {
        sh(repo, &["config", k, v]);
    };
    set("core.hooksPath", &hooks.to_string_lossy());
    set("core.fsmonitor", &marks.cmd(&format!("{tag}-fsmonitor")));
    set(
        "filter.evil.clean",
        &format!("sh -c '{}; cat'", marks.cmd(&format!("{tag}-filter-clean"))),
    );
    set(
        "filter.evil.smudge",
        &format!(
            "sh -c '{}; cat'",
            marks.cmd(&format!("{tag}-filter-smudge"))
        ),
    );
    set("filter.evil.required", "true");
    set(
        "filter.proc.process",
        &marks.cmd(&format!("{tag}-filter-process")),
    );
    set(
        "merge.evil.driver",
        &format!("{}; false", marks.cmd(&format!("{tag}-merge-driver"))),
    );
    set(
        "diff.evil.textconv",
        &format!("sh -c '{}; cat'", marks.cmd(&format!("{tag}-textconv"))),
    );
    set("diff.external", &marks.cmd(&format!("{tag}-external-diff")));
    set("gpg.program", &marks.cmd(&format!("{tag}-gpg")));
    set("commit.gpgSign", "true");
    // Programs upload-pack and pack-objects would start (a fetch from this
    // repository, or a copy of its objects).
    set(
        "uploadpack.packObjectsHook",
        &format!(
            "sh -c '{}; exec \"$@\"' -",
            marks.cmd(&format!("{tag}-pack-hook"))
        ),
    );
    set(
        "core.alternateRefsCommand",
        &marks.cmd(&format!("{tag}-alternate-refs")),
    );
    // (A merge driver named by the attributes has a test of its own: its
    // file conflicts instead.)
    fs::create_dir_all(git_dir.join("info")).expect("mkdir");
    fs::write(
        git_dir.join("info/attributes"),
        "*.txt filter=evil diff=evil\n*.md filter=proc\n",
    )
    .expect("attributes");
}

#[test]
fn nothing_planted_in_the_run_repository_runs_when_the_engine_commits_diffs_or_merges() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let marks = Marks::new();
    let dir = data.path().join("worktrees/run-5");
    git::create_run_repo(r.path(), &dir, "overseer/run-5", "main").expect("run repository");
    let base = sh(r.path(), &["rev-parse", "main"]);
    plant(&dir, &marks, "run");
    // The agent's work, also in the files the attributes name.
    fs::write(dir.join("notes.txt"), "one\nTWO\nthree\nfour\nfive\n").expect("edit");
    fs::write(dir.join("README.md"), "hello from the run\n").expect("edit");
    fs::write(dir.join("new.txt"), "new\n").expect("edit");
    assert!(git::commit_all(&dir, "agent work").expect("commit"));
    let tip = git::branch_head(&dir, "overseer/run-5").expect("tip");
    let stat = git::diff_stat(&dir, &base, &tip).expect("stat");
    assert_eq!(stat.len(), 3, "{stat:?}");
    let diff = git::diff(&dir, &base, &tip).expect("diff");
    assert!(diff.contains("+TWO"), "{diff}");
    // The user commits to another line of notes.txt: a real three-way merge
    // of a file whose attributes name the merge driver.
    fs::write(r.path().join("notes.txt"), "one\ntwo\nthree\nfour\nFIVE\n").expect("edit");
    sh(r.path(), &["commit", "-q", "-am", "user change"]);
    git::fetch_commit(r.path(), &dir, &tip, "refs/overseer/runs/5").expect("fetch");
    let merged = git::merge(r.path(), "refs/overseer/runs/5", "main", "Merge run 5");
    assert_eq!(
        marks.left(),
        Vec::<String>::new(),
        "commands from the run's repository ran"
    );
    // The stored content is the agent's, unfiltered, and what merged is it.
    assert_eq!(
        sh(&dir, &["cat-file", "-p", &format!("{tip}:new.txt")]),
        "new",
        "stored without the clean filter"
    );
    merged.expect("merge");
    assert_eq!(
        fs::read_to_string(r.path().join("notes.txt")).expect("read"),
        "one\nTWO\nthree\nfour\nFIVE\n"
    );
}

#[test]
fn nothing_planted_in_the_users_repository_runs_when_the_engine_fetches_and_merges() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let marks = Marks::new();
    let dir = run_with_change(
        r.path(),
        data.path(),
        "overseer/run-6",
        "notes.txt",
        "one\nTWO\nthree\nfour\nfive\n",
    );
    fs::write(dir.join("README.md"), "hello from the run\n").expect("edit");
    fs::write(dir.join("new.txt"), "new\n").expect("edit");
    assert!(git::commit_all(&dir, "more agent work").expect("commit"));
    let tip = git::branch_head(&dir, "overseer/run-6").expect("tip");
    plant(r.path(), &marks, "user");
    // A remote named as the run's path, and a URL rewrite to a transport
    // that runs a command: neither is used for the fetch.
    let path = dir.to_string_lossy().into_owned();
    sh(
        r.path(),
        &[
            "config",
            &format!("remote.{path}.uploadpack"),
            &format!("{}; git-upload-pack", marks.cmd("user-uploadpack")),
        ],
    );
    sh(
        r.path(),
        &[
            "config",
            &format!("url.ext::sh -c {}.insteadOf", marks.cmd("user-ext")),
            &path,
        ],
    );
    // A user's commit to notes.txt: the merge is three-way on that file.
    fs::write(r.path().join("notes.txt"), "one\ntwo\nthree\nfour\nFIVE\n").expect("edit");
    Command::new("git")
        .arg("-C")
        .arg(r.path())
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "filter.evil.clean=",
            "-c",
            "filter.evil.required=false",
            "-c",
            "filter.proc.process=",
            "-c",
            "commit.gpgSign=false",
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-am",
            "user change",
        ])
        .status()
        .expect("user commit");
    assert_eq!(marks.left(), Vec::<String>::new(), "the setup ran nothing");
    // Only local paths are transports: the rewrite to ext:: is refused.
    let err =
        git::fetch_commit(r.path(), &dir, &tip, "refs/overseer/runs/6").expect_err("ext:: refused");
    assert!(err.to_string().contains("not allowed"), "{err}");
    sh(
        r.path(),
        &[
            "config",
            "--remove-section",
            &format!("url.ext::sh -c {}", marks.cmd("user-ext")),
        ],
    );
    git::fetch_commit(r.path(), &dir, &tip, "refs/overseer/runs/6").expect("fetch");
    let merged = git::merge(r.path(), "refs/overseer/runs/6", "main", "Merge run 6");
    git::delete_ref(r.path(), "refs/overseer/runs/6").expect("delete");
    let _ = git::diff_stat(r.path(), "HEAD~1", "HEAD");
    let _ = git::current_branch(r.path());
    assert_eq!(
        marks.left(),
        Vec::<String>::new(),
        "commands from the user's repository ran"
    );
    merged.expect("merge");
    assert_eq!(
        fs::read_to_string(r.path().join("notes.txt")).expect("read"),
        "one\nTWO\nthree\nfour\nFIVE\n",
        "checked out unfiltered"
    );
    assert_eq!(
        fs::read_to_string(r.path().join("new.txt")).expect("read"),
        "new\n"
    );
}

#[test]
fn a_merge_driver_in_the_users_configuration_makes_a_conflict_not_a_command() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let marks = Marks::new();
    let dir = run_with_change(
        r.path(),
        data.path(),
        "overseer/run-7",
        "notes.txt",
        "one\nTWO\nthree\nfour\nfive\n",
    );
    let tip = git::branch_head(&dir, "overseer/run-7").expect("tip");
    fs::write(r.path().join("notes.txt"), "one\ntwo\nthree\nfour\nFIVE\n").expect("edit");
    sh(r.path(), &["commit", "-q", "-am", "user change"]);
    sh(
        r.path(),
        &[
            "config",
            "merge.evil.driver",
            &format!("{}; cp %B %A", marks.cmd("merge-driver")),
        ],
    );
    fs::write(r.path().join(".git/info/attributes"), "*.txt merge=evil\n").expect("attributes");
    let before = sh(r.path(), &["rev-parse", "main"]);
    git::fetch_commit(r.path(), &dir, &tip, "refs/overseer/runs/7").expect("fetch");
    let err = git::merge(r.path(), "refs/overseer/runs/7", "main", "Merge run 7")
        .expect_err("no driver runs: the file conflicts");
    assert!(matches!(err, GitError::Conflict { .. }), "{err}");
    assert_eq!(marks.left(), Vec::<String>::new());
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), before);
}

/// Leaves in the user's repository what a run must not read: a branch it was
/// not given, a stash and a staged file. Returns their objects' ids.
fn user_secrets(repo: &Path) -> Vec<String> {
    sh(repo, &["checkout", "-q", "-b", "secret-branch"]);
    fs::write(repo.join("plan.txt"), "secret plan\n").expect("write");
    sh(repo, &["add", "plan.txt"]);
    sh(repo, &["commit", "-q", "-m", "secret plan"]);
    let mut ids = vec![
        sh(repo, &["rev-parse", "HEAD"]),
        sh(repo, &["rev-parse", "HEAD:plan.txt"]),
    ];
    sh(repo, &["checkout", "-q", "main"]);
    fs::write(repo.join("notes.txt"), "stashed edit\n").expect("write");
    sh(repo, &["stash", "-q"]);
    ids.push(sh(repo, &["rev-parse", "refs/stash"]));
    ids.push(sh(repo, &["rev-parse", "refs/stash:notes.txt"]));
    fs::write(repo.join("token.env"), "staged secret\n").expect("write");
    sh(repo, &["add", "token.env"]);
    ids.push(sh(repo, &["rev-parse", ":token.env"]));
    ids
}

fn has_object(dir: &Path, id: &str) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["cat-file", "-e", id])
        .status()
        .expect("git")
        .success()
}

#[test]
fn a_run_holds_only_what_its_base_reaches_and_still_merges_back() {
    let r = repo();
    sh(r.path(), &["commit", "-q", "--allow-empty", "-m", "second"]);
    let secrets = user_secrets(r.path());
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(r.path(), data.path(), "overseer/run-8", "a.txt", "a\n");
    for id in &secrets {
        assert!(has_object(r.path(), id), "the user's repository has {id}");
        assert!(!has_object(&dir, id), "the run's repository has {id}");
    }
    assert!(!dir.join(".git/objects/info/alternates").exists());
    // All of the base's history, whole.
    assert_eq!(sh(&dir, &["rev-list", "--count", "HEAD~1"]), "2");
    sh(&dir, &["fsck", "--no-dangling"]);
    // Nothing in the run's repository names the user's.
    let named = Command::new("grep")
        .args(["-rqF", &r.path().display().to_string()])
        .arg(dir.join(".git"))
        .status()
        .expect("grep");
    assert!(
        !named.success(),
        "the run's .git names the user's repository"
    );
    // The merge brings the run's objects into the user's repository (once
    // the user's staged change is out of the way of the checked-out base).
    let dirty = merge_run(r.path(), &dir, "overseer/run-8", "Merge run 8").expect_err("staged");
    assert!(matches!(dirty, GitError::DirtyCheckout { .. }), "{dirty}");
    sh(r.path(), &["reset", "-q"]);
    let commit = merge_run(r.path(), &dir, "overseer/run-8", "Merge run 8").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
    assert_eq!(sh(r.path(), &["show", "main:a.txt"]), "a");
    assert_eq!(sh(r.path(), &["stash", "list"]).lines().count(), 1);
}

#[test]
fn another_runs_merged_commit_that_this_run_lacks_is_no_error_when_counting_its_work() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let base = sh(r.path(), &["rev-parse", "main"]);
    let a = run_with_change(r.path(), data.path(), "overseer/run-9", "a.txt", "a\n");
    let b = run_with_change(r.path(), data.path(), "overseer/run-10", "b.txt", "b\n");
    let tip_a = git::branch_head(&a, "overseer/run-9").expect("tip");
    merge_run(r.path(), &a, "overseer/run-9", "Merge run 9").expect("merge a");
    // Run 10 never had run 9's commit: its own work is still counted.
    let tip_b = git::branch_head(&b, "overseer/run-10").expect("tip");
    assert!(!has_object(&b, &tip_a));
    let work = git::commits_between(&b, &base, &tip_b, &[tip_a]).expect("commits");
    assert_eq!(work, vec![tip_b]);
}

#[test]
fn a_run_that_borrowed_the_users_objects_stops_borrowing_when_resumed() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    // A run's repository as it was made before: a clone borrowing objects.
    let dir = data.path().join("worktrees/old-run-11");
    sh(
        data.path(),
        &[
            "clone",
            "-q",
            "--shared",
            "--no-checkout",
            "--template=",
            &r.path().to_string_lossy(),
            &dir.to_string_lossy(),
        ],
    );
    sh(&dir, &["remote", "remove", "origin"]);
    sh(&dir, &["checkout", "-q", "-b", "overseer/run-11", "main"]);
    fs::write(dir.join("e.txt"), "e\n").expect("edit");
    assert!(git::commit_all(&dir, "agent work").expect("commit"));
    let secrets = user_secrets(r.path());
    assert!(has_object(&dir, &secrets[0]), "borrowed before");
    git::create_run_repo(r.path(), &dir, "overseer/run-11", "main").expect("resume");
    assert!(!dir.join(".git/objects/info/alternates").exists());
    for id in &secrets {
        assert!(!has_object(&dir, id), "the resumed run still reaches {id}");
    }
    sh(&dir, &["fsck", "--no-dangling"]);
    sh(r.path(), &["reset", "-q"]);
    let commit = merge_run(r.path(), &dir, "overseer/run-11", "Merge run 11").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
}

#[test]
fn nothing_planted_in_the_users_repository_runs_when_a_runs_repository_is_made() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let marks = Marks::new();
    plant(r.path(), &marks, "user");
    let dir = data.path().join("worktrees/run-12");
    git::create_run_repo(r.path(), &dir, "overseer/run-12", "main").expect("run repository");
    assert_eq!(
        marks.left(),
        Vec::<String>::new(),
        "commands from the user's repository ran"
    );
    assert_eq!(
        fs::read_to_string(dir.join("notes.txt")).expect("read"),
        "one\ntwo\nthree\nfour\nfive\n",
        "checked out unfiltered"
    );
}

#[test]
fn a_run_from_a_shallow_repository_has_the_history_the_user_has() {
    let origin = repo();
    sh(
        origin.path(),
        &["commit", "-q", "--allow-empty", "-m", "second"],
    );
    sh(
        origin.path(),
        &["commit", "-q", "--allow-empty", "-m", "third"],
    );
    let user = tempfile::tempdir().expect("user");
    let url = format!("file://{}", origin.path().display());
    sh(
        user.path(),
        &["clone", "-q", "--depth", "2", &url, "shallow"],
    );
    let shallow = user.path().join("shallow");
    let data = tempfile::tempdir().expect("data");
    let dir = run_with_change(&shallow, data.path(), "overseer/run-13", "a.txt", "a\n");
    assert_eq!(sh(&dir, &["rev-parse", "--is-shallow-repository"]), "true");
    assert_eq!(sh(&dir, &["rev-list", "--count", "HEAD"]), "3");
    sh(&dir, &["fsck", "--no-dangling"]);
    let commit = merge_run(&shallow, &dir, "overseer/run-13", "Merge run 13").expect("merge");
    assert_eq!(sh(&shallow, &["rev-parse", "main"]), commit);
}

#[test]
fn a_partial_clone_is_refused_without_running_its_remotes_upload_pack() {
    let origin = repo();
    sh(origin.path(), &["config", "uploadpack.allowFilter", "true"]);
    let user = tempfile::tempdir().expect("user");
    let url = format!("file://{}", origin.path().display());
    sh(
        user.path(),
        &[
            "clone",
            "-q",
            "--no-local",
            "--filter=blob:none",
            "--no-checkout",
            &url,
            "partial",
        ],
    );
    let partial = user.path().join("partial");
    let marks = Marks::new();
    sh(
        &partial,
        &[
            "config",
            "remote.origin.uploadpack",
            &format!("{}; git-upload-pack", marks.cmd("lazy-fetch")),
        ],
    );
    let data = tempfile::tempdir().expect("data");
    let dir = data.path().join("worktrees/run-14");
    let err = git::create_run_repo(&partial, &dir, "overseer/run-14", "main")
        .expect_err("objects are missing");
    assert!(err.to_string().contains("promisor"), "{err}");
    assert_eq!(
        marks.left(),
        Vec::<String>::new(),
        "a command from the user's configuration ran"
    );
}

/// The packs in a run repository's object directory, by inode.
fn pack_inodes(dir: &Path) -> Vec<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut inodes: Vec<u64> = fs::read_dir(dir.join(".git/objects/pack"))
        .expect("pack dir")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "pack"))
        .map(|e| e.metadata().expect("metadata").ino())
        .collect();
    inodes.sort_unstable();
    inodes
}

#[test]
fn runs_from_the_same_base_share_its_pack_and_others_get_their_own() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let a = run_with_change(r.path(), data.path(), "overseer/run-15", "a.txt", "a\n");
    let b = run_with_change(r.path(), data.path(), "overseer/run-16", "b.txt", "b\n");
    assert_eq!(pack_inodes(&a).len(), 1);
    assert_eq!(
        pack_inodes(&a),
        pack_inodes(&b),
        "one pack on disk for both"
    );
    // A run from another base gets that base's history only.
    sh(r.path(), &["commit", "-q", "--allow-empty", "-m", "later"]);
    let secrets = user_secrets(r.path());
    let c = run_with_change(r.path(), data.path(), "overseer/run-17", "c.txt", "c\n");
    assert_ne!(pack_inodes(&c), pack_inodes(&a));
    assert_eq!(sh(&c, &["rev-list", "--count", "HEAD~1"]), "2");
    for id in &secrets {
        assert!(!has_object(&c, id), "the run's repository has {id}");
    }
    // Each still merges back; cleaning one leaves the other whole.
    git::remove_run_repo(r.path(), &a, "overseer/run-15").expect("clean");
    sh(&b, &["fsck", "--no-dangling"]);
    sh(r.path(), &["reset", "-q"]);
    let commit = merge_run(r.path(), &b, "overseer/run-16", "Merge run 16").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
}

#[test]
fn a_snapshot_holds_uncommitted_work_and_touches_nothing_of_the_worktree() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let run = run_with_change(r.path(), data.path(), "overseer/run-1", "a.txt", "a\n");
    // Uncommitted work of every kind: staged, changed, new, ignored.
    fs::write(run.join(".gitignore"), "secret.env\n").expect("ignore");
    fs::write(run.join("README.md"), "staged\n").expect("edit");
    sh(&run, &["add", "README.md"]);
    fs::write(run.join("notes.txt"), "changed, not staged\n").expect("edit");
    fs::write(run.join("new.txt"), "new\n").expect("new");
    fs::write(run.join("secret.env"), "KEY=1\n").expect("ignored");
    let before = (
        sh(&run, &["status", "--porcelain"]),
        sh(&run, &["rev-parse", "HEAD"]),
        sh(&run, &["diff", "--cached", "--name-only"]),
        sh(&run, &["for-each-ref"]),
    );
    let snapshot = git::snapshot(&run).expect("snapshot");
    let after = (
        sh(&run, &["status", "--porcelain"]),
        sh(&run, &["rev-parse", "HEAD"]),
        sh(&run, &["diff", "--cached", "--name-only"]),
        sh(&run, &["for-each-ref"]),
    );
    assert_eq!(
        before, after,
        "the worktree, its index and its refs are untouched"
    );
    assert_eq!(
        sh(&run, &["rev-parse", &format!("{snapshot}^")]),
        before.1,
        "the snapshot sits on the worktree's HEAD"
    );
    // A repository made from it (as a consultation's) has the work as it was.
    let child = data.path().join("worktrees").join("overseer-run-2");
    git::create_run_repo(&run, &child, "overseer/run-2", &snapshot).expect("child");
    let read = |f: &str| fs::read_to_string(child.join(f)).ok();
    assert_eq!(read("README.md").as_deref(), Some("staged\n"));
    assert_eq!(read("notes.txt").as_deref(), Some("changed, not staged\n"));
    assert_eq!(read("new.txt").as_deref(), Some("new\n"));
    assert_eq!(read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(
        read("secret.env"),
        None,
        "what .gitignore ignores stays out"
    );
}
