//! A real agent adapter on a host over real OpenSSH: the pinned
//! claude-agent-acp (tests/real-agents) runs on the test host as the host's
//! own user, in its engine's sandbox, against the scripted model server,
//! which listens on the test's end of the host's link (the host reaches it
//! over the veth pair, as a model endpoint on the network). Its plan and its
//! edit are answered from here with `--host`, and the run merges there.

use crate::common;

use common::remote::{add_with_workspace, json, ok, pending_on, DIR};
use common::Home;
use overseer_test_support::model_server::{adapter, ModelServer};
use overseer_test_support::ssh_host::TestHost;
use std::time::{Duration, Instant};

#[test]
fn claude_agent_acp_on_a_host_asks_is_answered_from_here_and_merges_there() {
    let host = TestHost::start();
    let home = Home::new();
    let logs = tempfile::tempdir().expect("tempdir");
    let model = ModelServer::start(
        "engine-plan-edit.json",
        &logs.path().join("model.jsonl"),
        &host.client_addr,
    );
    let bin = adapter("claude-agent-acp");
    // The host's user runs the installed adapter (a program on the
    // machine, like /usr/bin's), with a HOME and TMPDIR of its own there.
    let agent_home = host.home.join("agent/home");
    let agent_tmp = host.home.join("agent/tmp");
    host.ssh_ok(&format!(
        "mkdir -p {} {} && mkdir -p -m 700 .config .config/overseer && \
         test -r {} && git init -q -b main repo && \
         printf '# Demo\\n\\nA demo project.\\n' > repo/README.md && \
         git -C repo add -A && git -C repo -c user.name=T -c user.email=t@t commit -q -m init",
        agent_home.display(),
        agent_tmp.display(),
        bin.display()
    ));
    let env = [
        ("HOME", agent_home.display().to_string()),
        ("TMPDIR", agent_tmp.display().to_string()),
        (
            "ANTHROPIC_BASE_URL",
            format!("http://{}:{}", host.client_addr, model.port),
        ),
        ("ANTHROPIC_API_KEY", "dummy".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false".to_owned()),
        ("CLAUDE_CODE_MAX_RETRIES", "1".to_owned()),
    ]
    .iter()
    .map(|(k, v)| format!("{k} = {v:?}"))
    .collect::<Vec<_>>()
    .join(", ");
    // network = "host": the host's own network, where the model server is
    // reached over the link (slirp4netns cannot run for a user other than
    // root where /dev/net/tun is root's only).
    let config = logs.path().join("overseer.toml");
    std::fs::write(
        &config,
        format!(
            "abort_timeout_seconds = 2\n\n[agents.claude]\ncommand = {:?}\nmode = \"default\"\n\
             network = \"host\"\nenv = {{ {env} }}\n",
            bin.display().to_string()
        ),
    )
    .expect("write overseer.toml");
    host.copy_to(&config, ".config/overseer/overseer.toml");

    add_with_workspace(&home, &host, "c");
    let run = ok(
        &home,
        &host,
        &[
            "--host",
            "c",
            "task",
            "start",
            "--workspace",
            "r",
            "--agent",
            "claude",
            "--prompt",
            "Describe the project better",
        ],
    )
    .trim()
    .to_owned();

    // The model's plan (ExitPlanMode) is the plan gate, answered from here.
    let plan = pending_on(&home, &host, "c", &run, "plan");
    let adapters: Vec<String> = host
        .command_lines()
        .into_iter()
        .filter(|c| c.contains("claude-agent-acp"))
        .collect();
    assert!(
        !adapters.is_empty(),
        "the adapter runs on the host as its user: {:?}",
        host.command_lines()
    );
    ok(
        &home,
        &host,
        &[
            "--host", "c", "gates", "decide", &plan, "--option", "approve",
        ],
    );

    // Step 1 reads the README, then its edit asks; nothing changed before
    // the yes given here.
    let edit = pending_on(&home, &host, "c", &run, "tool_call");
    let gate = json(&ok(
        &home,
        &host,
        &["--host", "c", "gates", "show", &edit, "--json"],
    ));
    assert_eq!(gate["payload"]["tool_call"]["kind"], "edit", "{gate}");
    let worktree = format!("{DIR}/worktrees/r-run-{run}/README.md");
    assert_eq!(
        host.ssh_ok(&format!("cat {worktree}")),
        "# Demo\n\nA demo project."
    );
    ok(
        &home,
        &host,
        &["--host", "c", "gates", "decide", &edit, "--option", "yes"],
    );

    // Done: its merge waits for review, approved from here, merged there.
    pending_on(&home, &host, "c", &run, "merge_review");
    assert!(host
        .ssh_ok(&format!("cat {worktree}"))
        .contains("described better by the plan"));
    ok(&home, &host, &["--host", "c", "runs", "approve", &run]);
    let started = Instant::now();
    loop {
        let log = host.ssh_ok("git -C repo log --oneline main");
        if log.contains(&format!("Merge run {run}")) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "run {run} never merged on the host: {log}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(host
        .ssh_ok("cat repo/README.md")
        .contains("described better by the plan"));
    // Every model request came over the link from the host's adapter.
    let requests = model.main_requests();
    assert!(requests.len() >= 3, "{requests:?}");
    assert!(
        requests.iter().any(|r| r.contains("Carry out step 1 of 2")),
        "{requests:?}"
    );
    let verified = ok(&home, &host, &["hosts", "verify", "c"]);
    assert!(verified.contains("audit log OK"), "{verified}");
}
