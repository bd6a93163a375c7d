//! The app's own commands and events about hosts (engines on other
//! machines, reached through one link each), declared once like the
//! contract's operations and in the same shape, so the same adapters read
//! them: [`host_commands!`] expands to
//! `adapter! { both {} socket_only {} window_only {..} streams {} events {..} also_declared {} }`.
//! No engine implements them: the app answers them from its links
//! (`src-tauri/src/hosts.rs`), and the socket and browsers do not carry
//! them. The Tauri handler, the build manifest's list, the main window's
//! capability and the window's typed client include them, generated from
//! this table.
//!
//! The names the table uses resolve where it expands: `HostLinkView`,
//! `HostEvent`, `HostSetupStep`, `HostRemoved` (`overseer_server::remote`) and `JsonValue`
//! (`serde_json::Value`).

/// The table of the app's host commands (see the module's docs).
#[macro_export]
macro_rules! host_commands {
    ($adapter:ident) => {
        $adapter! {
            both {}
            socket_only {}
            window_only {
                /// Every host this machine knows (`overseer hosts add`), with
                /// how its link stands: connecting, live (its engine, version,
                /// and `resync`, which grows at each reconnection: re-read the
                /// host then), or down (since when, why, when it retries).
                read host_links => HostLinks -> Vec<HostLinkView>,
                    because "the app's links to other machines' engines; an engine knows no hosts";
                /// One of the window's commands (`command`: its name, such as
                /// `decide_gate`; `args`: the arguments the window passes it,
                /// camelCase) performed by host `host`'s engine through its
                /// link; its answer as that command's. Refused at once while
                /// the link is not live (`engine_unavailable`, saying since
                /// when and why; nothing was sent). An answer lost as the link
                /// dropped is an `engine_unavailable` saying it may have been
                /// applied: re-read the host when it is back.
                own host_call => HostCall {
                    host: String as host,
                    command: String as command,
                    args: JsonValue as args,
                } -> JsonValue,
                    because "the app's links to other machines' engines; an engine knows no hosts";
                /// Reconnects host `host`'s link now instead of at its retry
                /// time (a live link is left alone).
                read host_retry => HostRetry { host: String as host } -> (),
                    because "the app's links to other machines' engines; an engine knows no hosts";
                /// Adds host `name` at `url` (`ssh://[user@]host[:port]`) as
                /// `overseer hosts add` does: checks the machine (saying what
                /// to install), copies this version's `overseer` there, starts
                /// its engine, pins its signing key, and links to it. Each step
                /// is told as an `overseer://host-setup` event as it happens;
                /// the answer is the new host's link.
                own host_add => HostAdd {
                    name: String as name,
                    url: String as url,
                    /// An ssh config file to use instead of ~/.ssh/config, kept
                    /// for this host (`hosts add --ssh-config`); null: the user's.
                    ssh_config: Option<String> as ssh_config,
                } -> HostLinkView,
                    because "the app's links to other machines' engines; an engine knows no hosts";
                /// Installs this version on host `host` and restarts its engine
                /// there (`overseer hosts upgrade`); its key must be the pinned
                /// one. Steps told as `overseer://host-setup`.
                own host_upgrade => HostUpgrade { host: String as host } -> HostLinkView,
                    because "the app's links to other machines' engines; an engine knows no hosts";
                /// Stops host `host`'s engine and forgets the host (`overseer
                /// hosts remove`; its files stay there): its link closes and
                /// `overseer://host-removed` is pushed.
                own host_remove => HostRemove { host: String as host } -> (),
                    because "the app's links to other machines' engines; an engine knows no hosts";
            }
            streams {}
            events {
                /// Every event of every host's engine, named by its host.
                on_host_event "overseer://host-event" => HostEvent;
                /// A host's link changed state (and at start, once per host).
                on_host_link "overseer://host-link" => HostLinkView;
                /// One step of adding, upgrading or removing a host, as it
                /// happens (from the window or from `overseer hosts` in a terminal).
                on_host_setup "overseer://host-setup" => HostSetupStep;
                /// A host was forgotten (from the window or `overseer hosts
                /// remove`): its link is closed; drop its rows.
                on_host_removed "overseer://host-removed" => HostRemoved;
            }
            also_declared {}
        }
    };
}

/// The host commands' and events' names ([`host_commands!`] read by
/// [`describe_adapter!`](crate::describe_adapter)): `OPERATIONS`,
/// `WINDOW_COMMANDS` and `EVENTS` of the app's own.
pub mod names {
    use crate::{EventInfo, OperationInfo, Surfaces};
    crate::host_commands!(describe_adapter);
}
