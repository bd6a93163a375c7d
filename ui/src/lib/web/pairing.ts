// What the browser's pages say about pairing and the line to the engine.
import type { LinkState } from "../backend/backend";
import type { ApiError } from "../types";

/** A code carried in the pairing URL's fragment (`#pair=ABCD-EFGH`, what the
 * QR code holds when the engine puts the code in it); empty otherwise. The
 * fragment never reaches a server or a log. */
export function codeFromUrl(hash: string): string {
  const m = /(?:^#|&)pair=([A-Za-z0-9-]{1,32})(?:&|$)/.exec(hash);
  return m ? m[1]!.toUpperCase() : "";
}

/** A refused pairing, said so that the user knows what to do next. */
export function pairingAdvice(e: ApiError): string {
  switch (e.code) {
    case "unauthorized":
      if (/\bburned\b/.test(e.message)) {
        return "That code was burned: too many wrong codes were typed while it was outstanding (someone may be guessing codes). Ask for a new code: it works at once.";
      }
      return "That code is wrong or has expired. Check it, or start a new pairing and type the new code.";
    case "rate_limited":
      return "Too many wrong codes came from this network address: it can try again in a few minutes. Other devices can pair meanwhile.";
    case "engine_unavailable":
      return `${e.message}`;
    default:
      return `Pairing failed: ${e.message}`;
  }
}

function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

/** The banner's text for the line's state (null: nothing to say). */
export function linkNotice(state: LinkState, now: number): string | null {
  switch (state.status) {
    case "live":
    case "unpaired":
      return null;
    case "connecting":
      return "Connecting to the engine…";
    case "resyncing":
      return state.restarted
        ? "Reconnected to the engine, which restarted: reading its current state. Decisions wait until this page has caught up."
        : "Reconnected: reading the engine's current state. Decisions wait until this page has caught up.";
    case "down": {
      const wait = Math.max(0, Math.ceil((state.retryAt - now) / 1000));
      return `Not connected to the engine since ${clock(state.since)} (${state.reason}). Nothing can be decided from this page until it reconnects; ${wait > 0 ? `retrying in ${wait} s` : "retrying now"}.`;
    }
  }
}
