import type { Backend } from "./backend";
import { demoBackend, withExternalSessions } from "./mock";
import { tauriBackend } from "./tauri";

export type { Backend } from "./backend";
export { toApiError } from "./errors";

/** The Tauri backend inside the app window; the in-memory one elsewhere. */
export function pickBackend(): Backend {
  if (typeof window !== "undefined" && "__TAURI_INTERNALS__" in window) return tauriBackend;
  const now = Date.now();
  return withExternalSessions(demoBackend(now), now);
}
