//! The `overseer` binary as a user runs it: real child processes, a real data
//! dir, and `overseer serve` as a real engine beside the CLI.

use crate::common;

use common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn without_an_engine_the_cli_acts_on_the_store_directly() {
    let h = Home::new();
    assert!(h.ok(&["demo", "seed"]).contains("seeded 15 demo runs"));
    let runs: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["runs", "list", "--json"])).expect("json");
    assert_eq!(runs.len(), 15);
    assert_eq!(runs.iter().filter(|r| r["needs_you"] == true).count(), 4);
    let table = h.ok(&["runs", "list"]);
    assert!(table.contains("NEEDS YOU"), "{table}");

    assert!(h
        .ok(&["runs", "approve", "1"])
        .contains("released (merged)"));
    assert_eq!(h.run_state(1), "released:merged");
    let err = h.fails(&["runs", "reject", "2", "--reason", "  "]);
    assert!(err.contains("needs a reason"), "{err}");
    assert_eq!(h.run_state(2), "pending_review");
    assert!(h
        .ok(&["runs", "reject", "2", "--reason", "wrong approach"])
        .contains("human_rejected"));
    assert!(h.ok(&["runs", "abort", "5"]).contains("aborted_by_user"));

    let err = h.fails(&["runs", "approve", "1"]);
    assert!(
        err.contains("cannot approve a run that is released:merged"),
        "{err}"
    );
    let err = h.fails(&["runs", "approve", "404"]);
    assert!(err.contains("run 404 does not exist"), "{err}");
    let err = h.fails(&["demo", "seed"]);
    assert!(err.contains("already has runs"), "{err}");

    let out = h.ok(&["audit", "verify"]);
    assert!(out.starts_with("audit log OK: "), "{out}");
}

/// `gates decide` takes the option as the user types it and sends it as
/// the gate's kind's typed choice; one the gate does not offer is refused
/// with the gate's options, and nothing is decided.
#[test]
fn gates_decide_takes_the_option_as_typed_and_refuses_one_the_gate_does_not_offer() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let gates: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["gates", "list", "--json"])).expect("json");
    let tool = gates
        .iter()
        .find(|g| g["kind"] == "tool_call")
        .expect("the demo's tool call gate");
    let id = tool["id"].to_string();
    for wrong in ["maybe", "approve"] {
        let err = h.fails(&["gates", "decide", &id, "--option", wrong]);
        assert!(
            err.contains(&format!(
                "gate {id}: option '{wrong}' is not offered by this gate (offered: yes, always, no)"
            )),
            "{err}"
        );
    }
    let pending: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["gates", "list", "--json"])).expect("json");
    assert!(
        pending.iter().any(|g| g["id"] == tool["id"]),
        "still pending"
    );
    let decided = h.ok(&["gates", "decide", &id, "--option", "yes"]);
    assert!(decided.contains("yes"), "{decided}");
    let pending: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["gates", "list", "--json"])).expect("json");
    assert!(!pending.iter().any(|g| g["id"] == tool["id"]), "decided");
}

#[test]
fn a_bulk_fleet_for_benchmarks_is_settled_and_audited() {
    let h = Home::new();
    assert!(h
        .ok(&["demo", "seed", "--runs", "40"])
        .contains("seeded 40 demo runs"));
    let runs: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["runs", "list", "--json"])).expect("json");
    assert_eq!(runs.len(), 40);
    // No fictional live agents: every run waits for review or is released.
    assert!(
        runs.iter().all(|r| matches!(
            r["state"]["state"].as_str(),
            Some("pending_review" | "released")
        )),
        "{runs:?}"
    );
    assert!(runs.iter().any(|r| r["state"]["state"] == "pending_review"));
    assert!(h.ok(&["audit", "verify"]).contains("audit log OK"));
    // Only into an empty data dir.
    let err = h.fails(&["demo", "seed", "--runs", "5"]);
    assert!(err.contains("already has runs"), "{err}");
}

#[test]
fn audit_verify_exits_non_zero_naming_the_first_bad_record() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let before = h.ok(&["audit", "verify", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&before).expect("json");
    assert_eq!(v["ok"], true);
    assert!(v["records"].as_i64().expect("count") > 50);

    let db = rusqlite::Connection::open(h.data().join("overseer.db")).expect("open");
    db.execute("UPDATE audit_log SET actor = 'user:app' WHERE seq = 17", [])
        .expect("tamper");
    let out = h.run(&["audit", "verify"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("seq 17"), "{err}");
    assert!(err.contains("edited"), "{err}");
}

#[test]
fn a_decision_written_straight_into_sqlite_fails_audit_verify_and_gates_why() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    assert!(h.ok(&["audit", "verify"]).contains("audit log OK"));
    let gates: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["gates", "list", "--json"])).expect("json");
    let gate = gates
        .iter()
        .find(|g| g["status"] == "pending")
        .expect("a pending gate")["id"]
        .as_i64()
        .expect("id");
    // The chain is untouched; only the gate's row says it was decided.
    let db = rusqlite::Connection::open(h.data().join("overseer.db")).expect("open");
    db.execute(
        "UPDATE gates SET status = 'decided', decided_option = 'approve',
                decided_by = 'user:cli', decided_at = 1 WHERE id = ?1",
        [gate],
    )
    .expect("forge");
    let out = h.run(&["audit", "verify"]);
    assert!(
        !out.status.success(),
        "a forged decision fails verification"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("gate {gate}'s decision")) && err.contains("no signed audit record"),
        "{err}"
    );
    let out = h.run(&["audit", "verify", "--json"]);
    assert!(!out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["ok"], false);
    assert_eq!(v["decisions"][0]["table"], "gates");
    assert_eq!(v["decisions"][0]["problem"], "no_record");
    let out = h.run(&["gates", "why", &gate.to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("[NOT VERIFIED]"), "{text}");
    assert!(text.contains("VERIFICATION FAILED"), "{text}");
}

