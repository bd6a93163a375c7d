fn main() {
    // Declaring the app's commands in the manifest makes each one a permission
    // that a capability file must grant: nothing is callable by default.
    let manifest = tauri_build::AppManifest::new().commands(&[
        "list_runs",
        "list_runs_head",
        "approve_run",
        "reject_run",
        "abort_run",
        "list_gates",
        "show_gate",
        "decide_gate",
        "hold_gate",
        "gate_story",
        "run_story",
        "run_activity",
        "run_diff",
        "steer_run",
        "list_messages",
        "send_message",
        "show_task",
        "list_workspaces",
        "set_workspace_checks",
        "supervisor_status",
        "set_supervisor",
        "set_permissions",
        "set_notification_settings",
        "notification_settings",
        "agents",
        "check_settings",
    ]);
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        eprintln!("tauri build step failed: {e:#}");
        std::process::exit(1);
    }
}
