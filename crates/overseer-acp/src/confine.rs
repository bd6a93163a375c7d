//! Confines the files an agent reads and writes through the client to the run's
//! worktree.
//!
//! The path an agent sends is resolved the way the operating system would
//! resolve it (the longest existing prefix is canonicalized, so `..` and
//! symlinks count), and the result must stay under the canonical worktree.
//! The part that does not exist yet may only name plain components. Writes
//! into `.git` are refused too: a hook or config written there would run on
//! the user's machine the next time anyone commits.
//!
//! The I/O is then done on the resolved path relative to the worktree,
//! beneath a descriptor of the worktree ([`RootDir`]: `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`), never on the agent's string:
//! an agent with a shell that swaps a directory for a symlink between the
//! check and the I/O makes the kernel refuse it, it does not lead the I/O out.
//!
//! The permission rules use the same resolution ([`resolve_for_rules`]) so a
//! rule matches where a path leads, not its text.

use overseer_core::rules::Resolved;
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
    let resolved = resolve(root, requested)?;
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

/// Where a path of a tool call leads, for the permission rules: resolved
/// like [`resolve_in_worktree`] does, relative to `root` (canonical) when it
/// stays inside, absolute when it leads out.
pub fn resolve_for_rules(root: &Path, requested: &str) -> Resolved {
    match resolve(root, Path::new(requested)) {
        Ok(resolved) => match resolved.strip_prefix(root) {
            Ok(rel) if rel.as_os_str().is_empty() => Resolved::Inside { path: ".".into() },
            Ok(rel) => Resolved::Inside {
                path: rel.to_string_lossy().into_owned(),
            },
            Err(_) => Resolved::Outside {
                path: resolved.to_string_lossy().into_owned(),
            },
        },
        Err(Refusal(why)) => Resolved::Unresolved { why },
    }
}

/// Resolves `requested` the way the operating system would: the longest
/// existing prefix canonicalized (so `..` and symlinks count), then the
/// plain components that do not exist yet. Absolute.
fn resolve(root: &Path, requested: &Path) -> Result<PathBuf, Refusal> {
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

    Ok(resolved)
}

/// The run's worktree held open: the files the engine reads and writes for
/// the agent are opened beneath this descriptor with `openat2` and
/// `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so a directory swapped for a
/// symlink between the check and the I/O cannot lead the I/O out of the
/// worktree: the kernel refuses the escape (`EXDEV`) at resolution time.
///
/// Missing parent directories are created one component at a time
/// (`mkdirat` in a directory opened beneath the root); a write goes to a
/// temporary file in the target's directory and is renamed over the target
/// within that one directory (`renameat` on single names: nothing to
/// resolve, nothing to swap), which also never writes through a hard link.
#[derive(Debug)]
pub(crate) struct RootDir {
    fd: rustix::fd::OwnedFd,
}

const BENEATH: rustix::fs::ResolveFlags =
    rustix::fs::ResolveFlags::BENEATH.union(rustix::fs::ResolveFlags::NO_MAGICLINKS);

