//! The sandbox plan's tests: each step's mounts, and the whole plan's.

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        // Not under /tmp (the private /tmp hides it as a whole, and the
        // plan then needs no hide of its own): each hide must show. A
        // checkout may itself live under /tmp (CI clones there), so
        // prefer /var/tmp.
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/unit-tmp");
        let base = [PathBuf::from("/var/tmp/overseer-unit-tests"), target]
            .into_iter()
            .find(|b| !b.starts_with("/tmp") && std::fs::create_dir_all(b).is_ok())
            .expect("a temp dir outside /tmp");
        let dir = tempfile::tempdir_in(&base).expect("tempdir");
        let root = dir.path().canonicalize().expect("canon");
        for d in [
            "home/.cargo/bin",
            "home/.local/bin",
            "home/bin",
            "data/worktrees/w/run-1/.git/hooks",
            "data/agent-homes/claude",
            "config",
            "repo/.git/objects",
            "runtime",
            "codex-home",
            "tools/lib/node_modules/pkg/node_modules/dep/bin",
        ] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::write(root.join("home/.cargo/credentials.toml"), "token").expect("write");
        Fixture { _dir: dir, root }
    }

    fn p(&self, s: &str) -> PathBuf {
        self.root.join(s)
    }

    fn inputs(&self) -> SandboxInputs {
        SandboxInputs {
            bwrap: "/usr/bin/bwrap".into(),
            data_dir: self.p("data"),
            config_dir: self.p("config"),
            runtime_dir: Some(self.p("runtime")),
            host_home: Some(self.p("home")),
            host_path: Some(format!(
                "{}:/usr/bin:{}",
                self.p("home/bin").display(),
                self.p("home/.cargo/bin").display()
            )),
            repo: Some(self.p("repo")),
            worktree: self.p("data/worktrees/w/run-1"),
            private_home: Some(self.p("data/agent-homes/claude")),
            program: Some(self.p("tools/lib/node_modules/pkg/node_modules/dep/bin")),
            network: NetworkMode::Host,
            ..SandboxInputs::default()
        }
    }
}

fn bind(m: &[Mount], target: &Path) -> Option<(PathBuf, bool)> {
    m.iter().find_map(|x| match x {
        Mount::Bind {
            source,
            target: t,
            writable,
        } if t == target => Some((source.clone(), *writable)),
        _ => None,
    })
}

fn position(m: &[Mount], target: &Path) -> usize {
    m.iter()
        .position(|x| x.target() == target)
        .unwrap_or_else(|| panic!("no mount at {}", target.display()))
}

/// Whether any mount of the plan (as bwrap gets it) names `p` or a
/// path inside it.
fn names(plan: &SandboxPlan, p: &Path) -> bool {
    plan.args().iter().any(|a| Path::new(a).starts_with(p))
}

#[test]
fn a_data_dir_under_tmp_stays_hidden_and_read_only_and_a_checkout_there_is_not_named() {
    // CI clones under /tmp: the private /tmp must not stand in for the
    // data dir's and config dir's hides (the worktree is bound inside
    // the data dir). The checkout needs none: it is not in the private
    // /tmp, and a hide would name its path in /proc/self/mountinfo.
    let dir = tempfile::Builder::new()
        .prefix("overseer-plan-")
        .tempdir_in("/tmp")
        .expect("tempdir in /tmp");
    let root = dir.path().canonicalize().expect("canon");
    for d in ["repo/.git/objects", "data/worktrees/w/run-1/.git", "config"] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    let plan = plan(&SandboxInputs {
        bwrap: "/usr/bin/bwrap".into(),
        data_dir: root.join("data"),
        config_dir: root.join("config"),
        repo: Some(root.join("repo")),
        worktree: root.join("data/worktrees/w/run-1"),
        network: NetworkMode::Host,
        ..SandboxInputs::default()
    })
    .expect("plan");
    let args: Vec<String> = plan
        .args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    for hidden in ["data", "config"] {
        let p = root.join(hidden);
        assert!(
            plan.mounts.contains(&Mount::Tmpfs(p.clone())),
            "{hidden} has its own hide: {:#?}",
            plan.mounts
        );
        let p = p.to_string_lossy().into_owned();
        assert!(
            args.windows(2).any(|w| w[0] == "--remount-ro" && w[1] == p),
            "{hidden} is read-only: {args:?}"
        );
    }
    let repo = root.join("repo");
    assert!(!names(&plan, &repo), "the checkout is named: {args:?}");
    assert!(plan.hides(&repo.join("README.md")));
    assert!(!plan.writable(&repo.join("README.md")));
    assert!(plan.writable(&root.join("data/worktrees/w/run-1/src")));
}

