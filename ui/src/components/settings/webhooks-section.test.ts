// The Webhooks section renders what the engine sent: each hook's URL and
// kinds, the add form with every kind. Rendered from the real component.
import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import NotificationsSection from "./NotificationsSection.svelte";
import WebhookSwitch from "./WebhookSwitch.svelte";
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

  it("offers an urgency per kind of inbox item, blocking asks fixed at critical", () => {
    const { body } = render(NotificationsSection, { props: { backend: new MockBackend() } });
    expect(body).toContain('data-kind="urgency-question"');
    expect(body).toContain('data-kind="urgency-info"');
    expect(body).toMatch(/<select[^>]*data-kind="urgency-blocking"[^>]*disabled/);
    expect(body).toContain('<option value="silent">Silent</option>');
  });

  it("shows a hook's On switch as the engine has it, and says what off means", () => {
    const hook = { id: 3, url: "https://ntfy.sh/t", events: [], enabled: true, created_at: 0 };
    const on = render(WebhookSwitch, { props: { hook, saving: false, onchange: () => {} } }).body;
    expect(on).toMatch(/<input type="checkbox" data-testid="webhook-enabled" checked/);
    expect(on).not.toContain('data-testid="webhook-disabled"');
    const off = render(WebhookSwitch, { props: { hook: { ...hook, enabled: false }, saving: false, onchange: () => {} } }).body;
    expect(off).not.toMatch(/data-testid="webhook-enabled"[^>]*checked/);
    expect(off).toContain('data-testid="webhook-disabled"');
    expect(off).toContain("gets nothing until turned on");
  });
});
