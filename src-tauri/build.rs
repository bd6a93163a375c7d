fn main() {
    // Declaring the app's commands in the manifest makes each one a permission
    // that a capability file must grant: nothing is callable by default. The
    // list is the contract's window operations (crates/overseer-api), the
    // same table the commands are generated from, and the app's own host
    // commands (declared beside it).
    let commands: &'static [&'static str] = Vec::leak(overseer_api::app_commands());
    let manifest = tauri_build::AppManifest::new().commands(commands);
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        eprintln!("tauri build step failed: {e:#}");
        std::process::exit(1);
    }
}
