import type { Events, Operations } from "../generated/client";

/** Everything the UI asks of the engine: the contract's window operations and
 * events, generated with their types from the Rust declaration
 * (../generated/client.ts). One implementation talks to Tauri (./tauri.ts,
 * the only module that imports @tauri-apps); one to an engine's web server
 * over HTTP and a WebSocket (./web.ts); another lives in memory (./mock.ts)
 * for unit tests and the dev server. Every call rejects with an `ApiError`
 * ({code, message}). Nothing here changes UI state: the result of an action
 * arrives as a pushed event like any other change. */
export interface Backend extends Operations, Events {
  /** The line to the engine, when it can break (a browser's); absent when
   * the engine is in the same process (the app) or in memory. */
  readonly link?: Link;
}

/** Where a breakable line to the engine stands. */
export type LinkState =
  /** The first connection is being made. */
  | { status: "connecting" }
  /** Events flow and every store has caught up: decisions go through. */
  | { status: "live"; engine: string }
  /** Connected again (`restarted`: to a new engine process); the stores are
   * reading the engine's truth again. Decisions wait for it. */
  | { status: "resyncing"; engine: string; restarted: boolean }
  /** No events since `since` (ms); the next try at `retryAt` (ms). */
  | { status: "down"; since: number; retryAt: number; reason: string }
  /** This browser is not (or no longer) paired: only pairing helps. */
  | { status: "unpaired"; reason: string };

export interface Link {
  readonly state: LinkState;
  /** Told every change of state; returns the unsubscribe. */
  onState(on: (state: LinkState) => void): () => void;
  /** Told after each reconnection (also to a restarted engine), once the new
   * connection delivers events: reread everything shown, since events were
   * missed. The link is live again once every returned promise settled.
   * Returns the unsubscribe. */
  onResync(on: () => Promise<unknown>): () => void;
  /** Tries to connect now instead of waiting for the backoff. */
  retryNow(): void;
}
