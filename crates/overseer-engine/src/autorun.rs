//! Files of a run's diff that other tools run or load on their own (core's
//! one list, [`overseer_core::autorun`]), read from the run's repository:
//! a merge that adds, changes or deletes any of them is never made by
//! auto-advance or by a supervisor alone; the review names each one.

use crate::work::{diff_range, DiffRange};
use crate::Records;
use overseer_core::autorun::{self, AutoRunFile, ChangedFile, PathChange};
use overseer_core::{ApiError, RunId};
use overseer_git as git;
use std::path::Path;

/// A `package.json` larger than this is not read: it counts as one whose
/// scripts cannot be checked.
const MAX_MANIFEST: u64 = 1 << 20;

/// The files changed from `from` to `to` (three-dot) in `repo` that other
/// tools run or load on their own, with what would run them.
pub(crate) fn auto_run_between(
    repo: &Path,
    from: &str,
    to: &str,
) -> Result<Vec<AutoRunFile>, git::GitError> {
    let mut files = Vec::new();
    for (path, change) in git::changed_paths(repo, from, to)? {
        let mut file = ChangedFile::new(path, change);
        if autorun::needs_content(&file.path) {
            if change != PathChange::Added {
                file.before = git::file_at(repo, from, &file.path, MAX_MANIFEST)?;
            }
            if change != PathChange::Deleted {
                file.after = git::file_at(repo, to, &file.path, MAX_MANIFEST)?;
            }
        }
        files.push(file);
    }
    Ok(autorun::auto_run_files(&files))
}

/// The files, one clause each: "`path` (added): what runs it".
pub(crate) fn describe(files: &[AutoRunFile]) -> String {
    files
        .iter()
        .map(|f| {
            let change = match f.change {
                PathChange::Added => "added",
                PathChange::Changed => "changed",
                PathChange::Deleted => "deleted",
            };
            format!("`{}` ({change}): {}", f.path, f.runs)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Records {
    /// The files of the run's diff (from its base commit to the commit its
    /// review shows) that other tools run or load on their own. Empty for a
    /// run without a repository.
    /// [`Engine::auto_run_of_run`] for someone looking at it (the fleet's
    /// preview, the review): git at the engine's priority.
    pub fn run_auto_run(&self, run: RunId) -> Result<Vec<AutoRunFile>, ApiError> {
        git::foreground(|| self.auto_run_of_run(run))
    }

    pub(crate) fn auto_run_of_run(&self, run: RunId) -> Result<Vec<AutoRunFile>, ApiError> {
        let work = self.store().run_work(run)?;
        let Some(DiffRange { repo, from, to }) = diff_range(&work) else {
            return Ok(Vec::new());
        };
        Ok(auto_run_between(&repo, &from, &to)?)
    }

    /// Why the run's merge needs a human, or None when nothing in its diff
    /// is run by other tools on their own. A diff that cannot be checked
    /// needs a human too.
    pub(crate) fn merge_needs_a_human(&self, run: RunId) -> Option<String> {
        needs_a_human(&self.auto_run_of_run(run))
    }
}

/// Why a merge whose diff has these auto-run files (or could not be
/// checked) needs a human, or None when it has none: the sentence the
/// timeline and a refusal give.
pub(crate) fn needs_a_human(files: &Result<Vec<AutoRunFile>, ApiError>) -> Option<String> {
    let files = match files {
        Ok(files) if files.is_empty() => return None,
        Ok(files) => files,
        Err(e) => {
            return Some(format!(
                "its diff could not be checked for files other tools run on their own ({}), so a human reviews it",
                e.message
            ))
        }
    };
    Some(format!(
        "its diff adds, changes or deletes {} file{} that other tools run or load on their own, outside any sandbox, so a human reviews it: {}",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        describe(files)
    ))
}
