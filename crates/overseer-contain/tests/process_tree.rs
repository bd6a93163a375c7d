//! Stopping an agent stops its whole tree: real processes, including ones that
//! ignore SIGTERM, call setsid, or double-fork.

use overseer_contain::process::{self, AgentSpec, ProcessError, MARKER_ENV};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next()),
            Some("Z" | "X")
        ),
        Err(_) => false,
    }
}

fn script(dir: &Path, body: &str) -> AgentSpec {
    let path = dir.join("agent.sh");
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).expect("script");
    AgentSpec {
        program: "bash".into(),
        args: vec![path.to_string_lossy().into_owned()],
        env: vec![("PROFILE_VAR".into(), "from-profile".into())],
        cwd: dir.to_owned(),
        // Unique per test: stopping one test's agent kills every process
        // carrying its marker, so a shared marker would kill the others'.
        marker: format!(
            "overseer-test-{}-{}",
            std::process::id(),
            dir.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        ),
        sandbox: None,
        cgroup: None,
    }
}

async fn wait_for_file(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if s.lines().count() >= 3 {
                return s;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never filled",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The pids the agent's script wrote to `path`, once it wrote three.
async fn read_pids(path: &Path) -> Vec<u32> {
    wait_for_file(path)
        .await
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn niceness(pid: u32) -> i32 {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("pid");
    rustix::process::getpriority_process(Some(pid)).expect("getpriority")
}

#[tokio::test]
async fn the_agent_and_what_it_starts_run_below_the_engine_priority() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("pids");
    let spec = script(
        dir.path(),
        &format!(
            "sleep 600 & echo $! >> {p}\nbash -c 'echo $$ >> {p}; exec sleep 600' &\necho $$ >> {p}\nwait",
            p = pids.display()
        ),
    );
    let (mut agent, _i, _o, _e) = process::spawn(&spec).await.expect("spawn");
    let recorded = read_pids(&pids).await;
    let seen: Vec<i32> = recorded.iter().map(|p| niceness(*p)).collect();
    let _ = agent.terminate(Duration::from_secs(5)).await;
    let engine = rustix::process::getpriority_process(None).expect("getpriority");
    let expected = (engine + process::AGENT_NICENESS_INCREMENT).min(19);
    assert!(recorded.contains(&agent.pid()), "{recorded:?}");
    assert_eq!(seen, vec![expected; 3], "pids {recorded:?}");
    assert!(expected > engine || engine == 19);
}

#[tokio::test]
async fn a_cooperative_agent_exits_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = script(
        dir.path(),
        "trap 'exit 0' TERM\nwhile true; do sleep 0.1; done",
    );
    let (mut agent, _i, _o, _e) = process::spawn(&spec).await.expect("spawn");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let report = agent
        .terminate(Duration::from_secs(10))
        .await
        .expect("terminate");
    assert!(report.exited_on_term, "{report:?}");
    assert!(report.survivors.is_empty());
}

#[tokio::test]
async fn a_stubborn_agent_with_setsid_and_double_forked_children_leaves_no_survivor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("pids");
    let spec = script(
        dir.path(),
        &format!(
            "trap '' TERM
sleep 600 & echo $! >> {p}
setsid bash -c 'trap \"\" TERM; echo $$ >> {p}; exec sleep 600' &
( bash -c 'trap \"\" TERM; echo $$ >> {p}; exec sleep 600' & ) &
while true; do sleep 0.1; done",
            p = pids.display()
        ),
    );
    let (mut agent, _i, _o, _e) = process::spawn(&spec).await.expect("spawn");
    let recorded = read_pids(&pids).await;
    assert_eq!(recorded.len(), 3);
    let root = agent.pid();
    let report = agent
        .terminate(Duration::from_millis(300))
        .await
        .expect("terminate");
    assert!(!report.exited_on_term, "the agent ignores SIGTERM");
    assert!(report.survivors.is_empty(), "{report:?}");
    for pid in recorded.iter().chain(std::iter::once(&root)) {
        assert!(!alive(*pid), "pid {pid} survived: {report:?}");
    }
}

#[tokio::test]
async fn the_agent_gets_only_its_profile_environment() {
    std::env::set_var("OVERSEER_TEST_SECRET", "leak");
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = script(dir.path(), "env");
    let (mut agent, _i, mut out, _e) = process::spawn(&spec).await.expect("spawn");
    let mut text = String::new();
    out.read_to_string(&mut text).await.expect("read");
    agent.wait().await.expect("wait");
    assert!(text.contains("PROFILE_VAR=from-profile"), "{text}");
    assert!(
        text.contains(&format!("{MARKER_ENV}={}", spec.marker)),
        "{text}"
    );
    assert!(!text.contains("OVERSEER_TEST_SECRET"), "{text}");
    assert!(text.contains("PATH="));
}

#[tokio::test]
async fn a_missing_command_or_folder_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut spec = script(dir.path(), "true");
    spec.program = "no-such-agent-binary".into();
    let err = process::spawn(&spec).await.expect_err("missing");
    assert!(matches!(err, ProcessError::NotFound(_)));
    assert!(err.to_string().contains("check the profile's command"));
    let mut spec = script(dir.path(), "true");
    spec.cwd = dir.path().join("gone");
    assert!(matches!(
        process::spawn(&spec).await.expect_err("no cwd"),
        ProcessError::NoCwd(_)
    ));
}

#[tokio::test]
async fn leftover_agents_of_this_database_are_killed_and_others_are_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prefix = format!("overseer-leftover-{}-", std::process::id());
    let pid_file = dir.path().join("pid");
    // A detached marked process, as a killed engine would leave behind.
    let status = std::process::Command::new("setsid")
        .args([
            "bash",
            "-c",
            &format!("echo $$ > {}; exec sleep 600", pid_file.display()),
        ])
        .env(MARKER_ENV, format!("{prefix}run-1"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut unmarked = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("spawn");
    drop(status);
    let start = Instant::now();
    let stray: u32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let killed = process::kill_marked(&prefix);
    assert!(killed.contains(&stray), "{killed:?}");
    let start = Instant::now();
    while alive(stray) && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(stray));
    assert!(alive(unmarked.id()), "an unmarked process was touched");
    let _ = unmarked.kill();
    let _ = unmarked.wait();
}