#[test]
fn a_checkout_inside_a_system_directory_is_left_out_of_its_bind_not_hidden_at_its_path() {
    // Directories every system has stand in for a checkout there (the
    // plan only lists them): /usr/share beside /usr/bin, and one in /var
    // beside /var/tmp, a hidden place.
    let f = Fixture::new();
    let in_var = ["/var/lib", "/var/cache", "/var/log"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| canon(p).as_ref() == Some(p) && Path::new(VAR_TMP).is_dir())
        .expect("a directory in /var beside /var/tmp");
    for checkout in [PathBuf::from("/usr/share"), in_var] {
        let mut inputs = f.inputs();
        inputs.repo = Some(checkout.clone());
        let plan = plan(&inputs).expect("plan");
        let m = &plan.mounts;
        let parent = checkout.parent().expect("parent");
        assert!(!names(&plan, &checkout), "{}: {m:#?}", checkout.display());
        assert!(plan.hides(&checkout.join("x")), "{m:#?}");
        assert!(!plan.writable(&checkout.join("x")));
        assert!(bind(m, parent).is_none(), "{m:#?}");
        // Everything else of the system directory is there, as the
        // host has it.
        for entry in std::fs::read_dir(parent).expect("list") {
            let p = entry.expect("entry").path();
            if p == checkout || p == Path::new(VAR_TMP) {
                continue;
            }
            let kept = m.iter().any(|x| match x {
                Mount::Entry {
                    path,
                    writable: false,
                } => path == &p,
                Mount::Symlink { link, .. } => link == &p,
                _ => false,
            });
            assert!(kept, "{} is bound: {m:#?}", p.display());
            if !std::fs::symlink_metadata(&p).is_ok_and(|t| t.is_symlink()) {
                let arg = p.to_string_lossy().into_owned();
                let args: Vec<String> = plan
                    .args()
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                assert!(
                    args.windows(3)
                        .any(|w| w[0] == "--ro-bind-try" && w[1] == arg && w[2] == arg),
                    "{arg}: an entry gone by the time the sandbox is made is skipped"
                );
            }
        }
        // The hidden place beside it stays out of sight (absent now).
        assert!(plan.hides(&Path::new(VAR_TMP).join("x")), "{m:#?}");
        assert!(bind(m, Path::new(VAR_TMP)).is_none(), "{m:#?}");
    }
    // A directory the profile binds shows whole: the hide stays there.
    let dir = f.p("srv/src/app");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut inputs = f.inputs();
    inputs.repo = Some(dir.clone());
    inputs.read_paths = vec![f.p("srv")];
    let plan = plan(&inputs).expect("plan");
    assert!(plan.mounts.contains(&Mount::Tmpfs(dir.clone())));
    assert!(plan.hides(&dir.join("x")));
}

