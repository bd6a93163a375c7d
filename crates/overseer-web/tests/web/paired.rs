//! A paired browser against a real engine, over real HTTP and a real
//! WebSocket: its calls act as its device's person, it gets the engine's
//! events, and it is cut off at once when revoked; a browser that never
//! reads its events is dropped while another is served.

use crate::common;

use common::{refused_status, served, served_beating, Frame, Served};
use overseer_core::message::MessageTo;
use overseer_core::Actor;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Pairs a browser for `person` through `POST /api/pair` with a code the
/// engine made: its credential (the cookie's half and the page's, joined
/// as `common`'s helpers take it) and its device.
fn pair(s: &Served, person: &str, name: &str) -> (String, Value) {
    let pairing = s
        .engine
        .start_pairing(person, name)
        .expect("a pairing code");
    let a = s.post(None, "/api/pair", &json!({ "code": pairing.code }));
    assert_eq!(a.status, 200, "{a:?}");
    let cookie = a
        .cookies
        .iter()
        .find(|c| c.starts_with(&format!("{}=", common::COOKIE)))
        .unwrap_or_else(|| panic!("no device cookie: {a:?}"));
    for attribute in [
        "HttpOnly",
        "Secure",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=34560000",
    ] {
        assert!(
            cookie.split("; ").any(|a| a == attribute),
            "{attribute} in {cookie}"
        );
    }
    let credential = common::pair_credential(&a).unwrap_or_else(|| panic!("no credential: {a:?}"));
    (credential, a.body["device"].clone())
}

fn device_id(device: &Value) -> overseer_core::DeviceId {
    serde_json::from_value(device["id"].clone()).expect("device id")
}

#[test]
fn after_pairing_a_decision_through_the_web_is_recorded_as_the_devices_person() {
    let s = served();
    let (cookie, device) = pair(&s, "ana", "Ana's phone");
    let me = s.get(Some(&cookie), "/api/me");
    assert_eq!(me.status, 200, "{me:?}");
    assert_eq!(me.body["device"]["id"], device["id"]);
    assert_eq!(me.body["device"]["person"], "ana");

    s.engine
        .seed_demo(&Actor::cli(), false)
        .expect("demo fleet");
    let page = s.call(Some(&cookie), "list_gates", json!({ "pendingOnly": true }));
    assert_eq!(page.status, 200, "{page:?}");
    let gate = page.body["gates"]
        .as_array()
        .and_then(|g| g.first())
        .cloned()
        .unwrap_or_else(|| panic!("a pending gate: {page:?}"));
    let gate_id = gate["id"].as_i64().expect("gate id");
    let option = gate["options"][0]["id"].clone();
    let decided = s.call(
        Some(&cookie),
        "decide_gate",
        json!({ "gateId": gate_id, "option": option, "context": "from the phone" }),
    );
    assert_eq!(decided.status, 200, "{decided:?}");

    let view = s
        .engine
        .gate(overseer_core::GateId(gate_id))
        .expect("the gate");
    let decision = view.decision.expect("decided");
    let ana = s
        .engine
        .list_devices()
        .expect("devices")
        .into_iter()
        .find(|d| d.id == device_id(&device))
        .expect("ana's phone");
    assert_eq!(
        decision.actor,
        ana.actor(),
        "recorded as the device's person, through the device"
    );
    assert_eq!(decision.actor.to_string(), "user:ana");
    assert_eq!(ana.actor().user_name(), Some("ana"));
    assert!(
        matches!(s.engine.verify_audit(), Ok(Ok(_))),
        "the signed record verifies"
    );

    // Deciding it again: the engine's own error, with its status.
    let again = s.call(
        Some(&cookie),
        "decide_gate",
        json!({ "gateId": gate_id, "option": option, "context": null }),
    );
    assert_eq!(again.status, 409, "{again:?}");
    assert!(
        ["already_decided", "invalid_transition"].contains(&again.code()),
        "{again:?}"
    );
    let missing = s.call(Some(&cookie), "show_gate", json!({ "gateId": 999_999 }));
    assert_eq!(
        (missing.status, missing.code()),
        (404, "not_found"),
        "{missing:?}"
    );
}

