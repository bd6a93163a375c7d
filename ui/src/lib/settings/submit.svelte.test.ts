import { describe, expect, it } from "vitest";
import { MockBackend, NO_MUTES } from "../backend/mock";
import { Submission } from "./submit.svelte";

describe("Submission", () => {
  it("says Saved only once the engine answered", async () => {
    const backend = new MockBackend();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const s = new Submission();
    const sent = s.send(async () => {
      await held;
      return backend.notificationSettings();
    });
    expect(s.status).toBe("saving");
    expect(s.saving).toBe(true);
    release();
    expect(await sent).toEqual(NO_MUTES);
    expect(s.status).toBe("saved");
    s.touch();
    expect(s.status).toBe("idle");
  });

  it("keeps the engine's typed error and clears it on the next try", async () => {
    const backend = new MockBackend();
    const s = new Submission();
    expect(await s.send(() => backend.setNotificationSettings({ ...NO_MUTES, muted: ["agent_question_blocking"] }))).toBeNull();
    expect(s.status).toBe("failed");
    expect(s.error).toEqual({
      code: "invalid_input",
      message: "agent_question_blocking cannot be muted: an agent is stopped until you answer",
      fields: [{ field: "notifications.muted[0]", message: "agent_question_blocking cannot be muted: an agent is stopped until you answer" }],
    });
    expect(await s.send(() => backend.setNotificationSettings({ ...NO_MUTES, muted: ["run_failed"] }))).toEqual({
      ...NO_MUTES,
      muted: ["run_failed"],
    });
    expect(s.error).toBeNull();
    expect(s.status).toBe("saved");
  });

  it("shows the form's own problems without sending anything", () => {
    const s = new Submission();
    s.invalid([{ field: "policy.timeout_seconds", message: "Evaluator timeout must be a whole number" }]);
    expect(s.status).toBe("failed");
    expect(s.problems).toHaveLength(1);
    expect(s.error).toBeNull();
    // Edited: the old findings no longer describe the form.
    s.touch();
    expect(s.status).toBe("idle");
    expect(s.problems).toEqual([]);
  });

  it("does not send twice while a save is under way", async () => {
    const s = new Submission();
    let calls = 0;
    const first = s.send(async () => ++calls);
    expect(await s.send(async () => ++calls)).toBeNull();
    expect(await first).toBe(1);
    expect(calls).toBe(1);
  });

  it("shows a failed load as an error, not as Saved", async () => {
    const backend = new MockBackend();
    backend.failNext = { code: "storage", message: "the database is locked by another process" };
    const s = new Submission();
    expect(await s.load(() => backend.listWorkspaces())).toBeNull();
    expect(s.status).toBe("failed");
    expect(s.error?.code).toBe("storage");
    expect(await s.load(() => backend.listWorkspaces())).toEqual([]);
  });
});
