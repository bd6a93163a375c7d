//! Who may do what, for every operation of the contract and every role.
//!
//! The cases are generated from the contract's table
//! ([`overseer_server::api::OPERATIONS`]): each operation is built as the
//! socket reads it, from sample parameters that name things of workspace
//! `web-app` (a run, a gate, a task), and checked at the one door every
//! call passes for each kind of caller. An operation added to the table
//! without a sample for a new parameter fails here, so none can skip the
//! check; one whose declared access changes changes what is expected.

use crate::common::{engine_on, pair, TestClock};
use overseer_core::{Actor, ErrorCode, GateId, Grant, Role, RunId};
use overseer_engine::Engine;
use overseer_server::api::{access_of, Access, OperationInfo, Request, Route, OPERATIONS};
use serde_json::{json, Value};
use std::sync::Arc;

/// A demo fleet (workspaces `web-app` and `api-server`) and the run, gate
/// and task of `web-app` the samples name.
fn fleet(dir: &std::path::Path) -> (Arc<Engine>, RunId, GateId, i64) {
    let engine = engine_on(dir, TestClock::new());
    engine
        .seed_demo(&Actor::cli(), false)
        .expect("the demo fleet");
    let runs = engine.runs().expect("runs");
    let gate = runs
        .iter()
        .filter(|r| r.workspace == "web-app")
        .find_map(|r| r.pending_gate.as_ref().map(|g| (r.id, g.id)))
        .or_else(|| {
            let page = engine.gates_page(false, None, None).ok()?;
            page.gates.iter().find_map(|g| {
                let run = runs.iter().find(|r| r.id == g.run_id)?;
                (run.workspace == "web-app").then_some((run.id, g.id))
            })
        })
        .expect("a gate of web-app");
    let task = runs
        .iter()
        .find(|r| r.id == gate.0)
        .map(|r| r.task_id.0)
        .expect("its task");
    (engine, gate.0, gate.1, task)
}

/// Sample parameters by name, and by method where two operations give a
/// name different types.
fn params(info: &OperationInfo, run: RunId, gate: GateId, task: i64) -> Value {
    let mut p = json!({
        "run": run.0,
        "gate": gate.0,
        "task": task,
        "reason": "no",
        "text": "keep the API",
        "body": "hello",
        "to": {"to": "run", "run": run.0},
        "option": {"kind": "tool_call", "choice": "yes"},
        "context": null,
        "until": 4_102_444_800_000i64,
        "after": 0,
        "pending_only": true,
        "two_person": true,
        "scope": {"workspace": "web-app"},
        "workspace": "web-app",
        "sensors": ["true"],
        "auto_advance": null,
        "policy": null,
        "max_cost": 1.0,
        "rules": {"allow": ["Bash(*)"]},
        "person": "eve",
        "name": "Eve's phone",
        "role": "approver",
        "device": 1,
        "id": 1,
        "url": "https://example.invalid/hook",
        "enabled": false,
        "limit": 10,
        "approve": true,
        "rationale": "scripted",
        "settled": true,
        "path": "/nonexistent",
        "agent": "demo",
        "prompt": "do it",
    });
    let by_method: Value = match info.call {
        "check_settings" => json!({"change": {"kind": "workspace_checks", "workspace": "web-app",
            "sensors": [], "auto_advance": null}}),
        "set_notification_settings" => json!({"settings": {}}),
        "set_web_serving" => json!({"settings": {"enabled": false, "addr": "127.0.0.1:0"}}),
        "add_workspace" => json!({"settings": {}}),
        "run_activity" => json!({"after": 0}),
        _ => json!({}),
    };
    if let (Some(p), Some(extra)) = (p.as_object_mut(), by_method.as_object()) {
        for (k, v) in extra {
            p.insert(k.clone(), v.clone());
        }
    }
    p
}

/// The operation `info` as the socket reads it, with the sample params.
fn invocation(
    info: &OperationInfo,
    run: RunId,
    gate: GateId,
    task: i64,
) -> overseer_server::api::Invocation {
    let method = info.socket_method().expect("a socket method");
    let line = json!({"method": method, "params": params(info, run, gate, task)});
    let request: Request = serde_json::from_value(line.clone())
        .or_else(|_| serde_json::from_value(json!({"method": method})))
        .unwrap_or_else(|e| {
            panic!(
                "`{}`: the sample parameters do not make a request ({e}): add a sample for its \
                 new parameter in tests/engine/roles.rs",
                info.call
            )
        });
    match request.route() {
        Route::Call(call) => call,
        Route::Stream(_) => panic!("`{}` is a stream", info.call),
    }
}

