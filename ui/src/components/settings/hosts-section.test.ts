// Settings -> Hosts rendered from the real components over the mock app:
// the add form with its checks' messages and the app's refusal, each host's
// steps as they came (busy buttons meanwhile), the removal's confirmation,
// and the CLI's command beside the form.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import HostsSection from "./HostsSection.svelte";
import HostRemoveConfirm from "./HostRemoveConfirm.svelte";
import { Hosts } from "../../lib/hosts/hosts.svelte";
import { HostAddForm } from "../../lib/hosts/form.svelte";
import { MockBackend, MockHosts } from "../../lib/backend/mock";

async function section() {
  const transport = new MockHosts(() => Date.UTC(2026, 10, 27, 14, 2, 0));
  transport.add("build1", new MockBackend([], () => 42));
  transport.add("build2", new MockBackend([], () => 42));
  const hosts = new Hosts(transport);
  await hosts.start();
  return { transport, hosts };
}

/** The attributes of the element carrying `data-testid="id"` (and `data-host`). */
function tagOf(body: string, id: string, host?: string): string {
  const re = new RegExp(`<[a-z]+[^>]*data-testid="${id}"${host ? `[^>]*data-host="${host}"` : ""}[^>]*>`);
  const m = re.exec(body) ?? new RegExp(`<[a-z]+[^>]*data-host="${host}"[^>]*data-testid="${id}"[^>]*>`).exec(body);
  if (!m) throw new Error(`no ${id}${host ? ` of ${host}` : ""} in the page`);
  return m[0];
}

/** The part of the page about host `name` (its list item). */
function hostItem(body: string, name: string): string {
  const start = body.indexOf(`data-testid="host" data-host="${name}"`);
  if (start < 0) throw new Error(`no host ${name}`);
  const end = body.indexOf(`data-testid="host" data-host=`, start + 1);
  return body.slice(start, end < 0 ? body.indexOf('data-testid="host-add-form"') : end);
}

describe("Settings -> Hosts", () => {
  it("has the add form with its fields, and the CLI's command as the alternative", async () => {
    const { hosts } = await section();
    const { body } = render(HostsSection, { props: { hosts } });
    for (const id of ["host-add-form", "host-add-name", "host-add-url", "host-add-submit"]) expect(body).toContain(`data-testid="${id}"`);
    expect(tagOf(body, "host-add-submit")).not.toContain("disabled");
    expect(body).toContain('data-testid="hosts-add-command">overseer hosts add NAME ssh://user@host</code>');
    // Each host: Upgrade and Remove, enabled; no steps yet.
    for (const h of ["build1", "build2"]) {
      expect(tagOf(hostItem(body, h), "host-upgrade")).not.toContain("disabled");
      expect(tagOf(hostItem(body, h), "host-remove")).not.toContain("disabled");
    }
    expect(body).not.toContain('data-testid="host-setup-log"');
    hosts.stop();
  });

  it("shows what the form's checks found under each field, nothing sent", async () => {
    const { hosts, transport } = await section();
    const form = new HostAddForm(hosts);
    form.name = "build1";
    form.url = "build3.lan";
    expect(await form.submit()).toBe(false);
    const { body } = render(HostsSection, { props: { hosts, form } });
    expect(body).toMatch(/data-field="name"[^>]*>build1 is already a host: upgrade or remove it below, or pick another name\.</);
    expect(body).toMatch(/data-field="url"[^>]*>“build3\.lan” does not start with ssh:\/\/: write ssh:\/\/user@host or ssh:\/\/user@host:port\.</);
    expect(tagOf(body, "host-add-name")).toContain('aria-invalid="true"');
    expect(tagOf(body, "host-add-url")).toContain('aria-invalid="true"');
    expect(body).not.toContain('data-testid="host-add-error"');
    expect(transport.views.size).toBe(2);
    hosts.stop();
  });

  it("shows the app's refusal as it returned it, with the steps up to it", async () => {
    const { hosts, transport } = await section();
    transport.machines.set("old", { unreachable: "Connection timed out" });
    const form = new HostAddForm(hosts);
    form.name = "old";
    form.url = "ssh://me@old.lan";
    expect(await form.submit()).toBe(false);
    const { body } = render(HostsSection, { props: { hosts, form } });
    expect(body).toMatch(/data-testid="host-add-error"[^>]*>[^]*ssh me@old\.lan: Connection timed out; nothing was installed<\/bdi><\/span> <code[^>]*>engine_unavailable<\/code>/);
    // Said once: the steps' log does not repeat the form's error.
    expect(body.match(/Connection timed out/g)).toHaveLength(1);
    expect(tagOf(body, "host-setup-log", "old")).toContain('data-failed="1"');
    expect(body).toMatch(/data-testid="host-setup-line"><bdi>checking me@old\.lan over ssh<\/bdi>/);
    expect(body).not.toContain('data-testid="host" data-host="old"');
    hosts.stop();
  });

  it("shows a host's steps as they come, its buttons disabled until it is done", async () => {
    const { hosts } = await section();
    const done = hosts.upgrade("build1");
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setTimeout(r, 0));
    const running = render(HostsSection, { props: { hosts } }).body;
    const build1 = hostItem(running, "build1");
    expect(tagOf(build1, "host-upgrade")).toContain("disabled");
    expect(tagOf(build1, "host-remove")).toContain("disabled");
    expect(tagOf(build1, "host-setup-log", "build1")).toContain('data-running="1"');
    expect(build1).toContain("copied overseer 0.1.0 to ~/.local/share/overseer/versions/0.1.0");
    expect(build1).toContain("Upgrading…");
    // The other host's buttons are its own.
    expect(tagOf(hostItem(running, "build2"), "host-upgrade")).not.toContain("disabled");

    await done;
    const after = hostItem(render(HostsSection, { props: { hosts } }).body, "build1");
    expect(tagOf(after, "host-upgrade")).not.toContain("disabled");
    expect(tagOf(after, "host-setup-log", "build1")).not.toContain("data-running");
    expect(after.match(/data-testid="host-setup-line"/g)).toHaveLength(4);
    expect(after).toContain("Upgraded.");
    hosts.stop();
  });

  it("shows the steps of a host set up from a terminal", async () => {
    const { hosts, transport } = await section();
    await transport.upgradeHost("build2");
    const build2 = hostItem(render(HostsSection, { props: { hosts } }).body, "build2");
    expect(build2.match(/data-testid="host-setup-line"/g)).toHaveLength(4);
    expect(build2).toContain("From a terminal (overseer hosts).");
    hosts.stop();
  });

  it("asks before removing, saying the engine stops and the files stay on the host", () => {
    const { body } = render(HostRemoveConfirm, { props: { host: "build1", busy: false, onconfirm: () => {}, oncancel: () => {} } });
    expect(body).toContain('aria-label="Remove build1?"');
    expect(body).toContain("Its engine there stops and this machine forgets the host.");
    expect(body).toContain("Its files stay on\n    the host");
    expect(body).toContain("~/.local/share/overseer");
    expect(tagOf(body, "host-remove-confirm")).not.toContain("disabled");
    expect(body).toContain('data-testid="host-remove-cancel"');
  });
});
