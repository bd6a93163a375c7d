//! `overseer devices pair|list|revoke`: browsers and phones that act for a
//! person. Pairing shows a one-time code (and, when the engine serves
//! browsers, its address as a QR code); the browser exchanges the code for
//! its own credential. `overseer people list|set`: what each person may do
//! (approver in some workspaces or all, or observer).

use crate::output::{age, inert};
use crate::{act, now_ms};
use clap::Subcommand;
use overseer_core::device::utc_text;
use overseer_core::{DeviceId, DeviceView, Role};
use overseer_engine::people::PersonView;
use overseer_engine::{Pairing, Paths};
use overseer_server::api::op;
use std::fmt::Write;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum DevicesCommand {
    /// A one-time code (5 minutes) that pairs a browser or phone for a person
    Pair {
        /// What to call the device when it is listed ("Ana's phone")
        #[arg(long)]
        name: String,
        /// Who it acts for: a short lowercase name (its decisions are
        /// recorded as user:NAME) [default: your login name]
        #[arg(long)]
        person: Option<String>,
        /// The person's role: approver (decides gates and reviews runs in
        /// the workspaces granted) or observer (reads only) [default: keep
        /// theirs; a new person is an approver of every workspace]
        #[arg(long)]
        role: Option<String>,
        /// A workspace an approver decides in (repeat for more) [default:
        /// every workspace]
        #[arg(long = "workspace")]
        workspaces: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Every paired device, revoked ones too, with when each was last seen
    List {
        #[arg(long)]
        json: bool,
    },
    /// Refuse a device from now on (its open pages are closed)
    Revoke {
        /// The device's id (see `overseer devices list`)
        device: DeviceId,
    },
}

pub async fn devices(paths: &Paths, cmd: DevicesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DevicesCommand::Pair {
            name,
            person,
            role,
            workspaces,
            json,
        } => {
            let person = match person {
                Some(p) => p,
                None => login_name()?,
            };
            let role = role.as_deref().map(parse_role).transpose()?;
            let workspaces = (!workspaces.is_empty()).then_some(workspaces);
            let pairing: Pairing = act(
                paths,
                op::PairDevice {
                    person,
                    name,
                    role,
                    workspaces,
                },
            )
            .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&pairing)?);
            } else {
                print!("{}", pairing_text(&pairing, now_ms()));
            }
        }
        DevicesCommand::List { json } => {
            let devices: Vec<DeviceView> = act(paths, op::ListDevices {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&devices)?);
            } else {
                print!("{}", devices_table(&devices, now_ms()));
            }
        }
        DevicesCommand::Revoke { device } => {
            let d: DeviceView = act(paths, op::RevokeDevice { device }).await?;
            println!(
                "device {} ({}, for {}) is revoked: it is refused from now on",
                d.id,
                inert(&d.name),
                inert(&d.person)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A role as typed: `approver` or `observer`.
fn parse_role(text: &str) -> anyhow::Result<Role> {
    Role::parse_person_role(text).map_err(|e| anyhow::anyhow!(e))
}

#[derive(Subcommand)]
pub enum PeopleCommand {
    /// Every person with a role, and what it allows
    List {
        #[arg(long)]
        json: bool,
    },
    /// Give a person a role (only the owner may): their devices act by it
    /// from their next request
    Set {
        /// The person (as paired: `ana`)
        person: String,
        /// approver (decides gates and reviews runs in the workspaces
        /// granted) or observer (reads only)
        #[arg(long)]
        role: String,
        /// A workspace an approver decides in (repeat for more) [default:
        /// every workspace]
        #[arg(long = "workspace")]
        workspaces: Vec<String>,
    },
}

pub async fn people(paths: &Paths, cmd: PeopleCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PeopleCommand::List { json } => {
            let people: Vec<PersonView> = act(paths, op::ListPeople {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&people)?);
            } else {
                print!("{}", people_table(&people));
            }
        }
        PeopleCommand::Set {
            person,
            role,
            workspaces,
        } => {
            let role = parse_role(&role)?;
            let workspaces = (!workspaces.is_empty()).then_some(workspaces);
            let p: PersonView = act(
                paths,
                op::SetPersonRole {
                    person,
                    role,
                    workspaces,
                },
            )
            .await?;
            println!("{} is now {}", inert(&p.person), inert(&p.grant.describe()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn people_table(people: &[PersonView]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<12} {:<40} SET BY", "PERSON", "ROLE");
    for p in people {
        let by = if p.migrated {
            "paired before roles existed: was given every workspace".to_owned()
        } else {
            format!("{} at {}", p.set_by, utc_text(p.set_at))
        };
        let _ = writeln!(
            out,
            "{:<12} {:<40} {}",
            inert(&p.person),
            inert(&p.grant.describe()),
            inert(&by)
        );
    }
    if people.is_empty() {
        out.push_str(
            "no person has a role yet: pair a device (`overseer devices pair --person ana \
             --role approver --workspace web`)\n",
        );
    }
    out
}

/// `--person` left out: the login name, when it is a valid person.
fn login_name() -> anyhow::Result<String> {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_default();
    overseer_core::device::check_person(&user.to_lowercase()).map_err(|e| {
        anyhow::anyhow!("name the person the device is for with --person (e.g. --person ana): {e}")
    })
}

/// The code, when it expires, where to type it, and that address as a QR
/// code.
fn pairing_text(p: &Pairing, now: i64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "pairing code: {}", p.code);
    let minutes = ((p.expires_at - now).max(0) + 59_999) / 60_000;
    let _ = writeln!(
        out,
        "it works once, until {} (in {minutes} minutes); if {} wrong codes are typed \
         meanwhile (someone guessing), it is burned: the device is told, and you make a new one",
        utc_text(p.expires_at),
        overseer_store::devices::BURN_AFTER
    );
    match &p.url {
        Some(url) => {
            let _ = writeln!(out, "open {} on the device and type the code", inert(url));
            if let Some(qr) = qr_code(url) {
                out.push('\n');
                out.push_str(&qr);
                out.push('\n');
            }
        }
        None => {
            let _ = writeln!(
                out,
                "no engine serves browsers right now: start one with `overseer serve --web ADDR` \
                 (or in the app's Settings), open its address on the device and type the code"
            );
        }
    }
    out
}

/// `text` as a QR code of half-height blocks, light on dark (as most
/// terminals are), with its quiet zone.
fn qr_code(text: &str) -> Option<String> {
    use qrcode::render::unicode::Dense1x2;
    let code = qrcode::QrCode::new(text.as_bytes()).ok()?;
    Some(
        code.render::<Dense1x2>()
            .dark_color(Dense1x2::Light)
            .light_color(Dense1x2::Dark)
            .build(),
    )
}

fn devices_table(devices: &[DeviceView], now: i64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4}  {:<12} {:<24} {:<28} {:>6}  {:>9}  STATUS",
        "ID", "PERSON", "NAME", "ROLE", "PAIRED", "LAST SEEN"
    );
    for d in devices {
        let seen = d
            .last_seen_at
            .map_or_else(|| "never".to_owned(), |at| format!("{} ago", age(at, now)));
        let status = match d.revoked_at {
            Some(at) => format!("revoked {} ago", age(at, now)),
            None => "active".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:>4}  {:<12} {:<24} {:<28} {:>6}  {:>9}  {status}",
            d.id,
            inert(&d.person),
            inert(&d.name),
            inert(&d.grant.describe()),
            age(d.created_at, now),
            seen
        );
    }
    if devices.is_empty() {
        out.push_str(
            "no device is paired: `overseer devices pair --name \"Ana's phone\" --person ana`\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pairing_with_an_address_shows_it_as_a_qr_code() {
        let now = 1_795_752_306_000;
        let p = Pairing {
            code: "ABCD-EFGH".into(),
            expires_at: now + 5 * 60_000,
            url: Some("https://box.example:8443/".into()),
        };
        let text = pairing_text(&p, now);
        assert!(text.contains("pairing code: ABCD-EFGH"), "{text}");
        assert!(
            text.contains("until 2026-11-27 04:10:06 UTC (in 5 minutes)"),
            "{text}"
        );
        assert!(text.contains("open https://box.example:8443/ on the device"));
        // Half-height blocks, every row as wide as the others.
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.contains('█') || l.contains('▀') || l.contains('▄'))
            .collect();
        assert!(rows.len() > 10, "{text}");
        let width = rows[0].chars().count();
        assert!(rows.iter().all(|r| r.chars().count() == width));
        let without = pairing_text(&Pairing { url: None, ..p }, now);
        assert!(!without.contains('█'));
        assert!(without.contains("overseer serve --web"));
    }
}
