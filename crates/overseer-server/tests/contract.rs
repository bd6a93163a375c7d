//! The checked-in files generated from the contract (crates/overseer-api)
//! are what it generates now: the window's TypeScript types (ts-rs, every
//! type an operation or event names, followed to the types they name) and
//! typed client at ui/src/lib/generated/, and the main window's capability
//! at src-tauri/capabilities/main.json. This test fails when one drifts;
//! `make types` (OVERSEER_WRITE_TYPES=1) rewrites them.

use overseer_api::{capability, typescript_adapter, typescript_client, TS_HEADER};
use overseer_server::api::vocabulary::*;
use std::any::TypeId;
use std::collections::BTreeMap;
use std::path::PathBuf;
use ts_rs::{Config, TypeVisitor, TS};

overseer_api::operations!(typescript_adapter);

/// The app's host commands and events, read off their types the same way.
mod hosts {
    #[allow(unused_imports)]
    use super::*;
    use overseer_server::remote::{HostEvent, HostLinkView, HostRemoved, HostSetupStep};
    type JsonValue = serde_json::Value;
    overseer_api::host_commands!(typescript_adapter);

    pub fn signatures(
        cfg: &ts_rs::Config,
    ) -> (Vec<overseer_api::TsOperation>, Vec<overseer_api::TsEvent>) {
        typescript_signatures(cfg)
    }

    pub fn visit(v: &mut impl ts_rs::TypeVisitor) {
        visit_contract(v)
    }
}

/// Every declarable type the contract reaches, by TypeScript name.
struct Reached<'a> {
    cfg: &'a Config,
    seen: Vec<TypeId>,
    decls: BTreeMap<String, String>,
}

impl TypeVisitor for Reached<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        let id = TypeId::of::<T>();
        if self.seen.contains(&id) {
            return;
        }
        self.seen.push(id);
        if T::output_path().is_some() {
            let name = T::ident(self.cfg);
            let decl = T::decl(self.cfg);
            // One type may stand for another (serde_json's `Value` is
            // declared by ts-rs's own `JsonValue`): the same declaration.
            if let Some(other) = self.decls.get(&name) {
                assert_eq!(
                    *other, decl,
                    "two Rust types are both `{name}` in TypeScript: rename one (#[ts(rename)])"
                );
            }
            self.decls.insert(name, decl);
        }
        T::visit_dependencies(self);
        T::visit_generics(self);
    }
}

/// Each generated file, relative to the repository, with what it should hold.
fn generated() -> Vec<(&'static str, String)> {
    let cfg = Config::new().with_large_int("number");
    let mut reached = Reached {
        cfg: &cfg,
        seen: Vec::new(),
        decls: BTreeMap::new(),
    };
    visit_contract(&mut reached);
    hosts::visit(&mut reached);
    let mut types = String::from(TS_HEADER);
    for decl in reached.decls.values() {
        types.push_str("\nexport ");
        types.push_str(decl);
        types.push('\n');
    }
    let declared: Vec<String> = reached.decls.keys().cloned().collect();
    let (mut operations, mut events) = typescript_signatures(&cfg);
    let (host_operations, host_events) = hosts::signatures(&cfg);
    operations.extend(host_operations);
    events.extend(host_events);
    vec![
        ("ui/src/lib/generated/types.ts", types),
        (
            "ui/src/lib/generated/client.ts",
            typescript_client(&operations, &events, &declared),
        ),
        ("src-tauri/capabilities/main.json", capability()),
    ]
}

#[test]
fn the_checked_in_contract_files_match_the_contract() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let write = std::env::var_os("OVERSEER_WRITE_TYPES").is_some();
    let mut stale = Vec::new();
    for (file, want) in generated() {
        let path = root.join(file);
        if write {
            std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
            std::fs::write(&path, &want).expect("write a generated file");
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            stale.push(file);
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} drifted from the contract (crates/overseer-api) or the Rust types: \
         run `make types` and commit the result"
    );
}

#[test]
fn the_client_has_one_typed_function_per_window_command_and_one_listener_per_event() {
    let cfg = Config::new().with_large_int("number");
    let (operations, events) = typescript_signatures(&cfg);
    let commands: Vec<&str> = operations.iter().map(|o| o.command).collect();
    assert_eq!(commands, overseer_api::WINDOW_COMMANDS);
    let approve = operations
        .iter()
        .find(|o| o.command == "approve_run")
        .expect("approve_run");
    assert_eq!(approve.params, [("run_id", "RunId".to_owned())]);
    assert_eq!(approve.response, "RunView");
    let client = generated()
        .into_iter()
        .find(|(f, _)| f.ends_with("client.ts"))
        .expect("client")
        .1;
    assert!(client.contains("  approveRun(runId: RunId): Promise<RunView>;\n"));
    assert!(client
        .contains("    approveRun: (runId) => invoke<RunView>(\"approve_run\", { runId }),\n"));
    assert!(
        client.contains("    subscribe: (on) => listen<EngineEvent>(\"overseer://event\", on),\n")
    );
    assert_eq!(events.len(), overseer_api::EVENTS.len());
}