#[test]
fn a_database_from_a_newer_version_is_refused_with_what_to_do() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let db = rusqlite::Connection::open(h.data().join("overseer.db")).expect("open");
    db.pragma_update(None, "user_version", 999).expect("bump");
    let err = h.fails(&["runs", "list"]);
    assert!(err.contains("written by a newer Overseer"), "{err}");
    assert!(err.contains("upgrade Overseer"), "{err}");
}

/// `Max open files` of a live process: (soft, hard), "unlimited" as None.
fn open_files_limit(pid: u32) -> (Option<u64>, Option<u64>) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let mut fields = line["Max open files".len()..].split_whitespace();
    let mut next = || fields.next().and_then(|f| f.parse().ok());
    (next(), next())
}

#[test]
fn overseer_serve_raises_its_open_files_soft_limit_to_the_hard_limit() {
    let h = Home::new();
    // Started as a desktop session starts it: a soft limit far below the
    // hard one (1,024 is the usual; 256 here, under any hard limit).
    let serve = Serve(
        Command::new("sh")
            .arg("-c")
            .arg("ulimit -Sn 256 && exec \"$0\" serve")
            .arg(&h.bin)
            .env("OVERSEER_DATA_DIR", h.data())
            .env("OVERSEER_CONFIG_DIR", h.dir.path().join("config"))
            .env_remove("OVERSEER_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    wait_for(&h.data().join("overseer.sock"));
    let (soft, hard) = open_files_limit(serve.0.id());
    assert_eq!(soft, hard, "the engine runs at its hard limit");
    assert!(soft.is_none_or(|s| s > 256), "raised from 256: {soft:?}");
}

#[test]
fn with_overseer_serve_running_the_cli_goes_through_it_and_shutdown_checkpoints() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let mut serve = Serve(
        h.cmd(&["serve"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    let socket = h.data().join("overseer.sock");
    wait_for(&socket);

    // A second engine on the same data dir is refused.
    let err = h.fails(&["serve"]);
    assert!(err.contains("already running"), "{err}");

    assert!(h.ok(&["runs", "approve", "3"]).contains("merged"));
    assert_eq!(h.run_state(3), "released:merged");

    // SIGTERM: a clean stop writes a checkpoint and removes the socket.
    let pid = serve.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = serve.0.wait().expect("wait");
    assert!(status.success(), "serve exited with {status}");
    assert!(!socket.exists(), "socket left behind");
    let v: serde_json::Value =
        serde_json::from_str(&h.ok(&["audit", "verify", "--json"])).expect("json");
    assert_eq!(v["ok"], true);
    assert!(v["checkpoints"].as_i64().expect("n") >= 2, "{v}");
}

#[test]
fn after_kill_9_the_next_engine_carries_runs_on_kills_the_old_agents_and_keeps_gates() {
    let h = demo_home();
    h.ok(&["demo", "seed"]);
    let serve = h.serve();
    // Approve its plan, then let it hang in its endless turn.
    let run = h.start_demo("stubborn");
    approve_plan(&h, run);
    let needle = format!("run-{run}\0");
    eventually("the agent and its grandchild", || {
        procs_with(h.dir.path(), &needle).len() >= 2
    });
    eventually("step 1 started", || {
        h.activity_kinds(run).iter().any(|k| k == "step_started")
    });
    let agent_tree = procs_with(h.dir.path(), &needle);

    // kill -9 the engine: its direct agent dies with it (PDEATHSIG).
    kill_9(serve);
    eventually("the direct agent to die with the engine", || {
        procs_with(h.dir.path(), &needle).len() < agent_tree.len()
    });

    // The next engine kills what the old agent left, and carries the run
    // on with a new agent: same run, at the step it was on.
    let serve2 = h.serve();
    eventually("the run carried on", || {
        h.activity_kinds(run).iter().any(|k| k == "carried_on")
    });
    eventually("none of the old agent's processes left", || {
        let now = procs_with(h.dir.path(), &needle);
        agent_tree.iter().all(|p| !now.contains(p))
    });
    eventually("the new agent and its grandchild", || {
        procs_with(h.dir.path(), &needle).len() >= 2
    });
    assert_eq!(h.run_state(run), "running");
    let gates = h.gates();
    assert_eq!(
        gates
            .iter()
            .filter(|g| g["kind"] == "merge_review" && g["status"] == "pending")
            .count(),
        3,
        "the pending reviews are still pending: {gates:?}"
    );
    assert_eq!(
        gates
            .iter()
            .filter(|g| g["run_id"] == run && g["kind"] == "plan")
            .count(),
        1,
        "the approved plan is not asked for again: {gates:?}"
    );
    // Step 1 began once before the kill and once after.
    eventually("step 1 started again", || {
        h.activity_kinds(run)
            .iter()
            .filter(|k| *k == "step_started")
            .count()
            == 2
    });

    // A clean stop (SIGTERM) stops every agent's whole tree, the setsid
    // grandchild too: nothing outlives the engine. The run did not fail:
    // the next start carries it on again.
    let pid = serve2.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill")
        .success());
    let mut serve2 = serve2;
    assert!(serve2.0.wait().expect("wait").success());
    assert_eq!(
        procs_with(h.dir.path(), &needle),
        Vec::<u32>::new(),
        "agent processes outlived a clean stop"
    );
    assert_eq!(h.run_state(run), "running");
    let _serve3 = h.serve();
    eventually("carried on a second time", || {
        h.activity_kinds(run)
            .iter()
            .filter(|k| *k == "carried_on")
            .count()
            == 2
    });
    h.ok(&["runs", "abort", &run.to_string()]);
    eventually("no agent process of the aborted run left", || {
        procs_with(h.dir.path(), &needle).is_empty()
    });
    let ok = h.ok(&["audit", "verify"]);
    assert!(ok.starts_with("audit log OK"), "{ok}");
}

#[test]
fn a_plan_a_question_and_a_tool_call_waiting_at_kill_9_are_kept_or_asked_again() {
    let h = demo_home();
    let serve = h.serve();
    // A plan waiting for approval survives: same gate, same run; approving
    // it after the restart carries the run to its review.
    let happy = h.start_demo("happy");
    let plan = h.pending(happy, "plan");
    // A question waiting for an answer survives too.
    let questions = h.start_demo("questions");
    let question = h.pending(questions, "question");
    kill_9(serve);
    let serve = h.serve();
    eventually("both runs carried on", || {
        [happy, questions]
            .iter()
            .all(|r| h.activity_kinds(*r).iter().any(|k| k == "carried_on"))
    });
    assert_eq!(h.pending(happy, "plan")["id"], plan["id"]);
    // The demo agent offers `session/load`: its session is continued, and
    // the history it replays is not recorded again.
    let timeline = h.ok(&["runs", "activity", &happy.to_string(), "--json"]);
    assert!(
        timeline.contains("resumed the agent's session"),
        "{timeline}"
    );
    assert!(!timeline.contains("replayed history"), "{timeline}");
    assert_eq!(h.pending(questions, "question")["id"], question["id"]);
    h.ok(&[
        "gates",
        "decide",
        &plan["id"].to_string(),
        "--option",
        "approve",
    ]);
    // Carried on with the approved plan: step 1's edit asks for permission.
    h.pending(happy, "tool_call");
    assert!(h.activity_kinds(happy).iter().any(|k| k == "step_started"));
    h.ok(&["runs", "abort", &happy.to_string()]);
    // The carried-on agent asked its question again: it is the same gate
    // (no second question), and the answer reaches it.
    h.ok(&[
        "gates",
        "decide",
        &question["id"].to_string(),
        "--option",
        "answer",
        "--context",
        r#"{"framework": "solid", "add_tests": false, "notes": "after the restart"}"#,
    ]);
    let again = h.pending(questions, "plan");
    assert_eq!(
        h.gates()
            .iter()
            .filter(|g| g["run_id"] == questions && g["kind"] == "question")
            .count(),
        1
    );
    assert!(
        again["title"]
            .as_str()
            .is_some_and(|t| t.contains("after the restart")),
        "the answer shaped the plan: {again}"
    );
    h.ok(&["runs", "abort", &questions.to_string()]);

    // A tool call waiting at kill -9 is never answered blindly: withdrawn,
    // and the carried-on agent asks again.
    let destructive = h.start_demo("destructive");
    approve_plan(&h, destructive);
    let call = h.pending(destructive, "tool_call");
    kill_9(serve);
    let _serve = h.serve();
    let mut asked_again = serde_json::Value::Null;
    eventually("the tool call asked again", || {
        asked_again = h.pending(destructive, "tool_call");
        asked_again["id"] != call["id"]
    });
    let old = h
        .gates()
        .into_iter()
        .find(|g| g["id"] == call["id"])
        .expect("old gate");
    assert_eq!(old["status"], "decided", "{old}");
    assert_eq!(old["decision"]["option"], "no", "{old}");
    assert_eq!(old["decision"]["actor"]["kind"], "engine", "{old}");
    h.ok(&["runs", "abort", &destructive.to_string()]);
    let ok = h.ok(&["audit", "verify"]);
    assert!(ok.starts_with("audit log OK"), "{ok}");
}

#[test]
fn supervisor_policy_rules_and_the_why_story_from_the_command_line() {
    let h = Home::new();
    let repo = empty_repo(&h);
    h.ok(&["workspace", "add", &repo.to_string_lossy(), "--name", "r"]);

    // Off by default: a fresh install behaves as without a supervisor.
    let status = h.ok(&["supervisor", "status", "--workspace", "r"]);
    assert!(status.contains("disabled (inherited)"), "{status}");

    let out = h.ok(&[
        "supervisor",
        "configure",
        "--workspace",
        "r",
        "--autonomy",
        "advisory",
        "--gate",
        "merge_review=autonomous",
        "--evaluator",
        "command",
        "--command",
        "/usr/local/bin/review",
        "--timeout-seconds",
        "20",
        "--enable",
    ]);
    assert!(out.contains("ENABLED"), "{out}");
    assert!(out.contains("on merge_review    autonomous"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&h.ok(&["supervisor", "status", "--workspace", "r", "--json"]))
            .expect("json");
    assert_eq!(
        json["effective"]["evaluator"]["command"],
        "/usr/local/bin/review"
    );
    assert_eq!(json["effective"]["timeout_seconds"], 20);
    assert!(h
        .ok(&["supervisor", "disable", "--workspace", "r"])
        .contains("disabled"));

    // Mistakes are refused with what to do, and change nothing.
    let err = h.fails(&[
        "supervisor",
        "configure",
        "--workspace",
        "r",
        "--gate",
        "deviation=autonomous",
    ]);
    assert!(err.contains("only a human decides them"), "{err}");
    let err = h.fails(&[
        "supervisor",
        "configure",
        "--workspace",
        "r",
        "--autonomy",
        "boss",
    ]);
    assert!(err.contains("use advisory, cosign or autonomous"), "{err}");
    // A key pasted where its variable's name belongs never reaches the
    // signed, append-only audit log.
    let audit_before = h.ok(&["audit", "verify"]);
    let secret = "sk-proj-Zx9fQ2mLk8PwR4tYu7IoP3aSd6";
    let err = h.fails(&[
        "supervisor",
        "configure",
        "--workspace",
        "r",
        "--evaluator",
        "openai",
        "--base-url",
        "http://127.0.0.1:11434/v1",
        "--model",
        "llama3.1",
        "--api-key-env",
        secret,
    ]);
    assert!(err.contains("looks like a key"), "{err}");
    assert!(!err.contains(secret), "{err}");
    assert_eq!(h.ok(&["audit", "verify"]), audit_before, "nothing recorded");
    let err = h.fails(&[
        "workspace",
        "rules",
        "--workspace",
        "r",
        "--allow",
        "Bash(npm test",
    ]);
    assert!(err.contains("missing its closing ')'"), "{err}");
    let rules = h.ok(&[
        "workspace",
        "rules",
        "--workspace",
        "r",
        "--allow",
        "Bash(npm test:*)",
        "--deny",
        "Edit(.env)",
    ]);
    assert!(rules.contains("allow: Bash(npm test:*)"), "{rules}");

    // Sensors and auto-advance, replaced as a whole; an empty check is refused.
    let err = h.fails(&["workspace", "checks", "--workspace", "r", "--sensor", "  "]);
    assert!(err.contains("sensor 1 is empty"), "{err}");
    let err = h.fails(&[
        "workspace",
        "checks",
        "--workspace",
        "r",
        "--auto-advance",
        "maybe",
    ]);
    assert!(err.contains("say on, off, or default"), "{err}");
    let set = h.ok(&[
        "workspace",
        "checks",
        "--workspace",
        "r",
        "--sensor",
        "npm test",
        "--sensor",
        "npm run lint",
        "--auto-advance",
        "on",
    ]);
    assert!(
        set.contains("sensors: npm test; npm run lint; auto-advance: on"),
        "{set}"
    );
    let list: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["workspace", "list", "--json"])).expect("json");
    let r = list.iter().find(|w| w["name"] == "r").expect("workspace r");
    assert_eq!(
        r["settings"]["sensors"],
        serde_json::json!(["npm test", "npm run lint"])
    );
    assert_eq!(r["settings"]["auto_advance"], true);
    // The rules set above are kept.
    assert_eq!(
        r["settings"]["permissions"]["allow"],
        serde_json::json!(["Bash(npm test:*)"])
    );

    // A decision's story, each record's signature checked; a tampered record
    // makes `gates why` fail loudly.
    h.ok(&["demo", "seed"]);
    let gates: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["gates", "list", "--json"])).expect("json");
    let gate = gates
        .iter()
        .find(|g| g["kind"] == "merge_review")
        .expect("a review gate")["id"]
        .to_string();
    let story = h.ok(&["gates", "why", &gate]);
    assert!(story.contains("gate_opened"), "{story}");
    assert!(story.contains("[signature ok, chain ok]"), "{story}");
    let run = gates
        .iter()
        .find(|g| g["kind"] == "merge_review")
        .expect("a review gate")["run_id"]
        .to_string();
    let run_story = h.ok(&["runs", "why", &run]);
    assert!(run_story.contains("run_transition"), "{run_story}");
    assert!(
        run_story.contains("gate_opened"),
        "the run's gates are in its story: {run_story}"
    );
    assert!(run_story.contains("records verified"), "{run_story}");
    let db = h.data().join("overseer.db");
    let conn = rusqlite::Connection::open(&db).expect("open db");
    conn.execute(
        "UPDATE audit_log SET payload = replace(payload, 'gate_opened', 'gate_opened ') \
         WHERE json_extract(payload, '$.gate_id') = ?1",
        [gate.parse::<i64>().expect("id")],
    )
    .expect("tamper");
    let out = h.run(&["gates", "why", &gate]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("VERIFICATION FAILED"), "{text}");
    let out = h.run(&["runs", "why", &run]);
    assert!(
        !out.status.success(),
        "the run's story fails with its gate's"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("VERIFICATION FAILED"));
}

