// The app's hosts, as its Tauri commands and events carry them. Hand-written
// for now; the same shapes as the Rust side's, and to be replaced by the
// generated ones (../generated/types.ts) once that side declares them.
import type { EngineEvent } from "../types";

/** Where the app's one link to a host's engine stands. `resync` grows on
 * every reconnection: what was read from that host before may be stale. */
export type HostLinkState =
  | { status: "connecting" }
  | { status: "live"; engine: string; version: string; resync: number }
  | { status: "down"; since_ms: number; retry_at_ms: number; reason: string };

/** A host this machine knows (`overseer hosts add`), with its link. */
export type HostLinkView = { name: string; url: string; fingerprint: string; state: HostLinkState };

/** An event a host's engine pushed (channel `overseer://host-event`). */
export type HostEvent = { host: string; event: EngineEvent };

/** The Tauri side of the hosts. */
export const HOST_EVENT = "overseer://host-event";
export const HOST_LINK = "overseer://host-link";
