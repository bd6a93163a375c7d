//! `overseer audit ...`: the signed audit log.

use clap::Subcommand;
use overseer_core::ApiError;
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Check every record's hash, chain position and signature, and the checkpoints
    Verify {
        #[arg(long)]
        json: bool,
    },
    /// A consistent copy of the database and its checkpoint in DIR, for
    /// `overseer hosts verify` on another machine to check with its pinned key
    #[command(hide = true)]
    Snapshot { dir: PathBuf },
}

pub fn verify(paths: &Paths, json: bool) -> anyhow::Result<ExitCode> {
    if !paths.db().exists() {
        anyhow::bail!(
            "no database at {}: nothing to verify (wrong --data-dir?)",
            paths.db().display()
        );
    }
    let engine = Engine::open(paths.clone(), Arc::new(SystemClock), Arc::new(LogNotifier))
        .map_err(ApiError::from)?;
    match engine.verify_audit()? {
        Ok(report) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"ok": true, "records": report.records, "checkpoints": report.checkpoints, "head_hash": report.head_hash})
                );
            } else {
                println!(
                    "audit log OK: {} records, {} checkpoints, head {}",
                    report.records,
                    report.checkpoints,
                    &report.head_hash[..16.min(report.head_hash.len())]
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            if json {
                let record = failure.record.as_ref();
                println!(
                    "{}",
                    serde_json::json!({
                        "ok": false,
                        "seq": record.map(|r| r.seq),
                        "problem": record.map(|r| &r.problem),
                        "decisions": failure.decisions,
                        "message": failure.to_string(),
                    })
                );
            }
            eprintln!("audit log FAILED verification: {failure}");
            Ok(ExitCode::FAILURE)
        }
    }
}
