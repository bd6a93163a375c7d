// The messages the window shows (all of them, or one run's), loaded once and
// then extended only by pushed `message_posted` events. Never polled. Sending
// changes nothing here: the sent message arrives as an event like any other.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, MessageTo, MessageView } from "../types";
import { LiveCollection } from "../live.svelte";
import { concernsRun, postedMessage, type RunScope } from "./messages";

/** At most this many pages on load (the engine's pages hold 500). */
const MAX_PAGES = 200;

export class Messages {
  /** The last refused send, for the compose box. */
  sendError = $state<ApiError | null>(null);
  sending = $state(false);

  readonly #live: LiveCollection<number, MessageView>;

  /** `run`: only the messages a run sent or received (null: every one);
   * `scope`: where that run is, for the broadcasts scoped to its workspace
   * or task (pushed ones count only once it is known). */
  constructor(
    private backend: Backend,
    readonly run: number | null = null,
    scope: () => RunScope | undefined = () => undefined,
  ) {
    this.#live = new LiveCollection(backend, {
      key: (m) => m.id,
      load: () => this.#loadAll(),
      change: (e) => {
        const m = postedMessage(e);
        return m !== null && (run === null || concernsRun(m, run, scope())) ? { put: [m] } : null;
      },
      order: (a, b) => a.id - b.id,
    });
  }

  /** Every message, oldest first. */
  get list(): readonly MessageView[] {
    return this.#live.list;
  }
  get ready(): boolean {
    return this.#live.ready;
  }
  /** A failed load. */
  get error(): ApiError | null {
    return this.#live.error;
  }

  /** Subscribes first, then loads, so nothing posted in between is lost. */
  start(): Promise<void> {
    return this.#live.start();
  }

  async load(): Promise<void> {
    await this.#live.load();
  }

  /** The engine answers a page at a time (oldest first): read on until a
   * page comes back empty. */
  async #loadAll(): Promise<MessageView[]> {
    const all: MessageView[] = [];
    let after: number | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const got: MessageView[] = await this.backend.listMessages(this.run, after);
      if (this.#live.stopped) break;
      if (got.length === 0) break;
      all.push(...got);
      after = got[got.length - 1]!.id;
    }
    return all;
  }

  stop(): void {
    this.#live.stop();
  }

  /** True when the engine accepted the message. */
  async send(to: MessageTo, body: string, correlationId: string | null = null): Promise<boolean> {
    this.sending = true;
    try {
      await this.backend.sendMessage(to, body, correlationId);
      this.sendError = null;
      return true;
    } catch (e) {
      this.sendError = toApiError(e);
      return false;
    } finally {
      this.sending = false;
    }
  }
}
