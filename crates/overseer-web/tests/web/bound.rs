//! A credential works only with both its halves, and only those of one
//! device: the cookie (which browsers send to, and let be set by, every
//! port of a host) and the half the page that paired keeps in its own
//! origin's storage (sent as `X-Overseer-Device`, and on the WebSocket as
//! an offered protocol). A real engine over real HTTP and WebSockets, with
//! what a page on another local port could have: the cookie it was sent,
//! an Origin it forges, a cookie of its own device it planted.

use crate::common;

use common::{refused_status, served, Served};
use serde_json::json;
use std::time::Duration;
use tokio_tungstenite::tungstenite;

/// Pairs a device for `person`: its cookie's half and its page's half.
fn pair(s: &Served, person: &str) -> (String, String) {
    let code = s
        .engine
        .start_pairing(person, &format!("{person}'s laptop"))
        .expect("a code")
        .code;
    let a = s.post(None, "/api/pair", &json!({ "code": code }));
    assert_eq!(a.status, 200, "{a:?}");
    let credential = common::pair_credential(&a).unwrap_or_else(|| panic!("two halves: {a:?}"));
    let (cookie, key) = credential.split_once('.').expect("two halves");
    (cookie.to_owned(), key.to_owned())
}

/// What `list_runs`, `/api/me` and the events socket each answer to a
/// request carrying `credential` (see `common::credential_headers`), from
/// the engine's own Origin (as a non-browser client can forge it).
fn answers(s: &Served, credential: &str) -> (u16, u16, Option<u16>) {
    let call = s.call(Some(credential), "list_runs", json!({}));
    let me = s.get(Some(credential), "/api/me");
    for refused in [&call, &me] {
        if refused.status == 401 {
            assert_eq!(refused.code(), "unauthorized", "{refused:?}");
            assert!(
                refused.body["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("pair it again")),
                "the refusal says what to do: {refused:?}"
            );
        }
    }
    let socket = match s.socket(Some(credential)) {
        Ok(_) => None,
        Err(e) => Some(refused_status(&e).unwrap_or(0)),
    };
    (call.status, me.status, socket)
}

#[test]
fn only_both_halves_of_one_device_act_as_it() {
    let s = served();
    let (cookie_a, key_a) = pair(&s, "ana");
    let (cookie_b, key_b) = pair(&s, "bo");
    assert_ne!(cookie_a, key_a);

    // Both halves of one device: it is that device, on calls and the socket.
    assert_eq!(
        answers(&s, &format!("{cookie_a}.{key_a}")),
        (200, 200, None)
    );
    let me = s.get(Some(&format!("{cookie_b}.{key_b}")), "/api/me");
    assert_eq!(me.body["device"]["person"], "bo", "{me:?}");

    let refused = (401, 401, Some(401));
    // The cookie alone (what another port of this host is sent), replayed
    // with the engine's own Origin forged: nobody.
    assert_eq!(answers(&s, &cookie_a), refused, "the cookie alone");
    // The page's half alone: nobody.
    assert_eq!(answers(&s, &format!(".{key_a}")), refused, "the key alone");
    // A cookie of one device with the other's half (a cookie planted by
    // another port, under the victim page's half): nobody, either way.
    assert_eq!(
        answers(&s, &format!("{cookie_b}.{key_a}")),
        refused,
        "B's cookie, A's key"
    );
    assert_eq!(
        answers(&s, &format!("{cookie_a}.{key_b}")),
        refused,
        "A's cookie, B's key"
    );
    // Halves swapped, a half twice, or the whole credential in one place.
    assert_eq!(
        answers(&s, &format!("{key_a}.{cookie_a}")),
        refused,
        "swapped"
    );
    assert_eq!(
        answers(&s, &format!("{cookie_a}.{cookie_a}")),
        refused,
        "cookie twice"
    );
    let whole = format!("{cookie_a}.{key_a}");
    assert_eq!(
        answers(&s, &whole.replace('.', "%2E")),
        refused,
        "whole as a cookie"
    );
    let a = s.post_from(Some(&s.base.clone()), None, "/api/call/list_runs", b"{}");
    assert_eq!(a.status, 401, "no credential at all: {a:?}");

    // Still A after all that.
    assert_eq!(answers(&s, &whole), (200, 200, None));
}

#[test]
fn pairing_gives_the_key_in_the_body_and_the_cookie_as_host_only_and_secure() {
    let s = served();
    let code = s.engine.start_pairing("ana", "laptop").expect("code").code;
    let a = s.post(None, "/api/pair", &json!({ "code": code }));
    assert_eq!(a.status, 200, "{a:?}");
    let key = a.body["key"].as_str().expect("the page's half in the body");
    assert_eq!(key.len(), 64, "32 random bytes, hex");
    assert_eq!(a.cookies.len(), 1, "{a:?}");
    let cookie = &a.cookies[0];
    assert!(
        cookie.starts_with("__Host-overseer_device="),
        "a __Host- cookie: {cookie}"
    );
    assert!(!cookie.contains(key), "the key is never in the cookie");
    assert!(
        !cookie.to_ascii_lowercase().contains("domain="),
        "host-only: {cookie}"
    );
    for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
        assert!(
            cookie.split("; ").any(|a| a == attribute),
            "{attribute} in {cookie}"
        );
    }
    // The answer is the page's alone: no CORS header lets another origin read it.
    assert!(
        !a.headers
            .iter()
            .any(|(k, _)| k.starts_with("access-control-")),
        "{a:?}"
    );
}

#[test]
fn the_socket_takes_the_key_as_an_offered_protocol_and_names_only_overseer_back() {
    use tungstenite::client::IntoClientRequest;
    let s = served();
    let (cookie, key) = pair(&s, "ana");
    let mut request = format!("ws://{}/api/events", s.addr)
        .into_client_request()
        .expect("request");
    request
        .headers_mut()
        .insert("origin", s.base.parse().expect("origin"));
    common::socket_credential(&mut request, &format!("{cookie}.{key}"));
    let (mut socket, response) =
        s.rt.block_on(tokio_tungstenite::connect_async(request))
            .expect("the socket opens with both halves");
    assert_eq!(
        response
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok()),
        Some("overseer"),
        "the server picks `overseer`, never echoes the key"
    );
    match s.next_frame(&mut socket, Duration::from_secs(10)) {
        common::Frame::Json(hello) => assert_eq!(hello["channel"], "overseer://hello"),
        other => panic!("no hello: {other:?}"),
    }
    // The key in a header of its own works on an upgrade too (a non-browser
    // client); the cookie alone with a forged Origin does not.
    let e = s.socket(Some(&cookie)).expect_err("the cookie alone");
    assert_eq!(refused_status(&e), Some(401), "{e}");
}

/// The key's header carrying the whole credential, or junk, is no key.
#[test]
fn a_malformed_key_is_refused_as_unpaired() {
    let s = served();
    let (cookie, key) = pair(&s, "ana");
    for junk in [
        format!("{cookie}.{key}"),
        "not hex at all".to_owned(),
        "a".repeat(8 * 1024),
        format!("{key}{key}"),
    ] {
        let a = s.post_from(
            Some(&s.base.clone()),
            Some(&format!("{cookie}.{junk}")),
            "/api/call/list_runs",
            b"{}",
        );
        assert_eq!((a.status, a.code()), (401, "unauthorized"), "{a:?}");
    }
}
