//! How loudly the user is told of an inbox item, per item kind (PRODUCT.md,
//! the unified inbox): a `blocking` ask always at `critical`, a `question`
//! and an `info` item at the urgency the user chose (Settings, or
//! `[notifications.urgency]` in `overseer.toml`).

use crate::error::FieldError;
use crate::gate::AskKind;
use serde::{Deserialize, Serialize};

/// How loudly a notification is sent: the OS notification's urgency, a
/// webhook's priority. `silent` sends nothing: the item is in the inbox
/// only. Ordered from the quietest.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum Urgency {
    Silent,
    Low,
    Normal,
    Critical,
}

impl Urgency {
    pub const ALL: [Urgency; 4] = [
        Urgency::Critical,
        Urgency::Normal,
        Urgency::Low,
        Urgency::Silent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Urgency::Silent => "silent",
            Urgency::Low => "low",
            Urgency::Normal => "normal",
            Urgency::Critical => "critical",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|u| u.as_str() == s)
    }

    /// The freedesktop notification `urgency` hint (0 low, 1 normal, 2
    /// critical); None: not shown at all.
    pub fn desktop_hint(self) -> Option<u8> {
        match self {
            Urgency::Silent => None,
            Urgency::Low => Some(0),
            Urgency::Normal => Some(1),
            Urgency::Critical => Some(2),
        }
    }

    /// A webhook's `X-Priority` (ntfy's 1 to 5); None: not sent.
    pub fn webhook_priority(self) -> Option<u8> {
        match self {
            Urgency::Silent => None,
            Urgency::Low => Some(2),
            Urgency::Normal => Some(3),
            Urgency::Critical => Some(4),
        }
    }
}

/// The urgency the user chose per inbox item kind; None: as the
/// notification's kind says (critical for what stops an agent or the runs,
/// normal otherwise). `blocking` can only be `critical`: an agent is stopped
/// until the user answers, so it is never sent more quietly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct UrgencySettings {
    #[serde(default)]
    pub blocking: Option<Urgency>,
    #[serde(default)]
    pub question: Option<Urgency>,
    #[serde(default)]
    pub info: Option<Urgency>,
}

impl UrgencySettings {
    /// A blocking urgency other than critical, by its place (`blocking`).
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        match self.blocking {
            Some(u) if u != Urgency::Critical => Err(vec![FieldError::new(
                "blocking",
                format!(
                    "blocking asks are always sent as critical, not {}: an agent is stopped until you answer",
                    u.as_str()
                ),
            )]),
            _ => Ok(()),
        }
    }

    /// These choices, each falling back to `under`'s where unset.
    pub fn over(self, under: UrgencySettings) -> UrgencySettings {
        UrgencySettings {
            blocking: self.blocking.or(under.blocking),
            question: self.question.or(under.question),
            info: self.info.or(under.info),
        }
    }

    /// The urgency of an item of kind `ask` told as `default` would be:
    /// a blocking ask is always critical; a question or info item as
    /// chosen, else `default`.
    pub fn of(&self, ask: AskKind, default: Urgency) -> Urgency {
        match ask {
            AskKind::Blocking => Urgency::Critical,
            AskKind::Question => self.question.unwrap_or(default),
            AskKind::Info => self.info.unwrap_or(default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocking_ask_is_always_critical_and_cannot_be_set_lower() {
        let chosen = UrgencySettings {
            question: Some(Urgency::Low),
            info: Some(Urgency::Silent),
            ..Default::default()
        };
        assert_eq!(
            chosen.of(AskKind::Blocking, Urgency::Normal),
            Urgency::Critical
        );
        assert_eq!(
            chosen.of(AskKind::Question, Urgency::Critical),
            Urgency::Low
        );
        assert_eq!(chosen.of(AskKind::Info, Urgency::Normal), Urgency::Silent);
        assert_eq!(
            UrgencySettings::default().of(AskKind::Question, Urgency::Critical),
            Urgency::Critical,
            "unset: as the notification's kind says"
        );
        let lowered = UrgencySettings {
            blocking: Some(Urgency::Low),
            ..Default::default()
        };
        let err = lowered.validate().expect_err("blocking cannot be lowered");
        assert_eq!(err[0].field, "blocking");
        assert!(UrgencySettings {
            blocking: Some(Urgency::Critical),
            ..Default::default()
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn the_users_choice_goes_over_the_configured_one() {
        let settings = UrgencySettings {
            question: Some(Urgency::Low),
            ..Default::default()
        };
        let config = UrgencySettings {
            question: Some(Urgency::Critical),
            info: Some(Urgency::Silent),
            ..Default::default()
        };
        let both = settings.over(config);
        assert_eq!(both.question, Some(Urgency::Low));
        assert_eq!(both.info, Some(Urgency::Silent));
        for u in Urgency::ALL {
            assert_eq!(Urgency::parse(u.as_str()), Some(u));
        }
    }
}
