import { describe, expect, it } from "vitest";
import { defaultPolicy } from "../backend/mock";
import { describePolicy, policySource } from "./describe";
import {
  autoAdvanceChoice,
  autoAdvanceValue,
  parseTaskId,
  policyForm,
  ruleProblem,
  rulesForm,
  toPolicy,
  toRuleSet,
  toSensors,
  withNotification,
  NOTIFICATION_KINDS,
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
    };
    const back = toPolicy(policyForm(p));
    expect(back).toEqual({ ok: true, value: p });
  });

  it("leaves inherited gate kinds out of gate_authority", () => {
    const f = form({ authority: { plan: "inherit", merge_review: "autonomous" } });
    const r = toPolicy(f);
    expect(r.ok && r.value.gate_authority).toEqual({ merge_review: "autonomous" });
  });

  it("refuses limits out of the engine's ranges with what to give", () => {
    const r = toPolicy(form({ maxReorient: "0", timeout: "3601", pauseTimeout: "soon" }));
    expect(fields(r)).toEqual(["maxReorient", "timeout", "pauseTimeout"]);
    if (!r.ok) {
      expect(r.errors[0]!.message).toMatch(/1 or more/);
      expect(r.errors[1]!.message).toMatch(/1 to 3600 seconds/);
      expect(r.errors[2]!.message).toMatch(/whole number/);
    }
    expect(toPolicy(form({ timeout: "3600", maxReorient: "1", pauseTimeout: "1" })).ok).toBe(true);
    expect(fields(toPolicy(form({ timeout: "1.5" })))).toEqual(["timeout"]);
  });

  it("refuses authority over gates only a human decides", () => {
    const r = toPolicy(form({ authority: { deviation: "autonomous" } }));
    expect(fields(r)).toEqual(["authority.deviation"]);
  });

  it("needs a command for the command evaluator and splits its arguments by line", () => {
    expect(fields(toPolicy(form({ evaluator: "command", command: "  " })))).toEqual(["command"]);
    const r = toPolicy(form({ evaluator: "command", command: "reviewer", args: "--strict\n\n  --model x \n" }));
    expect(r.ok && r.value.evaluator).toEqual({ type: "command", command: "reviewer", args: ["--strict", "--model x"] });
  });

  it("checks the OpenAI-compatible endpoint and never takes a key for a variable name", () => {
    expect(fields(toPolicy(form({ evaluator: "openai", baseUrl: "localhost:11434", model: "" })))).toEqual(["baseUrl", "model"]);
    const key = toPolicy(form({ evaluator: "openai", baseUrl: "https://api.example.com/v1", model: "m", apiKeyEnv: "sk-abc123" }));
    expect(fields(key)).toEqual(["apiKeyEnv"]);
    if (!key.ok) expect(key.errors[0]!.message).toMatch(/NAME of the environment variable/);
    expect(fields(toPolicy(form({ evaluator: "openai", baseUrl: "https://x/v1", model: "m", apiKeyEnv: "MY KEY" })))).toEqual(["apiKeyEnv"]);
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
  it("accepts Claude Code's syntax", () => {
    for (const r of ["Bash(npm test:*)", "Bash(npm test)", "Edit(src/**)", "Read(*.md)", "Edit(docs/)", "Read", "WebFetch(domain:example.com)",
      "mcp__github", "mcp__github__*", "mcp__github__create_issue", "Edit(//abs/**)", "Edit(./src/**/x.ts)", "Read([abc].txt)"]) {
      expect(ruleProblem(r), r).toBeNull();
    }
  });

  it("explains what is wrong with a rule, like the engine", () => {
    expect(ruleProblem("")).toMatch(/empty rule/);
    expect(ruleProblem("Bash(npm test")).toMatch(/missing its closing '\)'/);
    expect(ruleProblem("Bash(npm) test")).toMatch(/text after its closing/);
    expect(ruleProblem("Bash()")).toMatch(/empty specifier/);
    expect(ruleProblem("Bash(:*)")).toMatch(/empty specifier/);
    expect(ruleProblem("Ba sh")).toMatch(/tool name/);
    expect(ruleProblem("npm test)")).toMatch(/tool name/);
    expect(ruleProblem("WebFetch(domain:)")).toMatch(/names no host/);
    expect(ruleProblem("Edit(src**)")).toMatch(/invalid path pattern/);
    expect(ruleProblem("Edit([abc)")).toMatch(/invalid path pattern/);
  });

  it("reads one rule per line and names the line of each problem", () => {
    const r = toRuleSet({ allow: "Bash(npm test:*)\n\n  Edit(src/**)  \n", ask: "", deny: "Edit(.env)\nBash(rm" });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]!.message).toMatch(/^deny, line 2: rule 'Bash\(rm'/);
    }
    const ok = toRuleSet({ allow: "Bash(npm test:*)\nEdit(src/**)", ask: "Bash(git push:*)", deny: "" });
    expect(ok).toEqual({ ok: true, value: { allow: ["Bash(npm test:*)", "Edit(src/**)"], ask: ["Bash(git push:*)"], deny: [] } });
    expect(rulesForm({ allow: ["A", "B"], ask: [], deny: ["C"] })).toEqual({ allow: "A\nB", ask: "", deny: "C" });
    expect(rulesForm(undefined)).toEqual({ allow: "", ask: "", deny: "" });
  });
});

describe("workspace checks", () => {
  it("trims sensors and refuses empty or repeated ones", () => {
    expect(toSensors([" npm test ", "cargo clippy"])).toEqual({ ok: true, value: ["npm test", "cargo clippy"] });
    expect(fields(toSensors(["npm test", "  ", "npm test"]))).toEqual(["sensor.1", "sensor.2"]);
    expect(toSensors([])).toEqual({ ok: true, value: [] });
  });

  it("maps auto-advance between the engine's optional flag and the three choices", () => {
    expect(autoAdvanceChoice(null)).toBe("default");
    expect(autoAdvanceChoice(true)).toBe("on");
    expect(autoAdvanceChoice(false)).toBe("off");
    for (const v of [null, true, false]) expect(autoAdvanceValue(autoAdvanceChoice(v))).toBe(v);
  });
});

describe("notifications", () => {
  it("has a human label for every kind; blocking asks and security events cannot be muted", () => {
    expect(NOTIFICATION_KINDS.map((k) => k.kind).sort()).toEqual([
      "agent_message_blocked",
      "agent_question_blocking",
      "agent_question_pending",
      "run_failed",
      "run_pending_review",
      "security_event",
      "supervisor_escalated",
      "supervisor_failed",
    ]);
    expect(NOTIFICATION_KINDS.filter((k) => k.blocking).map((k) => k.kind)).toEqual([
      "agent_question_blocking",
      "security_event",
    ]);
  });

  it("mutes and unmutes a kind, never a blocking one", () => {
    expect(withNotification([], "run_pending_review", false)).toEqual(["run_pending_review"]);
    expect(withNotification(["run_pending_review", "run_failed"], "run_pending_review", true)).toEqual(["run_failed"]);
    expect(withNotification(["run_failed"], "run_failed", false)).toEqual(["run_failed"]);
    expect(withNotification([], "agent_question_blocking", false)).toEqual([]);
  });
});
