//! Browsers and phones are paired, never trusted by address: a one-time code
//! the local owner issues is exchanged for a credential, kept only hashed;
//! wrong codes burn the codes outstanding; a revoked device is refused at once.
//! A real engine on a real SQLite file, its clock moved by the test.

use crate::common;

use common::*;
use overseer_core::{Actor, DeviceId, EngineEvent, ErrorCode};
use overseer_engine::Engine;

const FIVE_MINUTES: i64 = 5 * 60 * 1000;

/// Every byte of the database as it is on disk (the file and its WAL).
fn database_bytes(engine: &Engine) -> Vec<u8> {
    let db = engine.paths().db();
    let mut bytes = std::fs::read(&db).expect("database file");
    let mut wal = db.into_os_string();
    wal.push("-wal");
    if let Ok(more) = std::fs::read(&wal) {
        bytes.extend(more);
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_redeemed_code_gives_a_credential_that_authenticates_and_neither_is_kept_in_clear() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = TestClock::new();
    let engine = engine_on(dir.path(), clock.clone());
    engine.set_web_url(Some("https://box.example:8443".into()));

    let pairing = engine
        .pair_device("ana", "Ana's phone", &Actor::cli())
        .expect("a code");
    assert_eq!(pairing.code.len(), 9, "ABCD-EFGH: {}", pairing.code);
    assert_eq!(&pairing.code[4..5], "-");
    assert_eq!(
        pairing.expires_at,
        overseer_engine::Clock::now(&*clock) + FIVE_MINUTES
    );
    assert_eq!(pairing.url.as_deref(), Some("https://box.example:8443"));

    // Typed on a phone: lowercase, no dash.
    clock.advance(1000);
    let typed = pairing.code.replace('-', "").to_lowercase();
    let paired = engine.redeem_pairing(&typed).expect("paired");
    assert_eq!(paired.device.person, "ana");
    assert_eq!(paired.device.name, "Ana's phone");
    assert_eq!(paired.device.revoked_at, None);
    // Two halves of 32 random bytes, hex: the cookie's and the page's own.
    let (cookie_half, origin_half) = paired.credential.split_once('.').expect("two halves");
    assert_eq!((cookie_half.len(), origin_half.len()), (64, 64));
    assert_ne!(cookie_half, origin_half);
    assert!(!format!("{paired:?}").contains(&paired.credential));
    assert_eq!(paired.device.actor().to_string(), "user:ana");

    clock.advance(1000);
    let known = engine
        .device_by_credential(&paired.credential)
        .expect("lookup")
        .expect("the credential authenticates");
    assert_eq!(known.id, paired.device.id);
    assert_eq!(
        known.last_seen_at,
        Some(overseer_engine::Clock::now(&*clock))
    );
    assert_eq!(engine.list_devices().expect("list"), vec![known.clone()]);

    // Another credential, or a tampered one, is nobody.
    let mut other = paired.credential.clone().into_bytes();
    other[0] = if other[0] == b'a' { b'b' } else { b'a' };
    let other = String::from_utf8(other).expect("hex");
    assert_eq!(engine.device_by_credential(&other).expect("lookup"), None);
    assert_eq!(engine.device_by_credential("").expect("lookup"), None);
    // Either half alone is nobody.
    for half in [cookie_half, origin_half] {
        assert_eq!(engine.device_by_credential(half).expect("lookup"), None);
    }
    assert_eq!(
        engine
            .device_by_credential("not a credential")
            .expect("lookup"),
        None
    );

    // On disk: neither the credential nor the code, only their hashes.
    let letters = pairing.code.replace('-', "");
    let bytes = database_bytes(&engine);
    assert!(
        !contains(&bytes, &paired.credential),
        "the credential is in the database file in clear"
    );
    for half in [cookie_half, origin_half] {
        assert!(
            !contains(&bytes, half),
            "a half is in the database file in clear"
        );
    }
    assert!(
        !contains(&bytes, &letters),
        "the pairing code is in the database file in clear"
    );
    let stored: String = rusqlite::Connection::open(engine.paths().db())
        .expect("db")
        .query_row("SELECT credential_hash FROM devices", [], |r| r.get(0))
        .expect("hash");
    assert_eq!(
        stored,
        overseer_store::devices::credential_hash(&paired.credential)
    );
    assert!(contains(&bytes, &stored), "looked up by its hash");

    // Pairing is signed, and the log still verifies.
    let report = engine.verify_audit().expect("read").expect("verifies");
    assert!(report.records >= 1);
}

/// A device paired before credentials had two halves (one 64-hex
/// credential, its hash in the database) is no one now, whatever half is
/// put beside its credential: it pairs again (docs/browsers.md).
#[test]
fn a_device_paired_with_a_one_part_credential_must_pair_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_on(dir.path(), TestClock::new());
    let old = "ab".repeat(32);
    rusqlite::Connection::open(engine.paths().db())
        .expect("db")
        .execute(
            "INSERT INTO devices(person, name, credential_hash, created_at) VALUES ('ana', 'old phone', ?1, 1)",
            [overseer_store::devices::credential_hash(&old)],
        )
        .expect("an old device");
    assert_eq!(engine.list_devices().expect("list").len(), 1);
    for presented in [
        old.clone(),
        format!("{old}.{}", "cd".repeat(32)),
        format!("{}.{old}", "cd".repeat(32)),
    ] {
        assert_eq!(
            engine.device_by_credential(&presented).expect("lookup"),
            None,
            "{presented}"
        );
    }
}