#[test]
fn a_tasks_settings_read_back_as_set() {
    let h = Home::new();
    let repo = empty_repo(&h);
    h.ok(&["workspace", "add", &repo.to_string_lossy(), "--name", "r"]);
    let run: i64 = h
        .ok(&[
            "task",
            "start",
            "--workspace",
            "r",
            "--agent",
            "demo",
            "--prompt",
            "Fix it",
            "--stage",
            "docs",
            "--retries",
            "3",
        ])
        .trim()
        .parse()
        .expect("run id");
    let task = serde_json::from_str::<serde_json::Value>(&h.ok(&[
        "runs",
        "show",
        &run.to_string(),
        "--json",
    ]))
    .expect("json")["task_id"]
        .to_string();
    h.ok(&[
        "workspace",
        "rules",
        "--workspace",
        "r",
        "--task",
        &task,
        "--deny",
        "Bash(make deploy)",
    ]);
    let shown: serde_json::Value =
        serde_json::from_str(&h.ok(&["task", "show", &task, "--json"])).expect("json");
    assert_eq!(shown["stage"], "docs");
    assert_eq!(
        shown["settings"]["permissions"]["deny"],
        serde_json::json!(["Bash(make deploy)"])
    );
    assert_eq!(shown["settings"]["retry"]["max_attempts"], 3);
    let text = h.ok(&["task", "show", &task]);
    assert!(
        text.contains("deny        Bash(make deploy)") && text.contains("up to 3 unattended"),
        "{text}"
    );
    h.ok(&["runs", "abort", &run.to_string()]);
}

