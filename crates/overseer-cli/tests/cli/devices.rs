//! `overseer devices pair|list|revoke`, the real binary, with and without
//! `overseer serve` running; the code is redeemed as the web transport
//! would, through the engine on the same data.

use crate::common;

use common::*;
use overseer_engine::{Engine, LogNotifier, Paths, SystemClock};
use std::sync::Arc;

/// The engine on the home's data, as a web transport beside it would use it.
fn engine_of(h: &Home) -> Engine {
    Engine::open(
        Paths {
            data_dir: h.data(),
            config_dir: h.dir.path().join("config"),
        },
        Arc::new(SystemClock),
        Arc::new(LogNotifier),
    )
    .expect("engine")
}

/// `overseer devices pair` for Ana's phone: what it printed.
fn pair_anas_phone(h: &Home) -> String {
    h.ok(&[
        "devices",
        "pair",
        "--name",
        "Ana's phone",
        "--person",
        "ana",
    ])
}

fn code_in(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("pairing code: "))
        .unwrap_or_else(|| panic!("no code in {text}"))
        .trim()
        .to_owned()
}

#[test]
fn a_device_paired_from_the_command_line_is_listed_and_revoked_through_the_engine() {
    let h = Home::new();
    let _serve = h.serve();

    let shown = pair_anas_phone(&h);
    let code = code_in(&shown);
    assert!(shown.contains("it works once, until"), "{shown}");
    assert!(shown.contains("no engine serves browsers"), "{shown}");
    assert!(h.ok(&["devices", "list"]).contains("no device is paired"));

    let paired = engine_of(&h).redeem_pairing(&code).expect("paired");
    let listed = h.ok(&["devices", "list"]);
    assert!(listed.contains("Ana's phone"), "{listed}");
    assert!(listed.contains("ana"), "{listed}");
    assert!(listed.contains("active"), "{listed}");

    // Seen by the engine it talks to.
    assert!(engine_of(&h)
        .device_by_credential(&paired.credential)
        .expect("lookup")
        .is_some());
    let json: serde_json::Value =
        serde_json::from_str(&h.ok(&["devices", "list", "--json"])).expect("json");
    assert!(json[0]["last_seen_at"].is_number(), "{json}");

    let id = paired.device.id.to_string();
    let revoked = h.ok(&["devices", "revoke", &id]);
    assert!(revoked.contains("is revoked"), "{revoked}");
    assert!(h.ok(&["devices", "list"]).contains("revoked"));
    assert_eq!(
        engine_of(&h)
            .device_by_credential(&paired.credential)
            .expect("lookup"),
        None
    );

    // Bad input says what to do.
    let err = h.fails(&["devices", "pair", "--name", "x", "--person", "cli"]);
    assert!(err.contains("reserved for the local owner"), "{err}");
    let err = h.fails(&["devices", "revoke", "77"]);
    assert!(err.contains("device 77 does not exist"), "{err}");
    assert!(h.ok(&["audit", "verify"]).contains("audit log OK"));
}

#[test]
fn without_an_engine_the_code_is_kept_for_the_next_one() {
    let h = Home::new();
    let pairing: serde_json::Value = serde_json::from_str(&h.ok(&[
        "devices",
        "pair",
        "--name",
        "Bo's tablet",
        "--person",
        "bo",
        "--json",
    ]))
    .expect("json");
    let code = pairing["code"].as_str().expect("code");
    assert!(pairing["url"].is_null(), "{pairing}");
    let paired = engine_of(&h).redeem_pairing(code).expect("paired");
    assert_eq!(paired.device.person, "bo");
    assert!(h.ok(&["devices", "list"]).contains("Bo's tablet"));
}

#[test]
fn who_decided_and_through_which_device_shows_on_the_command_line() {
    let h = Home::new();
    h.ok(&["demo", "seed"]);
    let code = code_in(&pair_anas_phone(&h));
    let engine = engine_of(&h);
    let ana = engine.redeem_pairing(&code).expect("paired");
    let gates: Vec<serde_json::Value> =
        serde_json::from_str(&h.ok(&["gates", "list", "--json"])).expect("json");
    let gate = gates
        .iter()
        .find(|g| g["kind"] == "tool_call")
        .expect("a waiting tool call");
    let (id, run) = (gate["id"].to_string(), gate["run_id"].to_string());
    engine
        .decide_gate(
            overseer_core::GateId(gate["id"].as_i64().expect("id")),
            "yes",
            None,
            &ana.device.actor(),
        )
        .expect("decided through the phone");
    drop(engine);

    let through = format!("user:ana through Ana's phone (device {})", ana.device.id);
    let shown = h.ok(&["gates", "show", &id]);
    assert!(
        shown.contains(&format!("decided yes by {through} at ")),
        "{shown}"
    );
    let why = h.ok(&["gates", "why", &id]);
    assert!(
        why.lines()
            .any(|l| l.contains("gate_decided") && l.contains(&through)),
        "{why}"
    );
    let run_why = h.ok(&["runs", "why", &run]);
    assert!(run_why.contains(&through), "{run_why}");
    let activity = h.ok(&["runs", "activity", &run]);
    assert!(activity.contains("through Ana's phone"), "{activity}");
    assert!(h.ok(&["audit", "verify"]).contains("audit log OK"));
}
