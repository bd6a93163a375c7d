// The messages the window shows (all of them, or one run's), loaded once and
// then extended only by pushed `message_posted` events. Never polled. Sending
// changes nothing here: the sent message arrives as an event like any other.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, EngineEvent, MessageTo, MessageView } from "../types";
import { concernsRun, mergeMessages, postedMessage } from "./messages";

/** At most this many pages on load (the engine's pages hold 500). */
const MAX_PAGES = 200;

export class Messages {
  list = $state.raw<MessageView[]>([]);
  ready = $state(false);
  /** A failed load. */
  error = $state<ApiError | null>(null);
  /** The last refused send, for the compose box. */
  sendError = $state<ApiError | null>(null);
  sending = $state(false);

  private unsubscribe: (() => void) | null = null;
  private early: MessageView[] | null = [];
  private stopped = false;

  /** `run`: only the messages a run sent or received (null: every one). */
  constructor(
    private backend: Backend,
    readonly run: number | null = null,
  ) {}

  /** Subscribes first, then loads, so nothing posted in between is lost. */
  async start(): Promise<void> {
    const unsubscribe = await this.backend.subscribe((e) => this.onEvent(e));
    if (this.stopped) {
      unsubscribe();
      return;
    }
    this.unsubscribe = unsubscribe;
    await this.load();
  }

  async load(): Promise<void> {
    try {
      // The engine answers a page at a time (oldest first): read on until
      // a page comes back empty.
      const all: MessageView[] = [];
      let after: number | null = null;
      for (let page = 0; page < MAX_PAGES; page++) {
        const got: MessageView[] = await this.backend.listMessages(this.run, after);
        if (this.stopped) return;
        if (got.length === 0) break;
        all.push(...got);
        after = got[got.length - 1]!.id;
      }
      this.list = mergeMessages(all, this.early ?? [], this.list);
      this.error = null;
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      this.early = null;
      this.ready = true;
    }
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
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

  private onEvent(e: EngineEvent): void {
    const m = postedMessage(e);
    if (m === null) return;
    if (this.run !== null && !concernsRun(m, this.run)) return;
    if (this.early) {
      this.early.push(m);
      return;
    }
    const last = this.list[this.list.length - 1];
    this.list = !last || m.id > last.id ? [...this.list, m] : mergeMessages(this.list, [m]);
  }
}