#[test]
fn malformed_json_or_args_from_a_paired_browser_get_400() {
    let s = served();
    let (cookie, _) = pair(&s, "ana", "laptop");
    for (command, body) in [
        ("list_runs", &b"{not json"[..]),
        ("show_gate", br#"{"gateId": "four"}"#),
        ("show_gate", br#"{}"#),
        ("list_gates", br#"[true]"#),
    ] {
        let a = s.post_from(
            Some(&s.base),
            Some(&cookie),
            &format!("/api/call/{command}"),
            body,
        );
        assert_eq!(
            (a.status, a.code()),
            (400, "invalid_input"),
            "{command}: {a:?}"
        );
        assert!(
            a.body["message"]
                .as_str()
                .is_some_and(|m| m.contains(command)),
            "{a:?}"
        );
    }
    // The events socket opened as a page: the contract's error.
    let a = s.get(Some(&cookie), "/api/events");
    assert_eq!((a.status, a.code()), (400, "invalid_input"), "{a:?}");
    // No body at all is `{}` for a command without arguments.
    let a = s.post_from(Some(&s.base), Some(&cookie), "/api/call/list_runs", b"");
    assert_eq!(a.status, 200, "{a:?}");
}

#[test]
fn the_socket_says_hello_then_pushes_the_engines_events_in_commit_order() {
    let s = served();
    let (cookie, _) = pair(&s, "ana", "laptop");
    let mut socket = s.socket(Some(&cookie)).expect("socket");
    let Frame::Json(hello) = s.next_frame(&mut socket, Duration::from_secs(5)) else {
        panic!("no hello")
    };
    assert_eq!(hello["channel"], "overseer://hello");
    let engine_id = hello["payload"]["engine"]
        .as_str()
        .expect("engine id")
        .to_owned();
    assert!(!engine_id.is_empty());

    for n in 0..3 {
        s.engine
            .send_message(
                MessageTo::Broadcast,
                &format!("note {n}"),
                None,
                &Actor::cli(),
            )
            .expect("message");
    }
    for n in 0..3 {
        let Frame::Json(frame) = s.next_frame(&mut socket, Duration::from_secs(5)) else {
            panic!("event {n} did not arrive")
        };
        assert_eq!(frame["channel"], "overseer://event", "{frame}");
        assert_eq!(frame["payload"]["type"], "message_posted", "{frame}");
        assert_eq!(frame["payload"]["message"]["body"], format!("note {n}"));
    }
    // Another socket of the same engine process names the same engine.
    let mut other = s.socket(Some(&cookie)).expect("socket");
    let Frame::Json(hello) = s.next_frame(&mut other, Duration::from_secs(5)) else {
        panic!("no hello")
    };
    assert_eq!(hello["payload"]["engine"], engine_id.as_str());
}

#[test]
fn a_revoked_device_is_refused_at_once_and_its_socket_closed_with_4401() {
    let s = served();
    let (cookie, device) = pair(&s, "ana", "Ana's phone");
    let (other, _) = pair(&s, "bo", "Bo's laptop");
    let mut socket = s.socket(Some(&cookie)).expect("socket");
    let mut bystander = s.socket(Some(&other)).expect("socket");
    for socket in [&mut socket, &mut bystander] {
        assert!(matches!(
            s.next_frame(socket, Duration::from_secs(5)),
            Frame::Json(_)
        ));
    }
    assert_eq!(s.call(Some(&cookie), "list_runs", json!({})).status, 200);

    let revoked_at = Instant::now();
    s.engine.revoke_device(device_id(&device)).expect("revoke");
    // Its socket is closed with 4401, after whatever was already queued.
    let closed = loop {
        match s.next_frame(&mut socket, Duration::from_secs(5)) {
            Frame::Json(_) => continue,
            other => break other,
        }
    };
    assert!(matches!(closed, Frame::Ended(Some(4401))), "{closed:?}");
    assert!(revoked_at.elapsed() < Duration::from_secs(2));
    let a = s.call(Some(&cookie), "list_runs", json!({}));
    assert_eq!((a.status, a.code()), (401, "unauthorized"), "{a:?}");
    assert_eq!(s.get(Some(&cookie), "/api/me").status, 401);
    let e = s.socket(Some(&cookie)).expect_err("refused");
    assert_eq!(refused_status(&e), Some(401));

    // Another device is unaffected: still served.
    assert_eq!(s.call(Some(&other), "list_runs", json!({})).status, 200);
    s.engine
        .send_message(MessageTo::Broadcast, "still here", None, &Actor::cli())
        .expect("message");
    let mut seen = false;
    while let Frame::Json(frame) = s.next_frame(&mut bystander, Duration::from_secs(5)) {
        if frame["payload"]["message"]["body"] == "still here" {
            seen = true;
            break;
        }
    }
    assert!(seen, "the other device's socket stays open");
}

/// Opens a socket whose receive buffer is 4 KiB and never reads it.
fn sleeping_socket(s: &Served, cookie: &str) -> common::Socket {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    s.rt.block_on(async {
        let tcp = tokio::net::TcpSocket::new_v4().expect("socket");
        tcp.set_recv_buffer_size(4096).expect("rcvbuf");
        let stream = tcp.connect(s.addr).await.expect("connect");
        let mut request = format!("ws://{}/api/events", s.addr)
            .into_client_request()
            .expect("request");
        request
            .headers_mut()
            .insert("origin", s.base.parse().expect("origin"));
        common::socket_credential(&mut request, cookie);
        let (socket, _) = tokio_tungstenite::client_async(
            request,
            tokio_tungstenite::MaybeTlsStream::Plain(stream),
        )
        .await
        .expect("upgrade");
        socket
    })
}

#[test]
fn a_browser_that_never_reads_is_dropped_while_another_is_served() {
    let s = served();
    let (cookie, _) = pair(&s, "ana", "sleeping phone");
    let (awake, _) = pair(&s, "bo", "laptop");
    let mut sleeping = sleeping_socket(&s, &cookie);
    let mut reader = s.socket(Some(&awake)).expect("socket");
    // The awake browser reads everything, on its own task.
    // More than the server's socket buffer (4 MiB at most here) and the
    // socket's queue can hold.
    let count = 600;
    let read = s.rt.spawn(async move {
        use futures::StreamExt;
        let mut bodies = Vec::new();
        while bodies.len() < count {
            match tokio::time::timeout(Duration::from_secs(20), reader.next()).await {
                Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t)))) => {
                    let v: Value = serde_json::from_str(&t).expect("json");
                    if let Some(b) = v["payload"]["message"]["body"].as_str() {
                        bodies.push(b.to_owned());
                    }
                }
                Ok(Some(Ok(_))) => {}
                other => panic!("the awake browser lost its socket: {other:?}"),
            }
        }
        bodies
    });
    let filler = "x".repeat(30_000);
    let started = Instant::now();
    for n in 0..count {
        s.engine
            .send_message(
                MessageTo::Broadcast,
                &format!("{n} {filler}"),
                None,
                &Actor::cli(),
            )
            .expect("message");
    }
    let posted = started.elapsed();
    let bodies = s.rt.block_on(read).expect("reader");
    let expected: Vec<String> = (0..count).map(|n| format!("{n} {filler}")).collect();
    assert!(
        bodies == expected,
        "the awake browser got every event in order"
    );
    // Once it has taken nothing for the send timeout, the sleeping one,
    // reading at last, finds its socket closed after what was already on its
    // way: far fewer events than were sent.
    std::thread::sleep(overseer_web::events::SEND_TIMEOUT + Duration::from_secs(1));
    let mut got = 0;
    let ended = loop {
        match s.next_frame(&mut sleeping, Duration::from_secs(15)) {
            Frame::Json(_) => got += 1,
            other => break other,
        }
    };
    assert!(
        matches!(ended, Frame::Ended(_)),
        "dropped: {ended:?} after {got} events"
    );
    assert!(got < count / 2, "dropped early: it had {got} of {count}");
    println!(
        "{count} events of 30 KB posted in {posted:?}; the sleeping browser was dropped after {got}"
    );
}

