//! What a live agent process gets from the engine, read from the real child
//! in /proc while its run waits at the plan gate: only its profile's
//! environment (plus the variables its profile passes by name), never the
//! engine's own secrets or where the engine keeps its data, and the run's
//! worktree as its working directory.

use crate::common;

use common::*;
use overseer_core::GateKind;
use overseer_store::WorkspaceSettings;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_agent_gets_its_profile_environment_and_nothing_else_of_the_engines() {
    std::env::set_var("OVERSEER_TEST_PASSED", "passed-by-name");
    std::env::set_var("OVERSEER_TEST_SECRET", "must-not-leak");
    let extra = format!(
        "[agents.named]\ncommand = {:?}\nmode = \"default\"\npass_env = [\"OVERSEER_TEST_PASSED\", \"OVERSEER_TEST_UNSET\"]\n",
        demo_agent().to_string_lossy()
    );
    let w = world_with(
        WorkspaceSettings::default(),
        Arc::new(overseer_engine::LogNotifier),
        &extra,
    )
    .await;
    let run = start_as(&w, "named", "happy", Default::default());
    pending_gate(&w, run, GateKind::Plan).await;

    let marker = format!("OVERSEER_AGENT_MARKER={}", w.engine.agent_marker(run));
    // The agent itself, not the bubblewrap processes above it (they carry
    // the same environment).
    let (pid, environ) = std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let exe = std::fs::read_link(e.path().join("exe")).ok()?;
            if exe.file_name().is_some_and(|n| n == "bwrap") {
                return None;
            }
            let env = std::fs::read(e.path().join("environ")).ok()?;
            let vars: Vec<String> = env
                .split(|b| *b == 0)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
            vars.contains(&marker).then_some((pid, vars))
        })
        .next()
        .expect("the run's agent is alive and carries its marker");
    assert!(
        environ.contains(&"OVERSEER_TEST_PASSED=passed-by-name".to_owned()),
        "{environ:?}"
    );
    for absent in [
        "OVERSEER_TEST_SECRET",
        "OVERSEER_TEST_UNSET",
        "OVERSEER_DATA_DIR",
        "OVERSEER_CONFIG_DIR",
    ] {
        assert!(
            !environ.iter().any(|v| v.starts_with(&format!("{absent}="))),
            "{absent} reached the agent: {environ:?}"
        );
    }
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).expect("cwd");
    assert_eq!(
        cwd,
        w.engine
            .worktree_path("demo", run)
            .canonicalize()
            .expect("worktree"),
        "the agent works in its run's worktree"
    );
    // Contained: its own pid namespace (bubblewrap), its run's cgroup.
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/pid")).expect("pid ns");
    assert_ne!(
        ns(&pid.to_string()),
        ns("self"),
        "the agent runs in a sandbox"
    );
    let root = w.engine.run_cgroup_root().expect("cgroups work here");
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).expect("cgroup");
    let name = root
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        cgroup.contains(&format!("/{name}/run-{run}\n")),
        "the agent is in its run's cgroup: {cgroup}"
    );
}
