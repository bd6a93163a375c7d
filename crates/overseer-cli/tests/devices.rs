//! `overseer devices pair|list|revoke`, the real binary, with and without
//! `overseer serve` running; the code is redeemed as the web transport
//! would, through the engine on the same data.

mod common;

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

    let shown = h.ok(&[
        "devices",
        "pair",
        "--name",
        "Ana's phone",
        "--person",
        "ana",
    ]);
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