#[test]
fn wrong_expired_and_used_codes_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = TestClock::new();
    let engine = engine_on(dir.path(), clock.clone());

    let wrong = engine
        .redeem_pairing("ABCD-EFGH")
        .expect_err("never issued");
    assert_eq!(wrong.code, ErrorCode::Unauthorized);
    assert!(wrong.message.contains("wrong"), "{}", wrong.message);
    let garbage = engine
        .redeem_pairing("hello world")
        .expect_err("not a code");
    assert_eq!(garbage.code, ErrorCode::Unauthorized);

    let pairing = engine
        .pair_device("ana", "Ana's laptop", &Actor::cli())
        .expect("a code");
    engine
        .redeem_pairing(&pairing.code)
        .expect("the first time");
    let again = engine.redeem_pairing(&pairing.code).expect_err("used");
    assert_eq!(again.code, ErrorCode::Unauthorized);
    assert!(again.message.contains("used already"), "{}", again.message);

    let late = engine
        .pair_device("bo", "Bo's phone", &Actor::app())
        .expect("a code");
    clock.advance(FIVE_MINUTES);
    let expired = engine.redeem_pairing(&late.code).expect_err("expired");
    assert_eq!(expired.code, ErrorCode::Unauthorized);
    assert!(expired.message.contains("expired"), "{}", expired.message);

    // Only the first code paired anything.
    let devices = engine.list_devices().expect("list");
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0].person, "ana");
}

#[test]
fn twenty_wrong_codes_burn_the_outstanding_codes_and_never_lock_pairing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = TestClock::new();
    let engine = engine_on(dir.path(), clock.clone());

    // With no code outstanding there is nothing to guess: nothing counts.
    for _ in 0..30 {
        engine.redeem_pairing("ZZZZ-ZZZZ").expect_err("wrong");
    }
    let first = engine
        .pair_device("ana", "Ana's phone", &Actor::cli())
        .expect("a code");
    let second = engine
        .pair_device("bo", "Bo's phone", &Actor::cli())
        .expect("a code");
    // Past their first minute, when burns spare a new code.
    clock.advance(overseer_store::devices::BURN_GRACE);
    for i in 1..20 {
        let e = engine.redeem_pairing("ZZZZ-ZZZZ").expect_err("wrong");
        assert_eq!(e.code, ErrorCode::Unauthorized, "try {i}");
        assert!(!e.message.contains("burned"), "{}", e.message);
    }
    let mut events = engine.subscribe();
    let e = engine.redeem_pairing("ZZZZ-ZZZZ").expect_err("the 20th");
    assert_eq!(e.code, ErrorCode::Unauthorized);
    assert!(e.message.contains("burned"), "{}", e.message);
    // Pushed: a window showing a code learns at once that it is dead.
    let mut pushed = Vec::new();
    while let Ok(event) = events.try_recv() {
        pushed.push(event);
    }
    assert!(
        pushed.iter().any(|e| matches!(
            e,
            overseer_core::EngineEvent::PairingCodesBurned { codes: 2 }
        )),
        "{pushed:?}"
    );
    // Both outstanding codes are burned, and say so.
    for code in [&first.code, &second.code] {
        let e = engine.redeem_pairing(code).expect_err("burned");
        assert_eq!(e.code, ErrorCode::Unauthorized);
        assert!(
            e.message.contains("burned") && e.message.contains("20 wrong codes"),
            "{}",
            e.message
        );
    }
    assert!(engine.list_devices().expect("list").is_empty());
    // Signed: one record of the burn, and the log verifies.
    let burns: i64 = rusqlite::Connection::open(engine.paths().db())
        .expect("db")
        .query_row(
            "SELECT count(*) FROM audit_log WHERE payload LIKE '%pairing_codes_burned%'",
            [],
            |r| r.get(0),
        )
        .expect("audit");
    assert_eq!(burns, 1);
    engine.verify_audit().expect("read").expect("verifies");

    // Never a lockout: a new code pairs at once, and a wrong try before it
    // no longer counts against it (the count started over with the burn).
    let fresh = engine
        .pair_device("ana", "Ana's phone", &Actor::cli())
        .expect("a code");
    engine.redeem_pairing("ZZZZ-ZZZZ").expect_err("wrong");
    let paired = engine.redeem_pairing(&fresh.code).expect("pairs at once");
    assert_eq!(paired.device.name, "Ana's phone");
}

