// Where the user is: which page, which run, which "Why?" drawer. This is the
// only UI state that is not a copy of the engine's: it says what to look at,
// never what is true.
export type View =
  | { name: "fleet" }
  | { name: "inbox" }
  | { name: "messages" }
  /** A run's page; `host`: a host's run (absent: this machine's). */
  | { name: "run"; runId: number; host?: string }
  | { name: "settings" };

export class Nav {
  view = $state<View>({ name: "fleet" });

  /** `first`: the page shown at start (the fleet; a phone's is the inbox). */
  constructor(first: View = { name: "fleet" }) {
    this.view = first;
  }
  /** The gate whose "Why?" drawer is open. */
  why = $state<number | null>(null);
  /** The run whose "Why?" drawer is open. */
  whyRun = $state<number | null>(null);
  /** The host of the gate or run whose drawer is open (null: this
   * machine's). */
  whyHost = $state<string | null>(null);

  go(view: View): void {
    this.view = view;
  }

  openRun(runId: number, host?: string): void {
    this.view = host === undefined ? { name: "run", runId } : { name: "run", runId, host };
  }

  openWhy(gateId: number, host?: string): void {
    this.whyHost = host ?? null;
    this.why = gateId;
  }

  closeWhy(): void {
    this.why = null;
  }

  openRunWhy(runId: number, host?: string): void {
    this.whyHost = host ?? null;
    this.whyRun = runId;
  }

  closeRunWhy(): void {
    this.whyRun = null;
  }

  /** A host was removed: a "Why?" drawer about its gate or run closes
   * (its engine can no longer be asked). A page of its run stays, saying
   * the host is gone. */
  hostRemoved(host: string): void {
    if (this.whyHost !== host) return;
    this.why = null;
    this.whyRun = null;
    this.whyHost = null;
  }
}
