//! Builds the UI (ui/dist, made by `npm run build` in ui/, which `make app`
//! and `make test` run first) into the binary: a table of every file with
//! its bytes. Without ui/dist the crate still builds, with a warning, and
//! serves a page that says how to build the UI.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dist = manifest.join("../../ui/dist");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("assets.rs");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut found = Vec::new();
    let built = dist.join("index.html").is_file() && files(&dist, &mut found).is_ok();
    if !built {
        found.clear();
        println!(
            "cargo:warning=ui/dist is missing: this build serves no UI to browsers \
             (run `npm run build` in ui/, or `make app`, then build again)"
        );
    }
    found.sort();
    let mut table = String::from("&[\n");
    for path in &found {
        let Ok(rel) = path.strip_prefix(&dist) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let abs = path.canonicalize().unwrap_or_else(|_| path.clone());
        let _ = writeln!(
            table,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.to_string_lossy()
        );
    }
    table.push(']');
    let code = format!(
        "/// Whether ui/dist was there when this was built.\npub const BUILT: bool = {built};\n\
         /// Every file of ui/dist: its path under it and its bytes.\n\
         pub static FILES: &[(&str, &[u8])] = {table};\n"
    );
    if let Err(e) = std::fs::write(&out, code) {
        panic!("cannot write {}: {e}", out.display());
    }
}
