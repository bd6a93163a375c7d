// Pure functions behind the fleet dashboard: labels, filtering, searching,
// ordering, counts, the virtual window of a long list, keyboard selection, and
// folding pushed events into the row list. No DOM, no Svelte: everything here
// is fast on 10,000 rows and tested on its own.
import type { Change } from "../live.svelte";
import type { AskKind, EngineEvent, ReleaseReason, RunCost, RunOrigin, RunState, RunUsage, RunView, SensorSummary, StateName } from "../types";

export const STATE_ORDER: readonly StateName[] = [
  "pending_review",
  "running",
  "retry_queued",
  "claimed",
  "queued",
  "released",
];

const STATE_RANK: Record<StateName, number> = Object.fromEntries(STATE_ORDER.map((s, i) => [s, i])) as Record<
  StateName,
  number
>;

const STATE_LABELS: Record<StateName, string> = {
  queued: "queued",
  claimed: "claimed",
  running: "running",
  retry_queued: "retry queued",
  pending_review: "pending review",
  released: "released",
};

export const RELEASE_REASONS: readonly ReleaseReason[] = [
  "merged",
  "failed",
  "interrupted",
  "human_rejected",
  "aborted_by_user",
  "plan_rejected",
  "supervisor_rejected",
  "ended",
];

const REASON_LABELS: Record<ReleaseReason, string> = {
  merged: "merged",
  human_rejected: "rejected",
  aborted_by_user: "aborted",
  plan_rejected: "plan rejected",
  failed: "failed",
  interrupted: "interrupted",
  supervisor_rejected: "rejected by supervisor",
  ended: "session ended",
};

export function reasonLabel(r: ReleaseReason): string {
  return REASON_LABELS[r];
}

export function stateNameLabel(s: StateName): string {
  return STATE_LABELS[s];
}

export function stateLabel(s: RunState): string {
  return s.state === "released" ? `released · ${REASON_LABELS[s.reason]}` : STATE_LABELS[s.state];
}

/** A colour family for the state pill. */
export function stateTone(s: RunState): "attention" | "active" | "idle" | "good" | "bad" | "muted" {
  switch (s.state) {
    case "pending_review":
      return "attention";
    case "running":
    case "claimed":
      return "active";
    case "queued":
    case "retry_queued":
      return "idle";
    case "released":
      switch (s.reason) {
        case "merged":
          return "good";
        case "failed":
        case "interrupted":
          return "bad";
        case "human_rejected":
        case "aborted_by_user":
        case "plan_rejected":
        case "supervisor_rejected":
        case "ended":
          return "muted";
      }
  }
}

