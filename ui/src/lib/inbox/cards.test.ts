// The inbox's cards rendered on the server (no DOM needed): what each gate
// kind shows and offers, straight from the gate.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import GateCard from "../../components/inbox/GateCard.svelte";
import InboxView from "../../components/inbox/InboxView.svelte";
import { Gates } from "./gates.svelte";
import { Fleet } from "../fleet/fleet.svelte";
import { Nav } from "../nav.svelte";
import { MockBackend, demoBackend, toolCallGate } from "../backend/mock";
import type { DecisionRecord, GateView } from "../types";

const NOW = 1_700_000_000_000;

async function html(gate: GateView, now = NOW) {
  const backend = demoBackend(NOW);
  backend.gates.set(gate.id, gate);
  const fleet = new Fleet(backend);
  const gates = new Gates(backend, fleet);
  await Promise.all([fleet.start(), gates.start()]);
  return render(GateCard, { props: { gate: gates.pending.get(gate.id)!, gates, nav: new Nav(), now } }).body;
}

const demo = (id: number) => demoBackend(NOW).gates.get(id)!;
const actions = (body: string) => [...body.matchAll(/data-action="([^"]+)"/g)].map((m) => m[1]);

describe("gate cards", () => {
  it("show a batched question as tabs with one Submit, and the gate's other options", async () => {
    const body = await html(demo(4));
    const tabs = [...body.matchAll(/data-testid="question-tab"[^>]*data-key="([^"]+)"/g)].map((m) => m[1]);
    expect(tabs).toEqual(["framework", "add_tests", "notes"]);
    expect(body).toContain('data-testid="question-submit"');
    expect(actions(body)).toEqual(["why", "answer", "decline"]);
    expect(body).toContain("Submit all 3 answers");
    // The first question is open, with its options as radio buttons and Other.
    expect(body).toMatch(/type="radio"[^>]*data-choice="svelte"/);
    expect(body).toContain('data-choice="other"');
    expect(body).not.toContain('data-testid="gate-context"');
  });

  it("show a plan's goal, steps with roles, files and risks, with Approve / Request changes / Reject", async () => {
    const body = await html(demo(2));
    expect(body).toContain("Split billing into modules");
    expect(body.match(/data-testid="plan-step"/g)).toHaveLength(2);
    expect(body).toContain("coder");
    expect(body).toContain("src/billing/invoices.ts");
    expect(body).toContain("Import cycles");
    expect(actions(body)).toEqual(["why", "approve", "request_changes", "reject"]);
    expect(body).toContain("required to request changes, optional otherwise");
  });

  it("mark what a consultation asks as a consultation's", async () => {
    const backend = demoBackend(NOW);
    const gate = demo(4);
    const run = backend.runs.get(gate.run_id)!;
    backend.runs.set(run.id, { ...run, parent: 1 });
    const fleet = new Fleet(backend);
    const gates = new Gates(backend, fleet);
    await Promise.all([fleet.start(), gates.start()]);
    const body = render(GateCard, { props: { gate: gates.pending.get(gate.id)!, gates, nav: new Nav(), now: NOW } }).body;
    expect(body).toMatch(/data-testid="consultation-badge"[^>]*>consultation for run 1</);
    expect(await html(gate)).not.toContain("consultation-badge");
  });

  it("hide Retry when the engine no longer offers it", async () => {
    const g = demo(5);
    const body = await html({ ...g, options: g.options.filter((o) => o.id !== "retry"), kind: "deviation", payload: { cause: "turn_failed", error: "boom", attempts: 10, max_attempts: 10 } });
    expect(actions(body)).toEqual(["why", "replan", "stop"]);
    expect(body).toContain("attempts 10/10");
    expect(body).toContain("Retry is no longer offered");
    const fresh = await html(g);
    expect(actions(fresh)).toEqual(["why", "retry", "replan", "stop"]);
    expect(fresh).toContain("attempts 2/10");
  });

  it("show a tool call's exact command; no Always and no batch box when always-gated", async () => {
    const gated = await html({ ...demo(3), options: demo(3).options.filter((o) => o.id !== "always"), kind: "tool_call", payload: toolCallGate({ command: "rm -rf build/" }, { always_gated: "destructive_shell", always_gated_why: "a destructive shell command" }) });
    expect(gated).toContain("rm -rf build/");
    expect(gated).toContain('data-testid="always-gated"');
    expect(actions(gated)).toEqual(["why", "yes", "no"]);
  });

  it("count a step review down from the display clock, with a way to stop the timer", async () => {
    const g = { ...demo(6), auto_at: NOW + 8_000, auto_option: "proceed" };
    expect(await html(g)).toContain("Proceeds in 8 s unless you stop it");
    expect(await html(g, NOW + 3_000)).toContain("Proceeds in 5 s unless you stop it");
    expect(actions(await html(g))).toEqual(["why", "hold", "proceed", "stop"]);
    expect(actions(await html({ ...g, auto_at: null }))).toEqual(["why", "proceed", "stop"]);
  });

  it("count an autonomous supervisor's decision down from the deadline the engine sent, with a way to hold it", async () => {
    const plan = demo(2);
    const g: GateView = {
      ...plan,
      authority: "autonomous",
      pending_effect: { option: "approve", verdict: "approve", by: { kind: "supervisor" as const, name: "rules" }, at: NOW + 8_000, rationale: "2 steps, 3 declared files" },
    };
    const body = await html(g);
    expect(body).toContain('data-testid="gate-supervisor-countdown"');
    expect(body).toContain("The supervisor will approve in 8 s: decide now to override");
    expect(body).toContain("2 steps, 3 declared files");
    // The clock ticks; the deadline does not move.
    expect(await html(g, NOW + 3_000)).toContain("The supervisor will approve in 5 s");
    expect(await html(g, NOW + 8_000)).toContain("The supervisor's decision to approve takes effect now");
    // Hold, then the gate's own options to override with.
    expect(actions(body)).toEqual(["why", "hold", "approve", "request_changes", "reject"]);
    // A reject names the option it picks when its label says more.
    const tool = { ...demo(3), authority: "autonomous" as const, pending_effect: { option: "no", verdict: "reject" as const, by: { kind: "supervisor" as const, name: "rules" }, at: NOW + 10_000, rationale: null } };
    expect(await html(tool)).toContain("The supervisor will reject (“No”) in 10 s");
    // Without one, no countdown.
    expect(await html(plan)).not.toContain("gate-supervisor-countdown");
  });

  it("say what an advisory supervisor advises, which option and why, and when it hands the gate over", async () => {
    const by = "supervisor:rules";
    const tool = { ...demo(3), authority: "advisory" as const, advice: { verdict: "advise" as const, option: "no", rationale: "it deletes the build folder", by, at: NOW } };
    const body = await html(tool);
    expect(body).toContain('data-testid="gate-advice"');
    expect(body).toContain("The supervisor advises “No”: it deletes the build folder");
    expect(await html({ ...tool, advice: { ...tool.advice, verdict: "escalate" as const, option: null, rationale: "a human must look" } })).toContain(
      "The supervisor hands this to you: a human must look",
    );
    // Agent text in a rationale stays text.
    expect(await html({ ...tool, advice: { ...tool.advice, rationale: "<b>x</b>" } })).toContain("&lt;b>x&lt;/b>");
    // A decision waiting for its grace says so in its countdown instead.
    const waiting = { ...tool, pending_effect: { option: "no", verdict: "reject" as const, by: { kind: "supervisor" as const, name: "rules" }, at: NOW + 5_000, rationale: null } };
    expect(await html(waiting)).not.toContain('data-testid="gate-advice"');
    // Before the supervisor said anything: nothing.
    expect(await html({ ...tool, advice: undefined })).not.toContain('data-testid="gate-advice"');
  });

  it("show a payload an older version wrote as stored, with no details made up from it", async () => {
    const old = { tool: "Bash", command: "<b>npm install pg-migrate</b>" };
    const body = await html({ ...demo(3), kind: "tool_call", payload: toolCallGate({ tool: "", kind: "other" }), unreadable_payload: old });
    expect(body).toContain('data-testid="unreadable-payload"');
    expect(body).toContain("&lt;b>npm install pg-migrate&lt;/b>");
    expect(body).not.toContain('data-testid="tool-call"');
    expect(actions(body)).toEqual(["why", "yes", "always", "no"]);
  });

  it("render agent text as text, never as markup", async () => {
    const evil = "<img src=x onerror=alert(1)>";
    const body = await html({ ...demo(2), title: evil, kind: "plan", payload: { goal: evil, steps: [{ title: evil }], files: [evil], risks: [], source: "requested" } });
    expect(body).not.toContain("<img");
    expect(body).toContain("&lt;img src=x onerror=alert(1)>");
  });
});

