// Every pending gate of every run, kept in step by pushed events: a
// gate_opened event fetches that one gate, gate_decided removes it. Nothing
// is polled, and a decision changes nothing here until its event arrives.
// The engine lists them a page at a time (oldest first): a run that floods
// the engine with asks cannot slow the inbox's load down; those not listed
// yet are counted in `more` and come with the next page.
// After a reconnection (a browser's link) the first page is listed again and
// replaces every card; a page or a gate asked for before that is dropped when
// it answers.
import type { Backend } from "../backend";
import { toApiError } from "../backend";
import type { ApiError, EngineEvent, GateKind, GateStory, GateView, RequestedChoice, RunView } from "../types";
import { LiveCollection, type Change } from "../live.svelte";
import { askKind, batchOption, sortGates } from "./order";
import { actorText } from "./story";

/** Gates listed per page (the engine's default). */
export const GATE_PAGE = 200;

export class Gates {
  /** Pending gates the engine holds that are not listed here yet (0: all
   * are). They come with {@link loadMore}. */
  more = $state(0);
  /** The last refused call per gate, for the card's inline message. */
  errors = $state(new Map<number, ApiError>());
  /** Gate ids with a call in flight. */
  busy = $state(new Set<number>());
  /** Co-signed gates a human approved that wait for the supervisor's
   * approval (the engine says so in each gate's story), each with who
   * approved (`user:ana through Ana's phone (device 3)`; null: the story
   * names nobody). */
  awaitingCosign = $state(new Map<number, string | null>());
  /** A refused call (the banner); a failed load shows here too. */
  #error = $state<ApiError | null>(null);

  /** How many times each co-signed gate's story was asked for (not UI
   * state: which answer is the latest). */
  private cosignAsked = new Map<number, number>();
  /** Gates the engine said were decided (an answer about one that comes
   * later never brings it back). */
  private decided = new Set<number>();
  readonly #live: LiveCollection<number, GateView>;
  /** Where the next page starts (null: nothing left to list). */
  private nextAfter: number | null = null;
  /** Gates this store heard open since it listed: never among `more`. */
  private heard = new Set<number>();
  private loading: Promise<void> | null = null;
  /** Counts the first page's listings: an answer asked for under an older
   * listing is stale (a reconnection listed everything again). */
  private listing = 0;
  /** True while the events held during the first load are applied: a gate
   * they open was counted in the listing's `remaining`. */
  #catchingUp = false;

