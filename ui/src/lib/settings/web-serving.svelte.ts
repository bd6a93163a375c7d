// Whether and where the engine serves browsers and phones (Settings,
// "Browsers and phones"): the owner's setting and how it stands (the URL it
// serves, or why it does not), followed live through the engine's
// web_serving_changed events, never polled. Saving sends the whole setting;
// the engine checks it (plain HTTP off loopback is refused with why) and
// answers how it stands.
import type { Backend } from "../backend";
import { toApiError } from "../backend/errors";
import { LiveValue } from "../live.svelte";
import type { ApiError, EngineEvent, WebSettings, WebStatus } from "../types";

/** What the form asks of the engine. */
export type WebServingBackend = Pick<Backend, "subscribe" | "link" | "webServing" | "setWebServing">;

export function touchesWebServing(e: EngineEvent): boolean {
  return e.type === "web_serving_changed";
}

/** The public origins as typed (one per line, or separated by commas). */
export function parseOrigins(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((o) => o.trim())
    .filter((o) => o !== "");
}

export class WebServing {
  readonly #live: LiveValue<WebStatus>;
  saving = $state(false);
  /** The last refused save (its fields name what to fix). */
  error = $state<ApiError | null>(null);

  constructor(private backend: WebServingBackend) {
    this.#live = new LiveValue(backend, { fetch: () => backend.webServing(), touches: touchesWebServing });
  }

  get status(): WebStatus | null {
    return this.#live.value;
  }
  get loadError(): ApiError | null {
    return this.#live.error;
  }

  start(): Promise<void> {
    return this.#live.start();
  }

  stop(): void {
    this.#live.stop();
  }

  /** Sends the setting; the status shown is the engine's answer (and its
   * pushed event). */
  async save(settings: WebSettings): Promise<WebStatus | null> {
    this.saving = true;
    try {
      const status = await this.backend.setWebServing(settings);
      this.#live.value = status;
      this.error = null;
      return status;
    } catch (e) {
      this.error = toApiError(e);
      return null;
    } finally {
      this.saving = false;
    }
  }
}
