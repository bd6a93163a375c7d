//! Confines the files an agent reads and writes through the client to the run's
//! worktree.
//!
//! The path an agent sends is resolved the way the operating system would
//! resolve it (the longest existing prefix is canonicalized, so `..` and
//! symlinks count), and the result must stay under the canonical worktree.
//! The part that does not exist yet may only name plain components. The I/O is
//! then done on the resolved path, never on the agent's string. Writes into
//! `.git` are refused too: a hook or config written there would run on the
//! user's machine the next time anyone commits.
//!
//! An agent that also has a shell can race this (swap a directory for a
//! symlink between the check and the write); confining what we serve is not a
//! sandbox, and the design says so.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused; the text goes to the agent and to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal(pub(crate) String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an agent wants to do with the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// A path inside the worktree: where to do the I/O, and how to name it to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Confined {
    pub(crate) absolute: PathBuf,
    pub(crate) relative: PathBuf,
}

/// Resolves `requested` (absolute, or relative to the worktree) and returns it
/// if it stays inside `root`, which must already be canonical.
pub(crate) fn resolve_in_worktree(
    root: &Path,
    requested: &Path,
    access: Access,
) -> Result<Confined, Refusal> {
    if requested.as_os_str().is_empty() {
        return Err(Refusal("the path is empty".into()));
    }
    let joined = if requested.is_absolute() {
        requested.to_path_buf()
    } else {
        root.join(requested)
    };
    let components: Vec<Component<'_>> = joined.components().collect();

    // The longest prefix that exists. symlink_metadata, not exists(): a
    // dangling symlink exists as a link and must not count as "new".
    let mut existing = components.len();
    while existing > 0 {
        let prefix: PathBuf = components[..existing].iter().collect();
        if std::fs::symlink_metadata(&prefix).is_ok() {
            break;
        }
        existing -= 1;
    }
    let prefix: PathBuf = components[..existing].iter().collect();
    let mut resolved = std::fs::canonicalize(&prefix).map_err(|e| {
        Refusal(format!(
            "{} cannot be resolved ({e}); a symlink that points nowhere is not followed",
            prefix.display()
        ))
    })?;
    for component in &components[existing..] {
        match component {
            Component::Normal(name) => resolved.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(Refusal(
                    "`..` after a directory that does not exist cannot be resolved".into(),
                ))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(Refusal("the path is not a plain file path".into()))
            }
        }
    }

    let Ok(relative) = resolved.strip_prefix(root) else {
        return Err(Refusal(format!(
            "{} is outside the run's worktree {}",
            resolved.display(),
            root.display()
        )));
    };
    let relative = relative.to_path_buf();
    if access == Access::Write
        && relative
            .components()
            .any(|c| c.as_os_str() == std::ffi::OsStr::new(".git"))
    {
        return Err(Refusal(
            "writing inside .git is refused: hooks and config there would run outside the worktree"
                .into(),
        ));
    }
    Ok(Confined {
        absolute: resolved,
        relative,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A canonical worktree inside a temp dir, with a sibling dir outside it.
    fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = fs::canonicalize(tmp.path()).expect("canonical");
        let root = base.join("worktree");
        let outside = base.join("outside");
        fs::create_dir_all(root.join("src")).expect("mkdir");
        fs::create_dir_all(&outside).expect("mkdir");
        fs::write(root.join("src/lib.rs"), "x").expect("write");
        (tmp, root, outside)
    }

    fn refused(root: &Path, path: &str, access: Access) -> String {
        resolve_in_worktree(root, Path::new(path), access)
            .expect_err(path)
            .0
    }

    #[test]
    fn relative_and_absolute_paths_inside_the_worktree_are_served() {
        let (_t, root, _) = layout();
        let c = resolve_in_worktree(&root, Path::new("src/lib.rs"), Access::Read).expect("ok");
        assert_eq!(c.absolute, root.join("src/lib.rs"));
        assert_eq!(c.relative, PathBuf::from("src/lib.rs"));
        let abs = root.join("src/lib.rs");
        let c = resolve_in_worktree(&root, &abs, Access::Write).expect("ok");
        assert_eq!(c.relative, PathBuf::from("src/lib.rs"));
    }

    #[test]
    fn new_files_in_new_directories_are_served() {
        let (_t, root, _) = layout();
        let c = resolve_in_worktree(&root, Path::new("config/./settings.toml"), Access::Write)
            .expect("ok");
        assert_eq!(c.absolute, root.join("config/settings.toml"));
    }

    #[test]
    fn dot_dot_inside_the_worktree_is_fine_but_escaping_through_it_is_refused() {
        let (_t, root, _) = layout();
        let c = resolve_in_worktree(&root, Path::new("src/../NOTES.md"), Access::Write)
            .expect("stays inside");
        assert_eq!(c.relative, PathBuf::from("NOTES.md"));
        assert!(refused(&root, "../outside/x.txt", Access::Write)
            .contains("outside the run's worktree"));
        assert!(refused(&root, "src/../../outside/x.txt", Access::Read).contains("outside"));
        assert!(refused(&root, "new/../../x.txt", Access::Write).contains("`..`"));
    }

    #[test]
    fn absolute_paths_elsewhere_are_refused() {
        let (_t, root, outside) = layout();
        let elsewhere = outside.join("x.txt");
        let err = resolve_in_worktree(&root, &elsewhere, Access::Write).expect_err("outside");
        assert!(err.0.contains("outside the run's worktree"));
        assert!(refused(&root, "/etc/passwd", Access::Read).contains("outside"));
    }

    #[test]
    fn a_symlink_pointing_out_of_the_worktree_is_refused() {
        let (_t, root, outside) = layout();
        std::os::unix::fs::symlink(&outside, root.join("link")).expect("symlink");
        std::os::unix::fs::symlink(outside.join("secret"), root.join("file-link"))
            .expect("symlink");
        fs::write(outside.join("secret"), "s").expect("write");
        assert!(refused(&root, "link/new.txt", Access::Write).contains("outside"));
        assert!(refused(&root, "file-link", Access::Read).contains("outside"));
    }

    #[test]
    fn a_dangling_symlink_is_not_followed() {
        let (_t, root, outside) = layout();
        std::os::unix::fs::symlink(outside.join("not-yet"), root.join("dangling"))
            .expect("symlink");
        assert!(refused(&root, "dangling", Access::Write).contains("points nowhere"));
        assert!(!outside.join("not-yet").exists());
    }

    #[test]
    fn a_symlink_that_stays_inside_is_followed() {
        let (_t, root, _) = layout();
        std::os::unix::fs::symlink(root.join("src"), root.join("alias")).expect("symlink");
        let c = resolve_in_worktree(&root, Path::new("alias/lib.rs"), Access::Read).expect("ok");
        assert_eq!(c.relative, PathBuf::from("src/lib.rs"));
    }

    #[test]
    fn writes_into_dot_git_are_refused_but_reads_are_not() {
        let (_t, root, _) = layout();
        fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        assert!(refused(&root, ".git/hooks/pre-commit", Access::Write).contains(".git"));
        assert!(resolve_in_worktree(&root, Path::new(".git/hooks"), Access::Read).is_ok());
    }

    #[test]
    fn an_empty_path_is_refused() {
        let (_t, root, _) = layout();
        assert!(refused(&root, "", Access::Read).contains("empty"));
    }
}