#[test]
fn a_flood_of_calls_is_refused_with_429_and_everyone_is_served_after() {
    let s = served();
    let (cookie, _) = pair(&s, "ana", "laptop");
    s.engine
        .seed_demo(&Actor::cli(), false)
        .expect("demo fleet");
    // Fewer than this machine's 256 connections (every loopback address is
    // one), more than the 32 calls served at once.
    let clients = 100;
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..clients)
            .map(|n| {
                let (s, cookie) = (&s, &cookie);
                let source = format!("127.0.0.{}", 1 + n % 4);
                scope.spawn(move || {
                    (0..5)
                        .map(|_| s.call_from(&source, cookie, "list_runs", json!({})))
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("client"))
            .collect()
    });
    let refused = statuses.iter().filter(|&&c| c == 429).count();
    let served = statuses.iter().filter(|&&c| c == 200).count();
    assert_eq!(refused + served, statuses.len(), "{statuses:?}");
    assert!(refused > 0, "{clients} clients at once: some refused");
    assert!(served > 0);
    // The flood over, the engine answers at once.
    let started = Instant::now();
    assert_eq!(s.call(Some(&cookie), "list_runs", json!({})).status, 200);
    assert!(started.elapsed() < Duration::from_secs(2));
    println!("{clients} clients x 5 calls: {served} served, {refused} refused with 429");
}