/// Wrong codes are counted in memory: a flood of them writes nothing. A
/// code in its first minute is spared by burns (whoever issued it types it
/// meanwhile); the first wrong try after its minute burns it.
#[test]
fn wrong_codes_write_nothing_and_a_new_code_is_spared_for_its_first_minute() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = TestClock::new();
    let engine = engine_on(dir.path(), clock.clone());
    let young = engine
        .pair_device("ana", "Ana's phone", &Actor::cli())
        .expect("a code");
    let db = rusqlite::Connection::open(engine.paths().db()).expect("db");
    let version = || -> i64 {
        db.query_row("PRAGMA data_version", [], |r| r.get(0))
            .expect("version")
    };
    let audit = || -> i64 {
        db.query_row("SELECT count(*) FROM audit_log", [], |r| r.get(0))
            .expect("audit")
    };
    let (before, records) = (version(), audit());
    for _ in 0..200 {
        let e = engine.redeem_pairing("ZZZZ-ZZZZ").expect_err("wrong");
        assert!(!e.message.contains("burned"), "{}", e.message);
    }
    assert_eq!(version(), before, "200 wrong codes committed nothing");
    assert_eq!(audit(), records);
    // Its minute nearly over, it still pairs.
    clock.advance(overseer_store::devices::BURN_GRACE - 1000);
    let second = engine
        .pair_device("bo", "Bo's phone", &Actor::cli())
        .expect("a code");
    engine.redeem_pairing(&young.code).expect("spared");
    // The second faced none of those tries: its count starts over, and
    // 20 wrong ones in its first minute do not burn it either.
    for _ in 0..20 {
        let e = engine.redeem_pairing("ZZZZ-ZZZZ").expect_err("wrong");
        assert!(!e.message.contains("burned"), "{}", e.message);
    }
    // Past its minute, the next wrong try burns it.
    clock.advance(overseer_store::devices::BURN_GRACE);
    let e = engine.redeem_pairing("ZZZZ-ZZZZ").expect_err("wrong");
    assert!(e.message.contains("burned"), "{}", e.message);
    let e = engine.redeem_pairing(&second.code).expect_err("burned");
    assert!(e.message.contains("burned"), "{}", e.message);
    let burns: i64 = db
        .query_row(
            "SELECT count(*) FROM audit_log WHERE payload LIKE '%pairing_codes_burned%'",
            [],
            |r| r.get(0),
        )
        .expect("audit");
    assert_eq!(burns, 1, "the burn is signed");
    engine.verify_audit().expect("read").expect("verifies");
}

/// Codes are kept under a key of the database: the stored hash is not the
/// code's plain SHA-256, and the database holds the key.
#[test]
fn pairing_codes_are_kept_under_a_keyed_hash() {
    use sha2::Digest;
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_on(dir.path(), TestClock::new());
    let pairing = engine
        .pair_device("ana", "Ana's phone", &Actor::cli())
        .expect("a code");
    let letters = pairing.code.replace('-', "");
    let db = rusqlite::Connection::open(engine.paths().db()).expect("db");
    let stored: String = db
        .query_row("SELECT code_hash FROM pairing_codes", [], |r| r.get(0))
        .expect("hash");
    let key: Vec<u8> = db
        .query_row("SELECT key FROM pairing_key", [], |r| r.get(0))
        .expect("key");
    assert_eq!(key.len(), 32);
    for unkeyed in [letters.clone(), format!("pairing-code:{letters}")] {
        assert_ne!(
            stored,
            hex::encode(sha2::Sha256::digest(unkeyed.as_bytes()))
        );
    }
    engine.redeem_pairing(&pairing.code).expect("pairs");
}

