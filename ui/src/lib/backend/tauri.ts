// The only module that imports @tauri-apps: the window's line to the engine.
// What it can call and listen to is generated from the contract
// (../generated/client.ts); here only the transport.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type { Backend } from "./backend";
import { toApiError } from "./errors";
import { events, operations } from "../generated/client";
import { backendHosts, type HostTransport } from "../hosts/link";

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw toApiError(e);
  }
}

function on<T>(channel: string, handler: (payload: T) => void): Promise<() => void> {
  return listen<T>(channel, (e) => handler(e.payload));
}

export const tauriBackend: Backend = { ...operations(call), ...events(on) };

/** The app's hosts: their links and one multiplexed line to each host's
 * engine, kept by the app (see ../hosts/link.ts). */
export const tauriHosts: HostTransport = backendHosts(tauriBackend);
