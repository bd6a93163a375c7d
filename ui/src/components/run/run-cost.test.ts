// What a run cost, as the engine sends it on the run's row (the agent's
// usage_update, checked by the engine): the fleet row's Cost cell, the run
// page's cost against its budget and the context used, and the header's
// total of the runs shown, per currency. Rendered from the real components.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import RunHeader from "./RunHeader.svelte";
import RunRow from "../fleet/RunRow.svelte";
import { Fleet } from "../../lib/fleet/fleet.svelte";
import { costBreakdown, costCell, costTotals, formatCost } from "../../lib/fleet/fleet";
import { demoBackend } from "../../lib/backend/mock";
import type { RunView } from "../../lib/types";

const NOW = 1_700_000_000_000;
const noop = () => {};
const rowProps = { now: NOW, index: 0, busy: false, selected: false, aborting: false, onopen: noop, onwhy: noop, onapprove: noop, onreject: noop, onabort: noop, onabortconfirm: noop, onabortcancel: noop };

async function started() {
  const fleet = new Fleet(demoBackend(NOW));
  await fleet.start();
  return fleet;
}

function costing(run: RunView, amount: number | null, currency = "USD", max_cost: number | null = null): RunView {
  return {
    ...run,
    usage: { used: 50_000, size: 200_000, cost: amount === null ? null : { amount, currency } },
    max_cost,
  };
}

describe("a run's cost", () => {
  it("shows in the fleet row, with the context used and the budget in its title", async () => {
    const fleet = await started();
    const base = fleet.rows.get(3)!;
    const row = render(RunRow, { props: { ...rowProps, run: costing(base, 0.5, "USD", 2) } }).body;
    expect(row).toMatch(/data-testid="run-cost" title="Cost so far: 0.50 USD; budget 2 USD; context 25% used \(50000 of 200000 tokens\)"/);
    expect(row).toMatch(/data-col="cost"[^>]*><span[^>]*>0.50 USD<\/span>/);
    const none = render(RunRow, { props: { ...rowProps, run: { ...base, usage: null, max_cost: null } } }).body;
    expect(none).toMatch(/data-testid="run-cost" title="No cost reported by the agent"/);
  });

  it("shows on the run page against its budget, marked once reached", async () => {
    const fleet = await started();
    const base = fleet.rows.get(3)!;
    const under = render(RunHeader, { props: { run: costing(base, 0.25, "USD", 1), fleet, now: NOW } }).body;
    expect(under).toMatch(/data-testid="run-cost"[^>]*>0.25 USD<!--[^>]*--><span class="budget[^"]*"> of 1<\/span>/);
    expect(under).toMatch(/data-testid="run-context"[^>]*>25%/);
    const over = render(RunHeader, { props: { run: costing(base, 1, "USD", 1), fleet, now: NOW } }).body;
    expect(over).toMatch(/data-testid="run-cost"[^>]*class="[^"]*\bover\b/);
    expect(over).toContain("(budget reached)");
    const none = render(RunHeader, { props: { run: { ...base, usage: null, max_cost: null }, fleet, now: NOW } }).body;
    expect(none).not.toContain("run-cost");
  });

  it("adds up per currency over the runs shown, never across currencies", async () => {
    const fleet = await started();
    const a = fleet.rows.get(1)!;
    const b = fleet.rows.get(2)!;
    const c = fleet.rows.get(3)!;
    const d = fleet.rows.get(4)!;
    const runs = [costing(a, 0.5), costing(b, 0.25), costing(c, 3, "credits"), { ...d, usage: null } as RunView];
    expect(costTotals(runs).map(formatCost)).toEqual(["0.75 USD", "3.00 credits"]);
    expect(costTotals([])).toEqual([]);
    expect(formatCost({ amount: 0.0042, currency: "USD" })).toBe("0.0042 USD");
    expect(costCell(costing(a, 1.5, "USD", 1)).over).toBe(true);
    expect(costCell(costing(a, 0.5, "USD", 1)).over).toBe(false);
  });

  it("breaks the total down per workspace once the runs shown span several", async () => {
    const fleet = await started();
    const a = { ...costing(fleet.rows.get(1)!, 0.5), workspace: "web" };
    const b = { ...costing(fleet.rows.get(2)!, 0.25), workspace: "api" };
    const c = { ...costing(fleet.rows.get(3)!, 3, "credits"), workspace: "web" };
    expect(costBreakdown([a, b, c]).split("\n").slice(1)).toEqual(["api: 0.25 USD", "web: 0.50 USD + 3.00 credits"]);
    expect(costBreakdown([a, c]).split("\n")).toHaveLength(1);
  });
});
