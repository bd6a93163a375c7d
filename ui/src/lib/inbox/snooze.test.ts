// Snoozing an inbox item: the times offered, the item leaving the inbox
// when the engine accepts (staying with the engine's reason when it
// refuses), coming back when the engine wakes it, and the card's control.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import GateCard from "../../components/inbox/GateCard.svelte";
import { Gates } from "./gates.svelte";
import { Fleet } from "../fleet/fleet.svelte";
import { Nav } from "../nav.svelte";
import { demoBackend } from "../backend/mock";
import { SNOOZE_CHOICES, snoozeUntil } from "./snooze";

const NOW = 1_700_000_000_000;
const flush = () => new Promise((r) => setTimeout(r, 0));

async function started() {
  const backend = demoBackend(NOW);
  const fleet = new Fleet(backend);
  const gates = new Gates(backend, fleet);
  await Promise.all([fleet.start(), gates.start()]);
  return { backend, gates };
}

describe("snooze", () => {
  it("offers 15 min, 1 h and tomorrow at 9:00 in the user's own time", () => {
    const evening = new Date(2026, 10, 27, 23, 30, 0);
    expect(snoozeUntil("15m", evening)).toBe(evening.getTime() + 15 * 60_000);
    expect(snoozeUntil("1h", evening)).toBe(evening.getTime() + 3_600_000);
    const morning = new Date(snoozeUntil("tomorrow", evening));
    expect([morning.getFullYear(), morning.getMonth(), morning.getDate(), morning.getHours(), morning.getMinutes()]).toEqual([2026, 10, 28, 9, 0]);
    // Early in the morning "tomorrow" is still the next day, and a month's
    // last day rolls into the next month.
    const early = new Date(snoozeUntil("tomorrow", new Date(2026, 10, 30, 7, 0, 0)));
    expect([early.getMonth(), early.getDate(), early.getHours()]).toEqual([11, 1, 9]);
    expect(SNOOZE_CHOICES.map((c) => c.label)).toEqual(["15 min", "1 h", "Until tomorrow 9:00"]);
  });

  it("takes a snoozed item out of the inbox, and a woken one comes back", async () => {
    const { backend, gates } = await started();
    const until = NOW + 15 * 60_000;
    expect(gates.pending.has(4)).toBe(true);
    expect(await gates.snooze(4, until)).toBe(true);
    expect(backend.calls).toContain("snoozeGate 4");
    expect(gates.pending.has(4)).toBe(false);
    // The engine wakes it: told as just opened, it is back.
    backend.gates.set(4, { ...backend.gates.get(4)!, snoozed_until: undefined });
    backend.openGate(backend.gates.get(4)!);
    await flush();
    expect(gates.pending.has(4)).toBe(true);
  });

  it("drops an item another window snoozed when its run says it needs nobody", async () => {
    const { backend, gates } = await started();
    const g = backend.gates.get(4)!;
    expect(gates.pending.has(4)).toBe(true);
    // An info item of the same run only tells: it stays.
    const note = { ...g, id: 50, ask_kind: "info" as const };
    backend.openGate(note);
    await flush();
    expect(gates.pending.has(50)).toBe(true);
    // Snoozed elsewhere: no gate_decided, only the run's row without "needs you".
    backend.push({ type: "run_changed", run: { ...backend.runs.get(g.run_id)!, needs_you: false } });
    await flush();
    expect(gates.pending.has(4)).toBe(false);
    expect(gates.pending.has(50)).toBe(true);
  });

  it("keeps an item the engine refused to snooze, with the engine's reason on its card", async () => {
    const { backend, gates } = await started();
    backend.failNext = { code: "invalid_input", message: "gate 4: snooze for 5 seconds to 30 days (until ... is too soon)" };
    expect(await gates.snooze(4, NOW)).toBe(false);
    expect(gates.pending.has(4)).toBe(true);
    expect(gates.errors.get(4)?.message).toContain("5 seconds to 30 days");
  });

  it("shows the Snooze control on every card", async () => {
    const { gates } = await started();
    for (const g of gates.pending.values()) {
      const body = render(GateCard, { props: { gate: g, gates, nav: new Nav(), now: NOW } }).body;
      expect(body).toContain('data-testid="gate-snooze"');
      const offered = [...body.matchAll(/data-snooze="([^"]+)"/g)].map((m) => m[1]);
      expect(offered).toEqual(["15m", "1h", "tomorrow"]);
    }
  });
});
