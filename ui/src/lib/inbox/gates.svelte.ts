// The pending gates of every run, kept in step by pushed events: a
// gate_opened event fetches that one gate, gate_decided removes it. Nothing
// is polled, and a decision changes nothing here until its event arrives.
// The engine lists them a page at a time (oldest first): a run that floods
// the engine with asks cannot slow the inbox's load down; those not listed
// yet are counted in `more` and come with the next page.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, EngineEvent, GateView, RunView } from "../types";
import { batchOption, sortGates } from "./order";

/** Gates listed per page (the engine's default). */
export const GATE_PAGE = 200;

export class Gates {
  pending = $state(new Map<number, GateView>());
  /** Pending gates the engine holds that are not listed here yet (0: all
   * are). They come with {@link loadMore}. */
  more = $state(0);
  ready = $state(false);
  error = $state<ApiError | null>(null);
  /** The last refused call per gate, for the card's inline message. */
  errors = $state(new Map<number, ApiError>());
  /** Gate ids with a call in flight. */
  busy = $state(new Set<number>());
  /** Co-signed gates a human approved that wait for the supervisor's
   * approval (the engine says so in each gate's story). */
  awaitingCosign = $state(new Set<number>());

  sorted = $derived(sortGates([...this.pending.values()]));

  /** How many times each co-signed gate's story was asked for (not UI
   * state: which answer is the latest). */
  private cosignAsked = new Map<number, number>();
  private unsubscribe: (() => void) | null = null;
  private early: EngineEvent[] | null = [];
  /** Where the next page starts (null: nothing left to list). */
  private nextAfter: number | null = null;
  /** Gates this store heard open since it listed: never among `more`. */
  private heard = new Set<number>();
  private loading: Promise<void> | null = null;

  /** `fleet` is the live run list the window already keeps (the inbox shows
   * each gate's task, workspace and agent from it). */
  constructor(
    private backend: Backend,
    private fleet: { readonly rows: ReadonlyMap<number, RunView> } = { rows: new Map() },
  ) {}

  /** Every run the window knows, by id. */
  get runs(): ReadonlyMap<number, RunView> {
    return this.fleet.rows;
  }

