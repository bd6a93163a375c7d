//! Git, through the `git` command: worktrees for runs, diffs for review, and a
//! merge that never touches uncommitted work in the user's checkout.
//!
//! The merge is computed without a working tree (`git merge-tree
//! --write-tree`, git 2.38+), committed with `commit-tree`, and then moved onto
//! the base branch with a compare-and-set (`update-ref NEW OLD`) when the base
//! is not checked out, or a fast-forward (`merge --ff-only`) when it is checked
//! out and clean. A conflict or a dirty checkout changes nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    #[error("merging {branch} into {base} conflicts in: {files}. Nothing was changed; resolve it in the run's worktree or reject the run")]
    Conflict {
        branch: String,
        base: String,
        files: String,
    },
    #[error("{base} is checked out in {checkout} with uncommitted changes; commit or stash them, then approve again. Nothing was changed")]
    DirtyCheckout { base: String, checkout: PathBuf },
    #[error("{base} moved while merging; approve again to merge onto the new {base}")]
    BaseMoved { base: String },
}

fn git(dir: &Path, args: &[&str]) -> Result<Output, GitError> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(GitError::Missing)
}

/// Runs git and returns trimmed stdout, or the error with git's own words.
fn run(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = git(dir, args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    } else {
        Err(GitError::Failed {
            args: args.join(" "),
            dir: dir.to_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// The top of the repository that contains `path`.
pub fn repo_root(path: &Path) -> Result<PathBuf, GitError> {
    if !path.is_dir() {
        return Err(GitError::NotARepo(path.to_owned()));
    }
    let out = git(path, &["rev-parse", "--show-toplevel"])?;
    if !out.status.success() {
        return Err(GitError::NotARepo(path.to_owned()));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The branch checked out in `repo` (e.g. `main`).
pub fn current_branch(repo: &Path) -> Result<String, GitError> {
    run(repo, &["symbolic-ref", "--short", "HEAD"])
}

/// Creates `worktree` on a new `branch` starting at `base`. Idempotent for a
/// worktree that already exists on that branch (a resumed run).
pub fn add_worktree(
    repo: &Path,
    worktree: &Path,
    branch: &str,
    base: &str,
) -> Result<(), GitError> {
    if worktree.join(".git").exists() {
        let on = run(worktree, &["symbolic-ref", "--short", "HEAD"])?;
        if on == branch {
            return Ok(());
        }
    }
    if let Some(parent) = worktree.parent() {
        std::fs::create_dir_all(parent).map_err(GitError::Missing)?;
    }
    let wt = worktree.to_string_lossy();
    run(repo, &["worktree", "add", "-b", branch, &wt, base]).map(|_| ())
}

/// Removes a run's worktree and its branch (`overseer runs clean`).
pub fn remove_worktree(repo: &Path, worktree: &Path, branch: &str) -> Result<(), GitError> {
    if worktree.exists() {
        run(
            repo,
            &["worktree", "remove", "--force", &worktree.to_string_lossy()],
        )?;
    }
    run(repo, &["worktree", "prune"])?;
    // The branch may already be merged and deleted by the user: not an error.
    let _ = run(repo, &["branch", "-D", branch]);
    Ok(())
}

/// Commits everything in the worktree that the agent left uncommitted.
pub fn commit_all(worktree: &Path, message: &str) -> Result<bool, GitError> {
    run(worktree, &["add", "-A"])?;
    let staged = git(worktree, &["diff", "--cached", "--quiet"])?;
    if staged.status.success() {
        return Ok(false);
    }
    run(
        worktree,
        &[
            "-c",
            "user.name=Overseer",
            "-c",
            "user.email=overseer@localhost",
            "commit",
            "-q",
            "-m",
            message,
        ],
    )?;
    Ok(true)
}

/// One changed file in a run's diff.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct FileChange {
    pub path: String,
    pub additions: u64,
    pub deletions: u64,
}

/// Files changed on `branch` since it left `base` (three-dot: the run's work only).
pub fn diff_stat(repo: &Path, base: &str, branch: &str) -> Result<Vec<FileChange>, GitError> {
    let range = format!("{}...{branch}", start_of(repo, base, branch));
    let out = run(repo, &["diff", "--numstat", "-z", &range])?;
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

/// The unified diff of the run's work.
pub fn diff(repo: &Path, base: &str, branch: &str) -> Result<String, GitError> {
    run(
        repo,
        &[
            "diff",
            &format!("{}...{branch}", start_of(repo, base, branch)),
        ],
    )
}

/// Where a run's changes start: the commit its branch was created at (the
/// oldest entry of the branch's reflog), so that a merged run still shows
/// what it changed; `base` when the reflog is gone.
fn start_of(repo: &Path, base: &str, branch: &str) -> String {
    run(
        repo,
        &[
            "reflog",
            "show",
            "--format=%H",
            &format!("refs/heads/{branch}"),
            "--",
        ],
    )
    .ok()
    .and_then(|log| log.lines().last().map(str::to_owned))
    .filter(|c| !c.is_empty())
    .unwrap_or_else(|| base.to_owned())
}

/// Where `branch` is checked out, if anywhere (main checkout or a worktree).
fn checkout_of(repo: &Path, branch: &str) -> Result<Option<PathBuf>, GitError> {
    let list = run(repo, &["worktree", "list", "--porcelain"])?;
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

/// Merges `branch` into `base` (a merge commit), or explains why it cannot
/// and changes nothing. Returns the new commit of `base`.
pub fn merge(repo: &Path, branch: &str, base: &str, message: &str) -> Result<String, GitError> {
    let old = run(repo, &["rev-parse", &format!("refs/heads/{base}")])?;
    let tip = run(repo, &["rev-parse", &format!("refs/heads/{branch}")])?;
    let checkout = checkout_of(repo, base)?;
    if let Some(dir) = &checkout {
        let status = run(dir, &["status", "--porcelain", "--untracked-files=no"])?;
        if !status.is_empty() {
            return Err(GitError::DirtyCheckout {
                base: base.to_owned(),
                checkout: dir.clone(),
            });
        }
    }
    let out = git(
        repo,
        &["merge-tree", "--write-tree", "--name-only", &old, &tip],
    )?;
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
                branch: branch.to_owned(),
                base: base.to_owned(),
                files: files.join(", "),
            });
        }
        _ => {
            return Err(GitError::Failed {
                args: "merge-tree --write-tree".into(),
                dir: repo.to_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            })
        }
    }
    let commit = run(
        repo,
        &[
            "-c",
            "user.name=Overseer",
            "-c",
            "user.email=overseer@localhost",
            "commit-tree",
            &tree,
            "-p",
            &old,
            "-p",
            &tip,
            "-m",
            message,
        ],
    )?;
    match checkout {
        // Checked out and clean: a fast-forward updates the files the user sees.
        Some(dir) => run(&dir, &["merge", "--ff-only", "-q", &commit]).map_err(|e| match e {
            GitError::Failed { .. } => GitError::BaseMoved {
                base: base.to_owned(),
            },
            other => other,
        })?,
        // Not checked out: move the ref only if nobody moved it meanwhile.
        None => run(
            repo,
            &["update-ref", &format!("refs/heads/{base}"), &commit, &old],
        )
        .map_err(|_| GitError::BaseMoved {
            base: base.to_owned(),
        })?,
    };
    Ok(commit)
}
