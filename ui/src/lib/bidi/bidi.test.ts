// Agent text cannot spoof what is around it: an RTL override (U+202E) in a
// task title, a gate title, a step or a timeline entry stays inside its own
// bidi isolate (<bdi>), so the columns, labels and words next to it keep
// their order. Rendered with Svelte's server renderer from the real
// components, then checked in the markup.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import RunRow from "../../components/fleet/RunRow.svelte";
import TimelineEntry from "../../components/run/TimelineEntry.svelte";
import GateDetails from "../../components/inbox/GateDetails.svelte";
import { WORKING } from "../backend/mock";
import type { GateView, RunView } from "../types";
import type { TimelineItem } from "../run/timeline";

const RLO = "\u202E";
const evil = `${RLO}txt.exe  Approve`;

/** The text of every <bdi> in `html`, as rendered (entities left alone). */
function isolates(html: string): string[] {
  return [...html.matchAll(/<bdi[^>]*>([\s\S]*?)<\/bdi>/g)].map((m) => m[1] ?? "");
}

/** The markup with every isolate cut out: what agent text could reorder. */
function outside(html: string): string {
  return html.replace(/<bdi[^>]*>[\s\S]*?<\/bdi>/g, "");
}

const run: RunView = {
  id: 7,
  task_id: 7,
  task_title: evil,
  workspace: `${RLO}ws`,
  agent: `${RLO}agent`,
  state: { state: "running" },
  state_since: 0,
  created_at: 0,
  needs_you: false,
  attention_rank: 0,
  release_note: null,
  origin: "launched",
  actions: WORKING,
  pending_gate: null,
  current_step: `${RLO}step two`,
  sensors: null,
  last_gate: null,
};

describe("bidi isolation of agent text", () => {
  it("keeps a fleet row's title, workspace, agent and step each in its own isolate", () => {
    const noop = () => {};
    const { body } = render(RunRow, {
      props: {
        run,
        now: 0,
        index: 0,
        busy: false,
        selected: false,
        aborting: false,
        onopen: noop,
        onwhy: noop,
        onapprove: noop,
        onreject: noop,
        onabort: noop,
        onabortconfirm: noop,
        onabortcancel: noop,
      },
    });
    const inside = isolates(body);
    for (const text of [evil, `${RLO}ws`, `${RLO}agent`, `${RLO}step two`]) {
      expect(inside).toContain(text);
    }
    // No override character is left outside an isolate (the title attribute
    // aside, which is a tooltip, not laid out with the row).
    expect(outside(body).replace(/title="[^"]*"/g, "")).not.toContain(RLO);
  });

  it("keeps a timeline entry's title apart from its count and its text apart from the fold", () => {
    const item: TimelineItem = {
      key: 1,
      lastId: 3,
      kind: "tool_call",
      at: 0,
      label: "tool",
      tone: "info",
      title: evil,
      text: `${RLO}the agent says`,
      output: null,
      count: 3,
      decision: `${RLO}allowed by rule`,
      status: null,
    };
    const { body } = render(TimelineEntry, { props: { item } });
    expect(isolates(body)).toEqual(expect.arrayContaining([evil, `${RLO}the agent says`, `${RLO}allowed by rule`]));
    expect(outside(body)).not.toContain(RLO);
    expect(body).toMatch(/<p class="text[^"]*" dir="auto">/);
  });

  it("keeps a gate's paths, reason and rule isolated", () => {
    const gate: GateView = {
      id: 3,
      run_id: 7,
      kind: "tool_call",
      ask_kind: "blocking",
      status: "pending",
      title: evil,
      options: [],
      payload: {
        tool_call: { id: null, kind: "edit", title: evil, raw_input: null },
        request: { tool: "Edit", kind: "edit", command: null, paths: [`docs/${RLO}cod.exe`] },
        reason: `docs/${RLO}x leaves the run's worktree`,
        rule: "confinement",
        always_gated: null,
        always_gated_why: null,
        agent_options: [],
      },
      opened_at: 0,
      decision: null,
      auto_at: null,
      auto_option: null,
      authority: null,
      effected: false,
    };
    const { body } = render(GateDetails, { props: { gate } });
    expect(outside(body)).not.toContain(RLO);
    expect(isolates(body).join("\n")).toContain(RLO);
  });
});