#[test]
fn agents_list_says_which_profiles_are_ready_and_what_their_mode_allows() {
    let home = Home::new();
    let config = home.dir.path().join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("overseer.toml"),
        "[agents.mine]\ncommand = \"/bin/true\"\nmode = \"read-only\"\nplan = \"skip\"\n",
    )
    .expect("config");
    let listed: serde_json::Value =
        serde_json::from_str(&home.ok(&["agents", "list", "--json"])).expect("json");
    let by_name = |n: &str| {
        listed
            .as_array()
            .expect("array")
            .iter()
            .find(|a| a["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} listed: {listed}"))
    };
    let mine = by_name("mine");
    assert_eq!(mine["found"], "/bin/true");
    assert_eq!(mine["needs"], serde_json::json!([]));
    assert_eq!(mine["plan"], "skip");
    assert_eq!(mine["from_file"], true);
    let claude = by_name("claude");
    assert_eq!(claude["mode"], "default");
    assert_eq!(claude["mode_effect"], "asks before edits and commands");
    let text = home.ok(&["agents", "list"]);
    assert!(text.contains("mode `read-only`: reads only"), "{text}");
    // Whether this machine contains runs comes first, as the engine measured
    // it (these machines do), and in the JSON per profile.
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("contained: bubblewrap, cgroup v2 at ")
            || first.starts_with("NOT CONTAINED: "),
        "{text}"
    );
    assert_eq!(
        mine["containment"]["sandbox"]["state"] == "available",
        first.starts_with("contained"),
        "{mine}"
    );
    assert_eq!(mine["contained"], first.starts_with("contained"));

    // A mode that acts unasked is refused for a task, with what to do.
    std::fs::write(
        config.join("overseer.toml"),
        "[agents.bad]\ncommand = \"/bin/true\"\nmode = \"bypassPermissions\"\n",
    )
    .expect("config");
    let err = home.fails(&["agents", "list"]);
    assert!(err.contains("allow_unsupervised"), "{err}");
    let err = home.fails(&[
        "task",
        "start",
        "--workspace",
        "w",
        "--agent",
        "demo",
        "--prompt",
        "p",
        "--plan",
        "later",
    ]);
    assert!(err.contains("auto, mode, prompt or skip"), "{err}");
}