describe("the inbox", () => {
  it("lists blocking asks first, with batch boxes only on low-risk gates", async () => {
    const backend = demoBackend(NOW);
    backend.gates.set(3, { ...demo(3), kind: "tool_call", payload: toolCallGate({ tool: "Edit", kind: "edit", paths: ["a.txt"] }), batch_option: "yes" });
    const gates = new Gates(backend);
    await gates.start();
    const body = render(InboxView, { props: { gates, nav: new Nav(), now: NOW } }).body;
    const order = [...body.matchAll(/<article[^>]*data-kind="([^"]+)"[^>]*data-ask="([^"]+)"/g)].map((m) => `${m[2]}:${m[1]}`);
    expect(order).toEqual(["blocking:plan", "blocking:tool_call", "blocking:question", "blocking:deviation", "question:merge_review", "question:step_review"]);
    expect(body.match(/data-testid="gate-select"/g)).toHaveLength(2);
    expect(body).toContain('data-testid="approve-selected"');
  });

  it("says what to do when nothing waits", async () => {
    const gates = new Gates(new MockBackend());
    await gates.start();
    const body = render(InboxView, { props: { gates, nav: new Nav(), now: NOW } }).body;
    expect(body).toContain('data-testid="inbox-empty"');
    expect(body).toContain("overseer task start");
    expect(body).not.toContain('data-testid="approve-selected"');
  });

  it("name who approved a co-signed gate that waits for the co-sign (a person through a device, not \"You\")", async () => {
    const backend = demoBackend(NOW);
    const gate = { ...backend.gates.get(1)!, authority: "cosign" as const };
    backend.gates.set(1, gate);
    const story = backend.gateStory.bind(backend);
    const vote = (actor: DecisionRecord["actor"], device?: DecisionRecord["device"]): DecisionRecord => ({
      id: 1, run_id: gate.run_id, gate_id: 1, actor, verdict: "approve", option: "yes", rationale: null,
      correction: null, rule_ref: null, provenance: null, model_id: null, prompt_version: null, confidence: null,
      source_event: null, audit_seq: 9, at: NOW, ...(device ? { device } : {}),
    });
    let decisions = [vote({ kind: "user", name: "ana" }, { id: 3, name: "Ana's phone" })];
    backend.gateStory = async (id) => ({ ...(await story(id)), decisions, awaiting_cosign: id === 1 });
    const fleet = new Fleet(backend);
    const gates = new Gates(backend, fleet);
    await Promise.all([fleet.start(), gates.start()]);
    await new Promise((r) => setTimeout(r, 0));
    const card = () => render(GateCard, { props: { gate: gates.pending.get(1)!, gates, nav: new Nav(), now: NOW } }).body;
    expect(card()).toContain("Approved by <bdi data-testid=\"gate-cosign-by\">user:ana through Ana's phone (device 3)</bdi>: waiting for the co-sign.");
    expect(card()).not.toContain("You approved");
    // The window's own approval is named as such too.
    decisions = [vote({ kind: "user", name: "app" })];
    backend.push({ type: "run_changed", run: backend.runs.get(gate.run_id)! });
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setTimeout(r, 0));
    expect(card()).toContain(">user:app</bdi>: waiting for the co-sign.");
  });
});

