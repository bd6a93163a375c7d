//! Worktrees and merges on real repositories in temp dirs.

use overseer_engine::git::{self, GitError};
use std::fs;
use std::path::Path;
use std::process::Command;

fn sh(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=T", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    sh(d.path(), &["init", "-q", "-b", "main"]);
    fs::write(d.path().join("README.md"), "hello\n").expect("write");
    sh(d.path(), &["add", "-A"]);
    sh(d.path(), &["commit", "-q", "-m", "init"]);
    d
}

/// A run's worktree with one committed change to `file`.
fn run_with_change(
    repo: &Path,
    data: &Path,
    branch: &str,
    file: &str,
    body: &str,
) -> std::path::PathBuf {
    let wt = data.join("worktrees").join(branch.replace('/', "-"));
    git::add_worktree(repo, &wt, branch, "main").expect("worktree");
    fs::write(wt.join(file), body).expect("edit");
    assert!(git::commit_all(&wt, "agent work").expect("commit"));
    wt
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
fn each_run_works_in_its_own_worktree_outside_the_users_checkout() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let wt = run_with_change(r.path(), data.path(), "overseer/run-1", "a.txt", "a\n");
    assert!(wt.starts_with(data.path()));
    assert!(
        !r.path().join("a.txt").exists(),
        "the user's checkout is untouched"
    );
    let changes = git::diff_stat(r.path(), "main", "overseer/run-1").expect("stat");
    assert_eq!(
        changes,
        vec![git::FileChange {
            path: "a.txt".into(),
            additions: 1,
            deletions: 0
        }]
    );
    assert!(git::diff(r.path(), "main", "overseer/run-1")
        .expect("diff")
        .contains("+a"));
    // Adding it again (a resumed run) is a no-op.
    git::add_worktree(r.path(), &wt, "overseer/run-1", "main").expect("idempotent");
}

#[test]
fn merging_into_a_clean_checked_out_base_updates_the_users_files() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    run_with_change(r.path(), data.path(), "overseer/run-1", "a.txt", "a\n");
    let commit = git::merge(r.path(), "overseer/run-1", "main", "Merge run 1").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
    assert_eq!(
        fs::read_to_string(r.path().join("a.txt")).expect("merged file"),
        "a\n"
    );
    assert_eq!(sh(r.path(), &["status", "--porcelain"]), "");
    // After the merge the run still shows what it changed.
    let changes = git::diff_stat(r.path(), "main", "overseer/run-1").expect("stat");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(git::diff(r.path(), "main", "overseer/run-1")
        .expect("diff")
        .contains("+a"));
}

#[test]
fn a_dirty_checkout_of_the_base_is_never_touched() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    run_with_change(r.path(), data.path(), "overseer/run-1", "a.txt", "a\n");
    fs::write(r.path().join("README.md"), "my uncommitted work\n").expect("dirty");
    let before = sh(r.path(), &["rev-parse", "main"]);
    let err = git::merge(r.path(), "overseer/run-1", "main", "Merge").expect_err("dirty");
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
    run_with_change(
        r.path(),
        data.path(),
        "overseer/run-1",
        "README.md",
        "from the agent\n",
    );
    fs::write(r.path().join("README.md"), "from the user\n").expect("edit");
    sh(r.path(), &["commit", "-q", "-am", "user change"]);
    let before = sh(r.path(), &["rev-parse", "main"]);
    let err = git::merge(r.path(), "overseer/run-1", "main", "Merge").expect_err("conflict");
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
    run_with_change(r.path(), data.path(), "overseer/run-2", "b.txt", "b\n");
    let commit = git::merge(r.path(), "overseer/run-2", "main", "Merge run 2").expect("merge");
    assert_eq!(sh(r.path(), &["rev-parse", "main"]), commit);
    assert_eq!(git::current_branch(r.path()).expect("branch"), "feature");
    assert!(
        !r.path().join("b.txt").exists(),
        "the checked-out branch is untouched"
    );
}

#[test]
fn cleaning_a_run_removes_its_worktree_and_branch() {
    let r = repo();
    let data = tempfile::tempdir().expect("data");
    let wt = run_with_change(r.path(), data.path(), "overseer/run-3", "c.txt", "c\n");
    git::remove_worktree(r.path(), &wt, "overseer/run-3").expect("clean");
    assert!(!wt.exists());
    assert_eq!(sh(r.path(), &["branch", "--list", "overseer/run-3"]), "");
}