#[test]
fn the_plan_hides_the_engine_and_the_user_and_binds_back_only_the_run() {
    let f = Fixture::new();
    let plan = plan(&f.inputs()).expect("plan");
    let m = &plan.mounts;
    for hidden in [
        "data/overseer.sock",
        "data/worktrees/w/run-2",
        "config/key",
        "runtime/bus",
        "repo/src",
        "repo/.git/hooks",
        "home/.bashrc",
    ] {
        assert!(plan.hides(&f.p(hidden)), "{hidden} is hidden: {m:#?}");
    }
    assert!(plan.hides(Path::new("/tmp/x")));
    assert!(
        m.contains(&Mount::Tmpfs(PathBuf::from("/tmp"))),
        "a private /tmp"
    );
    assert!(!plan.writable(&f.p("data/overseer.sock")));
    assert!(!plan.writable(&f.p("repo/x")));
    let args: Vec<String> = plan
        .args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let ro = args
        .iter()
        .position(|a| a == "--remount-ro")
        .expect("hides are read-only");
    assert!(
        args[..ro].iter().all(|a| a != "--remount-ro")
            && args[ro..]
                .iter()
                .step_by(2)
                .take_while(|a| *a == "--remount-ro")
                .count()
                > 0,
        "{args:?}"
    );
    assert!(!args
        .windows(2)
        .any(|w| w[0] == "--remount-ro" && w[1] == "/tmp"));
    assert!(!plan.hides(Path::new("/usr/bin/git")));
    // The agent's own home stands in for the user's HOME (no tmpfs
    // needed there: the bind replaces it).
    assert_eq!(
        bind(m, &f.p("home")),
        Some((f.p("data/agent-homes/claude"), true))
    );
    assert!(plan
        .env
        .contains(&("HOME".into(), f.p("home").to_string_lossy().into_owned())));
    assert!(plan.env.contains(&("TMPDIR".into(), "/tmp".into())));
    // The working copy is writable, its .git read-only, after it.
    let wt = f.p("data/worktrees/w/run-1");
    assert_eq!(bind(m, &wt), Some((wt.clone(), true)));
    assert_eq!(bind(m, &wt.join(".git")), Some((wt.join(".git"), false)));
    assert!(!plan.hides(&wt.join("src")));
    assert!(position(m, &wt.join(".git")) > position(m, &wt));
    assert!(plan.writable(&wt.join("src/x")));
    assert!(!plan.writable(&wt.join(".git/hooks/x")));
    // Read-only: toolchains and PATH entries under HOME, the program's
    // top-most node_modules. Nothing of the user's repository (its
    // objects included) is bound.
    assert_eq!(bind(m, &f.p("repo/.git/objects")), None);
    assert!(plan.hides(&f.p("repo/.git/objects/x")));
    for ro in [
        "home/.cargo",
        "home/.local/bin",
        "home/bin",
        "home/.cargo/bin",
        "tools/lib/node_modules",
    ] {
        assert_eq!(bind(m, &f.p(ro)), Some((f.p(ro), false)), "{ro}");
        assert!(!plan.writable(&f.p(ro).join("x")), "{ro}");
        assert!(!plan.hides(&f.p(ro).join("x")), "{ro}");
    }
    assert!(m.contains(&Mount::Cover(f.p("home/.cargo/credentials.toml"))));
    assert!(plan.hides(&f.p("home/.cargo/credentials.toml")));
    assert!(position(m, &f.p("home/.cargo")) > position(m, &f.p("home")));
    assert_eq!(plan.chdir, wt);
    assert!(!plan.args().contains(&OsString::from("--unshare-net")));
    let args: Vec<String> = plan
        .args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert!(args.starts_with(&["--unshare-user".to_owned(), "--unshare-pid".to_owned()]));
    assert_eq!(args.last().map(String::as_str), Some("--"));
}

#[test]
fn profile_dirs_are_writable_and_may_not_expose_what_is_hidden() {
    let f = Fixture::new();
    let mut inputs = f.inputs();
    inputs.env = vec![
        ("HOME".into(), f.p("codex-home").to_string_lossy().into()),
        (
            "CODEX_HOME".into(),
            f.p("codex-home").to_string_lossy().into(),
        ),
        ("API_KEY".into(), "/".into()),
    ];
    inputs.network = NetworkMode::None;
    let plan = plan(&inputs).expect("plan");
    assert_eq!(
        bind(&plan.mounts, &f.p("codex-home")),
        Some((f.p("codex-home"), true))
    );
    // The profile's HOME: the user's HOME is hidden (a tmpfs).
    assert!(plan.hides(&f.p("home/.bashrc")));
    assert!(!plan.writable(&f.p("home/.bashrc")) || plan.hides(&f.p("home/.bashrc")));
    assert!(!plan.env.iter().any(|(k, _)| k == "HOME"));
    assert!(plan.args().contains(&OsString::from("--unshare-net")));

    for (k, v, why) in [
        ("HOME", f.p("home"), "your HOME"),
        ("CARGO_HOME", f.p("config"), "signing key"),
        (
            "X_HOME",
            f.p("data/worktrees"),
            "inside Overseer's data dir",
        ),
    ] {
        let mut inputs = f.inputs();
        inputs.env = vec![(k.into(), v.to_string_lossy().into())];
        let err = super::plan(&inputs).expect_err("refused");
        assert!(err.0.contains(why), "{err}");
        assert!(err.0.contains(k), "{err}");
    }
    let mut inputs = f.inputs();
    inputs.write_paths = vec!["relative".into()];
    assert!(super::plan(&inputs)
        .expect_err("relative")
        .0
        .contains("absolute"));
    inputs.write_paths = vec![f.p("data")];
    assert!(super::plan(&inputs).is_err());
    inputs.write_paths = vec![];
    inputs.read_paths = vec![f.p("config")];
    assert!(super::plan(&inputs).is_err());
    // A bind above a hidden place is fine: the hide is applied after it.
    inputs.read_paths = vec![f.root.clone()];
    let plan = super::plan(&inputs).expect("plan");
    assert!(!plan.hides(&f.p("script.json")));
    assert!(plan.hides(&f.p("config/key")));
    assert!(plan.hides(&f.p("data/overseer.sock")));
}

