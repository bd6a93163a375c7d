import type { Backend } from "./backend";
import { tauriBackend, tauriHosts } from "./tauri";
import type { HostTransport } from "../hosts/link";
import { browserBackend } from "./web";

export type { Backend, Link, LinkState } from "./backend";
export { toApiError } from "./errors";

/** Which engine the page talks to. The built UI is loaded in exactly two
 * places: the app's window (Tauri injects `__TAURI_INTERNALS__` before any
 * script runs) and a browser, from the engine's own web server (same
 * origin as `/api`). The in-memory demo is only for Vite's dev server
 * (`npm run dev`, where `import.meta.env.DEV` is true; a production build
 * folds it to false, and the demo and its recorded fixtures are imported
 * only then, so the built bundle a phone loads leaves them out). No guess
 * from the URL, port or a network probe is involved. */
export async function pickBackend(): Promise<Backend> {
  if (typeof window !== "undefined" && "__TAURI_INTERNALS__" in window) return tauriBackend;
  if (import.meta.env.DEV) {
    const { demoBackend, withExternalSessions } = await import("./mock");
    const now = Date.now();
    return withExternalSessions(demoBackend(now), now);
  }
  return browserBackend();
}

/** The app's hosts (`overseer hosts add`): only the app's window reaches
 * them (a browser talks to one engine). The dev server shows demo hosts
 * with `?hosts` in its URL (one live, one whose link drops); without it none, as
 * a machine with no hosts. */
export async function pickHosts(): Promise<HostTransport | null> {
  if (typeof window !== "undefined" && "__TAURI_INTERNALS__" in window) return tauriHosts;
  if (import.meta.env.DEV && new URLSearchParams(location.search).has("hosts")) {
    const { demoHosts } = await import("./mock");
    return demoHosts(Date.now());
  }
  return null;
}
