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