#[test]
fn a_missing_or_symlinked_git_is_covered() {
    let f = Fixture::new();
    let wt = f.p("data/worktrees/w/run-1");
    std::fs::remove_dir_all(wt.join(".git")).expect("rm");
    let p = plan(&f.inputs()).expect("plan");
    assert!(p.mounts.contains(&Mount::Cover(wt.join(".git"))));
    std::os::unix::fs::symlink(f.p("repo/.git"), wt.join(".git")).expect("symlink");
    let p = plan(&f.inputs()).expect("plan");
    assert!(p.mounts.contains(&Mount::Cover(wt.join(".git"))));
    std::fs::remove_file(wt.join(".git")).expect("rm");
    std::fs::write(wt.join(".git"), "gitdir: /elsewhere\n").expect("write");
    let p = plan(&f.inputs()).expect("plan");
    assert_eq!(
        bind(&p.mounts, &wt.join(".git")),
        Some((wt.join(".git"), false))
    );
}

#[test]
fn install_dirs() {
    assert_eq!(
        install_dir(Path::new("/a/node_modules/b/node_modules/c/dist/x.js")),
        Some(PathBuf::from("/a/node_modules"))
    );
    assert_eq!(
        install_dir(Path::new("/usr/local/bin/agent")),
        Some(PathBuf::from("/usr/local/bin"))
    );
}

// Each step of `plan`, on its own: the mounts (or paths) it produces.

#[test]
fn places_hide_the_shared_temp_dirs_the_engine_and_the_user_and_guard_the_secret_roots() {
    let f = Fixture::new();
    let places = Places::of(&f.inputs()).expect("places");
    assert_eq!(places.worktree, f.p("data/worktrees/w/run-1"));
    for h in ["data", "config", "runtime", "home", "repo"] {
        assert!(places.hidden.contains(&f.p(h)), "{h}: {places:?}");
    }
    assert!(places.hidden.contains(&PathBuf::from("/tmp")));
    assert!(places.hidden.contains(&PathBuf::from(VAR_TMP)));
    assert_eq!(
        places.secret_roots,
        vec![f.p("data"), f.p("config"), f.p("runtime")]
    );
    // What may be bound: nothing hidden, nothing inside a secret root but
    // what is allowed there, never the whole filesystem.
    let allowed = [places.worktree.clone()];
    assert!(places
        .check(&f.p("data/worktrees/w/run-1/src"), &allowed)
        .is_ok());
    let inside = places.check(&f.p("data/agent-homes"), &allowed);
    assert!(
        inside.as_ref().is_err_and(|e| e.contains("data dir")),
        "{inside:?}"
    );
    let home = places.check(&f.p("home"), &allowed);
    assert!(
        home.as_ref().is_err_and(|e| e.contains("your HOME")),
        "{home:?}"
    );
    assert!(places.check(Path::new("/"), &allowed).is_err());
    // A hide for each hidden place that exists.
    let hides = places.hides();
    assert!(hides.contains(&Mount::Tmpfs(f.p("repo"))));
    assert!(hides.iter().all(|m| matches!(m, Mount::Tmpfs(_))));
    // A missing working copy is an error saying which.
    let mut gone = f.inputs();
    gone.worktree = f.p("data/worktrees/w/run-9");
    let e = Places::of(&gone).expect_err("no working copy");
    assert!(
        e.0.contains("run-9") && e.0.contains("does not exist"),
        "{e}"
    );
}