impl RootDir {
    /// Opens `root` (canonical) as an `O_PATH` directory.
    pub(crate) fn open(root: &Path) -> std::io::Result<RootDir> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(RootDir { fd })
    }

    /// Opens `relative` beneath the root.
    fn beneath(
        &self,
        relative: &Path,
        flags: rustix::fs::OFlags,
    ) -> std::io::Result<rustix::fd::OwnedFd> {
        let path: &Path = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        Ok(rustix::fs::openat2(
            &self.fd,
            path,
            flags | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
            BENEATH,
        )?)
    }

    /// Reads the regular file at `relative` (to the root), at most `max`
    /// bytes; a bigger file is an error naming its size.
    pub(crate) fn read(&self, relative: &Path, max: u64) -> Result<Vec<u8>, BeneathError> {
        use rustix::fs::OFlags;
        use std::io::Read;
        // O_NONBLOCK: opening a FIFO must not hang the engine.
        let fd = self.beneath(relative, OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK)?;
        let stat = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(BeneathError::NotAFile);
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > max {
            return Err(BeneathError::TooBig(size));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(BeneathError::TooBig(bytes.len() as u64));
        }
        Ok(bytes)
    }

    /// Writes `content` to `relative` (to the root), creating missing parent
    /// directories. Never follows a link out of the root.
    pub(crate) fn write(&self, relative: &Path, content: &[u8]) -> Result<(), BeneathError> {
        use rustix::fs::{AtFlags, Mode, OFlags};
        use std::io::Write;
        let Some(Component::Normal(name)) = relative.components().next_back() else {
            return Err(BeneathError::NotAFile);
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        let dir = self.directory(parent)?;
        // Keep the permissions of a file being replaced (an executable
        // script stays executable); never set-id bits.
        let mode = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st)
                if rustix::fs::FileType::from_raw_mode(st.st_mode)
                    == rustix::fs::FileType::RegularFile =>
            {
                Some(Mode::from_raw_mode(st.st_mode & 0o777))
            }
            Ok(_) | Err(_) => None,
        };
        let tmp = temp_name(name);
        let fd = rustix::fs::openat2(
            &dir,
            tmp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o666),
            BENEATH,
        )?;
        let cleanup = |e: BeneathError| {
            let _ = rustix::fs::unlinkat(&dir, tmp.as_os_str(), AtFlags::empty());
            e
        };
        if let Some(mode) = mode {
            rustix::fs::fchmod(&fd, mode).map_err(|e| cleanup(e.into()))?;
        }
        let mut file = std::fs::File::from(fd);
        file.write_all(content).map_err(|e| cleanup(e.into()))?;
        drop(file);
        rustix::fs::renameat(&dir, tmp.as_os_str(), &dir, name).map_err(|e| cleanup(e.into()))?;
        Ok(())
    }

    /// The directory `relative` (to the root) opened beneath it, created
    /// one component at a time when missing.
    fn directory(&self, relative: &Path) -> Result<rustix::fd::OwnedFd, BeneathError> {
        use rustix::fs::{Mode, OFlags};
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY;
        let mut dir = self.beneath(Path::new(""), dir_flags)?;
        let mut prefix = PathBuf::new();
        for component in relative.components() {
            let Component::Normal(name) = component else {
                return Err(BeneathError::NotAFile);
            };
            prefix.push(name);
            dir = match self.beneath(&prefix, dir_flags) {
                Ok(fd) => fd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    self.beneath(&prefix, dir_flags)?
                }
                Err(e) => return Err(e.into()),
            };
        }
        Ok(dir)
    }
}

/// A name for the temporary file beside `name`: hidden, unlikely to clash
/// (and created with `O_EXCL`, so a clash is an error, never a reuse).
fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = std::ffi::OsString::from(".");
    // Long names stay under NAME_MAX.
    let short: String = name.to_string_lossy().chars().take(100).collect();
    tmp.push(short);
    tmp.push(format!(".overseer-{}-{n}.tmp", std::process::id()));
    tmp
}

/// Why reading or writing beneath the root failed.
#[derive(Debug)]
pub(crate) enum BeneathError {
    /// The path leads out of the worktree at the moment of the I/O (a
    /// symlink or a swapped directory): the kernel refused it.
    Escapes,
    /// Not a regular file (a directory, a FIFO, a device).
    NotAFile,
    TooBig(u64),
    Io(std::io::Error),
}

impl From<std::io::Error> for BeneathError {
    fn from(e: std::io::Error) -> Self {
        if e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) {
            BeneathError::Escapes
        } else {
            BeneathError::Io(e)
        }
    }
}

impl From<rustix::io::Errno> for BeneathError {
    fn from(e: rustix::io::Errno) -> Self {
        BeneathError::from(std::io::Error::from(e))
    }
}

impl fmt::Display for BeneathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeneathError::Escapes => f.write_str(
                "it leads outside the run's worktree (a symlink or a directory swapped for one); refused",
            ),
            BeneathError::NotAFile => f.write_str("it is not a regular file"),
            BeneathError::TooBig(n) => write!(f, "it is {n} bytes"),
            BeneathError::Io(e) => write!(f, "{e}"),
        }
    }
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