  /** Subscribes first, then lists, so no gate opened in between is lost. */
  async start(): Promise<void> {
    this.unsubscribe = await this.backend.subscribe((e) => void this.onEvent(e));
    try {
      const page = await this.backend.listGates(true, GATE_PAGE, null);
      this.pending = new Map(page.gates.map((g) => [g.id, g] as const));
      this.more = page.remaining;
      this.nextAfter = page.next_after;
      await Promise.all(page.gates.map((g) => this.refreshCosign(g)));
      const early = this.early ?? [];
      this.early = null;
      for (const e of early) {
        // Opened before the list was read: beyond the page, it was counted.
        if (e.type === "gate_opened" && this.unlisted(e.gate_id)) this.more = Math.max(0, this.more - 1);
        await this.onEvent(e);
      }
    } catch (e) {
      this.error = toApiError(e);
    } finally {
      this.early = null;
      this.ready = true;
    }
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /** Whether a gate not held here may be one of those counted in `more`. */
  private unlisted(gateId: number): boolean {
    return this.more > 0 && this.nextAfter !== null && gateId > this.nextAfter && !this.pending.has(gateId);
  }

  /** Lists the next page of pending gates (those counted in `more`). */
  loadMore(): Promise<void> {
    this.loading ??= this.nextPage().finally(() => (this.loading = null));
    return this.loading;
  }

  private async nextPage(): Promise<void> {
    if (this.nextAfter === null) return;
    try {
      const page = await this.backend.listGates(true, GATE_PAGE, this.nextAfter);
      const next = new Map(this.pending);
      for (const g of page.gates) next.set(g.id, g);
      this.pending = next;
      const last = page.gates.at(-1)?.id ?? this.nextAfter;
      // Gates after this page that this store already holds (heard open)
      // are not "more".
      let held = 0;
      for (const id of next.keys()) if (id > last) held += 1;
      this.more = Math.max(0, page.remaining - held);
      this.nextAfter = page.next_after;
      await Promise.all(page.gates.map((g) => this.refreshCosign(g)));
    } catch (e) {
      this.error = toApiError(e);
    }
  }

  /** Holds pending gate `gateId` (a run's view asks for its run's gate,
   * which a flood may have kept off the listed pages). */
  async fetch(gateId: number): Promise<void> {
    if (this.pending.has(gateId)) return;
    try {
      const g = await this.backend.showGate(gateId);
      if (g.status !== "pending" || this.pending.has(g.id)) return;
      if (this.unlisted(g.id)) this.more -= 1;
      this.heard.add(g.id);
      this.pending = new Map(this.pending).set(g.id, g);
      await this.refreshCosign(g);
    } catch (e) {
      this.error = toApiError(e);
    }
  }

  /** The pending gate of a run, if any. */
  forRun(runId: number): GateView | undefined {
    for (const g of this.pending.values()) if (g.run_id === runId) return g;
    return undefined;
  }

  private async onEvent(e: EngineEvent): Promise<void> {
    if (this.early) {
      this.early.push(e);
      return;
    }
    if (e.type === "gate_decided") {
      if (this.pending.has(e.gate_id)) {
        const next = new Map(this.pending);
        next.delete(e.gate_id);
        this.pending = next;
      } else if (!this.heard.has(e.gate_id) && this.unlisted(e.gate_id)) {
        this.more -= 1;
      }
      // Every listed gate decided: the next ones come in.
      if (this.pending.size === 0 && this.more > 0) void this.loadMore();
      if (this.errors.has(e.gate_id)) {
        const next = new Map(this.errors);
        next.delete(e.gate_id);
        this.errors = next;
      }
      this.setAwaiting(e.gate_id, false);
    } else if (e.type === "gate_opened") {
      this.heard.add(e.gate_id);
      try {
        const g = await this.backend.showGate(e.gate_id);
        // A decision may have arrived while the gate was being fetched.
        if (g.status !== "pending") return;
        this.pending = new Map(this.pending).set(g.id, g);
        await this.refreshCosign(g);
      } catch (err) {
        this.error = toApiError(err);
      }
    } else if (e.type === "run_changed") {
      // A human's approval of a co-signed gate changes no gate, only its
      // run (from the window, the CLI or the socket alike).
      const g = this.forRun(e.run.id);
      if (g) await this.refreshCosign(g);
    }
  }

  /** Asks the engine whether a co-signed gate waits for the supervisor.
   * Only the answer to the latest question counts: answers can arrive out
   * of order, and one asked before the human's vote says "not yet". */
  private async refreshCosign(g: GateView): Promise<void> {
    if (g.authority !== "cosign") return;
    const asked = (this.cosignAsked.get(g.id) ?? 0) + 1;
    this.cosignAsked.set(g.id, asked);
    try {
      const story = await this.backend.gateStory(g.id);
      if (this.cosignAsked.get(g.id) !== asked) return;
      this.setAwaiting(g.id, story.awaiting_cosign === true && this.pending.has(g.id));
    } catch {
      // The card just does not say it; the gate itself is unaffected.
    }
  }

  private setAwaiting(gateId: number, on: boolean): void {
    if (this.awaitingCosign.has(gateId) === on) return;
    const next = new Set(this.awaitingCosign);
    if (on) next.add(gateId);
    else next.delete(gateId);
    this.awaitingCosign = next;
  }

  /** True when the decision was accepted. The gate leaves the inbox when the
   * engine says it was decided. */
  async decide(gateId: number, option: string, context: string | null): Promise<boolean> {
    const ok = await this.act(gateId, () => this.backend.decideGate(gateId, option, context));
    const g = this.pending.get(gateId);
    if (ok && g) await this.refreshCosign(g);
    return ok;
  }

  /** Decides each gate with its batch option ({@link batchOption}), one after
   * the other; gates that are not batchable are skipped. Returns how many
   * decisions were accepted. */
  async approveAll(gateIds: Iterable<number>): Promise<number> {
    let ok = 0;
    for (const id of gateIds) {
      const g = this.pending.get(id);
      const option = g ? batchOption(g) : null;
      if (option === null) continue;
      if (await this.decide(id, option, null)) ok += 1;
    }
    return ok;
  }

  /** Stops a gate's timer so it waits for a human. */
  async hold(gateId: number): Promise<boolean> {
    return this.act(gateId, async () => {
      const g = await this.backend.holdGate(gateId);
      // hold_gate pushes no event of its own: its answer is the new gate.
      if (this.pending.has(g.id)) this.pending = new Map(this.pending).set(g.id, g);
      return g;
    });
  }

  dismissError(): void {
    this.error = null;
  }

  private async act(gateId: number, call: () => Promise<unknown>): Promise<boolean> {
    this.busy = new Set(this.busy).add(gateId);
    try {
      await call();
      this.error = null;
      if (this.errors.has(gateId)) {
        const next = new Map(this.errors);
        next.delete(gateId);
        this.errors = next;
      }
      return true;
    } catch (e) {
      const err = toApiError(e);
      this.error = err;
      this.errors = new Map(this.errors).set(gateId, err);
      return false;
    } finally {
      const next = new Set(this.busy);
      next.delete(gateId);
      this.busy = next;
    }
  }
}