/// Every caller: (who, actor, whether each access is permitted where the
/// samples act, `web-app`).
fn callers(engine: &Engine) -> Vec<(&'static str, Actor, [bool; 3])> {
    let grant = |person: &str, role: Role, workspaces: Option<&[&str]>| {
        engine
            .set_grant(
                person,
                &Grant {
                    role,
                    workspaces: workspaces.map(|w| w.iter().map(|s| (*s).to_owned()).collect()),
                },
                &Actor::cli(),
            )
            .expect("a grant");
    };
    let ana = pair(engine, "ana", "Ana's phone").device.actor();
    grant("ana", Role::Approver, Some(&["web-app"]));
    let bo = pair(engine, "bo", "Bo's phone").device.actor();
    grant("bo", Role::Approver, Some(&["api-server"]));
    let cy = pair(engine, "cy", "Cy's laptop").device.actor();
    grant("cy", Role::Approver, None);
    let dee = pair(engine, "dee", "Dee's tablet").device.actor();
    grant("dee", Role::Observer, None);
    // [read, decide in web-app, own]
    vec![
        ("the CLI", Actor::cli(), [true, true, true]),
        ("the window", Actor::app(), [true, true, true]),
        ("an approver of web-app", ana, [true, true, false]),
        ("an approver of api-server", bo, [true, false, false]),
        ("an approver of every workspace", cy, [true, true, false]),
        ("an observer", dee, [true, false, false]),
        (
            "the supervisor",
            Actor::Supervisor("rules".into()),
            [true, false, false],
        ),
        (
            "an agent",
            Actor::Agent("demo".into()),
            [true, false, false],
        ),
    ]
}

#[test]
fn every_operation_admits_exactly_the_roles_it_declares() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, run, gate, task) = fleet(dir.path());
    let callers = callers(&engine);
    let mut checked = 0;
    for info in OPERATIONS.iter().filter(|o| !o.streams) {
        let call = invocation(info, run, gate, task);
        let access = access_of(info);
        assert_eq!(
            call.access(),
            access,
            "`{}`: the wire and the table disagree on who may call it",
            info.call
        );
        let column = match access {
            Access::Read => 0,
            Access::Decide => 1,
            Access::Own => 2,
        };
        for (who, actor, permitted) in &callers {
            let outcome = call.authorize(&engine, actor);
            if permitted[column] {
                assert!(
                    outcome.is_ok(),
                    "`{}` ({:?}) refused {who}: {:?}",
                    info.call,
                    access,
                    outcome
                );
            } else {
                let e = outcome
                    .expect_err(&format!("`{}` ({:?}) let {who} through", info.call, access));
                assert_eq!(
                    e.code,
                    ErrorCode::Forbidden,
                    "`{}`: {}",
                    info.call,
                    e.message
                );
                assert!(
                    e.message.contains("ask the owner"),
                    "`{}`: a refusal says who can change it: {}",
                    info.call,
                    e.message
                );
            }
            checked += 1;
        }
    }
    // Every operation that is not a stream, for each of the callers.
    assert!(checked >= 40 * callers.len(), "{checked} cases");
}

/// The owner's powers are the ones the issue found a phone holding: each
/// is declared `own`, so no person reaches them whatever their role.
#[test]
fn what_configures_the_machine_is_the_owners_alone() {
    for call in [
        "set_supervisor",
        "set_notification_settings",
        "set_workspace_checks",
        "set_workspace_merge",
        "set_permissions",
        "set_max_cost",
        "add_workspace",
        "pair_device",
        "revoke_device",
        "set_person_role",
        "set_web_serving",
        "add_webhook",
        "remove_webhook",
        "set_webhook_enabled",
        "test_webhook",
        "seed_demo",
        "supervisor_vote",
    ] {
        let info = OPERATIONS
            .iter()
            .find(|o| o.call == call)
            .unwrap_or_else(|| panic!("`{call}` is in the table"));
        assert_eq!(access_of(info), Access::Own, "`{call}`");
    }
}

/// A paired phone cannot make the engine run a command of its choosing:
/// setting a command evaluator is refused before anything is stored, and
/// the policy in force is unchanged.
#[test]
fn a_phone_cannot_set_a_supervisor_that_runs_its_command() {
    use overseer_server::api::{op, Operation};
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, ..) = fleet(dir.path());
    let phone = pair(&engine, "ana", "Ana's phone").device.actor();
    let policy: overseer_core::supervision::SupervisorPolicy = serde_json::from_value(json!({
        "enabled": true,
        "autonomy": "autonomous",
        "evaluator": {"type": "command", "command": "touch /tmp/pwned-by-phone"},
    }))
    .expect("a policy");
    let scope = overseer_engine::Scope {
        workspace: "web-app".into(),
        task: None,
    };
    let status = |e: &Engine| {
        serde_json::to_value(e.supervisor_status(&scope).expect("status")).expect("json")
    };
    let before = status(&engine);
    let e = op::SetSupervisor {
        scope: scope.clone(),
        policy: Some(policy),
    }
    .perform(&engine, &phone)
    .expect_err("refused");
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(
        e.message.contains("approver of every workspace"),
        "{}",
        e.message
    );
    assert_eq!(status(&engine), before);
}