#[test]
fn where_the_machine_cannot_contain_a_run_is_not_started_unless_its_profile_allows_it() {
    let h = Home::new();
    let cfg = h.dir.path().join("config");
    std::fs::create_dir_all(&cfg).expect("cfg");
    let demo = demo_agent();
    std::fs::write(
        cfg.join("overseer.toml"),
        format!(
            "[agents.demo]\ncommand = {demo:?}\nmode = \"default\"\n\n\
             [agents.loose]\ncommand = {demo:?}\nmode = \"default\"\nallow_uncontained = true\n",
        ),
    )
    .expect("config");
    let repo = empty_repo(&h);
    h.ok(&["workspace", "add", &repo.to_string_lossy(), "--name", "r"]);
    // An engine whose bubblewrap cannot run (as on a machine without it).
    let _serve = Serve(
        h.cmd(&["serve"])
            .env("OVERSEER_BWRAP", "/nonexistent/bwrap")
            .env("OVERSEER_DEMO_STEP_MS", "0")
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    wait_for(&h.data().join("overseer.sock"));
    let list = h.ok(&["agents", "list"]);
    assert!(
        list.starts_with(
            "NOT CONTAINED: OVERSEER_BWRAP=/nonexistent/bwrap is not an executable file"
        ),
        "{list}"
    );
    assert!(
        list.contains("runs NOT CONTAINED (allow_uncontained = true)"),
        "{list}"
    );
    assert!(list.contains("needs a sandbox: "), "{list}");

    let start = |agent: &str| -> i64 {
        h.ok(&[
            "task",
            "start",
            "--workspace",
            "r",
            "--agent",
            agent,
            "--prompt",
            "p",
        ])
        .trim()
        .parse()
        .expect("run id")
    };
    // Not allowed uncontained: never launched; the run says why and the fix.
    let refused = start("demo");
    eventually("the run to fail", || {
        h.run_state(refused) == "released:failed"
    });
    let shown: serde_json::Value =
        serde_json::from_str(&h.ok(&["runs", "show", &refused.to_string(), "--json"]))
            .expect("json");
    let note = shown["release_note"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(note.contains("cannot contain the agent"), "{shown}");
    assert!(
        note.contains("allow_uncontained = true in [agents.demo]"),
        "{shown}"
    );
    let activity = h.ok(&["runs", "activity", &refused.to_string(), "--json"]);
    assert!(
        !activity.contains("\"session\""),
        "no agent was started: {activity}"
    );

    // Allowed: it runs, uncontained, and says so on its timeline.
    let loose = start("loose");
    eventually("the uncontained run's plan gate", || {
        h.ok(&["gates", "list", "--json"])
            .contains(&format!("\"run_id\": {loose}"))
            || h.ok(&["gates", "list", "--json"])
                .contains(&format!("\"run_id\":{loose}"))
    });
    let activity = h.ok(&["runs", "activity", &loose.to_string(), "--json"]);
    assert!(activity.contains("runs UNCONTAINED"), "{activity}");
}

/// `overseer hook claude` fed one event, as Claude Code runs it. Through
/// `timeout` (a process of its own), which so stands for the agent: the
/// commands this test runs next are not its children, so they may decide.
fn hook_event(h: &Home, event: serde_json::Value) -> String {
    use std::io::Write;
    let mut child = Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_overseer"))
        .args(["hook", "claude"])
        .env("OVERSEER_DATA_DIR", h.data())
        .env("OVERSEER_CONFIG_DIR", h.dir.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hook");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(event.to_string().as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("hook output");
    assert!(
        out.status.success(),
        "the hook exits 0: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

#[test]
fn questions_messages_and_sessions_from_the_command_line() {
    let h = Home::new();
    let cwd = h.dir.path().join("terminal-project");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let _serve = Serve(
        h.cmd(&["serve"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    wait_for(&h.data().join("overseer.sock"));
    let base = |event: &str| {
        serde_json::json!({
            "session_id": "cli-session-1", "transcript_path": "/dev/null", "cwd": cwd,
            "permission_mode": "default", "hook_event_name": event,
        })
    };
    let mut notice = base("Notification");
    notice["message"] = "Claude is waiting for your input".into();
    notice["notification_type"] = "idle_prompt".into();
    hook_event(&h, notice);

    let sessions: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["sessions", "list", "--external", "--json"])).expect("json");
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["origin"], "claude_code");
    assert_eq!(sessions[0]["session"]["session_id"], "cli-session-1");
    let run = sessions[0]["id"].as_i64().expect("run id");
    assert!(h.ok(&["sessions", "list"]).contains("cli-session-1"));

    let questions: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["questions", "list", "--json"])).expect("json");
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert_eq!(questions[0]["ask_kind"], "info");
    let gate = questions[0]["id"].as_i64().expect("gate").to_string();
    assert!(h
        .ok(&["questions", "list"])
        .contains("Claude is waiting for your input"));
    let err = h.fails(&["questions", "answer", &gate]);
    assert!(err.contains("--text"), "says how to answer: {err}");
    h.ok(&["questions", "answer", &gate, "--text", "run the tests next"]);

    // The reply steers the session: its next stop is told to go on.
    let mut stop = base("Stop");
    stop["stop_hook_active"] = false.into();
    stop["last_assistant_message"] = "Done.".into();
    let out = {
        let start = Instant::now();
        loop {
            let out = hook_event(&h, stop.clone());
            if out.contains("block") || start.elapsed() > Duration::from_secs(10) {
                break out;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let v: serde_json::Value = serde_json::from_str(&out).expect("stop output");
    assert_eq!(v["decision"], "block", "{out}");
    assert_eq!(v["reason"], "run the tests next");

    // Messages: the user to the session's run, listed with the reply's id.
    let sent = h.ok(&[
        "messages",
        "send",
        "--run",
        &run.to_string(),
        "use the staging database",
    ]);
    assert!(sent.contains(&format!("sent to run {run}")), "{sent}");
    let list: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["messages", "list", "--run", &run.to_string(), "--json"]))
            .expect("json");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["body"], "use the staging database");
    let id = list[0]["id"].as_i64().expect("id").to_string();
    h.ok(&[
        "messages",
        "send",
        "--broadcast",
        "--reply-to",
        &id,
        "everyone: staging only",
    ]);
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["messages", "list", "--json"])).expect("json");
    assert_eq!(all[1]["correlation_id"], format!("message-{id}"));
    assert!(h.ok(&["messages", "list"]).contains("every run"));
    let err = h.fails(&["messages", "send", "--run", "999", "x"]);
    assert!(err.contains("999"), "{err}");

    // A broadcast scoped to the run's task, or to its workspace: the run
    // reads both; a scope that names nothing is refused.
    let task = sessions[0]["task_id"].as_i64().expect("task").to_string();
    let workspace = sessions[0]["workspace"].as_str().expect("workspace");
    let sent = h.ok(&["messages", "send", "--task", &task, "this task only"]);
    assert!(
        sent.contains(&format!("every run of task {task}")),
        "{sent}"
    );
    let sent = h.ok(&[
        "messages",
        "send",
        "--workspace",
        workspace,
        "this workspace only",
    ]);
    assert!(sent.contains("every run of workspace"), "{sent}");
    let read: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["messages", "list", "--run", &run.to_string(), "--json"]))
            .expect("json");
    let bodies: Vec<&str> = read.iter().filter_map(|m| m["body"].as_str()).collect();
    assert!(
        bodies.contains(&"this task only") && bodies.contains(&"this workspace only"),
        "{bodies:?}"
    );
    let err = h.fails(&["messages", "send", "--workspace", "nowhere", "x"]);
    assert!(err.contains("nowhere"), "{err}");
    h.fails(&[
        "messages",
        "send",
        "--run",
        &run.to_string(),
        "--task",
        &task,
        "x",
    ]);
}

