// Settings -> Hosts in words: a host's link as a person reads it.
import type { LinkState } from "../backend/backend";
import { clockOf } from "./link";

export interface HostStatus {
  /** "connected", "connecting", "reconnected, reading again", "unreachable". */
  label: string;
  tone: "good" | "idle" | "bad";
  /** The rest: since when, why, when the next try is. */
  detail: string | null;
}

export function hostStatus(state: LinkState | undefined, now: number): HostStatus {
  if (!state) return { label: "unknown", tone: "idle", detail: null };
  switch (state.status) {
    case "live":
      return { label: "connected", tone: "good", detail: null };
    case "connecting":
      return { label: "connecting", tone: "idle", detail: null };
    case "resyncing":
      return { label: "reconnected", tone: "idle", detail: "reading its runs and asks again" };
    case "down": {
      const wait = Math.max(0, Math.ceil((state.retryAt - now) / 1000));
      return { label: "unreachable", tone: "bad", detail: `since ${clockOf(state.since)} (${state.reason}); next try ${wait > 0 ? `in ${wait} s` : "now"}` };
    }
    case "unpaired":
      return { label: "refused", tone: "bad", detail: state.reason };
  }
}

/** The command that adds a host from a terminal (Settings adds one too). */
export const ADD_HOST_COMMAND = "overseer hosts add NAME ssh://user@host";

/** What a host's setup steps say of how it went. */
export function setupOutcome(s: { action: "add" | "upgrade" | "remove" | null; running: boolean; error: { message: string } | null }): string {
  if (s.running) return s.action === "add" ? "Adding…" : s.action === "upgrade" ? "Upgrading…" : "Removing…";
  if (s.error) return "Stopped: nothing after the last step was done.";
  switch (s.action) {
    case "add":
      return "Added.";
    case "upgrade":
      return "Upgraded.";
    case "remove":
      return "Removed.";
    case null:
      return "From a terminal (overseer hosts).";
  }
}
