//! `overseer webhooks`: the hooks that tell a phone (ntfy, Slack, a
//! receiver of your own) what the engine tells the desktop, with the
//! window's parity (every listing also as `--json`).

use crate::output::{age, inert};
use crate::{act, now_ms};
use overseer_engine::{DeliveryStatus, Paths, Webhook, WebhookDelivery, WebhookEvent};
use overseer_server::api::op;
use std::fmt::Write;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum WebhooksCommand {
    /// The webhooks, with the events each gets
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a webhook; prints its secret, which is shown this once
    Add {
        /// An http:// or https:// URL, such as https://ntfy.sh/<topic>
        url: String,
        /// The events it gets, comma-separated (default: every kind):
        /// agent_question_blocking, agent_question_pending, run_pending_review,
        /// run_failed, run_finished, supervisor_escalated, supervisor_failed,
        /// security_event, agent_message_blocked, disk_full
        #[arg(long, value_delimiter = ',', value_name = "KIND,KIND")]
        events: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Send a test event now and say how the receiver answered
    Test {
        id: i64,
        #[arg(long)]
        json: bool,
    },
    /// Remove a webhook and its delivery log
    Remove { id: i64 },
    /// Turn a webhook off: it gets nothing until enabled (what is pending
    /// for it is not sent); its secret and log stay
    Disable { id: i64 },
    /// Turn a disabled webhook on again: it gets the events from now on
    Enable { id: i64 },
    /// A webhook's latest deliveries, each attempt with its answer
    Deliveries {
        id: i64,
        /// At most this many (default 50, at most 200)
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(paths: &Paths, cmd: WebhooksCommand) -> anyhow::Result<ExitCode> {
    let now = now_ms();
    match cmd {
        WebhooksCommand::List { json } => {
            let hooks: Vec<Webhook> = act(paths, op::ListWebhooks {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&hooks)?);
            } else if hooks.is_empty() {
                println!("no webhooks yet: `overseer webhooks add https://ntfy.sh/<topic>`");
            } else {
                for h in &hooks {
                    print!("{}", hook_line(h, now));
                }
            }
        }
        WebhooksCommand::Add { url, events, json } => {
            let events = events
                .iter()
                .map(|e| {
                    WebhookEvent::parse(e.trim()).ok_or_else(|| {
                        let kinds: Vec<&str> = WebhookEvent::SUBSCRIBABLE
                            .iter()
                            .map(|k| k.as_str())
                            .collect();
                        anyhow::anyhow!(
                            "--events: {e:?} is not an event kind; use some of {}",
                            kinds.join(", ")
                        )
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let added: overseer_engine::WebhookAdded =
                act(paths, op::AddWebhook { url, events }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&added)?);
            } else {
                print!("{}", hook_line(&added.webhook, now));
                println!("secret: {}", added.secret);
                println!(
                    "Keep the secret now: it is not shown again. Each request is signed with it \
                     (X-Overseer-Signature). `overseer webhooks test {}` sends a test.",
                    added.webhook.id
                );
            }
        }
        WebhooksCommand::Test { id, json } => {
            let d: WebhookDelivery = act(paths, op::TestWebhook { id }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&d)?);
            } else {
                print!("{}", delivery_lines(&d, now));
            }
            if d.status != DeliveryStatus::Delivered {
                return Ok(ExitCode::FAILURE);
            }
        }
        WebhooksCommand::Remove { id } => {
            let h: Webhook = act(paths, op::RemoveWebhook { id }).await?;
            println!("removed webhook {} ({})", h.id, inert(&h.url));
        }
        WebhooksCommand::Disable { id } => set_enabled(paths, id, false, now).await?,
        WebhooksCommand::Enable { id } => set_enabled(paths, id, true, now).await?,
        WebhooksCommand::Deliveries { id, limit, json } => {
            let log: Vec<WebhookDelivery> = act(paths, op::WebhookDeliveries { id, limit }).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&log)?);
            } else if log.is_empty() {
                println!("nothing sent to webhook {id} yet: `overseer webhooks test {id}`");
            } else {
                for d in &log {
                    print!("{}", delivery_lines(d, now));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn set_enabled(paths: &Paths, id: i64, enabled: bool, now: i64) -> anyhow::Result<()> {
    let h: Webhook = act(paths, op::SetWebhookEnabled { id, enabled }).await?;
    print!("{}", hook_line(&h, now));
    if h.enabled {
        println!("enabled: it gets the events from now on");
    } else {
        println!(
            "disabled: it gets nothing, and nothing pending for it is sent \
             (`overseer webhooks enable {id}` turns it on again)"
        );
    }
    Ok(())
}

fn hook_line(h: &Webhook, now: i64) -> String {
    let events: Vec<&str> = h.events.iter().map(|e| e.as_str()).collect();
    let events = if h.events.len() == WebhookEvent::SUBSCRIBABLE.len() {
        "every kind".to_owned()
    } else {
        events.join(",")
    };
    format!(
        "{:>4}  {}  {}  added {} ago{}\n",
        h.id,
        inert(&h.url),
        events,
        age(h.created_at, now),
        if h.enabled { "" } else { "  (disabled)" }
    )
}

fn delivery_lines(d: &WebhookDelivery, now: i64) -> String {
    let mut out = String::new();
    let status = match d.status {
        DeliveryStatus::Delivered => "delivered".to_owned(),
        DeliveryStatus::Failed => "FAILED".to_owned(),
        DeliveryStatus::Pending => match d.next_at {
            Some(at) if at > now => format!("pending, next attempt in {}", age(now, at)),
            _ => "pending".to_owned(),
        },
    };
    let _ = writeln!(
        out,
        "delivery {} ({}) {} ago: {}  {}",
        d.id,
        d.event.as_str(),
        age(d.created_at, now),
        status,
        inert(&d.title)
    );
    for a in &d.attempts {
        let answer = match (a.status_code, &a.error) {
            (Some(code), None) => format!("HTTP {code}"),
            (Some(code), Some(e)) => format!("HTTP {code}: {}", inert(e)),
            (None, Some(e)) => inert(e),
            (None, None) => "no answer".to_owned(),
        };
        let _ = writeln!(
            out,
            "    {} ago  {answer}  ({} ms)",
            age(a.at, now),
            a.duration_ms
        );
    }
    if let Some(note) = &d.note {
        let _ = writeln!(out, "    {}", inert(note));
    }
    out
}
