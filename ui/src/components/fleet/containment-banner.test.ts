// The window says on every page, not only in Settings, when this machine
// cannot contain runs, with the engine's reason and fix; and says nothing
// when it can. Rendered from the real component.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import ContainmentBanner from "./ContainmentBanner.svelte";
import type { Containment } from "../../lib/types";

const missing: Containment = {
  sandbox: {
    state: "missing",
    why: "bwrap was not found on PATH",
    fix: "apt-get install bubblewrap",
  },
  cgroups: { state: "missing", why: "no cgroup v2 mount" },
  scopes: { state: "missing", why: "no Landlock", leaves_open: "abstract sockets" },
  limits: { state: "missing", why: "no cgroup per run", leaves_open: "fork storms" },
  private_network: { state: "missing", why: "slirp4netns is not installed", leaves_open: "loopback" },
};

const available: Containment = {
  sandbox: { state: "available", bwrap: "/usr/bin/bwrap" },
  cgroups: { state: "available", root: "/sys/fs/cgroup/unified" },
  scopes: { state: "available", abi: 7 },
  limits: { state: "available", controllers: ["pids", "memory", "cpu"], how: "cgroup v2" },
  private_network: { state: "available", helper: "/usr/bin/slirp4netns" },
};

describe("containment banner", () => {
  it("names the reason, the fix and what running uncontained means", () => {
    const { body } = render(ContainmentBanner, { props: { containment: missing, onsettings: () => {} } });
    expect(body).toContain('data-testid="containment-banner"');
    expect(body).toContain('role="alert"');
    expect(body).toContain("bwrap was not found on PATH");
    expect(body).toContain("apt-get install bubblewrap");
    expect(body).toContain("allow_uncontained = true");
  });

  it("is absent when runs are contained", () => {
    const { body } = render(ContainmentBanner, { props: { containment: available, onsettings: () => {} } });
    expect(body).not.toContain("containment-banner");
  });
});