describe("external sessions in the inbox", () => {
  async function externalHtml(gateId: number) {
    const { withExternalSessions } = await import("../backend/mock");
    const backend = withExternalSessions(demoBackend(NOW), NOW);
    const fleet = new Fleet(backend);
    const gates = new Gates(backend, fleet);
    await Promise.all([fleet.start(), gates.start()]);
    const card = render(GateCard, { props: { gate: gates.pending.get(gateId)!, gates, nav: new Nav(), now: NOW } }).body;
    const inbox = render(InboxView, { props: { gates, nav: new Nav(), now: NOW } }).body;
    return { card, inbox };
  }

  it("show an info item as info: the message, a Reply box and Dismiss, never a batch box", async () => {
    const { card, inbox } = await externalHtml(9);
    expect(card).toContain('data-ask="info"');
    expect(card).toContain('data-testid="info-item"');
    expect(card).toContain("Shall I open an issue for the skipped rows?");
    expect(actions(card)).toEqual(["why", "answer", "decline"]);
    expect(card).toMatch(/data-action="answer"[^>]*>\s*Reply/);
    expect(card).toMatch(/data-action="decline"[^>]*>\s*Dismiss/);
    expect(card).toContain('data-testid="gate-context"');
    expect(card).not.toContain('data-testid="question-form"');
    expect(card).toContain("MCP · external");
    // Info ranks last, and is never selectable for batch approval.
    const order = [...inbox.matchAll(/<article[^>]*data-gate-id="(\d+)"[^>]*data-ask="([^"]+)"/g)].map((m) => `${m[2]}:${m[1]}`);
    expect(order.at(-1)).toBe("info:9");
    const nine = /<article[^>]*data-gate-id="9"[\s\S]*?<\/article>/.exec(inbox)![0];
    expect(nine).not.toContain("gate-select");
  });

  it("show an external session's tool call with its tool and command, like a launched run's", async () => {
    const { card } = await externalHtml(8);
    expect(card).toContain('data-testid="tool-call"');
    expect(card).toMatch(/data-testid="tool-command"[^>]*>rm -rf node_modules &amp;&amp; npm ci</);
    expect(card).toContain("Bash");
    expect(card).toContain("Claude Code · external");
    expect(actions(card)).toEqual(["why", "yes", "always", "no"]);
    expect(card).toContain("Always for this session");
  });
});
