//! `overseer hosts`: engines on other Linux machines, reached over the
//! system OpenSSH client (the user's config, agent, ProxyJump and
//! known_hosts; no SSH stack of our own, no password kept), and `--host
//! NAME`: a command sent to that engine through `ssh HOST overseer bridge`.
//!
//! On a host, everything lives under its data dir
//! (`${XDG_DATA_HOME:-~/.local/share}/overseer`): `versions/<version>/overseer`
//! (copied with its SHA-256 checked there), the `current` link (replaced
//! atomically), and the engine's own files. The hosts this machine knows,
//! with each engine's pinned signing key, are in `hosts.json` in the local
//! data dir.

use anyhow::{bail, Context};
use overseer_engine::Paths;
use overseer_server::client::Client;
use overseer_server::remote::handshake::{self, OpenError, Welcome, VERSION};
use overseer_server::remote::registry::{
    self, fingerprint, hosts_path, parse_url, quote, valid_name, Host, Target, SSH_CONFIG_ENV,
};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
/// How long `hosts add` waits for a started engine to answer.
const START_WAIT: Duration = Duration::from_secs(30);

#[derive(clap::Subcommand)]
pub enum HostsCommand {
    /// Install this overseer on a Linux machine over ssh, start its engine
    /// and pin its signing key: `overseer hosts add build1 ssh://me@build1`
    Add {
        name: String,
        /// ssh://[user@]host[:port]
        url: String,
        /// An ssh config file to use instead of ~/.ssh/config (kept for this host)
        #[arg(long, value_name = "FILE")]
        ssh_config: Option<PathBuf>,
    },
    /// The hosts this machine knows, with their pinned key fingerprints
    List {
        #[arg(long)]
        json: bool,
    },
    /// Install this overseer's version on a host and restart its engine there
    Upgrade { name: String },
    /// Stop a host's engine and forget the host (its files stay there)
    Remove { name: String },
}

/// The host every engine call of this process goes to (`--host NAME`).
static SELECTED: OnceLock<String> = OnceLock::new();

pub fn select(name: String) {
    let _ = SELECTED.set(name);
}

pub fn selected() -> Option<&'static str> {
    SELECTED.get().map(String::as_str)
}

/// Loads the hosts file (an error says what to do).
pub(crate) fn load(paths: &Paths) -> anyhow::Result<registry::HostsFile> {
    Ok(registry::load(paths)?)
}

fn save(paths: &Paths, file: &registry::HostsFile) -> anyhow::Result<()> {
    Ok(registry::save(paths, file)?)
}

/// What `hosts add` and `hosts upgrade` run on a host over ssh.
pub(crate) trait Remote {
    fn sh(&self, what: &str, script: &str) -> anyhow::Result<String>;
    fn scp(&self, local: &Path, remote: &str) -> anyhow::Result<()>;
}

