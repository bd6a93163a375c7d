//! Where Overseer keeps its files: the data dir (database, socket) and the
//! config dir (audit signing key, checkpoints). Flags win over the environment
//! (`OVERSEER_DATA_DIR`, `OVERSEER_CONFIG_DIR`), which wins over XDG defaults.

use overseer_store::DB_FILE;
use std::path::{Path, PathBuf};

pub const DATA_DIR_ENV: &str = "OVERSEER_DATA_DIR";
pub const CONFIG_DIR_ENV: &str = "OVERSEER_CONFIG_DIR";
pub const SOCKET_FILE: &str = "overseer.sock";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub data_dir: PathBuf,
    pub config_dir: PathBuf,
}

impl Paths {
    /// Resolves the dirs: explicit values first, then the environment, then XDG.
    pub fn resolve(
        data_dir: Option<PathBuf>,
        config_dir: Option<PathBuf>,
    ) -> Result<Paths, String> {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let project = directories::ProjectDirs::from("dev", "overseer", "overseer");
        let data_dir = data_dir
            .or_else(|| env(DATA_DIR_ENV))
            .or_else(|| project.as_ref().map(|p| p.data_dir().to_owned()))
            .ok_or("cannot find a home directory: pass --data-dir or set OVERSEER_DATA_DIR")?;
        let config_dir = config_dir
            .or_else(|| env(CONFIG_DIR_ENV))
            .or_else(|| project.as_ref().map(|p| p.config_dir().to_owned()))
            .ok_or("cannot find a home directory: pass --config-dir or set OVERSEER_CONFIG_DIR")?;
        Ok(Paths {
            data_dir: absolute(data_dir),
            config_dir: absolute(config_dir),
        })
    }

    pub fn db(&self) -> PathBuf {
        self.data_dir.join(DB_FILE)
    }

    pub fn socket(&self) -> PathBuf {
        self.data_dir.join(SOCKET_FILE)
    }

    /// Makes Overseer's files its owner's alone, at every start and whoever
    /// created them (`overseer hosts add` run before the first start, a
    /// restored backup, an older Overseer): both dirs are created 0700 or
    /// chmod'ed to 0700, and the database with its `-wal` and `-shm` files
    /// chmod'ed to 0600, and so is the audit signing key. The store and the keyring make the files they
    /// create owner-only too; this covers what was already there. Ok: what
    /// was open and is private now, one line each (for the log). Err: what
    /// could not be changed and what to do.
    pub fn make_private(&self) -> Result<Vec<String>, String> {
        let mut fixed = Vec::new();
        for dir in [&self.data_dir, &self.config_dir] {
            fixed.extend(private_mode(dir, 0o700, true)?);
        }
        let db = self.db();
        let key = overseer_store::Keyring::key_path(&self.config_dir);
        for file in [db.clone(), sibling(&db, "-wal"), sibling(&db, "-shm"), key] {
            fixed.extend(private_mode(&file, 0o600, false)?);
        }
        Ok(fixed)
    }
}

/// `path` with `suffix` added to its file name (`overseer.db-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Gives `path` exactly `mode` when it has any bit beyond it (group or
/// other access); a directory is created first when `dir` (missing parents
/// too, each new one 0700). A missing file is fine. Never follows a symlink
/// for the chmod of a file: a link is refused.
fn private_mode(path: &Path, mode: u32, dir: bool) -> Result<Option<String>, String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if dir {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| {
                format!(
                    "cannot create {}: {e}; create it yourself (`mkdir -m 700 {}`) or choose \
                     another with --data-dir/--config-dir",
                    path.display(),
                    path.display()
                )
            })?;
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !dir => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if meta.file_type().is_symlink() && !dir {
        return Err(format!(
            "{} is a symbolic link; Overseer keeps its files in place: move the file it \
             points to there, then start again",
            path.display()
        ));
    }
    // A dir given as a symlink (a data dir on another disk) is followed.
    let meta = if dir {
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    } else {
        meta
    };
    let have = meta.permissions().mode() & 0o7777;
    if have & !mode == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| {
        format!(
            "{} is open to other users (mode {have:o}) and cannot be made private: {e}; run \
             `chmod {mode:o} {}` as its owner",
            path.display(),
            path.display()
        )
    })?;
    Ok(Some(format!(
        "{} was open to other users (mode {have:o}); it is {mode:o} now",
        path.display()
    )))
}

fn absolute(p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        return p;
    }
    std::env::current_dir().map(|cwd| cwd.join(&p)).unwrap_or(p)
}

/// True when `path` exists.
pub fn exists(path: &Path) -> bool {
    path.try_exists().unwrap_or(false)
}

/// `s` as one file-name component: ASCII letters, digits, `-` and `_` kept,
/// everything else `_` (workspace and profile names in the data dir).
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
