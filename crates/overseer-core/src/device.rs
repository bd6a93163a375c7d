//! Paired devices: browsers and phones that act for a person.
//!
//! A device is never trusted by its address: it is paired once with a
//! one-time code the local owner shows (the window, `overseer devices
//! pair`), and from then on presents the credential it got in exchange.
//! Each device belongs to a person (`ana`); what it decides is recorded as
//! `user:ana`, with the device in the signed record. The local owner keeps
//! `user:app` and `user:cli`, whose names no person may take.

pub use crate::actor::{DeviceRef, RESERVED_PERSONS};
use crate::{Actor, DeviceId, Millis};
use serde::{Deserialize, Serialize};

/// Longest person name.
pub const PERSON_MAX: usize = 32;

/// Longest device name.
pub const DEVICE_NAME_MAX: usize = 64;

/// The letters a pairing code is made of: no 0/O, 1/I/L, which read alike.
pub const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// Letters in a pairing code (shown as two groups of four: `ABCD-EFGH`).
pub const CODE_LEN: usize = 8;

/// A paired device, as the window, the CLI and the web transport show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct DeviceView {
    pub id: DeviceId,
    /// Who it acts for: its decisions are recorded as `user:<person>`.
    pub person: String,
    /// What the owner called it when pairing ("Ana's phone").
    pub name: String,
    pub created_at: Millis,
    /// When it last made a request (refreshed at most once a minute).
    pub last_seen_at: Option<Millis>,
    /// When it was revoked: from then on it is refused.
    pub revoked_at: Option<Millis>,
    /// What its person may do (the owner gives it; a person with none
    /// recorded only reads).
    #[serde(default = "crate::role::Grant::nothing")]
    pub grant: crate::role::Grant,
}

impl DeviceView {
    /// What a request from this device acts as: its person, through it.
    pub fn actor(&self) -> Actor {
        Actor::Person {
            person: self.person.clone(),
            device: self.reference(),
        }
    }

    /// The device as a decision names it.
    pub fn reference(&self) -> DeviceRef {
        DeviceRef {
            id: self.id,
            name: self.name.clone(),
        }
    }

    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
}

/// ` through Ana's phone (device 3)`, or nothing without a device: what
/// follows an actor where a decision is shown.
pub fn through(device: Option<&DeviceRef>) -> String {
    device.map_or_else(String::new, |d| format!(" through {d}"))
}

/// An actor as a person reads it, with the device it acted through:
/// `user:ana through Ana's phone (device 3)`, `user:cli`.
pub fn actor_text(actor: &Actor) -> String {
    format!("{actor}{}", through(actor.device()))
}

/// A person through a device when the record names one, else the actor as
/// recorded (`user:ana` read back from a row is that person).
pub fn actor_through(actor: Actor, device: Option<DeviceRef>) -> Actor {
    match (actor, device) {
        (Actor::User(person), Some(device)) => Actor::Person { person, device },
        (actor, _) => actor,
    }
}

/// A person's name as given, checked: 1 to 32 of `a-z`, `0-9`, `-`, `_`,
/// starting with a letter, and not `app` or `cli` (the local owner's).
pub fn check_person(name: &str) -> Result<String, String> {
    let name = name.trim();
    let hint =
        "a person is a short lowercase name such as `ana`: letters a-z, digits, `-` or `_`, \
                starting with a letter";
    if name.is_empty() {
        return Err(format!("name the person the device is for: {hint}"));
    }
    if name.len() > PERSON_MAX {
        return Err(format!(
            "person `{name}` is longer than {PERSON_MAX} characters: {hint}"
        ));
    }
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    if !first_ok
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return Err(format!("person `{name}` is not a valid name: {hint}"));
    }
    if RESERVED_PERSONS.contains(&name) {
        return Err(format!(
            "person `{name}` is reserved for the local owner (the window is user:app, the CLI \
             user:cli): name the person who will use the device, such as `ana`"
        ));
    }
    Ok(name.to_owned())
}

