import { describe, expect, it } from "vitest";
import { defaultPolicy } from "../backend/mock";
import { describePolicy, policySource } from "./describe";
import {
  autoAdvanceChoice,
  autoAdvanceValue,
  parseTaskId,
  policyForm,
  ruleLine,
  rulesForm,
  toPolicy,
  toRuleTexts,
  withNotification,
  NOTIFICATION_KINDS,
  POLICY_FIELDS,
  type PolicyForm,
} from "./validate";

const form = (over: Partial<PolicyForm> = {}): PolicyForm => ({ ...policyForm(defaultPolicy()), ...over });
const fields = (r: { ok: boolean; errors?: { field: string }[] }) => (r.ok ? [] : (r.errors ?? []).map((e) => e.field));

describe("supervisor policy form", () => {
  it("round-trips a policy through the form", () => {
    const p = {
      ...defaultPolicy(),
      enabled: true,
      autonomy: "cosign" as const,
      gate_authority: { merge_review: "autonomous" as const, plan: "advisory" as const },
      evaluator: { type: "openai" as const, base_url: "http://127.0.0.1:11434/v1", model: "llama3.1", api_key_env: "OLLAMA_KEY" },
      max_reorient_attempts: 5,
      timeout_seconds: 60,
      pause_timeout_seconds: 120,
      always_supervise: true,
      grace_seconds: 5,
    };
    const back = toPolicy(policyForm(p));
    expect(back).toEqual({ ok: true, value: p });
  });

  it("leaves inherited gate kinds out of gate_authority", () => {
    const f = form({ authority: { plan: "inherit", merge_review: "autonomous" } });
    const r = toPolicy(f);
    expect(r.ok && r.value.gate_authority).toEqual({ merge_review: "autonomous" });
  });

  it("parses the limits as numbers and names, by the engine's path, text that is none", () => {
    const r = toPolicy(form({ maxReorient: "two", timeout: "1.5", pauseTimeout: "", grace: "soon" }));
    expect(fields(r)).toEqual([POLICY_FIELDS.maxReorient, POLICY_FIELDS.timeout, POLICY_FIELDS.pauseTimeout, POLICY_FIELDS.grace]);
    expect(fields(r)).toEqual(["policy.max_reorient_attempts", "policy.timeout_seconds", "policy.pause_timeout_seconds", "policy.grace_seconds"]);
    if (!r.ok) expect(r.errors[0]!.message).toMatch(/whole number/);
  });

  it("leaves ranges and values to the engine: it sends what was typed", () => {
    // Out of range, an empty command, a key where a name belongs: the
    // engine's dry run says what is wrong, not the form.
    const r = toPolicy(form({ timeout: " 0 ", evaluator: "openai", baseUrl: " localhost ", model: "", apiKeyEnv: " sk-abc123 " }));
    expect(r.ok && r.value.timeout_seconds).toBe(0);
    expect(r.ok && r.value.evaluator).toEqual({ type: "openai", base_url: "localhost", model: "", api_key_env: "sk-abc123" });
    expect(toPolicy(form({ evaluator: "command", command: "  " })).ok).toBe(true);
  });

  it("splits the command's arguments by line and sends no key variable when empty", () => {
    const r = toPolicy(form({ evaluator: "command", command: "reviewer", args: "--strict\n\n  --model x \n" }));
    expect(r.ok && r.value.evaluator).toEqual({ type: "command", command: "reviewer", args: ["--strict", "--model x"] });
    const ok = toPolicy(form({ evaluator: "openai", baseUrl: "https://x/v1", model: "m", apiKeyEnv: "" }));
    expect(ok.ok && ok.value.evaluator).toEqual({ type: "openai", base_url: "https://x/v1", model: "m", api_key_env: null });
  });

  it("describes where a policy comes from", () => {
    const p = { ...defaultPolicy(), enabled: true, autonomy: "cosign" as const, gate_authority: { merge_review: "autonomous" as const } };
    expect(describePolicy(defaultPolicy())).toBe("off");
    expect(describePolicy(p)).toBe("on, cosign · merge_review autonomous · built-in rules");
    expect(policySource({ scope: { workspace: "w", task: null }, own: p, effective: p })).toBe("own");
    expect(policySource({ scope: { workspace: "w", task: 3 }, own: null, effective: p })).toBe("workspace");
    expect(policySource({ scope: { workspace: "w", task: null }, own: null, effective: defaultPolicy() })).toBe("default");
  });
});

describe("task scope", () => {
  it("takes an empty field as the workspace and a positive number as a task", () => {
    expect(parseTaskId(" ")).toEqual({ ok: true, value: null });
    expect(parseTaskId("12")).toEqual({ ok: true, value: 12 });
    expect(parseTaskId("0").ok).toBe(false);
    expect(parseTaskId("twelve").ok).toBe(false);
  });
});

describe("permission rules", () => {
  it("sends one rule per line, blank lines left out, and finds the line the engine names", () => {
    const f = { allow: "Bash(npm test:*)\n\n  Edit(src/**)  \n", ask: "", deny: "Edit(.env)\n\nBash(rm" };
    expect(toRuleTexts(f)).toEqual({ allow: ["Bash(npm test:*)", "Edit(src/**)"], ask: [], deny: ["Edit(.env)", "Bash(rm"] });
    // The engine says rules.deny[1]: the second rule sent, on line 3.
    expect(ruleLine(f, "deny", 1)).toBe(3);
    expect(ruleLine(f, "allow", 1)).toBe(3);
    expect(ruleLine(f, "allow", 2)).toBeNull();
    expect(rulesForm({ allow: ["A", "B"], ask: [], deny: ["C"] })).toEqual({ allow: "A\nB", ask: "", deny: "C" });
    expect(rulesForm(undefined)).toEqual({ allow: "", ask: "", deny: "" });
  });
});

describe("workspace checks", () => {
  it("maps auto-advance between the engine's optional flag and the three choices", () => {
    expect(autoAdvanceChoice(null)).toBe("default");
    expect(autoAdvanceChoice(true)).toBe("on");
    expect(autoAdvanceChoice(false)).toBe("off");
    for (const v of [null, true, false]) expect(autoAdvanceValue(autoAdvanceChoice(v))).toBe(v);
  });
});

describe("notifications", () => {
  it("has a human label for every kind; blocking asks, security events and a full disk are shown always on", () => {
    expect(NOTIFICATION_KINDS.map((k) => k.kind).sort()).toEqual([
      "agent_message_blocked",
      "agent_question_blocking",
      "agent_question_pending",
      "disk_full",
      "run_failed",
      "run_pending_review",
      "security_event",
      "supervisor_escalated",
      "supervisor_failed",
    ]);
    expect(NOTIFICATION_KINDS.filter((k) => k.blocking).map((k) => k.kind)).toEqual([
      "agent_question_blocking",
      "security_event",
      "disk_full",
    ]);
  });

  it("mutes and unmutes a kind, never a blocking one", () => {
    expect(withNotification([], "run_pending_review", false)).toEqual(["run_pending_review"]);
    expect(withNotification(["run_pending_review", "run_failed"], "run_pending_review", true)).toEqual(["run_failed"]);
    expect(withNotification(["run_failed"], "run_failed", false)).toEqual(["run_failed"]);
    expect(withNotification([], "agent_question_blocking", false)).toEqual([]);
  });
});
