//! An autonomous supervisor's grace period with the real `overseer` binary:
//! set in `[supervision]` of overseer.toml, kept in the store while the
//! decision waits, and surviving `kill -9` of the engine mid-grace.

use crate::common;
use common::{demo_home, eventually, kill_9};

/// The milliseconds since the epoch, as the engine counts them.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[test]
fn a_pending_autonomous_decision_survives_kill_9_and_takes_effect_once() {
    let h = demo_home();
    // The grace comes from overseer.toml's [supervision] section.
    let config = h.dir.path().join("config").join("overseer.toml");
    let mut toml = std::fs::read_to_string(&config).expect("config");
    toml.push_str("\n[supervision]\ngrace_seconds = 4\n");
    std::fs::write(&config, toml).expect("config");
    let out = h.ok(&[
        "supervisor",
        "configure",
        "--workspace",
        "r",
        "--autonomy",
        "autonomous",
        "--evaluator",
        "rules",
        "--enable",
    ]);
    assert!(out.contains("autonomous decisions after 4 s"), "{out}");

    let serve = h.serve();
    let run = h.start_demo("happy");
    let mut plan = serde_json::Value::Null;
    eventually(
        "the supervisor's decision on the plan, waiting for its grace",
        || {
            plan = h.pending(run, "plan");
            !plan["pending_effect"].is_null()
        },
    );
    let effect = plan["pending_effect"].clone();
    assert_eq!(effect["option"], "approve", "{plan}");
    assert_eq!(effect["by"]["name"], "rules", "{plan}");
    let at = effect["at"].as_i64().expect("the deadline");

    // kill -9 mid-grace: nothing decided it, the store keeps it.
    kill_9(serve);
    assert!(now_ms() < at, "killed within the grace");
    let gate = plan["id"].clone();
    let id = gate.to_string();
    let kept = h
        .gates()
        .into_iter()
        .find(|g| g["id"] == gate)
        .expect("the plan gate");
    assert_eq!(kept["status"], "pending", "{kept}");
    assert_eq!(kept["pending_effect"]["at"], at, "{kept}");
    let why = h.ok(&["gates", "why", &id]);
    assert!(
        why.contains(&format!(
            "the supervisor decided 'approve' (approve): it takes effect at {at}"
        )),
        "{why}"
    );

    // The deadline passes while no engine runs; the next one makes the
    // decision take effect at once, as the supervisor's, once.
    std::thread::sleep(std::time::Duration::from_millis(
        u64::try_from(at - now_ms()).unwrap_or(0) + 300,
    ));
    let _serve = h.serve();
    let mut decided = serde_json::Value::Null;
    eventually("the plan decided after the restart", || {
        decided = h
            .gates()
            .into_iter()
            .find(|g| g["id"] == gate)
            .expect("the plan gate");
        decided["status"] == "decided"
    });
    assert_eq!(decided["decision"]["option"], "approve", "{decided}");
    assert_eq!(decided["decision"]["actor"]["name"], "rules", "{decided}");
    assert!(decided["decision"]["at"].as_i64().expect("at") >= at);
    // The run goes on from the approved plan.
    eventually("the run's first step", || {
        h.activity_kinds(run).iter().any(|k| k == "step_started")
    });
    let story: serde_json::Value =
        serde_json::from_str(&h.ok(&["gates", "why", &id, "--json"])).expect("json");
    let decided_records = story["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter(|r| {
            r["record"]["payload"]
                .as_str()
                .is_some_and(|p| p.contains("\"type\":\"gate_decided\""))
        })
        .count();
    assert_eq!(decided_records, 1, "never twice: {story}");
    assert_eq!(story["verified"], true, "{story}");
}
