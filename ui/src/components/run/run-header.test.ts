// The run page of an external session (a terminal Claude Code, Codex, an MCP
// client): it says where the session works and which one it is, offers no
// diff, merge or review, and its Abort reads "Stop session". Rendered from
// the real components, with the actions from lib/fleet's runActions.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import RunHeader from "./RunHeader.svelte";
import RunDetail from "./RunDetail.svelte";
import RunRow from "../fleet/RunRow.svelte";
import { Fleet } from "../../lib/fleet/fleet.svelte";
import { Gates } from "../../lib/inbox/gates.svelte";
import { Nav } from "../../lib/nav.svelte";
import { demoBackend, withExternalSessions } from "../../lib/backend/mock";

const NOW = 1_700_000_000_000;

async function started() {
  const backend = withExternalSessions(demoBackend(NOW), NOW);
  const fleet = new Fleet(backend);
  const gates = new Gates(backend, fleet);
  await Promise.all([fleet.start(), gates.start()]);
  return { backend, fleet, gates };
}

const noop = () => {};
const rowProps = { now: NOW, index: 0, busy: false, selected: false, aborting: false, onopen: noop, onwhy: noop, onapprove: noop, onreject: noop, onabort: noop, onabortconfirm: noop, onabortcancel: noop };

describe("an external session's run page and row", () => {
  it("names the session and where it works, and stops rather than aborts", async () => {
    const { fleet } = await started();
    const body = render(RunHeader, { props: { run: fleet.rows.get(8)!, fleet, now: NOW } }).body;
    expect(body).toContain('data-testid="session-badge"');
    expect(body).toContain("Claude Code · external");
    expect(body).toMatch(/data-testid="session-id"[^>]*><bdi>5c1e0b7a-2f4d-4e55-9a61-0f3c2d8b1e11/);
    expect(body).toMatch(/data-testid="session-cwd" title="\/home\/ada\/src\/web-app"/);
    expect(body).toMatch(/data-testid="run-abort"[^>]*>Stop session…/);
    expect(body).not.toContain("run-approve");
    expect(body).not.toContain("run-reject");
  });

  it("offers no diff: there is no run repository", async () => {
    const { backend, fleet, gates } = await started();
    const external = render(RunDetail, { props: { backend, fleet, gates, nav: new Nav(), runId: 8, now: NOW } }).body;
    expect(external).toContain('data-testid="no-diff"');
    expect(external).toContain("no run repository");
    expect(external).toContain("Steer the session");
    const launched = render(RunDetail, { props: { backend, fleet, gates, nav: new Nav(), runId: 2, now: NOW } }).body;
    expect(launched).not.toContain('data-testid="no-diff"');
    expect(launched).not.toContain("session-badge");
    expect(launched).toContain("Steer the agent");
  });

  it("shows the badge in its fleet row, and Stop session for Abort", async () => {
    const { fleet } = await started();
    const row = render(RunRow, { props: { ...rowProps, run: fleet.rows.get(9)! } }).body;
    expect(row).toMatch(/data-testid="session-badge" data-origin="mcp" title="MCP · external: MCP session nightly-42 in \/srv\/scripts\/nightly[^"]*" aria-label="MCP · external"><span>MCP<\/span>/);
    expect(row).toMatch(/data-action="abort"[^>]*>Stop session</);
    const launched = render(RunRow, { props: { ...rowProps, run: fleet.rows.get(3)! } }).body;
    expect(launched).not.toContain("session-badge");
    expect(launched).toMatch(/data-action="abort"[^>]*>Abort</);
  });
});

describe("a consultation's run page, row and inbox card", () => {
  it("says which run consulted it", async () => {
    const { fleet } = await started();
    const child = { ...fleet.rows.get(3)!, parent: 2 };
    const header = render(RunHeader, { props: { run: child, fleet, now: NOW } }).body;
    expect(header).toMatch(/data-testid="consulted-by"[^>]*>run 2</);
    const row = render(RunRow, { props: { ...rowProps, run: child } }).body;
    expect(row).toMatch(/data-testid="consult-of"[^>]*>↳ 2</);
    const plain = render(RunRow, { props: { ...rowProps, run: fleet.rows.get(3)! } }).body;
    expect(plain).not.toContain("consult-of");
    expect(render(RunHeader, { props: { run: fleet.rows.get(3)!, fleet, now: NOW } }).body).not.toContain("consulted-by");
  });
});