#[test]
fn several_processes_starting_on_one_fresh_data_dir_at_once_all_work() {
    // The engine starting while CLI commands run, on a data dir nobody has
    // used yet: one migrates and makes the key, the others wait and use them.
    for round in 0..3 {
        let h = Home::new();
        let serve = Serve(
            h.cmd(&["serve"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("serve"),
        );
        let cli: Vec<Child> = (0..5)
            .map(|i| {
                let args: &[&str] = if i % 2 == 0 {
                    &["runs", "list", "--json"]
                } else {
                    &["gates", "list", "--json"]
                };
                h.cmd(args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("cli")
            })
            .collect();
        for c in cli {
            let out = c.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "round {round}: a command on a fresh data dir failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        wait_for(&h.data().join("overseer.sock"));
        let mut serve = serve;
        assert!(
            serve.0.try_wait().expect("poll").is_none(),
            "round {round}: the engine exited"
        );
        let v: serde_json::Value =
            serde_json::from_str(&h.ok(&["audit", "verify", "--json"])).expect("json");
        assert_eq!(v["ok"], true, "round {round}: {v}");
    }
}

/// `gates list` is a page (oldest first): with more pending than the limit
/// it says how many more and how to list them; `--after` lists the next
/// page and `--limit 0` every one (issue 25, item 7).
#[test]
fn gates_list_is_a_page_that_says_how_many_more_are_pending() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let ids = |args: &[&str]| -> Vec<i64> {
        let mut all = vec!["gates", "list", "--json"];
        all.extend_from_slice(args);
        let gates: Vec<serde_json::Value> = serde_json::from_str(&h.ok(&all)).expect("json");
        gates.iter().filter_map(|g| g["id"].as_i64()).collect()
    };
    let every = ids(&["--limit", "0"]);
    assert!(
        every.len() > 2,
        "the demo fleet has gates pending: {every:?}"
    );
    assert!(
        every.windows(2).all(|w| w[0] < w[1]),
        "oldest first: {every:?}"
    );
    assert_eq!(ids(&[]), every, "fewer than a page: all of them");

    let text = h.ok(&["gates", "list", "--limit", "2"]);
    let more = every.len() - 2;
    assert!(
        text.contains(&format!(
            "{more} more after gate {}: `overseer gates list --after {}`",
            every[1], every[1]
        )),
        "{text}"
    );
    let out = h.run(&["gates", "list", "--json", "--limit", "2"]);
    let page: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(page.len(), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("{more} more after gate")),
        "the note is on stderr with --json"
    );
    let after = every[1].to_string();
    assert_eq!(ids(&["--after", &after]), every[2..]);
}

/// `overseer webhooks` from a terminal, with no engine running: a URL that
/// is not http(s) is refused saying what to give; an added hook's secret is
/// printed once and never listed; a test to a receiver that is down exits
/// non-zero saying why and when it is tried again; the log keeps it.
#[test]
fn webhooks_are_added_tested_listed_and_removed_from_the_command_line() {
    let h = Home::new();
    let err = h.fails(&["webhooks", "add", "ftp://example.com/x"]);
    assert!(err.contains("give an http:// or https:// URL"), "{err}");
    let err = h.fails(&[
        "webhooks",
        "add",
        "https://ntfy.sh/t",
        "--events",
        "run_failed,nope",
    ]);
    assert!(err.contains("\"nope\" is not an event kind"), "{err}");

    // A loopback port where nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let out = h.ok(&[
        "webhooks",
        "add",
        &url,
        "--events",
        "agent_question_blocking,run_finished",
    ]);
    assert!(
        out.contains("agent_question_blocking,run_finished"),
        "{out}"
    );
    let secret = out
        .lines()
        .find_map(|l| l.strip_prefix("secret: "))
        .expect("the secret is printed");
    assert_eq!(secret.len(), 64, "{out}");
    assert!(out.contains("not shown again"), "{out}");

    let listed = h.ok(&["webhooks", "list", "--json"]);
    assert!(!listed.contains(secret), "the list never shows a secret");
    let hooks: Vec<serde_json::Value> = serde_json::from_str(&listed).expect("json");
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0]["url"], url.as_str());
    let id = hooks[0]["id"].to_string();

    let err = h.run(&["webhooks", "test", &id]);
    assert!(!err.status.success(), "a test nobody received fails");
    let said = String::from_utf8_lossy(&err.stdout).to_string();
    assert!(said.contains("pending, next attempt in"), "{said}");
    assert!(said.to_lowercase().contains("refused"), "{said}");
    let log = h.ok(&["webhooks", "deliveries", &id]);
    assert!(log.contains("(test)"), "{log}");

    assert!(h
        .ok(&["webhooks", "remove", &id])
        .contains(&format!("removed webhook {id}")));
    assert!(h.ok(&["webhooks", "list"]).contains("no webhooks yet"));
    let err = h.fails(&["webhooks", "test", &id]);
    assert!(err.contains("overseer webhooks list"), "{err}");
}

