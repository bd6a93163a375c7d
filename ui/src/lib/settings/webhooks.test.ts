// Webhooks in Settings say what the engine sent: each attempt's answer, where
// a delivery stands, which kinds a hook gets. The mock engine's answers
// follow the engine's shapes (a secret only in the answer to add).
import { describe, expect, it } from "vitest";
import { MockBackend } from "../backend/mock";
import type { WebhookDelivery } from "../types";
import { WEBHOOK_EVENTS, attemptAnswer, deliveryState, eventsSummary, withEvent } from "./webhooks";

const delivery = (fields: Partial<WebhookDelivery>): WebhookDelivery => ({
  id: 1,
  webhook_id: 1,
  event: "run_failed",
  title: "Run 3 failed",
  status: "pending",
  attempts: [],
  next_at: null,
  note: null,
  created_at: 0,
  ...fields,
});

describe("webhooks in words", () => {
  it("labels every kind a hook can get, run_finished too, and never test", () => {
    const kinds = WEBHOOK_EVENTS.map((e) => e.kind);
    expect(kinds).toContain("run_finished");
    expect(kinds).toContain("agent_question_blocking");
    expect(kinds).not.toContain("test");
    expect(kinds).toHaveLength(10);
  });

  it("says every kind for a hook that gets them all, else names them", () => {
    expect(eventsSummary(WEBHOOK_EVENTS.map((e) => e.kind))).toBe("every kind");
    expect(eventsSummary(["run_failed", "run_finished"])).toBe("run_failed, run_finished");
    expect(withEvent(["run_failed"], "run_finished", true)).toEqual(["run_failed", "run_finished"]);
    expect(withEvent(["run_failed", "run_finished"], "run_failed", false)).toEqual(["run_finished"]);
  });

  it("shows each attempt's answer as the engine recorded it", () => {
    expect(attemptAnswer({ at: 0, status_code: 200, error: null, duration_ms: 3 })).toBe("HTTP 200");
    expect(attemptAnswer({ at: 0, status_code: 500, error: "the receiver answered 500", duration_ms: 3 })).toBe(
      "HTTP 500: the receiver answered 500",
    );
    expect(attemptAnswer({ at: 0, status_code: null, error: "no answer within 10 s", duration_ms: 10000 })).toBe(
      "no answer within 10 s",
    );
  });

  it("says when a pending delivery is tried again, and why one was given up on", () => {
    expect(deliveryState(delivery({ next_at: 12_000 }), 2_000)).toBe("pending: tried again in 10 s");
    expect(deliveryState(delivery({ status: "delivered" }), 0)).toBe("delivered");
    expect(deliveryState(delivery({ status: "failed", note: "given up after 6 attempts; the last: refused" }), 0)).toBe(
      "given up after 6 attempts; the last: refused",
    );
  });
});

describe("the mock engine's webhooks", () => {
  it("answers add with the secret once, lists without it, tests and removes", async () => {
    const backend = new MockBackend([], () => 5_000);
    await expect(backend.addWebhook("ftp://x", [])).rejects.toMatchObject({ code: "invalid_input" });
    const added = await backend.addWebhook("https://ntfy.sh/topic", []);
    expect(added.secret).toHaveLength(64);
    expect(added.webhook.events).toHaveLength(10);
    const listed = await backend.listWebhooks();
    expect(JSON.stringify(listed)).not.toContain(added.secret);
    const test = await backend.testWebhook(added.webhook.id);
    expect(test.status).toBe("delivered");
    expect(await backend.webhookDeliveries(added.webhook.id, null)).toHaveLength(1);
    await backend.removeWebhook(added.webhook.id);
    expect(await backend.listWebhooks()).toEqual([]);
    await expect(backend.testWebhook(added.webhook.id)).rejects.toMatchObject({ code: "not_found" });
  });

  it("turns a hook off and on again: off, it is listed so and a test is refused", async () => {
    const backend = new MockBackend([], () => 5_000);
    const added = await backend.addWebhook("https://ntfy.sh/topic", []);
    const off = await backend.setWebhookEnabled(added.webhook.id, false);
    expect(off.enabled).toBe(false);
    expect((await backend.listWebhooks()).map((h) => h.enabled)).toEqual([false]);
    await expect(backend.testWebhook(added.webhook.id)).rejects.toMatchObject({ code: "conflict" });
    const on = await backend.setWebhookEnabled(added.webhook.id, true);
    expect(on.enabled).toBe(true);
    expect((await backend.testWebhook(added.webhook.id)).status).toBe("delivered");
    await expect(backend.setWebhookEnabled(99, true)).rejects.toMatchObject({ code: "not_found" });
  });
});
