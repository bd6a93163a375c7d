// The engine's field errors as the user types (a debounced dry run) and
// after a refused save, and where the window shows them.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { render } from "svelte/server";
import { MockBackend } from "../backend/mock";
import { toApiError } from "../backend/errors";
import type { FieldError, SettingsChange } from "../types";
import { CHECK_DELAY_MS, LiveCheck, errorsAt, shownErrors } from "./check.svelte";
import { Submission } from "./submit.svelte";
import FieldErrors from "../../components/settings/FieldErrors.svelte";

const checks = (sensors: string[]): SettingsChange => ({ kind: "workspace_checks", workspace: "w", sensors, auto_advance: null });
const ok = (value: SettingsChange) => ({ ok: true as const, value });

describe("LiveCheck", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("asks the engine once typing pauses, and shows what it found", async () => {
    const backend = new MockBackend();
    const live = new LiveCheck(backend);
    live.schedule(() => ok(checks(["npm test", ""])));
    live.schedule(() => ok(checks(["npm test", " "])));
    expect(backend.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS);
    expect(backend.calls).toEqual(["checkSettings workspace_checks"]);
    expect(live.errors.map((e) => e.field)).toEqual(["sensors[1]"]);
    expect(live.errors[0]!.message).toMatch(/sensor 2 is empty/);

    live.schedule(() => ok(checks(["npm test", "cargo test"])));
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS);
    expect(live.errors).toEqual([]);
  });

  it("keeps only the latest answer, and forgets everything when cleared", async () => {
    const backend = new MockBackend();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = { checkSettings: async (c: SettingsChange) => (await held, backend.checkSettings(c)) } as unknown as MockBackend;
    const live = new LiveCheck(slow);
    live.schedule(() => ok(checks([""])));
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS);
    live.clear();
    release();
    await vi.advanceTimersByTimeAsync(0);
    // An answer about a form since saved is dropped.
    expect(live.errors).toEqual([]);
  });

  it("shows the form's own errors without asking the engine", async () => {
    const backend = new MockBackend();
    const live = new LiveCheck(backend);
    const mine: FieldError[] = [{ field: "policy.timeout_seconds", message: "Evaluator timeout must be a whole number, e.g. 30" }];
    live.schedule(() => ({ ok: false, errors: mine }));
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS);
    expect(backend.calls).toEqual([]);
    expect(live.errors).toEqual(mine);
  });

  it("treats a failed check as nothing to show (the save says what is wrong)", async () => {
    const backend = new MockBackend();
    backend.failNext = { code: "engine_unavailable", message: "no engine" };
    const live = new LiveCheck(backend);
    live.schedule(() => ok(checks([""])));
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS);
    expect(live.errors).toEqual([]);
  });
});

describe("a refused save", () => {
  it("keeps the engine's field errors and shows them over the dry run's", async () => {
    const backend = new MockBackend();
    backend.workspaces = [{ id: 1, name: "w", path: "/w", settings: { sensors: [], auto_advance: null } } as never];
    const live = new LiveCheck(backend);
    live.errors = [{ field: "sensors[0]", message: "older" }];
    const s = new Submission();
    expect(await s.send(() => backend.setWorkspaceChecks("w", ["npm test", ""], null))).toBeNull();
    expect(s.error?.code).toBe("invalid_input");
    expect(s.error?.fields).toEqual([{ field: "sensors[1]", message: "sensor 2 is empty: give a check command such as `npm test`, or remove it" }]);
    expect(shownErrors(s, live).map((e) => e.field)).toEqual(["sensors[1]"]);
    s.touch();
    expect(shownErrors(s, live).map((e) => e.field)).toEqual(["sensors[0]"]);
    s.invalid([{ field: "task", message: "not a task id" }]);
    expect(shownErrors(s, live).map((e) => e.field)).toEqual(["task"]);
  });

  it("reads the fields off whatever the engine rejected with", () => {
    const fields = [{ field: "rules.allow[0]", message: "missing ')'" }];
    expect(toApiError({ code: "invalid_input", message: "m", fields })).toEqual({ code: "invalid_input", message: "m", fields });
    expect(toApiError({ code: "not_found", message: "m" })).toEqual({ code: "not_found", message: "m" });
    expect(toApiError({ code: "invalid_input", message: "m", fields: [{ nope: 1 }] })).toEqual({ code: "invalid_input", message: "m" });
  });
});

describe("messages under fields", () => {
  const errors: FieldError[] = [
    { field: "rules.allow[1]", message: "rule 'Edit(src' is missing its closing ')'" },
    { field: "rules.allowed", message: "another field" },
    { field: "policy.evaluator.api_key_env", message: "this looks like a key" },
  ];

  it("picks a field's own errors and those of what it holds", () => {
    expect(errorsAt(errors, "rules.allow").map((e) => e.field)).toEqual(["rules.allow[1]"]);
    expect(errorsAt(errors, "policy.evaluator").map((e) => e.field)).toEqual(["policy.evaluator.api_key_env"]);
    expect(errorsAt(errors, "policy.evaluator.api_key_env")).toHaveLength(1);
    expect(errorsAt(errors, "rules.ask")).toEqual([]);
  });

  it("renders each under its field, in the form's words", () => {
    const body = render(FieldErrors, { props: { errors, field: "rules.allow", describe: (e: FieldError) => `line 2: ${e.message}` } }).body;
    expect(body.match(/data-testid="field-error"/g)).toHaveLength(1);
    expect(body).toContain('data-field="rules.allow[1]"');
    expect(body).toContain("line 2: rule 'Edit(src' is missing its closing ')'</span>");
    expect(render(FieldErrors, { props: { errors, field: "sensors[0]" } }).body).not.toContain("field-error");
  });
});
