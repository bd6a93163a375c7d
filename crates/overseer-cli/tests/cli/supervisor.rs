//! `overseer supervisor` with the real binary and a real engine
//! (`overseer serve`): the defaults of `[supervision]` in overseer.toml
//! shape the policy `configure` writes, and `supervisor approve|reject`
//! decide a gate with the supervisor's authority.

use crate::common;
use common::{approve_plan, demo_home, eventually, Home};

/// Appends `lines` to the home's overseer.toml.
fn configure_toml(h: &Home, lines: &str) {
    let config = h.dir.path().join("config").join("overseer.toml");
    let mut toml = std::fs::read_to_string(&config).expect("config");
    toml.push_str(lines);
    std::fs::write(&config, toml).expect("config");
}

/// The gate `id` as `gates list --all` shows it.
fn gate(h: &Home, id: &serde_json::Value) -> serde_json::Value {
    h.gates()
        .into_iter()
        .find(|g| &g["id"] == id)
        .expect("the gate")
}

#[test]
fn supervisor_approve_and_reject_decide_plans_with_the_policy_from_overseer_toml() {
    let h = demo_home();
    // The evaluator hands every gate to a human (escalate), so only the
    // votes cast from the CLI decide.
    let escalate = r#"cat >/dev/null; echo '{"verdict":"escalate","rationale":"over to you"}'"#;
    let configure = [
        "supervisor",
        "configure",
        "--workspace",
        "r",
        "--autonomy",
        "autonomous",
        "--evaluator",
        "command",
        "--arg=-c",
        "--arg",
        escalate,
        "--enable",
    ];
    // Without [supervision] the command evaluator has no program...
    let err = h.fails(&configure);
    assert!(
        err.contains("--evaluator command needs --command PROGRAM"),
        "{err}"
    );
    // ...with it, the program and the limits come from overseer.toml.
    configure_toml(
        &h,
        "\n[supervision]\ncommand = \"sh\"\ngrace_seconds = 0\ntimeout_seconds = 20\n",
    );
    let out = h.ok(&configure);
    assert!(out.contains("evaluator         command sh -c"), "{out}");
    assert!(
        out.contains("20 s per evaluation") && out.contains("autonomous decisions at once"),
        "{out}"
    );

    let _serve = h.serve();
    let rejected = h.start_demo("happy");
    let plan = h.pending(rejected, "plan");
    let id = plan["id"].to_string();
    let out = h.ok(&["supervisor", "reject", &id, "--rationale", "too broad"]);
    assert!(out.contains(&format!("gate {id}")), "{out}");
    eventually("the run released as its plan was rejected", || {
        h.run_state(rejected) == "released:plan_rejected"
    });
    let decided = gate(&h, &plan["id"]);
    assert_eq!(decided["decision"]["option"], "reject", "{decided}");
    assert_eq!(
        decided["decision"]["actor"]["kind"], "supervisor",
        "{decided}"
    );
    let why = h.ok(&["gates", "why", &id]);
    assert!(why.contains("too broad"), "{why}");

    let approved = h.start_demo("happy");
    let plan = h.pending(approved, "plan");
    let id = plan["id"].to_string();
    h.ok(&["supervisor", "approve", &id]);
    let decided = gate(&h, &plan["id"]);
    assert_eq!(decided["decision"]["option"], "approve", "{decided}");
    assert_eq!(
        decided["decision"]["actor"]["kind"], "supervisor",
        "{decided}"
    );
    eventually("the approved plan's first step", || {
        h.activity_kinds(approved)
            .iter()
            .any(|k| k == "step_started")
    });
    // A decided gate takes no second vote: the human's and the
    // supervisor's decisions are final once made.
    let err = h.fails(&[
        "supervisor",
        "reject",
        &id,
        "--rationale",
        "changed my mind",
    ]);
    assert!(err.contains("already decided"), "{err}");
}

#[test]
fn a_pause_timeout_from_overseer_toml_terminates_an_unanswered_pause() {
    let h = demo_home();
    configure_toml(
        &h,
        "\n[supervision]\nmax_reorient_attempts = 1\npause_timeout_seconds = 1\n",
    );
    let out = h.ok(&[
        "supervisor",
        "configure",
        "--workspace",
        "r",
        "--autonomy",
        "advisory",
        "--evaluator",
        "rules",
        "--enable",
    ]);
    assert!(
        out.contains("1 reorients") && out.contains("pause waits 1 s"),
        "{out}"
    );
    // No rule can allow what always asks.
    let err = h.fails(&[
        "workspace",
        "rules",
        "--workspace",
        "r",
        "--allow",
        "Risk(critical)",
    ]);
    assert!(err.contains("always ask a human"), "{err}");
    // The edits need no answer: only the pause waits for one.
    h.ok(&[
        "workspace",
        "rules",
        "--workspace",
        "r",
        "--allow",
        "Edit(**)",
    ]);
    let _serve = h.serve();
    let run = h.start_demo("drift");
    approve_plan(&h, run);
    let pause = h.pending(run, "supervisor_pause");
    eventually("the run terminated by the pause's timeout", || {
        h.run_state(run) == "released:supervisor_rejected"
    });
    let decided = gate(&h, &pause["id"]);
    assert_eq!(decided["decision"]["option"], "abort", "{decided}");
    assert_eq!(decided["decision"]["actor"]["kind"], "engine", "{decided}");
}
