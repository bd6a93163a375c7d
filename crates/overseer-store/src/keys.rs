//! The audit signing key and the out-of-database checkpoint copies.
//!
//! The key is generated on first start and kept in the config dir with mode
//! 0600 (the dir itself 0700). It is never written to the database or to a
//! worktree: whoever can edit the database alone cannot forge records.

use crate::StoreError;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A signed statement that the audit log had `count` records ending in
/// `head_hash` (kept in the database and, its latest, beside the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub count: i64,
    pub head_hash: String,
    pub at: i64,
    pub signature: String,
}

const KEY_FILE: &str = "audit-signing.key";
const CHECKPOINT_DIR: &str = "checkpoints";

/// The signing key plus where checkpoints are kept; or, to verify another
/// machine's log ([`crate::snapshot`]), only a public key pinned earlier.
pub struct Keyring {
    /// `None` in a verifying-only keyring: it is never given to a store that
    /// writes, and what it would sign carries no signature (never verifies).
    key: Option<SigningKey>,
    public: VerifyingKey,
    dir: PathBuf,
}

impl Keyring {
    /// Loads the key from `config_dir`, creating both on first start.
    pub fn load_or_create(config_dir: &Path) -> Result<Keyring, StoreError> {
        ensure_private_dir(config_dir)?;
        let path = config_dir.join(KEY_FILE);
        let key = match fs::read_to_string(&path) {
            Ok(text) => parse_key(&path, &text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key(&path)?,
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        let meta = fs::metadata(&path).map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & !0o600 != 0 {
            // The owner's alone at every start, whoever created the file.
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(|e| {
                StoreError::Key {
                    path: path.clone(),
                    problem: format!(
                        "is readable by other users (mode {mode:o}) and cannot be made \
                         private ({e}); run `chmod 600 {}` as its owner",
                        path.display()
                    ),
                }
            })?;
        }
        Ok(Keyring {
            public: key.verifying_key(),
            key: Some(key),
            dir: config_dir.to_owned(),
        })
    }

    /// A keyring that only verifies, with the public key `public_hex`.
    pub(crate) fn verifying_only(public_hex: &str, dir: &Path) -> Result<Keyring, StoreError> {
        let bad = |problem: &str| StoreError::Key {
            path: dir.to_owned(),
            problem: format!("the public key {public_hex:?} {problem}"),
        };
        let bytes = hex::decode(public_hex.trim()).map_err(|_| bad("is not hex"))?;
        let arr: [u8; 32] = bytes
            .try_into()
            .map_err(|_| bad("does not hold 32 bytes"))?;
        let public = VerifyingKey::from_bytes(&arr).map_err(|_| bad("is not an ed25519 key"))?;
        Ok(Keyring {
            key: None,
            public,
            dir: dir.to_owned(),
        })
    }

    /// Where the key file lives in `config_dir`.
    pub fn key_path(config_dir: &Path) -> PathBuf {
        config_dir.join(KEY_FILE)
    }

    pub fn public_key_hex(&self) -> String {
        hex::encode(self.public.as_bytes())
    }

    pub(crate) fn sign(&self, msg: &[u8]) -> String {
        self.key
            .as_ref()
            .map(|k| hex::encode(k.sign(msg).to_bytes()))
            .unwrap_or_default()
    }

    /// The public half, to verify many records on several threads.
    pub(crate) fn verifying_key(&self) -> VerifyingKey {
        self.public
    }

    pub(crate) fn verify(&self, msg: &[u8], signature_hex: &str) -> bool {
        verify_with(&self.public, msg, signature_hex)
    }

    fn checkpoint_path(&self, db_id: &str) -> PathBuf {
        self.dir.join(CHECKPOINT_DIR).join(format!("{db_id}.json"))
    }

    /// Saves the latest checkpoint of database `db_id` beside the key.
    pub(crate) fn save_checkpoint(
        &self,
        db_id: &str,
        cp: &Checkpoint,
        _db: &Path,
    ) -> Result<(), StoreError> {
        let dir = self.dir.join(CHECKPOINT_DIR);
        ensure_private_dir(&dir)?;
        let path = self.checkpoint_path(db_id);
        let tmp = path.with_extension("json.tmp");
        let body = serde_json::to_vec(cp).map_err(|e| StoreError::Key {
            path: path.clone(),
            problem: e.to_string(),
        })?;
        let io = |source| StoreError::Io {
            path: tmp.clone(),
            source,
        };
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io)?;
        f.write_all(&body).map_err(io)?;
        f.sync_all().map_err(io)?;
        fs::rename(&tmp, &path).map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })
    }

    /// The latest checkpoint saved for `db_id`, if any.
    pub(crate) fn load_checkpoint(&self, db_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        let path = self.checkpoint_path(db_id);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| StoreError::Key {
                    path,
                    problem: format!("checkpoint file is unreadable ({e})"),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }
}

