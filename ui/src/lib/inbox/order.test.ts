import { describe, expect, it } from "vitest";
import type { GateBody, GateKind, GateView } from "../types";
import { askKind, batchOption, optionLabel, sortGates } from "./order";
import { age, countdown, duration } from "./format";
import { demoBackend, emptyBody, withExternalSessions } from "../backend/mock";

const NOW = 1_700_000_000_000;

const opt = (id: string, requires_context = false) => ({ id, label: id[0]!.toUpperCase() + id.slice(1), requires_context });
type Common = Partial<Omit<GateView, "kind" | "payload">>;
// Gates as the engine sends them; `ask_kind` is the engine's (core's
// gate::ask_kind, tested there): blocking unless a test says otherwise.
const gate = (id: number, kind: GateKind, extra: Common = {}, body: GateBody = emptyBody(kind)): GateView => ({
  ask_kind: "blocking",
  id,
  run_id: id,
  ...body,
  status: "pending",
  title: `gate ${id}`,
  options: [],
  opened_at: id * 1000,
  decision: null,
  auto_at: null,
  auto_option: null,
  authority: null,
  effected: false,
  ...extra,
});

describe("askKind", () => {
  it("is what the engine says, whatever the payload", () => {
    expect(askKind(gate(1, "question", { ask_kind: "question" }, { kind: "question", payload: { message: "m", ask_kind: "info" } }))).toBe("question");
    expect(askKind(gate(1, "question", { ask_kind: "info" }))).toBe("info");
  });

  // The engine's answers about the recorded demo (fixtures.json): every gate
  // an agent waits on blocks, reviews and timers are questions, and a kind
  // the opener declared wins.
  it("is, on the engine's own gates, blocking for waits, question for reviews, info when declared", async () => {
    const backend = withExternalSessions(demoBackend(NOW), NOW);
    const asks = Object.fromEntries((await backend.listGates(true, null, null)).gates.map((g) => [g.id, `${g.kind}:${askKind(g)}`]));
    expect(asks).toEqual({
      1: "merge_review:question",
      2: "plan:blocking",
      3: "tool_call:blocking",
      4: "question:blocking",
      5: "deviation:blocking",
      6: "step_review:question",
      8: "tool_call:blocking",
      9: "question:info",
    });
  });
});

describe("sortGates", () => {
  it("puts blocking first, then questions, then info, newest first within each", () => {
    const gates = [
      gate(1, "plan"),
      gate(2, "step_review", { ask_kind: "question" }),
      gate(3, "tool_call"),
      gate(4, "merge_review", { ask_kind: "question" }),
      gate(5, "question", { ask_kind: "info" }, { kind: "question", payload: { message: "done", ask_kind: "info" } }),
      gate(6, "question"),
    ];
    expect(sortGates(gates).map((g) => g.id)).toEqual([6, 3, 1, 4, 2, 5]);
  });

  it("breaks ties in time by id, newest first, and does not change its input", () => {
    const gates = [gate(1, "plan", { opened_at: 0 }), gate(2, "plan", { opened_at: 0 })];
    expect(sortGates(gates).map((g) => g.id)).toEqual([2, 1]);
    expect(gates.map((g) => g.id)).toEqual([1, 2]);
  });
});

describe("batchOption", () => {
  it("is the engine's choice for the gate, on a pending gate only", () => {
    // Which gates may be batched is core's batch_choice (tested in Rust):
    // the window reads what the engine shipped.
    expect(batchOption(gate(1, "step_review", { options: [opt("proceed")], batch_option: "proceed" }))).toBe("proceed");
    expect(batchOption(gate(2, "step_review", { options: [opt("proceed")], batch_option: null }))).toBeNull();
    expect(batchOption(gate(3, "step_review", { options: [opt("proceed")] }))).toBeNull();
    expect(batchOption(gate(4, "step_review", { options: [opt("proceed")], batch_option: "proceed", status: "decided" }))).toBeNull();
  });

  it("labels options by the gate's own words", () => {
    const g = gate(1, "tool_call", { options: [{ id: "always", label: "Always for this run", requires_context: false }] });
    expect(optionLabel(g, "always")).toBe("Always for this run");
    expect(optionLabel(g, "other")).toBe("other");
    expect(optionLabel(g, null)).toBe("");
  });
});

describe("times", () => {
  it("words durations the way a person reads them", () => {
    expect(duration(8_000)).toBe("8 s");
    expect(duration(8_400)).toBe("8 s");
    expect(duration(-5)).toBe("0 s");
    expect(duration(250_000)).toBe("4 min 10 s");
    expect(duration(900_000)).toBe("15 min");
    expect(duration(2 * 3_600_000 + 5 * 60_000)).toBe("2 h 5 min");
    expect(duration(3 * 86_400_000)).toBe("3 d");
    expect(age(1_000, 2_000)).toBe("just now");
    expect(age(0, 125_000)).toBe("2 min 5 s ago");
  });

  it("counts a step review down to its auto-proceed, from the display clock", () => {
    const g = gate(1, "step_review", { options: [opt("proceed"), opt("stop", true)], auto_at: 10_000, auto_option: "proceed" });
    expect(countdown(g, 2_000)).toBe("Proceeds in 8 s unless you stop it");
    expect(countdown(g, 3_000)).toBe("Proceeds in 7 s unless you stop it");
    expect(countdown(g, 10_200)).toBe("Proceeds now unless you stop it");
    expect(countdown({ ...g, auto_at: null }, 0)).toBeNull();
    // A display clock a moment behind the engine's never shows more than the timer's length.
    expect(countdown({ ...g, opened_at: 0 }, -900)).toBe("Proceeds in 10 s unless you stop it");
  });

  it("says what an expiring question or an unanswered pause will do", () => {
    const q = gate(1, "question", { opened_at: 0, options: [opt("answer", true), opt("decline")], auto_at: 60_000, auto_option: "decline" });
    expect(countdown(q, 0)).toBe("Expires in 1 min; then the default answer: Decline");
    const p = gate(2, "supervisor_pause", { opened_at: 0, options: [opt("abort")], auto_at: 600_000, auto_option: "abort" });
    expect(countdown(p, 0)).toBe("Nobody answered: the run is terminated in 10 min");
  });
});

describe("info items", () => {
  it("are never batch-approvable, and rank after questions", () => {
    const info: GateView = {
      ask_kind: "info",
      id: 50, run_id: 9, kind: "question" as const, status: "pending" as const, title: "Finished", opened_at: 2,
      options: [{ id: "answer", label: "Reply", requires_context: true }, { id: "decline", label: "Dismiss", requires_context: false }],
      payload: { message: "Finished", ask_kind: "info", notice: "stop" }, decision: null, auto_at: null, auto_option: null, authority: null, effected: false,
    };
    expect(askKind(info)).toBe("info");
    const blocking: GateView = { ...info, id: 51, opened_at: 1, ask_kind: "blocking", payload: { message: "Finished", ask_kind: "blocking" } };
    expect(sortGates([info, blocking]).map((g) => g.id)).toEqual([51, 50]);
  });
});