// Wrong codes per address, and burns sparing a code's first minute:
// `flood.rs` (every loopback address is one address now).

/// Adding a workspace is the owner's: a browser cannot point the
/// engine's agents at another repository of its machine.
#[test]
fn a_paired_browser_cannot_add_a_workspace() {
    let s = served();
    let (cookie, _) = pair(&s, "ana", "phone");
    let repo = s.engine.paths().data_dir.clone();
    let a = s.call(
        Some(&cookie),
        "add_workspace",
        json!({ "path": repo, "name": "theirs", "settings": { "sensors": [], "auto_advance": null } }),
    );
    assert_eq!((a.status, a.code()), (403, "forbidden"), "{a:?}");
    assert!(s.engine.workspaces().expect("list").is_empty());
}

#[test]
fn a_paired_browser_cannot_pair_more_devices_or_revoke_one() {
    let s = served();
    let (cookie, _) = pair(&s, "ana", "phone");
    let (_, other) = pair(&s, "bo", "laptop");
    let a = s.call(
        Some(&cookie),
        "pair_device",
        json!({ "person": "mallory", "name": "another" }),
    );
    assert_eq!((a.status, a.code()), (403, "forbidden"), "{a:?}");
    let a = s.call(
        Some(&cookie),
        "revoke_device",
        json!({ "deviceId": other["id"] }),
    );
    assert_eq!((a.status, a.code()), (403, "forbidden"), "{a:?}");
    assert!(s
        .engine
        .list_devices()
        .expect("devices")
        .iter()
        .all(|d| d.revoked_at.is_none() && d.person != "mallory"));
    // Listing is a read: allowed.
    assert_eq!(s.call(Some(&cookie), "list_devices", json!({})).status, 200);
}

#[test]
fn pairing_codes_name_the_address_while_it_serves_and_not_after() {
    let s = served();
    let url = s
        .engine
        .start_pairing("ana", "phone")
        .expect("code")
        .url
        .expect("the served address");
    assert_eq!(url, s.base);
    drop(s.rt);
    assert_eq!(
        s.engine.start_pairing("ana", "phone").expect("code").url,
        None
    );
}

