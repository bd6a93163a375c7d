fn main() {
    // Declaring the app's commands in the manifest makes each one a permission
    // that a capability file must grant: nothing is callable by default. The
    // list is the contract's window operations (crates/overseer-api), the
    // same table the commands are generated from.
    let manifest = tauri_build::AppManifest::new().commands(overseer_api::WINDOW_COMMANDS);
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        eprintln!("tauri build step failed: {e:#}");
        std::process::exit(1);
    }
}