/** "42s", "3m", "2h", "4d". */
export function formatAge(since: number, now: number): string {
  const s = Math.max(0, Math.floor((now - since) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

// ---------------------------------------------------------------------------
// Hosts: one fleet over this machine's engine and every host's

/** A row of the fleet: a run, with the host whose engine holds it (absent:
 * this machine's). Run ids repeat across hosts; {@link rowKey} does not. */
export type FleetRun = RunView & { readonly host?: string };

/** A row's key in the one fleet: this machine's runs by their id (as before
 * there were hosts), a host's as `host/id` (a host name has no `/`). */
export type RowKey = number | string;

export function rowKey(r: FleetRun): RowKey {
  return r.host === undefined ? r.id : `${r.host}/${r.id}`;
}

/** The host and run id a key names (host null: this machine). */
export function parseRowKey(key: RowKey): { host: string | null; id: number } {
  if (typeof key === "number") return { host: null, id: key };
  const at = key.lastIndexOf("/");
  return at < 0 ? { host: null, id: Number(key) } : { host: key.slice(0, at), id: Number(key.slice(at + 1)) };
}

/** A row's element id: `run-row-7` for this machine's run 7 (as before
 * hosts), `run-row-build1-7` for build1's. */
export function rowDomId(key: RowKey): string {
  return typeof key === "number" ? `run-row-${key}` : `run-row-${key.replace("/", "-")}`;
}

/** What the Host column says of this machine's engine. */
export const THIS_MACHINE = "this machine";
/** The host filter's value for this machine's runs (no host is named so). */
export const LOCAL_HOST = "@local";

/** Not released yet: the run can still be aborted. */
export function isActive(r: RunView): boolean {
  return r.state.state !== "released";
}

// ---------------------------------------------------------------------------
// Where a run came from, and what a human can do with it

/** The agent family of each origin, as the badge names it. */
export const ORIGIN_LABELS: Record<RunOrigin, string> = {
  launched: "Overseer",
  claude_code: "Claude Code",
  codex: "Codex",
  mcp: "MCP",
};

/** An agent session that runs outside Overseer (a terminal Claude Code or
 * Codex, an MCP client): asks reach the inbox, but there is no run
 * repository, so nothing to diff or merge. */
export function isExternal(r: RunView): boolean {
  return r.origin !== "launched";
}

/** A long path cut to its last segments: `…/src/web-app`. */
export function shortPath(path: string, max = 32): string {
  if (path.length <= max) return path;
  const parts = path.split("/").filter((p) => p !== "");
  let out = parts.pop() ?? path;
  while (parts.length > 0 && parts[parts.length - 1]!.length + out.length + 3 <= max) out = `${parts.pop()}/${out}`;
  return out.length + 2 <= path.length ? `…/${out}` : path;
}

export interface SessionBadge {
  /** "Claude Code", "Codex", "MCP". */
  family: string;
  /** "Claude Code · external". */
  label: string;
  /** Where the session works (untrusted text: the agent said so). */
  cwd: string;
  shortCwd: string;
  sessionId: string;
  /** For a hover: family, session id and the whole cwd. */
  tooltip: string;
}

/** The badge of an external session, or null for a run Overseer launched. */
export function sessionBadge(r: RunView): SessionBadge | null {
  if (!isExternal(r)) return null;
  const family = ORIGIN_LABELS[r.origin];
  const cwd = r.session?.cwd ?? "";
  const sessionId = r.session?.session_id ?? "";
  return {
    family,
    label: `${family} · external`,
    cwd,
    shortCwd: shortPath(cwd),
    sessionId,
    tooltip: `${family} session ${sessionId || "(no id)"}${cwd ? ` in ${cwd}` : ""}: runs outside Overseer; its asks come here`,
  };
}

/** A run's state in words, as its row and page say it: an external session
 * the user stopped reads "session stopped" (Overseer refuses its later tool
 * calls; the agent itself was not killed). */
export function runStateLabel(r: RunView): string {
  if (isExternal(r) && r.state.state === "released" && r.state.reason === "aborted_by_user") return "released · session stopped";
  return stateLabel(r.state);
}

/** What a human can do with a run, in one place: the fleet row, the run
 * page header and the keyboard all read it. Which actions a run allows is
 * the engine's (core's `run_actions`, shipped in `RunView.actions`); this
 * only adds the words. */
export interface RunActions {
  /** Approve / reject its review (launched runs pending review). */
  approve: boolean;
  reject: boolean;
  /** Stop it: abort a launched run, or stop an external session (its later
   * tool calls are refused). */
  abort: boolean;
  abortLabel: string;
  /** What stopping it means, for the confirmation. */
  abortExplain: string;
  /** The run has a repository of its own whose diff can be shown. */
  diff: boolean;
  /** The agent is working and can take an instruction. */
  steer: boolean;
}

export function runActions(r: RunView): RunActions {
  const external = isExternal(r);
  return {
    ...r.actions,
    abortLabel: external ? "Stop session" : "Abort",
    abortExplain: external
      ? `Stop this ${ORIGIN_LABELS[r.origin]} session in Overseer? Its later tool calls are refused; the agent itself keeps running outside Overseer until it sees that.`
      : `Abort run ${r.id}? The agent is stopped; its worktree is kept for inspection.`,
  };
}

/** What the needs-you marker says: "review", "info" for an info item (an
 * external session's notice: it does not wait), or the kind of the open gate. */
export function needsYouLabel(r: RunView, ask: AskKind | null = null): string | null {
  // An info item alone does not make the run need you (the engine says
  // so), but the row still says one is there to read.
  if (!r.needs_you) return r.pending_gate?.ask_kind === "info" ? "info" : null;
  if (r.state.state === "pending_review") return "review";
  if (ask === "info" || r.pending_gate?.ask_kind === "info") return "info";
  const kind = r.pending_gate?.kind;
  return kind ? kind.replace(/_/g, " ") : "waiting";
}

// ---------------------------------------------------------------------------
// Filtering and search

/** "all", "active" (not released), a state, or a release reason
 * (`released:failed`). */
export type StateFilter = "all" | "active" | StateName | `released:${ReleaseReason}`;

export interface Filter {
  state: StateFilter;
  /** Empty: every workspace. */
  workspace: string;
  needsYou: boolean;
  /** Free text; every word must match the title, workspace, agent, step,
   * note or `#id` (case-insensitive). */
  query: string;
  /** Only one host's runs ({@link LOCAL_HOST}: this machine's); absent or
   * empty: every host's. */
  host?: string;
}

export const NO_FILTER: Filter = { state: "all", workspace: "", needsYou: false, query: "" };

export function isFiltered(f: Filter): boolean {
  return f.state !== "all" || f.workspace !== "" || f.needsYou || f.query.trim() !== "" || Boolean(f.host);
}

export function matchesState(r: RunView, s: StateFilter): boolean {
  if (s === "all") return true;
  if (s === "active") return r.state.state !== "released";
  if (s.startsWith("released:")) return r.state.state === "released" && `released:${r.state.reason}` === s;
  return r.state.state === s;
}

// Rows are replaced (never mutated) when they change, so the lower-cased
// text of a row object can be remembered for as long as the object lives.
const haystacks = new WeakMap<RunView, string>();

function haystack(r: FleetRun): string {
  let h = haystacks.get(r);
  if (h === undefined) {
    h = `${r.host === undefined ? "" : `${r.host}\n`}#${r.id}\n${r.task_title}\n${r.workspace}\n${r.agent}\n${r.current_step ?? ""}\n${r.release_note ?? ""}${r.session ? `\n${ORIGIN_LABELS[r.origin]} external\n${r.session.session_id}\n${r.session.cwd}` : ""}`.toLowerCase();
    haystacks.set(r, h);
  }
  return h;
}

export function queryWords(query: string): string[] {
  return query.toLowerCase().split(/\s+/).filter((w) => w.length > 0);
}

export function matchesQuery(r: RunView, words: readonly string[]): boolean {
  if (words.length === 0) return true;
  const h = haystack(r);
  for (const w of words) if (!h.includes(w)) return false;
  return true;
}

export function filterRuns<R extends FleetRun>(runs: Iterable<R>, f: Filter): R[] {
  const words = queryWords(f.query);
  const host = f.host ? (f.host === LOCAL_HOST ? undefined : f.host) : null;
  const out: R[] = [];
  for (const r of runs) {
    if (host !== null && r.host !== host) continue;
    if (f.needsYou && !r.needs_you) continue;
    if (f.workspace !== "" && r.workspace !== f.workspace) continue;
    if (!matchesState(r, f.state)) continue;
    if (!matchesQuery(r, words)) continue;
    out.push(r);
  }
  return out;
}

/** The workspaces present, sorted by name. */
export function workspacesOf(runs: Iterable<RunView>): readonly string[] {
  const s = new Set<string>();
  for (const r of runs) s.add(r.workspace);
  return [...s].sort(collator.compare);
}

// ---------------------------------------------------------------------------
// Ordering

/** `attention`: the engine's default order (needs-you first, longest waiting
 * first, then by state, then the most recent change), by the rank each row
 * carries; every other key sorts by that column. */
export type SortKey = "attention" | "host" | "id" | "task" | "workspace" | "agent" | "state" | "step" | "waiting" | "sensors" | "cost";
export type SortDir = "asc" | "desc";
export interface Sort {
  key: SortKey;
  dir: SortDir;
}

export const DEFAULT_SORT: Sort = { key: "attention", dir: "asc" };

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

/** The engine's order: each row carries its `attention_rank` (core's rule,
 * computed once in the engine); the window only compares the numbers. */
function attention(a: FleetRun, b: FleetRun): number {
  return a.attention_rank - b.attention_rank || a.id - b.id || byHost(a, b);
}

/** The last tie-break (reached only by runs of the same id, so never on
 * this machine's alone): this machine first, then hosts by name. */
function byHost(a: FleetRun, b: FleetRun): number {
  if (a.host === b.host) return 0;
  if (a.host === undefined) return -1;
  if (b.host === undefined) return 1;
  return a.host < b.host ? -1 : 1;
}

function stateKey(r: RunView): number {
  // Released runs sort by reason after every active state.
  return r.state.state === "released"
    ? STATE_ORDER.length + RELEASE_REASONS.indexOf(r.state.reason)
    : STATE_RANK[r.state.state];
}

function sensorKey(r: RunView): number {
  // Failing sensors first when ascending: they are what a reviewer looks for.
  const s = r.sensors;
  if (!s) return Number.POSITIVE_INFINITY;
  return s.failed > 0 ? -s.failed : s.passed;
}

const COMPARE: Record<Exclude<SortKey, "attention">, (a: FleetRun, b: FleetRun) => number> = {
  host: byHost,
  id: (a, b) => a.id - b.id,
  task: (a, b) => collator.compare(a.task_title, b.task_title),
  workspace: (a, b) => collator.compare(a.workspace, b.workspace),
  agent: (a, b) => collator.compare(a.agent, b.agent),
  state: (a, b) => stateKey(a) - stateKey(b),
  step: (a, b) => collator.compare(a.current_step ?? "\uffff", b.current_step ?? "\uffff"),
  // Ascending: the longest wait (the oldest state change) first.
  waiting: (a, b) => a.state_since - b.state_since,
  sensors: (a, b) => sensorKey(a) - sensorKey(b),
  // Ascending: the cheapest first; runs with no reported cost last.
  cost: (a, b) => costKey(a) - costKey(b),
};

function costKey(r: RunView): number {
  return r.usage?.cost?.amount ?? Number.POSITIVE_INFINITY;
}

// ---------------------------------------------------------------------------
// Cost (as the agent reported it: the engine kept only figures that can be
// true)

/** A cost as people read it: `0.25 USD`, four decimals below one cent (as
 * the CLI prints it). */
export function formatCost(cost: RunCost): string {
  const digits = cost.amount > 0 && cost.amount < 0.01 ? 4 : 2;
  return `${cost.amount.toFixed(digits)} ${cost.currency}`;
}

export interface CostCell {
  /** The cost, or `—` before the agent reported one. */
  text: string;
  /** The cost, its budget and the context used, in words. */
  title: string;
  /** The budget is reached (the run is held before its next turn). */
  over: boolean;
}

/** The fleet row's and the run page's cost: the cumulative cost, and the
 * context window used as a fraction. */
export function costCell(run: RunView): CostCell {
  const usage = run.usage ?? null;
  const cost = usage?.cost ?? null;
  const budget = run.max_cost ?? null;
  const parts: string[] = [];
  if (cost) parts.push(`Cost so far: ${formatCost(cost)}`);
  if (budget !== null) parts.push(`budget ${budget}${cost ? ` ${cost.currency}` : ""}`);
  if (usage) parts.push(`context ${contextShare(usage)} used (${usage.used} of ${usage.size} tokens)`);
  return {
    text: cost ? formatCost(cost) : "—",
    title: parts.length ? parts.join("; ") : "No cost reported by the agent",
    over: cost !== null && budget !== null && cost.amount >= budget,
  };
}

/** The share of the context window in use, as a percentage (`—` when the
 * agent reported no window size). */
export function contextShare(usage: RunUsage): string {
  return usage.size > 0 ? `${Math.round((usage.used * 100) / usage.size)}%` : "—";
}

/** What `runs` cost together, one total per currency, in the order each
 * currency first appears (amounts in different currencies never add up). */
export function costTotals(runs: Iterable<RunView>): RunCost[] {
  const totals: RunCost[] = [];
  for (const r of runs) {
    const c = r.usage?.cost;
    if (!c) continue;
    const t = totals.find((x) => x.currency === c.currency);
    if (t) t.amount += c.amount;
    else totals.push({ amount: c.amount, currency: c.currency });
  }
  return totals;
}

/** What `runs` cost, in words for the fleet's total: the whole, then each
 * workspace's total when the runs span more than one. */
export function costBreakdown(runs: readonly RunView[]): string {
  const lines = ["What the runs shown cost together, as their agents reported it"];
  const workspaces = [...new Set(runs.map((r) => r.workspace))].sort();
  if (workspaces.length > 1) {
    for (const w of workspaces) {
      const totals = costTotals(runs.filter((r) => r.workspace === w));
      if (totals.length > 0) lines.push(`${w}: ${totals.map(formatCost).join(" + ")}`);
    }
  }
  return lines.join("\n");
}

/** The order of a sort as a comparator. It is total (ties break by id), so
 * a row's place in a sorted array can be found by binary search. */
export function comparator(sort: Sort = DEFAULT_SORT): (a: FleetRun, b: FleetRun) => number {
  if (sort.key === "attention") return attention;
  const cmp = COMPARE[sort.key];
  const sign = sort.dir === "asc" ? 1 : -1;
  return (a, b) => sign * cmp(a, b) || a.id - b.id || byHost(a, b);
}

/** A new array in the requested order; ties break by id so the order is
 * stable across events. */
export function sortRuns<R extends FleetRun>(runs: readonly R[], sort: Sort = DEFAULT_SORT): R[] {
  return [...runs].sort(comparator(sort));
}

/** The first index whose row sorts at or after `r`. */
function lowerBound<R extends FleetRun>(sorted: readonly R[], r: R, cmp: (a: R, b: R) => number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(sorted[mid]!, r) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A copy of `sorted` with `prev` (the row as it was, if it was there)
 * replaced by `next` in its place by `cmp`: O(log n) comparisons instead of
 * re-sorting 10,000 rows on every pushed event. */
export function replaceSorted<R extends FleetRun>(
  sorted: readonly R[],
  prev: R | undefined,
  next: R,
  cmp: (a: R, b: R) => number,
): R[] {
  const out = sorted.slice();
  if (prev) {
    let at = lowerBound(out, prev, cmp);
    if (out[at] !== prev) at = out.indexOf(prev); // not where it should be: find it anyway
    if (at >= 0) out.splice(at, 1);
  }
  out.splice(lowerBound(out, next, cmp), 0, next);
  return out;
}

/** What clicking a column header does: a new column sorts ascending, the
 * same column flips direction. */
export function toggleSort(current: Sort, key: SortKey): Sort {
  if (current.key === key) return { key, dir: current.dir === "asc" ? "desc" : "asc" };
  return { key, dir: "asc" };
}

// ---------------------------------------------------------------------------
// Counts

export type Counts = Record<StateName, number> & { needs_you: number };

export function countRuns(runs: Iterable<RunView>): Counts {
  const c: Counts = { queued: 0, claimed: 0, running: 0, retry_queued: 0, pending_review: 0, released: 0, needs_you: 0 };
  for (const r of runs) {
    c[r.state.state] += 1;
    if (r.needs_you) c.needs_you += 1;
  }
  return c;
}

/** The counts after one row changed from `prev` (absent: a new run) to `next`. */
export function adjustCounts(c: Counts, prev: RunView | undefined, next: RunView): Counts {
  const out = { ...c };
  if (prev) {
    out[prev.state.state] -= 1;
    if (prev.needs_you) out.needs_you -= 1;
  }
  out[next.state.state] += 1;
  if (next.needs_you) out.needs_you += 1;
  return out;
}

/** The workspace list with `name` in it (the same array when it already is). */
export function withWorkspace(list: readonly string[], name: string): readonly string[] {
  if (list.includes(name)) return list;
  return [...list, name].sort(collator.compare);
}

// ---------------------------------------------------------------------------
// The virtual window: which rows of a fixed-height list to render

export interface Viewport {
  /** Pixels scrolled past the first row. */
  scrollTop: number;
  /** Pixels of rows visible at once. */
  height: number;
  rowHeight: number;
  count: number;
  /** Extra rows rendered above and below, so fast scrolling shows no gap. */
  overscan: number;
}

/** The half-open range [start, end) of row indexes to render. */
export function visibleRange(v: Viewport): { start: number; end: number } {
  if (v.count <= 0 || v.rowHeight <= 0) return { start: 0, end: 0 };
  const top = Math.max(0, v.scrollTop);
  const first = Math.min(v.count - 1, Math.floor(top / v.rowHeight));
  const shown = Math.ceil(Math.max(0, v.height) / v.rowHeight) + 1;
  const start = Math.max(0, first - v.overscan);
  const end = Math.min(v.count, first + shown + v.overscan);
  return { start, end };
}

/** The scrollTop that brings row `index` fully into view, or null when it
 * already is (so selecting a visible row never scrolls). */
export function revealRow(index: number, scrollTop: number, height: number, rowHeight: number): number | null {
  const top = index * rowHeight;
  const bottom = top + rowHeight;
  let next = scrollTop;
  if (top < scrollTop) next = top;
  // Below the view: align its bottom, but never hide its top (a view
  // shorter than a row shows the row's top).
  else if (bottom > scrollTop + height) next = Math.min(top, Math.max(0, bottom - height));
  return next === scrollTop ? null : next;
}

// ---------------------------------------------------------------------------
// The CHECKS column

export interface ChecksCell {
  /** none: no check ran; passed: every check passed; failed: at least one failed. */
  state: "none" | "passed" | "failed";
  /** What the cell shows: "✓ 2/2" when all passed, else "✗ 1" beside "✓ 1". */
  failed: string | null;
  passed: string | null;
  /** On hover and for screen readers. */
  title: string;
}

/** The CHECKS cell of a run from its sensor results (the latest result of
 * each check command): counts in the cell, each command on hover (failed
 * first). The title is plain text, never markup. */
export function checksCell(sensors: SensorSummary | null | undefined): ChecksCell {
  if (!sensors || sensors.passed + sensors.failed === 0) {
    return { state: "none", failed: null, passed: null, title: "No checks ran" };
  }
  const { passed, failed } = sensors;
  const commands = [...(sensors.results ?? [])]
    .sort((a, b) => Number(a.passed) - Number(b.passed))
    .map((r) => `\n${r.passed ? "✓" : "✗"} ${r.command}`)
    .join("");
  if (failed === 0) {
    return { state: "passed", failed: null, passed: `✓ ${passed}/${passed}`, title: `Checks: ${passed} passed, none failed${commands}` };
  }
  return {
    state: "failed",
    failed: `✗ ${failed}`,
    passed: passed > 0 ? `✓ ${passed}` : null,
    title: `Checks: ${failed} failed, ${passed} passed${commands}`,
  };
}

// ---------------------------------------------------------------------------
// Keyboard selection

/** The run selected after moving `delta` rows (j: +1, k: -1) from `current`
 * in the rows as shown. With nothing (or a row no longer shown) selected,
 * moving starts at the first row. Stops at either end. */
export function moveSelection(rows: readonly FleetRun[], current: RowKey | null, delta: number): RowKey | null {
  if (rows.length === 0) return null;
  const at = current === null ? -1 : indexOfRun(rows, current);
  if (at < 0) return rowKey(rows[0]!);
  const next = Math.min(rows.length - 1, Math.max(0, at + delta));
  return rowKey(rows[next]!);
}

/** Where the row of `key` is in `rows` (a number: this machine's run of
 * that id). */
export function indexOfRun(rows: readonly FleetRun[], key: RowKey): number {
  for (let i = 0; i < rows.length; i++) if (rowKey(rows[i]!) === key) return i;
  return -1;
}

export type KeyCommand =
  | "down"
  | "up"
  | "first"
  | "last"
  | "open"
  | "approve"
  | "reject"
  | "abort"
  | "preview"
  | "help"
  | "search"
  | "escape";

/** The dashboard's shortcut for a key press, or null. Keys typed into a
 * text field are the user's text, never shortcuts. */
export function keyCommand(e: {
  key: string;
  ctrlKey?: boolean;
  metaKey?: boolean;
  altKey?: boolean;
  inField?: boolean;
}): KeyCommand | null {
  if (e.key === "Escape") return "escape";
  if (e.ctrlKey || e.metaKey || e.altKey || e.inField) return null;
  switch (e.key) {
    case "j":
    case "ArrowDown":
      return "down";
    case "k":
    case "ArrowUp":
      return "up";
    case "Home":
    case "g":
      return "first";
    case "End":
    case "G":
      return "last";
    case "Enter":
    case "o":
      return "open";
    case "a":
      return "approve";
    case "r":
      return "reject";
    case "x":
      return "abort";
    case "p":
      return "preview";
    case "?":
      return "help";
    case "/":
      return "search";
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------
// Pushed events

/** What one pushed event does to the rows (by id): a `run_changed` carries
 * the row itself; nothing else changes a row. */
export function runChange(e: EngineEvent): Change<number, RunView> | null {
  switch (e.type) {
    case "run_changed":
      return { put: [e.run] };
    case "gate_opened":
    case "gate_decided":
    case "run_activity":
    case "orchestration_aborted":
    case "message_posted":
      // The row itself arrives as the run_changed of the same commit.
      return null;
    default:
      // An event this build does not know (a newer engine): keep the rows.
      return null;
  }
}

/** The counts of several engines' fleets together. */
export function sumCounts(all: Iterable<Counts>): Counts {
  const c = countRuns([]);
  for (const one of all) for (const k of Object.keys(c) as (keyof Counts)[]) c[k] += one[k];
  return c;
}