#[test]
fn a_paired_browser_lists_and_hears_of_only_its_own_persons_devices() {
    let s = served();
    let (ana, _) = pair(&s, "ana", "phone");
    pair(&s, "bo", "laptop");
    pair(&s, "ana", "tablet");
    let a = s.call(Some(&ana), "list_devices", json!({}));
    assert_eq!(a.status, 200, "{a:?}");
    let listed: Vec<String> = a
        .body
        .as_array()
        .expect("a list")
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["person"].as_str().unwrap_or("?"),
                d["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    assert_eq!(listed, ["ana/phone", "ana/tablet"]);
    // The owner sees everyone's.
    assert_eq!(s.engine.list_devices().expect("devices").len(), 3);

    // Nor is ana's socket told of bo's next device; of her own, it is.
    let mut socket = s.socket(Some(&ana)).expect("socket");
    assert!(matches!(
        s.next_frame(&mut socket, Duration::from_secs(5)),
        Frame::Json(_)
    ));
    pair(&s, "bo", "second laptop");
    pair(&s, "ana", "watch");
    let Frame::Json(frame) = s.next_frame(&mut socket, Duration::from_secs(5)) else {
        panic!("no event")
    };
    assert_eq!(frame["payload"]["type"], "device_changed", "{frame}");
    assert_eq!(frame["payload"]["device"]["name"], "watch", "{frame}");
}

#[test]
fn the_socket_beats_and_a_browser_that_falls_silent_is_dropped() {
    let beat = Duration::from_millis(300);
    let s = served_beating(beat);
    let (cookie, _) = pair(&s, "ana", "phone");

    // A browser that reads (and so answers the pings) hears a heartbeat
    // every interval, and is kept for many intervals.
    let mut awake = s.socket(Some(&cookie)).expect("socket");
    let Frame::Json(hello) = s.next_frame(&mut awake, Duration::from_secs(5)) else {
        panic!("no hello")
    };
    assert_eq!(hello["payload"]["heartbeat"], 300, "{hello}");
    let listened = Instant::now();
    let mut beats = 0;
    while listened.elapsed() < beat * 10 {
        match s.next_frame(&mut awake, beat * 3) {
            Frame::Json(f) if f["channel"] == "overseer://heartbeat" => beats += 1,
            Frame::Json(f) => panic!("not a heartbeat: {f}"),
            other => panic!("a browser that answers was dropped after {beats} beats: {other:?}"),
        }
    }
    assert!(beats >= 7, "{beats} heartbeats in 10 intervals");

    // One that stops reading (a phone gone from the network: no pong) is
    // dropped once it has been silent for 2.5 intervals, though its
    // buffers are far from full.
    let mut gone = s.socket(Some(&cookie)).expect("socket");
    assert!(matches!(
        s.next_frame(&mut gone, Duration::from_secs(5)),
        Frame::Json(_)
    ));
    std::thread::sleep(beat * 6);
    let woke = Instant::now();
    let ended = loop {
        match s.next_frame(&mut gone, beat * 3) {
            Frame::Json(_) if woke.elapsed() < beat * 10 => continue,
            other => break other,
        }
    };
    assert!(
        matches!(ended, Frame::Ended(_)),
        "the silent browser is still served: {ended:?}"
    );
}

#[test]
fn one_device_holds_at_most_eight_event_sockets_and_a_closed_one_frees_its_place() {
    let s = served();
    let (cookie, _) = pair(&s, "ana", "Ana's phone");
    let (other, _) = pair(&s, "bo", "Bo's laptop");
    let mut open: Vec<common::Socket> = (0..8)
        .map(|_| s.socket(Some(&cookie)).expect("socket"))
        .collect();
    for socket in &mut open {
        assert!(matches!(
            s.next_frame(socket, Duration::from_secs(5)),
            Frame::Json(_)
        ));
    }
    // The ninth is refused, saying why; another device is not held back.
    let e = s.socket(Some(&cookie)).expect_err("a ninth socket");
    assert_eq!(refused_status(&e), Some(429), "{e:?}");
    let mut bos = s.socket(Some(&other)).expect("another device's socket");
    assert!(matches!(
        s.next_frame(&mut bos, Duration::from_secs(5)),
        Frame::Json(_)
    ));
    // One closed (a tab shut): its place is free again.
    drop(open.pop().expect("a socket"));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut again = loop {
        match s.socket(Some(&cookie)) {
            Ok(socket) => break socket,
            Err(e) => {
                assert_eq!(refused_status(&e), Some(429), "{e:?}");
                assert!(
                    Instant::now() < deadline,
                    "the closed socket's place never came back"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    assert!(matches!(
        s.next_frame(&mut again, Duration::from_secs(5)),
        Frame::Json(_)
    ));
}
