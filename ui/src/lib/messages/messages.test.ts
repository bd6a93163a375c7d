import { describe, expect, it } from "vitest";
import type { MessageView } from "../types";
import { composeTarget, composeTo, concernsRun, countMessages, postedMessage, replyTo, senderLabel, targetLabel } from "./messages";

const msg = (id: number, over: Partial<MessageView> = {}): MessageView => ({
  id,
  from_run: 3,
  from: "agent:claude",
  to: { to: "user" },
  body: `message ${id}`,
  correlation_id: null,
  status: "delivered",
  blocked_reason: null,
  at: id * 1000,
  ...over,
});

describe("messages", () => {
  it("name their addressee and sender in words", () => {
    expect(targetLabel({ to: "supervisor" })).toBe("the supervisor");
    expect(targetLabel({ to: "user" })).toBe("you");
    expect(targetLabel({ to: "broadcast" })).toBe("everyone");
    expect(targetLabel({ to: "run", run: 4 })).toBe("run 4");
    expect(senderLabel(msg(1))).toBe("run 3 (agent:claude)");
    expect(senderLabel(msg(1, { from_run: null, from: "user:app" }))).toBe("you");
    expect(senderLabel(msg(1, { from_run: null, from: "supervisor" }))).toBe("supervisor");
  });

  it("concern the run that sent them or that they answer, not others", () => {
    expect(concernsRun(msg(1), 3)).toBe(true);
    expect(concernsRun(msg(1, { from_run: null, to: { to: "run", run: 3 } }), 3)).toBe(true);
    expect(concernsRun(msg(1), 4)).toBe(false);
    expect(concernsRun(msg(1, { from_run: 5, to: { to: "user" } }), 3)).toBe(false);
    // A delivered broadcast reaches every run; a held-back one none.
    expect(concernsRun(msg(1, { from_run: 5, to: { to: "broadcast" } }), 3)).toBe(true);
    expect(concernsRun(msg(1, { from_run: 5, to: { to: "broadcast" }, status: "blocked" }), 3)).toBe(false);
    // A broadcast scoped to a workspace or a task concerns the runs there only.
    const here = { workspace: "web", task: 2 };
    expect(concernsRun(msg(1, { from_run: null, to: { to: "workspace", workspace: "web" } }), 3, here)).toBe(true);
    expect(concernsRun(msg(1, { from_run: null, to: { to: "workspace", workspace: "api" } }), 3, here)).toBe(false);
    expect(concernsRun(msg(1, { from_run: null, to: { to: "task", task: 2 } }), 3, here)).toBe(true);
    expect(concernsRun(msg(1, { from_run: null, to: { to: "task", task: 9 } }), 3, here)).toBe(false);
  });

  it("reply to the run that wrote, in the same conversation", () => {
    expect(replyTo(msg(7, { correlation_id: "lockfile" }))).toEqual({ to: { to: "run", run: 3 }, correlationId: "lockfile" });
    expect(replyTo(msg(7))).toEqual({ to: { to: "run", run: 3 }, correlationId: "msg-7" });
    // The user's own messages and the supervisor's are not answered from here.
    expect(replyTo(msg(7, { from_run: null, from: "user:app" }))).toBeNull();
  });

  it("count the held-back ones", () => {
    expect(countMessages([msg(1), msg(2, { status: "blocked", blocked_reason: "no" })])).toEqual({ total: 2, blocked: 1 });
  });

  it("find the message in a pushed message_posted event only", () => {
    const m = msg(1);
    expect(postedMessage({ type: "message_posted", message: m })).toEqual(m);
    expect(postedMessage({ type: "gate_opened", gate_id: 1, run_id: 1, kind: "plan" })).toBeNull();
  });

  it("compose to a run or to everyone", () => {
    expect(composeTo({ kind: "broadcast" })).toEqual({ to: "broadcast" });
    expect(composeTo({ kind: "run", run: 8 })).toEqual({ to: "run", run: 8 });
    expect(composeTo(composeTarget("workspace:web"))).toEqual({ to: "workspace", workspace: "web" });
    expect(composeTo(composeTarget("task:4"))).toEqual({ to: "task", task: 4 });
    expect(composeTo(composeTarget("broadcast"))).toEqual({ to: "broadcast" });
    expect(composeTo(composeTarget("12"))).toEqual({ to: "run", run: 12 });
  });
});
