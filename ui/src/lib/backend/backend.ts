import type { Events, Operations } from "../generated/client";

/** Everything the UI asks of the engine: the contract's window operations and
 * events, generated with their types from the Rust declaration
 * (../generated/client.ts). One implementation talks to Tauri (./tauri.ts,
 * the only module that imports @tauri-apps); another lives in memory
 * (./mock.ts) for unit tests and a plain browser. Every call rejects with an
 * `ApiError` ({code, message}). Nothing here changes UI state: the result of
 * an action arrives as a pushed event like any other change. */
export interface Backend extends Operations, Events {}