#[tokio::test]
async fn a_revoked_device_is_refused_at_once_and_subscribers_are_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_on(dir.path(), TestClock::new());
    let mut events = engine.subscribe();

    let paired = pair(&engine, "ana", "Ana's phone");
    let told = events.recv().await.expect("an event");
    assert_eq!(
        told,
        EngineEvent::DeviceChanged {
            device: paired.device.clone()
        }
    );
    let other = pair(&engine, "bo", "Bo's phone");
    let _ = events.recv().await.expect("bo's pairing");

    let revoked = engine
        .revoke_device_as(paired.device.id, &Actor::cli())
        .expect("revoked");
    assert!(revoked.revoked_at.is_some());
    // Refused from the moment the revocation returned.
    assert_eq!(
        engine
            .device_by_credential(&paired.credential)
            .expect("lookup"),
        None
    );
    match events.recv().await.expect("an event") {
        EngineEvent::DeviceChanged { device } => {
            assert_eq!(device.id, paired.device.id);
            assert!(device.revoked_at.is_some());
        }
        other => panic!("expected the revocation, got {other:?}"),
    }
    // The others go on.
    assert!(engine
        .device_by_credential(&other.credential)
        .expect("lookup")
        .is_some());
    // Listed, revoked.
    let listed = engine.list_devices().expect("list");
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].revoked_at, revoked.revoked_at);

    // Revoking again changes nothing; an unknown device is named.
    let again = engine
        .revoke_device_as(paired.device.id, &Actor::app())
        .expect("again");
    assert_eq!(again.revoked_at, revoked.revoked_at);
    let missing = engine
        .revoke_device_as(DeviceId(99), &Actor::cli())
        .expect_err("no such device");
    assert_eq!(missing.code, ErrorCode::NotFound);

    engine.verify_audit().expect("read").expect("verifies");
}

#[test]
fn only_the_local_owner_pairs_and_revokes_and_persons_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_on(dir.path(), TestClock::new());
    let ana = pair(&engine, "ana", "Ana's phone");
    let phone = ana.device.actor();

    let e = engine
        .pair_device("eve", "Eve's phone", &phone)
        .expect_err("a device cannot pair");
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(e.message.contains("Ana's phone"), "{}", e.message);
    let bo = pair(&engine, "bo", "Bo's phone");
    let e = engine
        .revoke_device_as(bo.device.id, &phone)
        .expect_err("a device cannot revoke");
    assert_eq!(e.code, ErrorCode::Forbidden);
    for not_owner in [
        Actor::User("ana".into()),
        Actor::Supervisor("rules".into()),
        Actor::Engine,
        Actor::Agent("demo".into()),
    ] {
        let e = engine
            .pair_device("eve", "Eve's phone", &not_owner)
            .expect_err("only the owner");
        assert_eq!(e.code, ErrorCode::Forbidden, "{not_owner}");
    }
    assert!(engine
        .device_by_credential(&bo.credential)
        .expect("lookup")
        .is_some());

    for (person, want) in [
        ("app", "reserved"),
        ("cli", "reserved"),
        ("Ana", "lowercase"),
        ("", "name the person"),
    ] {
        let e = engine
            .pair_device(person, "a phone", &Actor::cli())
            .expect_err(person);
        assert_eq!(e.code, ErrorCode::InvalidInput, "{person}");
        assert!(e.message.contains(want), "{person}: {}", e.message);
    }
    let e = engine
        .pair_device("ana", "  ", &Actor::cli())
        .expect_err("no name");
    assert_eq!(e.code, ErrorCode::InvalidInput);
}

