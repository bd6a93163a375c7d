//! Who may do what, over real HTTP: a paired person's calls obey the role
//! the owner gave them, checked at the contract's one door whatever
//! transport carried them, and a changed role applies to the next request.

use crate::common;

use common::{served, Served};
use overseer_core::{Actor, Grant, Role};
use serde_json::{json, Value};

/// Pairs a browser for `person` with `grant` through `POST /api/pair`: its
/// credential as `common`'s helpers take it.
fn pair_as(s: &Served, person: &str, grant: Grant) -> String {
    let pairing = s
        .engine
        .pair_device_with(person, "a phone", Some(&grant), &Actor::cli())
        .expect("a pairing code");
    let a = s.post(None, "/api/pair", &json!({ "code": pairing.code }));
    assert_eq!(a.status, 200, "{a:?}");
    common::pair_credential(&a).unwrap_or_else(|| panic!("no credential: {a:?}"))
}

/// A pending gate of `workspace` in the demo fleet: its id and first option.
fn gate_of(s: &Served, credential: &str, workspace: &str) -> (i64, Value) {
    let runs = s.call(Some(credential), "list_runs", json!({}));
    assert_eq!(runs.status, 200, "{runs:?}");
    let page = s.call(
        Some(credential),
        "list_gates",
        json!({ "pendingOnly": true }),
    );
    assert_eq!(page.status, 200, "{page:?}");
    let workspace_of = |run: &Value| {
        runs.body
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] == *run)
            .map(|r| r["workspace"].clone())
    };
    let gate = page.body["gates"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| workspace_of(&g["run_id"]) == Some(json!(workspace)))
        .cloned()
        .unwrap_or_else(|| panic!("a pending gate of {workspace}: {page:?}"));
    (
        gate["id"].as_i64().expect("gate id"),
        gate["options"][0]["id"].clone(),
    )
}

#[test]
fn a_persons_calls_over_http_obey_their_role() {
    let s = served();
    s.engine
        .seed_demo(&Actor::cli(), false)
        .expect("demo fleet");
    let ana = pair_as(
        &s,
        "ana",
        Grant {
            role: Role::Observer,
            workspaces: None,
        },
    );
    // An observer reads...
    let (gate, option) = gate_of(&s, &ana, "web-app");
    // ... and decides nothing.
    let refused = s.call(
        Some(&ana),
        "decide_gate",
        json!({ "gateId": gate, "option": option, "context": null }),
    );
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(refused.code(), "forbidden");
    assert!(
        refused.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("observer") && m.contains("ask the owner")),
        "{refused:?}"
    );
    // The owner's powers stay at the machine, whatever the role: a command
    // evaluator of the phone's choosing is never stored.
    for grant in [Role::Observer, Role::Approver] {
        s.engine
            .set_grant(
                "ana",
                &Grant {
                    role: grant,
                    workspaces: None,
                },
                &Actor::cli(),
            )
            .expect("a role");
        let policy = json!({
            "enabled": true,
            "autonomy": "autonomous",
            "evaluator": {"type": "command", "command": "touch /tmp/overseer-pwned"},
        });
        let set = s.call(
            Some(&ana),
            "set_supervisor",
            json!({ "scope": {"workspace": "web-app"}, "policy": policy }),
        );
        assert_eq!(set.status, 403, "{grant:?}: {set:?}");
        let rules = s.call(
            Some(&ana),
            "set_permissions",
            json!({ "scope": {"workspace": "web-app"}, "rules": {"allow": ["Bash(*)"]} }),
        );
        assert_eq!(rules.status, 403, "{grant:?}: {rules:?}");
        let muted = s.call(
            Some(&ana),
            "set_notification_settings",
            json!({ "settings": {"webhooks_muted": true} }),
        );
        assert_eq!(muted.status, 403, "{grant:?}: {muted:?}");
    }
    let status = s
        .engine
        .supervisor_status(&overseer_engine::Scope {
            workspace: "web-app".into(),
            task: None,
        })
        .expect("status");
    assert!(
        !serde_json::to_string(&status)
            .expect("json")
            .contains("overseer-pwned"),
        "nothing of the phone's policy was stored"
    );

    // The owner makes her an approver of api-server only: the next request
    // obeys it, in that workspace and no other.
    s.engine
        .set_grant(
            "ana",
            &Grant {
                role: Role::Approver,
                workspaces: Some(vec!["api-server".into()]),
            },
            &Actor::cli(),
        )
        .expect("a role");
    let elsewhere = s.call(
        Some(&ana),
        "decide_gate",
        json!({ "gateId": gate, "option": option, "context": null }),
    );
    assert_eq!(elsewhere.status, 403, "{elsewhere:?}");
    assert!(
        elsewhere.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("`web-app`")),
        "{elsewhere:?}"
    );
    let (theirs, option) = gate_of(&s, &ana, "api-server");
    let decided = s.call(
        Some(&ana),
        "decide_gate",
        json!({ "gateId": theirs, "option": option, "context": "from the phone" }),
    );
    assert_eq!(decided.status, 200, "{decided:?}");
    let view = s
        .engine
        .gate(overseer_core::GateId(theirs))
        .expect("the gate");
    let decision = view.decision.expect("decided");
    assert_eq!(decision.actor.to_string(), "user:ana");
}