/// `overseer webhooks disable|enable`: a disabled hook is listed as such,
/// what was pending for it is given up on (the log says why), a test is
/// refused saying how to turn it on; enabled again, it is listed plain.
#[test]
fn a_webhook_is_disabled_and_enabled_again_from_the_command_line() {
    let h = Home::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/hook");
    h.ok(&["webhooks", "add", &url]);
    // A test nobody receives: pending, its retry due.
    assert!(!h.run(&["webhooks", "test", "1"]).status.success());

    let out = h.ok(&["webhooks", "disable", "1"]);
    assert!(out.contains("(disabled)"), "{out}");
    assert!(out.contains("overseer webhooks enable 1"), "{out}");
    assert!(h.ok(&["webhooks", "list"]).contains("(disabled)"));
    let log = h.ok(&["webhooks", "deliveries", "1"]);
    assert!(log.contains("FAILED"), "{log}");
    assert!(log.contains("not sent: the hook was disabled"), "{log}");
    let err = h.fails(&["webhooks", "test", "1"]);
    assert!(err.contains("overseer webhooks enable 1"), "{err}");

    let out = h.ok(&["webhooks", "enable", "1"]);
    assert!(!out.contains("(disabled)"), "{out}");
    assert!(!h.ok(&["webhooks", "list"]).contains("(disabled)"));
    let err = h.fails(&["webhooks", "enable", "9"]);
    assert!(err.contains("overseer webhooks list"), "{err}");
}

#[test]
fn a_budget_is_set_raised_and_removed_from_the_command_line() {
    let h = Home::new();
    let repo = empty_repo(&h);
    h.ok(&["workspace", "add", &repo.to_string_lossy(), "--name", "r"]);
    let set = h.ok(&["task", "budget", "--workspace", "r", "2.5"]);
    assert_eq!(set.trim(), "budget set to 2.5");
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["workspace", "list", "--json"])).expect("json");
    assert_eq!(listed[0]["settings"]["max_cost"], 2.5, "{listed:?}");
    // What cannot be a budget is refused with what to give instead.
    let refused = h.fails(&["task", "budget", "--workspace", "r", "--", "-1"]);
    assert!(refused.contains("give an amount above 0"), "{refused}");
    let refused = h.fails(&["task", "budget", "--workspace", "r", "lots"]);
    assert!(refused.contains("is not an amount"), "{refused}");
    assert_eq!(
        h.ok(&["task", "budget", "--workspace", "r", "none"]).trim(),
        "budget removed"
    );
}