/// A role changed by the owner applies to the person's next call, is
/// signed, and is told to every client as their devices changing; bad
/// grants are refused whole.
#[test]
fn the_owner_changes_a_role_and_the_next_call_obeys_it() {
    use overseer_server::api::{op, Operation};
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, _run, gate, _task) = fleet(dir.path());
    let paired = pair(&engine, "ana", "Ana's phone");
    let phone = paired.device.actor();
    // Paired without a role: an approver of every workspace.
    assert_eq!(
        engine.grant_of(&phone).expect("grant"),
        Grant {
            role: Role::Approver,
            workspaces: None
        }
    );
    let hold = op::HoldGate { gate };
    hold.authorize(&engine, &phone).expect("an approver may");

    let mut events = engine.subscribe();
    engine
        .set_grant(
            "ana",
            &Grant {
                role: Role::Observer,
                workspaces: None,
            },
            &Actor::cli(),
        )
        .expect("made an observer");
    match events.try_recv() {
        Ok(overseer_core::EngineEvent::DeviceChanged { device }) => {
            assert_eq!(device.id, paired.device.id);
            assert_eq!(device.grant.role, Role::Observer);
        }
        other => panic!("expected her device told again, got {other:?}"),
    }
    let e = hold
        .authorize(&engine, &phone)
        .expect_err("an observer may not");
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(e.message.contains("observer"), "{}", e.message);
    // The device list shows it.
    let listed = engine.list_devices().expect("devices");
    assert_eq!(listed[0].grant.role, Role::Observer);

    // Bad grants: refused, nothing half-applied.
    let audit_len = || {
        rusqlite::Connection::open(engine.paths().db())
            .and_then(|db| {
                db.query_row("SELECT count(*) FROM audit_log", [], |r| r.get::<_, i64>(0))
            })
            .expect("audit length")
    };
    let records = audit_len();
    let unknown = engine
        .set_grant(
            "ana",
            &Grant {
                role: Role::Approver,
                workspaces: Some(vec!["web-app".into(), "no-such".into()]),
            },
            &Actor::cli(),
        )
        .expect_err("no such workspace");
    assert_eq!(unknown.code, ErrorCode::InvalidInput);
    assert!(unknown.message.contains("no-such"), "{}", unknown.message);
    let owner = engine
        .set_grant("ana", &Grant::owner(), &Actor::cli())
        .expect_err("owner is not a person's role");
    assert!(owner.message.contains("owner"), "{}", owner.message);
    let by_phone = engine
        .set_grant(
            "ana",
            &Grant {
                role: Role::Approver,
                workspaces: None,
            },
            &phone,
        )
        .expect_err("a person cannot raise their own role");
    assert_eq!(by_phone.code, ErrorCode::Forbidden);
    assert_eq!(audit_len(), records, "nothing signed for refused grants");
    assert_eq!(
        engine.grant_of(&phone).expect("grant").role,
        Role::Observer,
        "unchanged"
    );
    engine.verify_audit().expect("read").expect("verifies");
}

/// Pairing names the role: an approver of one workspace decides there and
/// nowhere else, through the same call the web transport makes.
#[test]
fn a_device_paired_as_an_approver_of_one_workspace_decides_only_there() {
    use overseer_server::window::WindowCall;
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, run, _gate, _task) = fleet(dir.path());
    let pairing = engine
        .pair_device_with(
            "ana",
            "Ana's phone",
            Some(&Grant {
                role: Role::Approver,
                workspaces: Some(vec!["api-server".into()]),
            }),
            &Actor::cli(),
        )
        .expect("a code");
    let phone = engine
        .redeem_pairing(&pairing.code)
        .expect("paired")
        .device
        .actor();
    let steer = |run: RunId| {
        WindowCall::read("steer_run", &json!({"runId": run.0, "text": "stop"}))
            .expect("a window command")
            .expect("its args")
    };
    let e = steer(run)
        .perform(&engine, &phone)
        .expect_err("web-app is not hers");
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(e.message.contains("`web-app`"), "{}", e.message);
    let theirs = engine
        .runs()
        .expect("runs")
        .into_iter()
        .find(|r| r.workspace == "api-server")
        .expect("a run of api-server");
    // Past the role check: whatever the engine answers, it is not a refusal
    // of who she is.
    if let Err(e) = steer(theirs.id).perform(&engine, &phone) {
        assert_ne!(e.code, ErrorCode::Forbidden, "{}", e.message);
    }
}