/// Whatever transport carries a request (the socket, the browser's), the
/// contract's operations refuse a device that would pair or revoke.
#[test]
fn the_contract_refuses_a_device_pairing_or_revoking_whatever_carries_it() {
    use overseer_server::api::{Request, Route};
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_on(dir.path(), TestClock::new());
    let ana = pair(&engine, "ana", "Ana's phone");
    let call = |json: serde_json::Value, actor: &Actor| {
        let request: Request = serde_json::from_value(json).expect("a request");
        let Route::Call(call) = request.route() else {
            panic!("a call")
        };
        call.perform(&engine, actor)
    };
    let pair_eve = serde_json::json!({"method": "pair_device", "params": {"person": "eve", "name": "Eve's phone"}});
    let revoke_ana =
        serde_json::json!({"method": "revoke_device", "params": {"device": ana.device.id}});
    let e = call(pair_eve.clone(), &ana.device.actor()).expect_err("forbidden");
    assert_eq!(e.code, ErrorCode::Forbidden);
    let e = call(revoke_ana.clone(), &ana.device.actor()).expect_err("forbidden");
    assert_eq!(e.code, ErrorCode::Forbidden);
    // A device may list them (the window's Settings does, in a browser too).
    let listed = call(
        serde_json::json!({"method": "list_devices"}),
        &ana.device.actor(),
    )
    .expect("listed");
    assert_eq!(listed[0]["person"], "ana");

    let code = call(pair_eve, &Actor::app()).expect("the owner pairs");
    assert_eq!(code["code"].as_str().map(str::len), Some(9));
    let revoked = call(revoke_ana, &Actor::cli()).expect("the owner revokes");
    assert!(revoked["revoked_at"].is_number());
}

/// Adding a workspace is the owner's (the window, the CLI, a window's link
/// to a host): a paired device cannot point agents at another repository of
/// the machine; a relative path is refused, as the caller's working
/// directory is not the engine's.
#[test]
fn only_the_owner_adds_a_workspace_and_only_by_an_absolute_path() {
    use overseer_server::api::{Request, Route};
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_on(dir.path(), TestClock::new());
    let ana = pair(&engine, "ana", "Ana's phone");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .status()
            .expect("git");
        assert!(ok.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "-m",
        "init",
    ]);
    let call = |json: serde_json::Value, actor: &Actor| {
        let request: Request = serde_json::from_value(json).expect("a request");
        let Route::Call(call) = request.route() else {
            panic!("a call")
        };
        call.perform(&engine, actor)
    };
    let add = |path: &str| serde_json::json!({"method": "add_workspace", "params": {"path": path, "name": "mine"}});
    let path = repo.to_string_lossy().into_owned();
    let e = call(add(&path), &ana.device.actor()).expect_err("a device cannot add");
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(
        e.message.contains("`add_workspace`") && e.message.contains("only the owner"),
        "{}",
        e.message
    );
    let e = call(add("repo"), &Actor::app()).expect_err("relative");
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("absolute path"), "{}", e.message);
    assert!(
        engine.workspaces().expect("list").is_empty(),
        "nothing added"
    );
    let added = call(add(&path), &Actor::app()).expect("the window adds");
    assert_eq!(added["name"], "mine");
    assert_eq!(engine.workspaces().expect("list").len(), 1);
}

#[test]
fn a_person_through_a_device_lists_only_their_own_devices_the_owner_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_on(dir.path(), TestClock::new());
    let mut paired = Vec::new();
    for (person, name) in [("ana", "phone"), ("bo", "laptop"), ("ana", "tablet")] {
        let code = engine
            .pair_device(person, name, &Actor::cli())
            .expect("a code")
            .code;
        paired.push(engine.redeem_pairing(&code).expect("paired").device);
    }
    let names = |list: Vec<overseer_core::DeviceView>| -> Vec<String> {
        list.into_iter()
            .map(|d| format!("{}/{}", d.person, d.name))
            .collect()
    };
    let everyone = ["ana/phone", "bo/laptop", "ana/tablet"];
    assert_eq!(
        names(engine.list_devices_as(&Actor::cli()).expect("cli")),
        everyone
    );
    assert_eq!(
        names(engine.list_devices_as(&Actor::app()).expect("app")),
        everyone
    );
    assert_eq!(
        names(engine.list_devices_as(&paired[0].actor()).expect("ana")),
        ["ana/phone", "ana/tablet"]
    );
    assert_eq!(
        names(engine.list_devices_as(&paired[1].actor()).expect("bo")),
        ["bo/laptop"]
    );
    // An agent is no person: refused.
    let refused = engine
        .list_devices_as(&Actor::Agent("run-1".into()))
        .expect_err("an agent");
    assert_eq!(refused.code, ErrorCode::Forbidden);
}
