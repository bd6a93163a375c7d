//! `overseer agents list`: agent profiles, installed or not, the mode each
//! runs in, what each needs.

use clap::Subcommand;
use overseer_engine::Paths;
use overseer_server::api::op;
use overseer_server::client::Client;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum AgentsCommand {
    /// Every profile (built in and from overseer.toml) and whether it is ready
    List {
        #[arg(long)]
        json: bool,
    },
}

/// The profiles as the engine sees them (its PATH and environment) when it
/// runs, else as this shell does.
pub async fn agents(paths: &Paths, json: bool) -> anyhow::Result<ExitCode> {
    let infos: Vec<overseer_engine::config::AgentInfo> =
        match Client::connect(&paths.socket()).await? {
            Some(mut client) => client.perform(op::Agents {}).await?,
            None => overseer_engine::config::Config::load(&paths.config_dir)?
                .agent_infos(|k| std::env::var(k).ok()),
        };
    if json {
        println!("{}", serde_json::to_string_pretty(&infos)?);
        return Ok(ExitCode::SUCCESS);
    }
    // Containment is the machine's: said once, then per profile only when
    // it runs differently.
    if let Some(first) = infos.first() {
        println!("{}", first.containment.summary());
    }
    for a in &infos {
        let state = if a.needs.is_empty() {
            "ready"
        } else {
            "NEEDS SETUP"
        };
        println!(
            "{:<10} {:<12} {}",
            a.name,
            state,
            a.found.as_deref().unwrap_or(&a.command)
        );
        match &a.mode {
            Some(m) => println!("           mode `{m}`: {}", a.mode_effect),
            None => println!("           mode: {}", a.mode_effect),
        }
        println!("           plan: {}", a.plan.as_str());
        // Where the machine cannot contain, a profile either needs the fix
        // (listed below) or runs uncontained by its own choice.
        if !a.contained && a.needs.iter().all(|n| !n.starts_with("a sandbox")) {
            println!("           runs NOT CONTAINED (allow_uncontained = true)");
        }
        println!("           network: {}", a.network.describe());
        for need in &a.needs {
            println!("           needs {need}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
