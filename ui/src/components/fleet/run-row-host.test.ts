// A fleet row of a host: its Host cell, and while the host cannot be
// reached, greyed with why and its actions disabled saying so. Without
// hosts a row renders as it always did. Rendered from the real component.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import RunRow from "./RunRow.svelte";
import { IN_REVIEW } from "../../lib/backend/mock";
import type { FleetRun } from "../../lib/fleet/fleet";

const run: FleetRun = {
  id: 3,
  task_id: 3,
  task_title: "Fix the build",
  workspace: "app",
  agent: "demo",
  state: { state: "pending_review" },
  state_since: 0,
  created_at: 0,
  needs_you: true,
  attention_rank: 0,
  release_note: null,
  origin: "launched",
  actions: IN_REVIEW,
  pending_gate: null,
  host: "build-box",
};

const noop = () => {};
const props = { now: 1_000, index: 0, busy: false, selected: false, aborting: false, onopen: noop, onwhy: noop, onapprove: noop, onreject: noop, onabort: noop, onabortconfirm: noop, onabortcancel: noop };

describe("a host's row", () => {
  it("is greyed with the host's trouble and its actions disabled with it", () => {
    const why = "build-box unreachable since 14:02, retrying";
    const { body } = render(RunRow, { props: { ...props, run, hostLabel: "build-box", blocked: why, domId: "run-row-build-box-3" } });
    expect(body).toMatch(/class="row[^"]*\bdown\b/);
    expect(body).toContain('id="run-row-build-box-3"');
    expect(body).toContain('data-host="build-box"');
    expect(body).toContain(`data-testid="run-host" title="${why}"`);
    for (const action of ["approve", "reject", "abort"]) {
      expect(body).toMatch(new RegExp(`data-action="${action}" disabled(="")? title="${why}"`));
    }
  });

  it("names its host and acts while the host is live", () => {
    const { body } = render(RunRow, { props: { ...props, run, hostLabel: "build-box", domId: "run-row-build-box-3" } });
    expect(body).not.toMatch(/class="row[^"]*\bdown\b/);
    expect(body).toContain(">build-box</bdi>");
    expect(body).not.toMatch(/data-action="approve" disabled/);
  });

  it("has no Host cell in a fleet without hosts", () => {
    const { host: _, ...local } = run;
    const { body } = render(RunRow, { props: { ...props, run: local } });
    expect(body).not.toContain('data-col="host"');
    expect(body).not.toContain("data-host");
    expect(body).toContain('id="run-row-3"');
  });
});