impl Remote for Target {
    /// Runs `script` with `sh` on the host; its stdout, or an error with ssh's
    /// or the script's stderr.
    fn sh(&self, what: &str, script: &str) -> anyhow::Result<String> {
        let out = std::process::Command::new("ssh")
            .args(self.ssh_args(&format!("sh -c {}", quote(script))))
            .stdin(Stdio::null())
            .output()
            .context("cannot run `ssh`: install the OpenSSH client")?;
        if !out.status.success() {
            bail!(
                "{what} on {} failed: {}",
                self.url(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `scp [-F config] [-P port] local dest:remote`.
    fn scp(&self, local: &Path, remote: &str) -> anyhow::Result<()> {
        let mut args = self.config_args();
        if let Some(p) = self.port {
            args.extend(["-P".into(), p.to_string()]);
        }
        let addr = self.bracketed();
        let dest = match &self.user {
            Some(u) => format!("{u}@{addr}:{remote}"),
            None => format!("{addr}:{remote}"),
        };
        args.extend(["-q".into(), local.display().to_string(), dest]);
        let out = std::process::Command::new("scp")
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .context("cannot run `scp`: install the OpenSSH client")?;
        if !out.status.success() {
            bail!(
                "copying {} to {} failed: {}",
                local.display(),
                self.url(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }
}

/// What `hosts add` needs to know about a machine before installing.
#[derive(Debug, Default)]
struct Probe {
    os: String,
    arch: String,
    bwrap: bool,
    cgroup2: bool,
    slirp: bool,
    missing_tools: Vec<String>,
    distro: String,
    systemd: bool,
    dir: String,
}

const PROBE: &str = r#"echo "os=$(uname -s)"
echo "arch=$(uname -m)"
if command -v bwrap >/dev/null 2>&1; then echo bwrap=yes; else echo bwrap=no; fi
if grep -q ' - cgroup2 ' /proc/self/mountinfo 2>/dev/null; then echo cgroup2=yes; else echo cgroup2=no; fi
if command -v slirp4netns >/dev/null 2>&1; then echo slirp=yes; else echo slirp=no; fi
for t in sha256sum setsid nohup; do command -v $t >/dev/null 2>&1 || echo "missing=$t"; done
if [ -r /etc/os-release ]; then . /etc/os-release; echo "distro=$ID $ID_LIKE"; fi
if command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then echo systemd=yes; else echo systemd=no; fi
echo "dir=${XDG_DATA_HOME:-$HOME/.local/share}/overseer"
"#;

fn probe(target: &Target) -> anyhow::Result<Probe> {
    let out = target.sh("checking the host", PROBE)?;
    let mut p = Probe::default();
    for line in out.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim().to_owned();
        match k {
            "os" => p.os = v,
            "arch" => p.arch = v,
            "bwrap" => p.bwrap = v == "yes",
            "cgroup2" => p.cgroup2 = v == "yes",
            "slirp" => p.slirp = v == "yes",
            "missing" => p.missing_tools.push(v),
            "distro" => p.distro = v,
            "systemd" => p.systemd = v == "yes",
            "dir" => p.dir = v,
            _ => {}
        }
    }
    if p.dir.is_empty() || !p.dir.starts_with('/') {
        bail!(
            "{} did not say where its home is (got {out:?}); is its login shell a POSIX shell?",
            target.url()
        );
    }
    Ok(p)
}

/// The package-manager line that installs `packages` on a distro like `distro`.
fn install_line(distro: &str, packages: &[&str]) -> String {
    let ids: Vec<&str> = distro.split_whitespace().collect();
    let has = |id: &str| ids.contains(&id);
    let list = packages.join(" ");
    if has("debian") || has("ubuntu") {
        format!("sudo apt-get install {list}")
    } else if has("fedora") || has("rhel") || has("centos") {
        format!("sudo dnf install {list}")
    } else if has("arch") {
        format!("sudo pacman -S {list}")
    } else if has("alpine") {
        format!("sudo apk add {list}")
    } else if has("suse") || has("opensuse") {
        format!("sudo zypper install {list}")
    } else {
        format!("install {list} with the host's package manager")
    }
}

/// Everything the host lacks, each with what to do; empty when it can run Overseer.
fn shortfalls(p: &Probe) -> Vec<String> {
    let mut out = Vec::new();
    if p.os != "Linux" {
        out.push(format!(
            "a host must run Linux (this one runs {}): Overseer contains agents with Linux \
             namespaces",
            p.os
        ));
        return out;
    }
    let ours = std::env::consts::ARCH;
    if p.arch != ours {
        out.push(format!(
            "this overseer is built for {ours} and the host is {}: add it from a machine of the \
             same architecture (a build for {} is not installed by `hosts add`)",
            p.arch, p.arch
        ));
    }
    if !p.bwrap {
        out.push(format!(
            "bubblewrap (which contains every run): {}",
            install_line(&p.distro, &["bubblewrap"])
        ));
    }
    if !p.cgroup2 {
        out.push(
            "cgroup v2 (per-run limits and stopping a run's every process): boot the host with \
             cgroup v2 mounted (systemd.unified_cgroup_hierarchy=1 on the kernel command line)"
                .to_owned(),
        );
    }
    if !p.missing_tools.is_empty() {
        let tools: Vec<&str> = p.missing_tools.iter().map(String::as_str).collect();
        out.push(format!(
            "{} (coreutils/util-linux): {}",
            tools.join(", "),
            install_line(&p.distro, &["coreutils", "util-linux"])
        ));
    }
    out
}

/// What the host can do without, said before installing: runs whose
/// profile wants a private network share the host's instead.
fn recommended(p: &Probe) -> Option<String> {
    (!p.slirp).then(|| {
        format!(
            "slirp4netns (each run's private network; without it runs share the host's \
             network, its loopback services in reach): {}",
            install_line(&p.distro, &["slirp4netns"])
        )
    })
}

fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("read {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Copies this binary to `dir/versions/VERSION/overseer` on the host (unless
/// a copy with the same SHA-256 is there), checks it there, and points
/// `dir/current` at that version atomically. Returns the checksum.
fn install(target: &Target, dir: &str) -> anyhow::Result<(String, bool)> {
    let exe = std::env::current_exe().context("cannot find this overseer's own binary")?;
    let sum = sha256_file(&exe)?;
    let vdir = format!("{dir}/versions/{VERSION}");
    let have = target.sh(
        "preparing the version directory",
        &format!(
            "mkdir -p {v} && chmod 700 {d} && (sha256sum {v}/overseer 2>/dev/null || true)",
            v = quote(&vdir),
            d = quote(dir)
        ),
    )?;
    let copied = have.split_whitespace().next() != Some(sum.as_str());
    if copied {
        target.scp(&exe, &format!("{vdir}/overseer.partial"))?;
        let checked = target.sh(
            "checking the copy",
            &format!(
                "cd {v} && got=$(sha256sum overseer.partial | cut -d' ' -f1) && \
                 if [ \"$got\" != {sum} ]; then rm -f overseer.partial; echo \"mismatch $got\"; \
                 else chmod 755 overseer.partial && mv -f overseer.partial overseer && echo ok; fi",
                v = quote(&vdir),
            ),
        )?;
        if checked.trim() != "ok" {
            bail!(
                "the copy on {} does not match this binary (SHA-256 {sum}, the host has {}); \
                 nothing was switched: try again",
                target.url(),
                checked.trim().trim_start_matches("mismatch ")
            );
        }
    }
    let runs = target.sh(
        "running the copied overseer",
        &format!("{}/overseer --version", quote(&vdir)),
    )?;
    if runs.trim() != format!("overseer {VERSION}") {
        bail!(
            "the copied overseer does not run on {} (it said {:?}): is the host's C library \
             older than this machine's?",
            target.url(),
            runs.trim()
        );
    }
    target.sh(
        "switching the current version",
        &format!(
            "cd {d} && ln -sfn versions/{VERSION} current.tmp.$$ && mv -T current.tmp.$$ current",
            d = quote(dir)
        ),
    )?;
    Ok((sum, copied))
}

/// Starts the host's engine unless it runs: a systemd user unit where the
/// user's systemd answers, else detached (setsid + nohup, pid in serve.pid).
/// Returns the way it runs and a note for the user.
pub(crate) fn start(target: &Target, dir: &str, systemd: bool) -> anyhow::Result<(String, String)> {
    let d = quote(dir);
    if systemd {
        let out = target.sh(
            "starting the engine (systemd user unit)",
            &format!(
                "u=\"${{XDG_CONFIG_HOME:-$HOME/.config}}/systemd/user\" && mkdir -p \"$u\" && \
                 printf '[Unit]\\nDescription=Overseer engine\\n\\n[Service]\\nExecStart=%s/current/overseer serve\\nRestart=on-failure\\n\\n[Install]\\nWantedBy=default.target\\n' {d} >\"$u/overseer.service\" && \
                 systemctl --user daemon-reload && systemctl --user enable overseer.service >/dev/null 2>&1 && \
                 systemctl --user restart overseer.service && \
                 (loginctl show-user \"$(id -un)\" -p Linger 2>/dev/null || true)"
            ),
        )?;
        let note = if out.contains("Linger=yes") {
            "the engine runs as the systemd user unit overseer.service (lingering is on: it \
             keeps running when you log out)"
                .to_owned()
        } else {
            "the engine runs as the systemd user unit overseer.service; systemd stops it when \
             your last session on the host ends unless lingering is on: run `loginctl \
             enable-linger` on the host once"
                .to_owned()
        };
        return Ok(("systemd".into(), note));
    }
    target.sh(
        "starting the engine",
        &format!(
            "d={d}; p=$(cat \"$d/serve.pid\" 2>/dev/null); \
             if [ -n \"$p\" ] && kill -0 \"$p\" 2>/dev/null && \
             tr '\\0' ' ' </proc/$p/cmdline | grep -q 'overseer serve'; then echo running; \
             else cd \"$HOME\" || exit 1; \
             setsid nohup \"$d/current/overseer\" serve >>\"$d/serve.log\" 2>&1 </dev/null & \
             echo $! >\"$d/serve.pid\"; echo started; fi"
        ),
    )?;
    Ok((
        "detached".into(),
        format!(
            "the engine runs detached (no systemd user session on the host); its log is \
             {dir}/serve.log. It does not start again after a reboot: `overseer hosts upgrade \
             NAME` starts it"
        ),
    ))
}

/// Stops the host's engine the way it was started.
fn stop(target: &Target, dir: &str, service: &str) -> anyhow::Result<()> {
    let d = quote(dir);
    let script = if service == "systemd" {
        "systemctl --user disable --now overseer.service >/dev/null 2>&1; \
         rm -f \"${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/overseer.service\"; \
         systemctl --user daemon-reload; echo stopped"
            .to_owned()
    } else {
        format!(
            "d={d}; if [ -f \"$d/serve.pid\" ]; then p=$(cat \"$d/serve.pid\"); \
             if kill -0 \"$p\" 2>/dev/null && tr '\\0' ' ' </proc/$p/cmdline | grep -q 'overseer serve'; then \
             kill -TERM \"$p\"; i=0; while kill -0 \"$p\" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; \
             if kill -0 \"$p\" 2>/dev/null; then echo \"still running: pid $p\"; exit 0; fi; fi; \
             rm -f \"$d/serve.pid\"; fi; echo stopped"
        )
    };
    let out = target.sh("stopping the engine", &script)?;
    if out.trim() != "stopped" {
        bail!(
            "the engine on {} did not stop within 20 s ({}); nothing was forgotten",
            target.url(),
            out.trim()
        );
    }
    Ok(())
}

/// The engine's welcome through a bridge that `start` just started: retried
/// while the engine is still opening.
pub(crate) async fn first_contact(
    target: &Target,
    dir: &str,
    name: &str,
) -> anyhow::Result<Welcome> {
    let started = Instant::now();
    loop {
        match handshake::open(target, dir, name, &[]).await {
            Ok(bridge) => return Ok(bridge.welcome),
            Err(OpenError::Refused(r)) if r.code == "engine_unavailable" => {
                if started.elapsed() > START_WAIT {
                    let log = target
                        .sh(
                            "reading the engine's log",
                            &format!("tail -n 5 {}/serve.log 2>/dev/null || true", quote(dir)),
                        )
                        .unwrap_or_default();
                    bail!(
                        "the engine on {} did not answer within {START_WAIT:?}: {}; the end of \
                         its log ({dir}/serve.log there):\n{}",
                        target.url(),
                        r.message,
                        log.trim_end()
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => bail!("{}", e.message(name)),
        }
    }
}

/// A client on host `name`'s engine (one `ssh HOST overseer bridge`), its
/// signing key checked against the one pinned when it was added.
pub async fn connect(paths: &Paths, name: &str) -> anyhow::Result<Client> {
    let file = load(paths)?;
    let host = file.find(name)?;
    let bridge = handshake::open(&host.target(), &host.dir, name, &[])
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.message(name)))?;
    handshake::check_key(host, &bridge.welcome)?;
    Ok(Client::over(
        bridge.reader,
        bridge.writer,
        Some(Box::new(bridge.child)),
    ))
}

pub async fn run(paths: &Paths, cmd: HostsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HostsCommand::Add {
            name,
            url,
            ssh_config,
        } => add(paths, name, url, ssh_config).await,
        HostsCommand::List { json } => {
            let file = load(paths)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&file.hosts)?);
            } else if file.hosts.is_empty() {
                println!(
                    "no hosts: agents run on this machine. Add one with `overseer hosts add NAME \
                     ssh://user@host`"
                );
            } else {
                for h in &file.hosts {
                    println!(
                        "{:<12} {}  overseer {}  {}  key {}",
                        h.name,
                        h.target().url(),
                        h.version,
                        h.service,
                        fingerprint(&h.engine_key)
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        HostsCommand::Upgrade { name } => upgrade(paths, &name).await,
        HostsCommand::Remove { name } => {
            let mut file = load(paths)?;
            let Some(i) = file.hosts.iter().position(|h| h.name == name) else {
                bail!("no host named {name:?}: `overseer hosts list` shows the hosts");
            };
            let host = file.hosts[i].clone();
            let target = host.target();
            stop(&target, &host.dir, &host.service).with_context(|| {
                format!(
                    "host {name} was not forgotten; when the host is gone for good, delete its \
                     entry from {}",
                    hosts_path(paths).display()
                )
            })?;
            file.hosts.remove(i);
            save(paths, &file)?;
            println!("host {name}: engine stopped and host forgotten");
            println!(
                "left on the host: {dir} (overseer's versions, the engine's database, audit log \
                 and runs' repositories) and the engine's signing key in its config dir \
                 (~/.config/overseer); delete them there when you no longer need them",
                dir = host.dir
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn add(
    paths: &Paths,
    name: String,
    url: String,
    ssh_config: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if !valid_name(&name) {
        bail!("{name:?} is not a host name: use letters, digits, '-', '_' or '.'");
    }
    let mut file = load(paths)?;
    if file.hosts.iter().any(|h| h.name == name) {
        bail!(
            "a host named {name} is already added: `overseer hosts upgrade {name}` reinstalls \
             it, `overseer hosts remove {name}` forgets it"
        );
    }
    let (user, address, port) = parse_url(&url)?;
    let ssh_config = ssh_config.or_else(|| std::env::var_os(SSH_CONFIG_ENV).map(PathBuf::from));
    let ssh_config = ssh_config.map(|c| std::path::absolute(&c).unwrap_or(c));
    let target = Target {
        user,
        address,
        port,
        ssh_config,
    };
    let p = probe(&target)?;
    let missing = shortfalls(&p);
    if !missing.is_empty() {
        bail!(
            "{} cannot run Overseer yet; nothing was installed. It needs:\n  - {}\n{}then run \
             this again",
            target.url(),
            missing.join("\n  - "),
            recommended(&p)
                .map(|r| format!("and should have:\n  - {r}\n"))
                .unwrap_or_default()
        );
    }
    if let Some(r) = recommended(&p) {
        println!("note: the host lacks {r}");
    }
    println!(
        "host {name}: {}, {} {}, bubblewrap, cgroup v2",
        target.url(),
        p.os,
        p.arch
    );
    let (sum, copied) = install(&target, &p.dir)?;
    println!(
        "{} overseer {VERSION} to {}/versions/{VERSION}/overseer; SHA-256 {sum} verified there; \
         {}/current points at it",
        if copied { "copied" } else { "kept the same" },
        p.dir,
        p.dir
    );
    let (service, note) = start(&target, &p.dir, p.systemd)?;
    let welcome = first_contact(&target, &p.dir, &name).await?;
    let key = welcome
        .engine_key
        .context("the host's engine answered without its signing key")?;
    println!("{}", note.replace("NAME", &name));
    println!(
        "engine signing key pinned: {} (later contacts are refused if it changes)",
        fingerprint(&key)
    );
    file.hosts.push(Host {
        name: name.clone(),
        user: target.user.clone(),
        address: target.address.clone(),
        port: target.port,
        ssh_config: target.ssh_config.clone(),
        dir: p.dir,
        version: welcome.engine_version,
        engine_key: key,
        service,
        added_at: crate::now_ms(),
    });
    save(paths, &file)?;
    println!("added host {name}: `overseer --host {name} runs list`");
    Ok(ExitCode::SUCCESS)
}

/// Installs this version on a known host and restarts its engine there;
/// its key must still be the pinned one.
async fn upgrade(paths: &Paths, name: &str) -> anyhow::Result<ExitCode> {
    let mut file = load(paths)?;
    let Some(i) = file.hosts.iter().position(|h| h.name == name) else {
        bail!("no host named {name:?}: `overseer hosts list` shows the hosts");
    };
    let host = file.hosts[i].clone();
    let target = host.target();
    let p = probe(&target)?;
    let missing = shortfalls(&p);
    if !missing.is_empty() {
        bail!(
            "{} cannot run Overseer: it needs:\n  - {}",
            target.url(),
            missing.join("\n  - ")
        );
    }
    let (sum, _) = install(&target, &host.dir)?;
    stop(&target, &host.dir, &host.service)?;
    let (service, note) = start(&target, &host.dir, p.systemd)?;
    let welcome = first_contact(&target, &host.dir, name).await?;
    handshake::check_key(&host, &welcome)?;
    println!("{}", note.replace("NAME", name));
    println!(
        "host {name}: overseer {} (SHA-256 {sum}) running; key {} unchanged",
        welcome.engine_version,
        fingerprint(&host.engine_key)
    );
    file.hosts[i].version = welcome.engine_version;
    file.hosts[i].service = service;
    save(paths, &file)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_lacking_pieces_is_told_what_to_install() {
        let p = Probe {
            os: "Linux".into(),
            arch: std::env::consts::ARCH.into(),
            bwrap: false,
            cgroup2: false,
            distro: "ubuntu debian".into(),
            ..Probe::default()
        };
        let s = shortfalls(&p);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].contains("sudo apt-get install bubblewrap"), "{s:?}");
        assert!(s[1].contains("cgroup v2"), "{s:?}");
        let mac = Probe {
            os: "Darwin".into(),
            ..Probe::default()
        };
        assert!(shortfalls(&mac)[0].contains("must run Linux"));
        let ok = Probe {
            os: "Linux".into(),
            arch: std::env::consts::ARCH.into(),
            bwrap: true,
            cgroup2: true,
            ..Probe::default()
        };
        assert!(shortfalls(&ok).is_empty());
    }
}
