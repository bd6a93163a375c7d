// Where the user is: which page, which run, which "Why?" drawer. This is the
// only UI state that is not a copy of the engine's: it says what to look at,
// never what is true.
export type View =
  | { name: "fleet" }
  | { name: "inbox" }
  | { name: "messages" }
  | { name: "run"; runId: number }
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

  go(view: View): void {
    this.view = view;
  }

  openRun(runId: number): void {
    this.view = { name: "run", runId };
  }

  openWhy(gateId: number): void {
    this.why = gateId;
  }

  closeWhy(): void {
    this.why = null;
  }

  openRunWhy(runId: number): void {
    this.whyRun = runId;
  }

  closeRunWhy(): void {
    this.whyRun = null;
  }
}