#[test]
fn the_private_home_is_bound_writable_at_the_users_home_unless_the_profile_sets_home() {
    let f = Fixture::new();
    let inputs = f.inputs();
    let places = Places::of(&inputs).expect("places");
    let mount = private_home(&inputs, &places)
        .expect("home")
        .expect("a private home");
    assert_eq!(
        mount,
        Mount::Bind {
            source: f.p("data/agent-homes/claude"),
            target: f.p("home"),
            writable: true,
        }
    );
    let plan = plan(&inputs).expect("plan");
    assert!(plan
        .env
        .contains(&("HOME".to_owned(), f.p("home").display().to_string())));
    let mut own = f.inputs();
    own.env = vec![("HOME".into(), f.p("codex-home").display().to_string())];
    assert!(private_home(&own, &places).expect("home").is_none());
    let mut missing = f.inputs();
    missing.private_home = Some(f.p("data/agent-homes/nobody"));
    assert!(private_home(&missing, &places).is_err());
}

#[test]
fn the_profiles_state_dirs_are_writable_and_one_exposing_a_hidden_place_is_refused() {
    let f = Fixture::new();
    let mut inputs = f.inputs();
    inputs.env = vec![
        ("CODEX_HOME".into(), f.p("codex-home").display().to_string()),
        ("TMPDIR".into(), "/tmp".into()),
        ("EDITOR".into(), f.p("tools").display().to_string()),
        ("RELATIVE_HOME".into(), "codex-home".into()),
    ];
    let places = Places::of(&inputs).expect("places");
    let allowed = [places.worktree.clone()];
    assert_eq!(
        profile_state_dirs(&inputs, &places, &allowed).expect("dirs"),
        vec![f.p("codex-home")]
    );
    inputs.env = vec![(
        "XDG_CONFIG_HOME".into(),
        f.p("config").display().to_string(),
    )];
    let e = profile_state_dirs(&inputs, &places, &allowed).expect_err("the config dir");
    assert!(
        e.0.contains("XDG_CONFIG_HOME") && e.0.contains("point it elsewhere"),
        "{e}"
    );
}

#[test]
fn automatic_binds_are_the_toolchains_path_and_install_and_credentials_are_covered() {
    let f = Fixture::new();
    let mut inputs = f.inputs();
    inputs.host_path = Some(format!(
        "{}:/usr/bin:{}",
        f.p("home/bin").display(),
        f.p("repo/.git").display()
    ));
    let places = Places::of(&inputs).expect("places");
    let (automatic, covers) = automatic_binds(&inputs, &places);
    for p in [
        "home/.cargo",
        "home/.local/bin",
        "home/bin",
        "tools/lib/node_modules",
    ] {
        assert!(automatic.contains(&f.p(p)), "{p}: {automatic:?}");
    }
    // The system's own directories and the user's checkout are not bound
    // from PATH.
    assert!(
        !automatic.iter().any(|p| p.starts_with("/usr")),
        "{automatic:?}"
    );
    assert!(
        !automatic.iter().any(|p| p.starts_with(f.p("repo"))),
        "{automatic:?}"
    );
    assert_eq!(covers, vec![f.p("home/.cargo/credentials.toml")]);
}

#[test]
fn the_runs_own_mounts_are_its_working_copy_socket_git_and_resolv_conf() {
    let f = Fixture::new();
    let mut inputs = f.inputs();
    let sock = f.p("data/run-1.sock");
    std::fs::write(&sock, "").expect("socket stand-in");
    let conf = f.p("resolv.conf");
    std::fs::write(&conf, "nameserver 10.0.2.3\n").expect("resolv.conf");
    inputs.agent_socket = Some(sock.clone());
    inputs.network = NetworkMode::Private;
    inputs.resolv_conf = Some(conf.clone());
    let worktree = f.p("data/worktrees/w/run-1");
    let mut covers = Vec::new();
    let m = run_own(&inputs, &worktree, &mut covers);
    assert_eq!(bind(&m, &worktree), Some((worktree.clone(), true)));
    assert_eq!(bind(&m, Path::new(AGENT_SOCKET)), Some((sock, true)));
    assert_eq!(
        bind(&m, &worktree.join(".git")),
        Some((worktree.join(".git"), false))
    );
    assert_eq!(bind(&m, Path::new("/etc/resolv.conf")), Some((conf, false)));
    assert!(covers.is_empty());
    // The host's network: its own resolv.conf; no .git: covered.
    inputs.network = NetworkMode::Host;
    std::fs::remove_dir_all(worktree.join(".git")).expect("rm .git");
    let m = run_own(&inputs, &worktree, &mut covers);
    assert_eq!(bind(&m, Path::new("/etc/resolv.conf")), None);
    assert_eq!(bind(&m, &worktree.join(".git")), None);
    assert_eq!(covers, vec![worktree.join(".git")]);
}
