// The state of one settings form's save: what the user sees next to its Save
// button. "Saved" appears only once the engine answered; a refusal shows the
// engine's typed error ({code, message}); problems found before sending show
// as a list and nothing is sent.
import { toApiError } from "../backend/errors";
import type { Link } from "../backend/backend";
import type { ApiError } from "../types";
import type { FieldError } from "./validate";

export type SaveStatus = "idle" | "saving" | "saved" | "failed";

export class Submission {
  status = $state<SaveStatus>("idle");
  /** The engine's refusal. */
  error = $state<ApiError | null>(null);
  /** What the form's own checks found; nothing was sent. */
  problems = $state<FieldError[]>([]);

  get saving(): boolean {
    return this.status === "saving";
  }

  /** The form changed: an earlier "Saved", or what was wrong with it
   * before, no longer describes it (the next save checks it again). */
  touch(): void {
    if (this.status === "saved" || this.status === "failed") {
      this.status = "idle";
      this.problems = [];
      this.error = null;
    }
  }

  /** Shows the form's own problems; nothing is sent. */
  invalid(problems: FieldError[]): void {
    this.problems = problems;
    this.error = null;
    this.status = "failed";
  }

  /** Reads what the form starts from; a failure shows like a refusal. */
  async load<T>(call: () => Promise<T>): Promise<T | null> {
    try {
      const answer = await call();
      if (this.status === "failed") {
        this.status = "idle";
        this.error = null;
      }
      return answer;
    } catch (e) {
      this.error = toApiError(e);
      this.problems = [];
      this.status = "failed";
      return null;
    }
  }

  /** Sends `call`; its answer, or null when the engine refused (or a send is
   * already under way). */
  async send<T>(call: () => Promise<T>): Promise<T | null> {
    if (this.status === "saving") return null;
    this.status = "saving";
    this.problems = [];
    this.error = null;
    try {
      const answer = await call();
      this.status = "saved";
      return answer;
    } catch (e) {
      this.error = toApiError(e);
      this.status = "failed";
      return null;
    }
  }
}

/**
 * For a section that reads its value once when shown (notification
 * settings, the agents, the webhooks): reads it now, and again after each
 * reconnection of a browser's link to the engine (a dropped connection, a
 * restarted engine), since what changed meanwhile was never pushed. Returns
 * the stop, for the section's teardown.
 */
export function readNowAndOnResync(link: Link | undefined, read: () => Promise<unknown>): () => void {
  void read();
  return link?.onResync(read) ?? (() => {});
}
