//! `make bench`: what it costs to start a run's repository from a large
//! repository, the old way (`git clone --shared`, borrowing the user's whole
//! object store: nearly free, and it let a run read the user's staged files,
//! stash and other branches) against the engine's way (a repository of its
//! own holding a copy of exactly the objects the base commit reaches:
//! [`overseer_git::create_run_repo`]).
//!
//! The repository is generated here with `git fast-import` (20,000 files,
//! 2,000 commits of 10 changed files each, packed; `OVERSEER_BENCH_FILES`
//! and `OVERSEER_BENCH_COMMITS` change its size), in a temp dir. Both ways
//! include checking out the run's branch (the same work for both, so the
//! difference is the copy of the objects). The first run from a base commit
//! makes its pack; another run from the same base links it: both are timed.
//! Prints figures; asserts nothing about them (the machine is shared and
//! noisy).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each way is timed this many times (the median is printed).
const ROUNDS: usize = 5;

fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository of `files` files (30 lines each, in 200 directories) and
/// `commits` commits, each after the first changing 10 files; packed as
/// `git gc` would.
fn generate(dir: &Path, files: usize, commits: usize) {
    git(dir, &["init", "-q", "-b", "main"]);
    let mut import = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["fast-import", "--quiet"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import");
    let mut stream = std::io::BufWriter::new(import.stdin.take().expect("stdin"));
    // xorshift: the same repository on every run.
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let data = |out: &mut dyn Write, body: &[u8]| {
        writeln!(out, "data {}", body.len()).expect("write");
        out.write_all(body).expect("write");
        out.write_all(b"\n").expect("write");
    };
    for c in 0..commits {
        writeln!(stream, "commit refs/heads/main").expect("write");
        writeln!(stream, "committer Bench <b@b> {} +0000", 1_700_000_000 + c).expect("write");
        data(&mut stream, format!("commit {c}").as_bytes());
        let changed: Vec<usize> = if c == 0 {
            (0..files).collect()
        } else {
            (0..10).map(|_| (next() as usize) % files).collect()
        };
        for f in changed {
            let mut body = String::new();
            for line in 0..30 {
                let pad = 10 + (next() % 50) as usize;
                body.push_str(&format!(
                    "line {line} of file {f} at commit {c} {}\n",
                    "x".repeat(pad)
                ));
            }
            writeln!(stream, "M 644 inline src/d{}/f{f}.txt", f % 200).expect("write");
            data(&mut stream, body.as_bytes());
        }
    }
    drop(stream);
    assert!(import.wait().expect("fast-import").success());
    git(dir, &["repack", "-a", "-d", "-q"]);
}

/// The old way: a clone borrowing the objects, then the run's branch.
fn old_way(repo: &Path, dir: &Path, base: &str) {
    let parent = dir.parent().expect("parent");
    git(
        parent,
        &[
            "clone",
            "-q",
            "--shared",
            "--no-checkout",
            "--template=",
            "--",
            &repo.to_string_lossy(),
            &dir.to_string_lossy(),
        ],
    );
    git(dir, &["remote", "remove", "origin"]);
    git(
        dir,
        &["checkout", "-q", "--no-track", "-b", "run", base, "--"],
    );
}

fn median(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d[d.len() / 2]
}

fn du(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn main() {
    let files = size("OVERSEER_BENCH_FILES", 20_000);
    let commits = size("OVERSEER_BENCH_COMMITS", 2_000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("user");
    std::fs::create_dir_all(&repo).expect("mkdir");
    let started = Instant::now();
    generate(&repo, files, commits);
    let objects = git(&repo, &["count-objects", "-v"]);
    let count = |key: &str| {
        objects
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or("?")
            .trim()
            .to_owned()
    };
    println!(
        "run repository from a large repository: {files} files, {commits} commits, {} objects, pack {} KiB (generated in {:.1} s)",
        count("in-pack:"),
        count("size-pack:"),
        started.elapsed().as_secs_f64()
    );
    // Bases a few commits behind the tip, as a run's often is: a new one
    // each round, so that each round's first run makes its base's pack.
    let runs = tmp.path().join("runs");
    std::fs::create_dir_all(&runs).expect("mkdir");
    let (mut old, mut first, mut second) = (Vec::new(), Vec::new(), Vec::new());
    let (mut old_size, mut new_size) = (0, 0);
    for round in 0..ROUNDS {
        let base = git(&repo, &["rev-parse", &format!("main~{}", 5 + round)]);
        let dir = runs.join(format!("old-{round}"));
        let t = Instant::now();
        old_way(&repo, &dir, &base);
        old.push(t.elapsed());
        old_size = du(&dir.join(".git/objects"));
        for (n, times) in [(1, &mut first), (2, &mut second)] {
            let dir = runs.join(format!("new-{round}-{n}"));
            let t = Instant::now();
            overseer_git::create_run_repo(&repo, &dir, "run", &base).expect("run repository");
            times.push(t.elapsed());
            new_size = du(&dir.join(".git/objects"));
        }
    }
    let (old, first, second) = (median(old), median(first), median(second));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "  clone --shared + checkout (old):                      median {:>6.0} ms, objects dir {:>6} KiB",
        ms(old),
        old_size / 1024
    );
    println!(
        "  create_run_repo, first run from a base (makes its pack): median {:>6.0} ms, objects dir {:>6} KiB",
        ms(first),
        new_size / 1024
    );
    println!(
        "  create_run_repo, another run from the same base (links it): median {:>6.0} ms (the pack shared on disk)",
        ms(second)
    );
    println!(
        "  the copy costs {:.0} ms more for a base's first run ({:.1}x), {:.0} ms for the next; {} KiB of disk per base",
        ms(first) - ms(old),
        first.as_secs_f64() / old.as_secs_f64().max(1e-9),
        ms(second) - ms(old),
        new_size.saturating_sub(old_size) / 1024
    );
}