fn verify_with(key: &VerifyingKey, msg: &[u8], signature_hex: &str) -> bool {
    let Ok(bytes) = hex::decode(signature_hex) else {
        return false;
    };
    let Ok(sig) = Signature::from_slice(&bytes) else {
        return false;
    };
    key.verify(msg, &sig).is_ok()
}

/// Creates `dir` (and its missing parents) owner-only, and takes group and
/// other access away from one that already existed: the key lives here.
fn ensure_private_dir(dir: &Path) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: dir.to_owned(),
        source,
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io)?;
    let mode = fs::metadata(dir).map_err(io)?.permissions().mode();
    if mode & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

fn parse_key(path: &Path, text: &str) -> Result<SigningKey, StoreError> {
    let bad = |problem: &str| StoreError::Key {
        path: path.to_owned(),
        problem: format!(
            "{problem}; restore it from a backup (the audit log cannot be verified without it)"
        ),
    };
    let bytes = hex::decode(text.trim()).map_err(|_| bad("is not hex"))?;
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| bad("does not hold a 32-byte key"))?;
    Ok(SigningKey::from_bytes(&arr))
}

/// Creates the key atomically: written whole to a file of this process's
/// own, synced, then linked into place (a link never replaces an existing
/// file). Whoever links first wins; everyone else reads the winner's key,
/// which is complete by then. Nobody ever reads a half-written key.
fn create_key(path: &Path) -> Result<SigningKey, StoreError> {
    let key = SigningKey::generate(&mut rand_core::OsRng);
    let io = |source| StoreError::Io {
        path: path.to_owned(),
        source,
    };
    let mut nonce = [0u8; 8];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut nonce);
    let tmp = path.with_extension(format!(
        "key.new-{}-{}",
        std::process::id(),
        hex::encode(nonce)
    ));
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(hex::encode(key.to_bytes()).as_bytes())?;
        f.sync_all()?;
        fs::hard_link(&tmp, path)
    })();
    let _ = fs::remove_file(&tmp);
    match written {
        Ok(()) => {
            if let Some(dir) = path.parent() {
                // The new name must survive a crash too.
                let _ = fs::File::open(dir).and_then(|d| d.sync_all());
            }
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = fs::read_to_string(path).map_err(io)?;
            parse_key(path, &text)
        }
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_created_once_with_owner_only_permissions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = dir.path().join("config");
        let a = Keyring::load_or_create(&cfg).expect("create");
        let b = Keyring::load_or_create(&cfg).expect("load");
        assert_eq!(a.public_key_hex(), b.public_key_hex());
        let mode = fs::metadata(Keyring::key_path(&cfg))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dmode = fs::metadata(&cfg).expect("meta").permissions().mode();
        assert_eq!(dmode & 0o777, 0o700);
    }

    #[test]
    fn an_existing_open_config_dir_is_made_owner_only_before_the_key_goes_in() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = dir.path().join("config");
        fs::create_dir(&cfg).expect("mkdir");
        fs::set_permissions(&cfg, fs::Permissions::from_mode(0o755)).expect("chmod");
        Keyring::load_or_create(&cfg).expect("create");
        let dmode = fs::metadata(&cfg).expect("meta").permissions().mode();
        assert_eq!(dmode & 0o777, 0o700);
        let checkpoints = cfg.join(CHECKPOINT_DIR);
        let key = Keyring::load_or_create(&cfg).expect("load");
        key.save_checkpoint(
            "db",
            &Checkpoint {
                count: 0,
                head_hash: String::new(),
                at: 0,
                signature: String::new(),
            },
            &cfg,
        )
        .expect("checkpoint");
        let cmode = fs::metadata(checkpoints)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(cmode & 0o777, 0o700);
    }

    #[test]
    fn a_key_readable_by_others_is_made_owner_only_at_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Keyring::load_or_create(dir.path()).expect("create");
        let path = Keyring::key_path(dir.path());
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let b = Keyring::load_or_create(dir.path()).expect("loaded and fixed");
        assert_eq!(a.public_key_hex(), b.public_key_hex());
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_damaged_key_file_is_an_error_not_a_new_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        Keyring::load_or_create(dir.path()).expect("create");
        let path = Keyring::key_path(dir.path());
        fs::write(&path, "not a key").expect("write");
        let err = Keyring::load_or_create(dir.path()).err().expect("refused");
        assert!(
            err.to_string().contains("restore it from a backup"),
            "{err}"
        );
    }
}
