// The Webhooks section renders what the engine sent: each hook's URL and
// kinds, the add form with every kind. Rendered from the real component.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import NotificationsSection from "./NotificationsSection.svelte";
import WebhooksSection from "./WebhooksSection.svelte";
import { MockBackend } from "../../lib/backend/mock";

describe("webhooks in Settings", () => {
  it("offers an add form with every kind a hook can get", () => {
    const { body } = render(WebhooksSection, { props: { backend: new MockBackend() } });
    expect(body).toContain('data-testid="webhooks"');
    expect(body).toContain('data-testid="webhook-add"');
    expect(body).toContain("A run finished");
    expect(body).toContain("https://ntfy.sh/");
  });

  it("has a switch for each channel and for each kind on webhooks", () => {
    const { body } = render(NotificationsSection, { props: { backend: new MockBackend() } });
    expect(body).toContain('data-kind="channel-desktop"');
    expect(body).toContain('data-kind="channel-webhooks"');
    expect(body).toContain('data-kind="webhook-run_finished"');
    expect(body).toContain('data-kind="webhook-agent_question_blocking"');
  });
});
