//! At a run's setup: the agent configuration files in its repository that
//! grant the agent permissions (`overseer_core::repo_grants` says which
//! files and reads them), shown as one `security` entry on the timeline
//! naming each file and what it grants. The agent reads them from the
//! project it works in, so they can switch its own asking off before
//! Overseer sees anything; the tool-call watch (`unasked`) is what still
//! catches what the agent then does.

use crate::Engine;
use overseer_core::activity::{Activity, SecurityEntry, SecurityEvent};
use overseer_core::repo_grants::{grants, PERMISSION_FILES};
use overseer_core::RunId;
use std::io::Read;
use std::path::Path;

/// The largest file read: larger ones are named, not read.
const MAX_BYTES: u64 = 1024 * 1024;

/// Reads the permission files of the run's working copy and records what
/// they grant (nothing when none grants anything).
pub(super) fn show(engine: &Engine, run: RunId, worktree: &Path) {
    let found: Vec<(String, Vec<String>)> = PERMISSION_FILES
        .iter()
        .filter_map(|rel| {
            let text = match read(&worktree.join(rel)) {
                Ok(Some(text)) => text,
                Ok(None) => return None,
                Err(why) => return Some(((*rel).to_owned(), vec![why])),
            };
            grants(rel, &text).map(|g| ((*rel).to_owned(), g))
        })
        .collect();
    if found.is_empty() {
        return;
    }
    let lines: Vec<String> = found
        .iter()
        .map(|(file, what)| format!("{file}: {}", what.join("; ")))
        .collect();
    let text = format!(
        "the repository carries agent configuration that grants permissions, which the \
         agent may read: {}. Overseer's rules still apply to what the agent asks, and a \
         change it makes without asking stops the run",
        lines.join(" | ")
    );
    if let Err(e) = engine.record_activity(
        run,
        Activity::Security(SecurityEntry {
            text,
            event: Some(SecurityEvent::AgentConfigGrants),
            files: Some(found.into_iter().map(|(f, _)| f).collect()),
            ..SecurityEntry::default()
        }),
    ) {
        tracing::warn!(run = %run, "cannot show the repository's agent configuration: {}", e.message);
    }
}

/// A regular file's text (never through a symlink, at most [`MAX_BYTES`]);
/// `Ok(None)` when there is none; `Err` says why it could not be read.
fn read(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e}): read it yourself")),
    };
    if meta.file_type().is_symlink() {
        return Err("is a symlink: Overseer does not follow it; read where it leads".to_owned());
    }
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "is {} bytes, too large to read here: read it yourself",
            meta.len()
        ));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BYTES).read_to_string(&mut text))
        .map_err(|e| format!("cannot be read ({e}): read it yourself"))?;
    Ok(Some(text))
}
