import { describe, expect, it } from "vitest";
import { demoBackend } from "../backend/mock";
import { gateKey } from "./keys";

const NOW = 1_700_000_000_000;
const tool = demoBackend(NOW).gates.get(3)!;
const plan = demoBackend(NOW).gates.get(2)!;

describe("inbox answer keys", () => {
  it("y / a / n answer a pending tool call yes / always / no (no asks for a reason)", () => {
    expect(tool.kind).toBe("tool_call");
    expect(gateKey({ key: "y" }, tool)).toEqual({ choice: "yes", reason: false });
    expect(gateKey({ key: "a" }, tool)).toEqual({ choice: "always", reason: false });
    expect(gateKey({ key: "n" }, tool)).toEqual({ choice: "no", reason: true });
    expect(gateKey({ key: "x" }, tool)).toBeNull();
    expect(gateKey({ key: "Y" }, tool)).toBeNull();
  });

  it("are the user's text in a field, and not shortcuts with a modifier", () => {
    expect(gateKey({ key: "y", inField: true }, tool)).toBeNull();
    expect(gateKey({ key: "n", ctrlKey: true }, tool)).toBeNull();
    expect(gateKey({ key: "a", metaKey: true }, tool)).toBeNull();
    expect(gateKey({ key: "y", altKey: true }, tool)).toBeNull();
  });

  it("pick only what the gate offers: no always on an always-gated call", () => {
    const gated = { ...tool, options: tool.options.filter((o) => o.id !== "always") };
    expect(gateKey({ key: "a" }, gated)).toBeNull();
    expect(gateKey({ key: "y" }, gated)).toEqual({ choice: "yes", reason: false });
  });

  it("do nothing on other gate kinds or decided gates", () => {
    expect(gateKey({ key: "y" }, plan)).toBeNull();
    expect(gateKey({ key: "a" }, plan)).toBeNull();
    expect(gateKey({ key: "y" }, { ...tool, status: "decided" })).toBeNull();
  });
});