  /** `fleet` is the live run list the window already keeps (the inbox shows
   * each gate's task, workspace and agent from it). */
  constructor(
    private backend: Backend,
    private fleet: { readonly rows: ReadonlyMap<number, RunView> } = { rows: new Map() },
  ) {
    this.#live = new LiveCollection(backend, {
      key: (g) => g.id,
      load: async () => {
        const mine = ++this.listing;
        const page = await backend.listGates(true, GATE_PAGE, null);
        // A newer listing started meanwhile: its counts stand (and the list
        // keeps only the newest load's answer).
        if (mine !== this.listing) return page.gates;
        this.more = page.remaining;
        this.nextAfter = page.next_after;
        this.heard = new Set();
        await Promise.all(page.gates.map((g) => this.refreshCosign(g, true)));
        return page.gates;
      },
      change: (e) => this.change(e),
      // A gate a reload no longer lists was decided while the page could not
      // hear it: its card's error and co-sign mark go with it.
      changed: (prev, next) => {
        if (prev && !next) this.forget(prev.id);
      },
      catchingUp: (on) => (this.#catchingUp = on),
    });
  }

  /** Every pending gate by id. */
  get pending(): ReadonlyMap<number, GateView> {
    return this.#live.items;
  }
  get ready(): boolean {
    return this.#live.ready;
  }
  get error(): ApiError | null {
    return this.#error ?? this.#live.error;
  }
  set error(e: ApiError | null) {
    this.#error = e;
    if (e === null) this.#live.error = null;
  }

  sorted = $derived(sortGates([...this.pending.values()]));

  /** Every run the window knows, by id. */
  get runs(): ReadonlyMap<number, RunView> {
    return this.fleet.rows;
  }

  /** Subscribes first, then lists, so no gate opened in between is lost. */
  async start(): Promise<void> {
    await this.#live.start();
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

  /** Lists one gate this store does not hold (a run's view shows its
   * run's gate even when it is beyond the pages listed so far). */
  async fetch(gateId: number): Promise<void> {
    if (this.pending.has(gateId)) return;
    const listing = this.listing;
    try {
      const g = await this.backend.showGate(gateId);
      if (listing !== this.listing) return;
      if (g.status !== "pending" || this.pending.has(g.id) || this.decided.has(g.id)) return;
      if (this.unlisted(g.id)) this.more -= 1;
      this.heard.add(g.id);
      this.#live.put(g);
      await this.refreshCosign(g);
    } catch (e) {
      this.error = toApiError(e);
    }
  }

  private async nextPage(): Promise<void> {
    if (this.nextAfter === null) return;
    const listing = this.listing;
    try {
      const page = await this.backend.listGates(true, GATE_PAGE, this.nextAfter);
      // Listed again meanwhile: this page's counts belong to the old listing.
      if (listing !== this.listing) return;
      const fresh = page.gates.filter((g) => !this.decided.has(g.id));
      this.#live.put(...fresh);
      const last = page.gates.at(-1)?.id ?? this.nextAfter;
      // Gates after this page that this store already holds (heard open)
      // are not "more".
      let held = 0;
      for (const id of this.pending.keys()) if (id > last) held += 1;
      this.more = Math.max(0, page.remaining - held);
      this.nextAfter = page.next_after;
      await Promise.all(fresh.map((g) => this.refreshCosign(g)));
    } catch (e) {
      this.error = toApiError(e);
    }
  }

  stop(): void {
    this.#live.stop();
  }

  /** The pending gate of a run, if any. */
  forRun(runId: number): GateView | undefined {
    for (const g of this.pending.values()) if (g.run_id === runId) return g;
    return undefined;
  }

  /** What an event does to the pending gates. */
  private change(e: EngineEvent): Change<number, GateView> | null | Promise<Change<number, GateView> | null> {
    if (e.type === "gate_decided") {
      const held = this.pending.has(e.gate_id);
      if (!held && !this.heard.has(e.gate_id) && this.unlisted(e.gate_id)) this.more -= 1;
      // Every listed gate decided: the next ones come in.
      if ((this.pending.size === 0 || (held && this.pending.size === 1)) && this.more > 0) {
        queueMicrotask(() => void this.loadMore());
      }
      // A gate decided before it was listed leaves nothing to remove, but
      // its card's error and co-sign mark go all the same.
      this.decided.add(e.gate_id);
      this.forget(e.gate_id);
      return { remove: [e.gate_id] };
    }
    if (e.type === "gate_opened") {
      // Opened before the list was read: beyond the page, it was counted.
      if (this.#catchingUp && this.unlisted(e.gate_id)) this.more = Math.max(0, this.more - 1);
      this.heard.add(e.gate_id);
      return this.backend.showGate(e.gate_id).then(async (g) => {
        // A decision may have arrived while the gate was being fetched.
        if (g.status !== "pending") return null;
        await this.refreshCosign(g, true);
        return this.decided.has(g.id) ? null : { put: [g] };
      });
    }
    if (e.type === "run_changed") {
      // A run that needs nobody has no gate that asks: one still held here
      // was snoozed (in another window, the CLI, a phone). It leaves until
      // the engine wakes it (a gate_opened brings it back).
      if (!e.run.needs_you) {
        const snoozed = [...this.pending.values()].filter((g) => g.run_id === e.run.id && askKind(g) !== "info").map((g) => g.id);
        if (snoozed.length > 0) return { remove: snoozed };
      }
      // A human's approval of a co-signed gate changes no gate, only its
      // run (from the window, the CLI or the socket alike).
      const g = this.forRun(e.run.id);
      if (g) void this.refreshCosign(g);
      // A supervisor's vote is pushed as its run's change: the gate is read
      // again for its advice, or the decision waiting for its grace (or
      // gone from it, held by someone).
      if (g?.authority) {
        return this.backend.showGate(g.id).then((fresh) =>
          fresh.status === "pending" && !this.decided.has(fresh.id) && this.pending.has(fresh.id) ? { put: [fresh] } : null,
        );
      }
    }
    return null;
  }

  /** A gate left: its card's error and co-sign mark go with it. */
  private forget(gateId: number): void {
    if (this.errors.has(gateId)) {
      const next = new Map(this.errors);
      next.delete(gateId);
      this.errors = next;
    }
    this.setAwaiting(gateId, false);
  }

  /** Asks the engine whether a co-signed gate waits for the supervisor.
   * Only the answer to the latest question counts: answers can arrive out
   * of order, and one asked before the human's vote says "not yet". */
  private async refreshCosign(g: GateView, goingIn = false): Promise<void> {
    if (g.authority !== "cosign") return;
    const asked = (this.cosignAsked.get(g.id) ?? 0) + 1;
    this.cosignAsked.set(g.id, asked);
    try {
      const story = await this.backend.gateStory(g.id);
      if (this.cosignAsked.get(g.id) !== asked) return;
      const on = story.awaiting_cosign === true && (goingIn || this.pending.has(g.id)) && !this.decided.has(g.id);
      this.setAwaiting(g.id, on, on ? cosignedBy(story) : null);
    } catch {
      // The card just does not say it; the gate itself is unaffected.
    }
  }

  private setAwaiting(gateId: number, on: boolean, who: string | null = null): void {
    if (!on && !this.awaitingCosign.has(gateId)) return;
    if (on && this.awaitingCosign.has(gateId) && this.awaitingCosign.get(gateId) === who) return;
    const next = new Map(this.awaitingCosign);
    if (on) next.set(gateId, who);
    else next.delete(gateId);
    this.awaitingCosign = next;
  }

  /** True when the decision was accepted. The gate leaves the inbox when the
   * engine says it was decided. */
  async decide(gateId: number, option: string, context: string | null): Promise<boolean> {
    const ok = await this.act(gateId, async () => {
      // Sent as a choice of the gate's kind: the engine refuses one of
      // another kind (the gate is not the one meant) or one it does not know.
      const kind = this.pending.get(gateId)?.kind ?? (await this.backend.showGate(gateId)).kind;
      return this.backend.decideGate(gateId, choiceOf(kind, option), context);
    });
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
      if (this.pending.has(g.id)) this.#live.put(g);
      return g;
    });
  }

  /** Snoozes a gate until `until` (ms since the epoch): it leaves the
   * inbox now, and comes back (a gate_opened event) when the engine wakes
   * it. True when the engine accepted. */
  async snooze(gateId: number, until: number): Promise<boolean> {
    const ok = await this.act(gateId, () => this.backend.snoozeGate(gateId, until));
    // snooze_gate pushes no event saying the gate left: its answer does.
    if (ok) this.#live.remove(gateId);
    return ok;
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

/** A gate option's id (one of its kind's choices, as the engine offers
 * them) as the typed choice a decision carries. */
export function choiceOf(kind: GateKind, option: string): RequestedChoice {
  return { kind, choice: option } as RequestedChoice;
}

/** Who approved a co-signed gate that waits for the supervisor: the latest
 * person's vote in its story (a person's refusal would have decided it), as
 * the engine names it. */
export function cosignedBy(story: GateStory): string | null {
  const votes = story.decisions.filter((d) => d.actor.kind === "user");
  const last = votes[votes.length - 1];
  return last ? actorText(last.actor, last.device) : null;
}