/// A device's name as given, checked: 1 to 64 characters, no control
/// characters.
pub fn check_device_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(
            "name the device, so that it can be told apart when listed (e.g. \"Ana's phone\")"
                .to_owned(),
        );
    }
    if name.chars().count() > DEVICE_NAME_MAX {
        return Err(format!(
            "a device name is at most {DEVICE_NAME_MAX} characters; give a shorter one"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(
            "a device name cannot hold control characters (newlines, tabs): give plain text"
                .to_owned(),
        );
    }
    Ok(name.to_owned())
}

/// A pairing code as typed (any case, with or without the dash or spaces),
/// as its letters; `None` when it cannot be a code at all.
pub fn normalize_code(typed: &str) -> Option<String> {
    let letters: String = typed
        .chars()
        .filter(|c| !matches!(c, '-' | ' ' | '\t'))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (letters.len() == CODE_LEN && letters.bytes().all(|b| CODE_ALPHABET.contains(&b)))
        .then_some(letters)
}

/// A code's letters as shown: `ABCD-EFGH`.
pub fn show_code(letters: &str) -> String {
    let (a, b) = letters.split_at(letters.len() / 2);
    format!("{a}-{b}")
}

/// A time as a person reads it, in UTC: `2026-11-27 04:05:06 UTC`.
pub fn utc_text(at: Millis) -> String {
    let secs = at.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_is_a_short_lowercase_name_and_never_the_local_owners() {
        assert_eq!(check_person(" ana "), Ok("ana".to_owned()));
        assert_eq!(check_person("bo-2_x"), Ok("bo-2_x".to_owned()));
        for bad in [
            "",
            "Ana",
            "2ana",
            "ana smith",
            "ana:x",
            "élan",
            &"a".repeat(33),
        ] {
            let err = check_person(bad).expect_err(bad);
            assert!(err.contains("such as `ana`"), "{bad}: {err}");
        }
        for owner in ["app", "cli"] {
            let err = check_person(owner).expect_err(owner);
            assert!(err.contains("reserved for the local owner"), "{err}");
        }
    }

    #[test]
    fn a_device_name_is_short_plain_text() {
        assert_eq!(
            check_device_name(" Ana's phone "),
            Ok("Ana's phone".to_owned())
        );
        assert!(check_device_name("  ").is_err());
        assert!(check_device_name("a\nb").is_err());
        assert!(check_device_name(&"x".repeat(65)).is_err());
    }

    #[test]
    fn codes_are_read_as_typed_and_shown_in_two_groups() {
        assert_eq!(normalize_code("abcd-efgh"), Some("ABCDEFGH".to_owned()));
        assert_eq!(normalize_code(" ABCD EFGH "), Some("ABCDEFGH".to_owned()));
        assert_eq!(normalize_code("ABCD-EFG"), None);
        // 0, O, 1, I, L are not in the alphabet: they read alike.
        assert_eq!(normalize_code("ABCD-EFG0"), None);
        assert_eq!(normalize_code("ABCD-EFGI"), None);
        assert_eq!(show_code("ABCDEFGH"), "ABCD-EFGH");
    }

    #[test]
    fn a_devices_actor_is_its_person_through_it() {
        let d = DeviceView {
            id: DeviceId(3),
            person: "ana".into(),
            name: "Ana's phone".into(),
            created_at: 1,
            last_seen_at: None,
            revoked_at: None,
            grant: crate::role::Grant::nothing(),
        };
        let actor = d.actor();
        assert_eq!(actor.to_string(), "user:ana");
        assert!(actor.is_user());
        assert_eq!(actor.device(), Some(&d.reference()));
    }

    #[test]
    fn times_read_in_utc() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_text(1_795_752_306_000), "2026-11-27 04:05:06 UTC");
    }
}
