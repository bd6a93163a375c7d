//! The window's commands as operations, generated from the contract's table
//! ([`overseer_api::operations!`]): a command's name (`decide_gate`) and the
//! arguments object the window passes to `invoke` (camelCase keys: `gateId`)
//! become the operation it performs ([`WindowCall`]), which a transport
//! performs on its engine (a browser's calls, `overseer-web`) or sends to
//! another engine as the socket's [`Request`] (a host's, through its link).
//! `socket_only` entries and `streams` are not the window's.

#[allow(unused_imports)]
use crate::api::vocabulary::*;
use crate::api::{op, Operation, Request};
use overseer_core::ErrorCode;
use overseer_engine::Engine;
use serde_json::Value;

/// A command's arguments object, read one argument at a time so a wrong
/// one is named.
struct Args<'a> {
    command: &'a str,
    map: serde_json::Map<String, Value>,
}

impl<'a> Args<'a> {
    /// `args` must be an object (null or absent: `{}`) whose keys are the
    /// command's arguments (`names`, snake_case) in camelCase.
    fn new(command: &'a str, args: &Value, names: &[&str]) -> Result<Args<'a>, ApiError> {
        let wanted: Vec<String> = names.iter().map(|n| overseer_api::camel_case(n)).collect();
        let list = || {
            if wanted.is_empty() {
                "it takes none: send `{}`".to_owned()
            } else {
                format!("its arguments are {}", wanted.join(", "))
            }
        };
        let map = match args {
            Value::Null => serde_json::Map::new(),
            Value::Object(m) => m.clone(),
            other => {
                return Err(invalid(format!(
                    "the arguments of `{command}` must be a JSON object with the window's \
                     argument names (camelCase), not {}; {}",
                    kind(other),
                    list()
                )))
            }
        };
        if let Some(unknown) = map.keys().find(|k| !wanted.contains(k)) {
            return Err(invalid(format!(
                "`{command}` has no argument `{unknown}`; {}",
                list()
            )));
        }
        Ok(Args { command, map })
    }

    /// Argument `name` (snake_case) as its type; a missing one is null
    /// (an optional one is then absent).
    fn take<T: serde::de::DeserializeOwned>(&mut self, name: &str) -> Result<T, ApiError> {
        let key = overseer_api::camel_case(name);
        let command = self.command;
        match self.map.remove(&key) {
            Some(v) => serde_json::from_value(v).map_err(|e| {
                invalid(format!(
                    "the argument `{key}` of `{command}` is not valid: {e}"
                ))
            }),
            None => serde_json::from_value(Value::Null)
                .map_err(|_| invalid(format!("`{command}` needs the argument `{key}`"))),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn invalid(message: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidInput, message)
}

fn to_json<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| {
        ApiError::new(
            ErrorCode::Internal,
            format!("the answer could not be written: {e}"),
        )
    })
}

/// Generates [`COMMANDS`] and [`WindowCall`] from the table.
macro_rules! window_calls {
    (
        both { $(
            $(#[doc = $doc:literal])*
            $kind:ident $call:ident => $Op:ident
                $( { $( $(#[$fattr:meta])* $field:ident : $fty:ty as $arg:ident ),* $(,)? } )?
                -> $resp:ty;
        )* }
        socket_only { $($socket_only:tt)* }
        window_only { $(
            $(#[doc = $wdoc:literal])*
            $wkind:ident $wcall:ident => $WOp:ident
                $( { $( $(#[$wfattr:meta])* $wfield:ident : $wfty:ty as $warg:ident ),* $(,)? } )?
                -> $wresp:ty, because $wwhy:literal;
        )* }
        streams { $($streams:tt)* }
        events { $($events:tt)* }
        also_declared { $($also:tt)* }
    ) => {
        /// Every command the window has (the table's `both` and
        /// `window_only` entries), in table order.
        pub const COMMANDS: &[&str] = &[$(stringify!($call),)* $(stringify!($wcall),)*];

        /// A window command with its arguments read: the operation it performs.
        #[derive(Debug, Clone, PartialEq)]
        pub enum WindowCall {
            $( $Op(op::$Op), )*
            $( $WOp(op::$WOp), )*
        }

        impl WindowCall {
            /// Reads `command` with the window's arguments object `args`;
            /// `None` when the window has no such command, an
            /// `invalid_input` naming the argument that is wrong.
            pub fn read(command: &str, args: &Value) -> Option<Result<WindowCall, ApiError>> {
                match command {
                    $(
                        stringify!($call) => Some((|| {
                            #[allow(unused_mut, unused_variables)]
                            let mut a = Args::new(command, args, &[$($(stringify!($arg)),*)?])?;
                            Ok(WindowCall::$Op(op::$Op { $($( $field: a.take::<$fty>(stringify!($arg))? ),*)? }))
                        })()),
                    )*
                    $(
                        stringify!($wcall) => Some((|| {
                            #[allow(unused_mut, unused_variables)]
                            let mut a = Args::new(command, args, &[$($(stringify!($warg)),*)?])?;
                            Ok(WindowCall::$WOp(op::$WOp { $($( $wfield: a.take::<$wfty>(stringify!($warg))? ),*)? }))
                        })()),
                    )*
                    _ => None,
                }
            }

            /// Whether it decides or changes anything (the table's `write`).
            pub fn decides(&self) -> bool {
                match self {
                    $( WindowCall::$Op(_) => <op::$Op as Operation>::DECIDES, )*
                    $( WindowCall::$WOp(_) => <op::$WOp as Operation>::DECIDES, )*
                }
            }

            /// Performs it on `engine` as `actor`; its answer as JSON.
            pub fn perform(self, engine: &Engine, actor: &Actor) -> Result<Value, ApiError> {
                match self {
                    $( WindowCall::$Op(o) => to_json(o.perform(engine, actor)?), )*
                    $( WindowCall::$WOp(o) => to_json(o.perform(engine, actor)?), )*
                }
            }

            /// The socket's request for it (to send it to another engine);
            /// refused for an operation the socket does not carry.
            pub fn into_request(self) -> Result<Request, ApiError> {
                match self {
                    $( WindowCall::$Op(o) => Ok(o.into()), )*
                    $( WindowCall::$WOp(_) => Err(invalid(format!(
                        "`{}` is the window's own: the socket, and so a host, does not carry it",
                        stringify!($wcall)
                    ))), )*
                }
            }
        }
    };
}

overseer_api::operations!(window_calls);

/// The socket's request for the window's `command` with its `args`: what a
/// host's link sends. An unknown command or a wrong argument is an
/// `invalid_input` that names it.
pub fn request(command: &str, args: &Value) -> Result<Request, ApiError> {
    match WindowCall::read(command, args) {
        Some(call) => call?.into_request(),
        None => Err(invalid(format!(
            "the window has no command `{command}` (one of {}, e.g. `list_runs`, `decide_gate`)",
            COMMANDS.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_window_command_and_its_camel_case_args_become_the_sockets_request() {
        let r = request(
            "decide_gate",
            &json!({"gateId": 7, "option": {"kind": "tool_call", "choice": "yes"}, "context": null}),
        )
        .expect("read");
        let wire = serde_json::to_value(crate::api::Call { id: 1, request: r }).expect("json");
        assert_eq!(wire["method"], "decide_gate");
        assert_eq!(wire["params"]["gate"], 7);
        assert_eq!(wire["params"]["context"], Value::Null);
        // No arguments: null or {} alike; optional ones may be left out.
        for args in [Value::Null, json!({})] {
            assert_eq!(
                request("list_runs", &args).expect("read"),
                Request::ListRuns
            );
        }
        assert_eq!(
            request("list_gates", &json!({"pendingOnly": true})).expect("read"),
            Request::ListGates {
                pending_only: true,
                limit: None,
                after: None
            }
        );
        // The head of the fleet is carried by the socket too (a host's fleet paints it).
        assert_eq!(
            request("list_runs_head", &json!({"limit": 50})).expect("read"),
            Request::ListRunsHead { limit: 50 }
        );
    }

    #[test]
    fn a_wrong_argument_is_invalid_input_naming_it() {
        let cases = [
            ("show_gate", json!({"gateId": "four"}), "gateId"),
            ("show_gate", json!({}), "gateId"),
            ("show_gate", json!({"gate_id": 4}), "gate_id"),
            ("approve_run", json!({"runId": 1, "force": true}), "force"),
            ("list_gates", json!([true]), "pendingOnly"),
            ("list_runs", json!({"x": 1}), "takes none"),
            (
                "decide_gate",
                json!({"gateId": 1, "option": {"kind": "tool_call", "choice": "maybe"}}),
                "option",
            ),
        ];
        for (command, args, named) in cases {
            let e = request(command, &args).expect_err(command);
            assert_eq!(e.code, ErrorCode::InvalidInput, "{command}: {e:?}");
            assert!(
                e.message.contains(named) && e.message.contains(command),
                "{command} {args}: {}",
                e.message
            );
        }
        let e = request("open_the_pod_bay_doors", &json!({})).expect_err("unknown");
        assert_eq!(e.code, ErrorCode::InvalidInput);
        assert!(
            e.message.contains("open_the_pod_bay_doors"),
            "{}",
            e.message
        );
    }
}
