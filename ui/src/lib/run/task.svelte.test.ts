import { describe, expect, it } from "vitest";
import { demoBackend } from "../backend/mock";
import { TaskView, taskSettingsLines } from "./task.svelte";
import type { TaskInfo } from "../types";

const flush = () => new Promise((r) => setTimeout(r, 0));
const base: TaskInfo = { task_id: 3, workspace: "web", title: "t", stage: "default", settings: { approval: { mode: "manual" }, session: "normal" } };
const line = (t: TaskInfo, key: string) => taskSettingsLines(t).find((l) => l.key === key)?.value;

describe("a task's settings on the run page", () => {
  it("say what the task sets and where the workspace's apply", () => {
    expect(line(base, "stage")).toBe("default");
    expect(line(base, "rules")).toBe("none of its own (the workspace's apply)");
    expect(line(base, "approval")).toBe("manual: every finished step waits for you");
    expect(line(base, "supervisor")).toBe("the workspace's");
    expect(line(base, "retries")).toBe("the workspace's (off unless set)");
    const own: TaskInfo = {
      ...base,
      stage: "review",
      settings: {
        ...base.settings,
        permissions: { allow: ["Bash(npm test:*)"], ask: [], deny: ["Edit(.env)"] },
        approval: { mode: "confidence_threshold", threshold: 0.8 },
        auto_proceed_seconds: 10,
        retry: { max_attempts: 3, backoff_seconds: 5 },
      },
    };
    expect(line(own, "stage")).toBe("review");
    expect(line(own, "rules")).toBe("allow Bash(npm test:*) · deny Edit(.env)");
    expect(line(own, "approval")).toBe("by confidence: proceeds at 0.80 or more; medium waits 10 s");
    expect(line(own, "retries")).toBe("up to 3 unattended, backoff from 5 s");
  });

  it("load once and again on this task's task_changed event only", async () => {
    const b = demoBackend(0);
    // Run 1's task, as the engine numbered it.
    const task = b.runs.get(1)!.task_id;
    const view = new TaskView(b, task);
    await view.start();
    expect(view.info?.settings.permissions).toBeUndefined();
    await b.setPermissions({ workspace: "web-app", task }, { allow: ["Read"], ask: [], deny: [] });
    await flush();
    expect(view.info?.settings.permissions?.allow).toEqual(["Read"]);
    const before = b.calls.filter((c) => c.startsWith("showTask")).length;
    b.push({ type: "task_changed", task_id: 99 });
    await flush();
    expect(b.calls.filter((c) => c.startsWith("showTask")).length).toBe(before);
    view.stop();
  });
});
