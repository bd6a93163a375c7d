// The engine's verdict on a form as the user types: a dry run of the write
// the form would make (Backend.checkSettings), debounced, so each message
// shows under the field it names. The engine writes nothing for it; only
// the latest answer counts.
import type { Backend } from "../backend";
import type { FieldError, SettingsChange } from "../types";
import type { Result } from "./validate";
import type { Submission } from "./submit.svelte";

/** How long typing pauses before the engine is asked. */
export const CHECK_DELAY_MS = 300;

export class LiveCheck {
  /** The field errors of the form as it last was checked. */
  errors = $state.raw<FieldError[]>([]);
  private timer: ReturnType<typeof setTimeout> | undefined;
  private asked = 0;

  constructor(
    private backend: Backend,
    private delayMs = CHECK_DELAY_MS,
  ) {}

  /** Checks the form after a pause in typing: `build` turns it into the
   * write it would make (or the form's own errors: text that is no number). */
  schedule(build: () => Result<SettingsChange>): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(build()), this.delayMs);
  }

  /** Forgets what was found and any check not yet answered (the form was
   * saved or reloaded). */
  clear(): void {
    clearTimeout(this.timer);
    this.asked++;
    this.errors = [];
  }

  private async run(built: Result<SettingsChange>): Promise<void> {
    const mine = ++this.asked;
    if (!built.ok) {
      this.errors = built.errors;
      return;
    }
    let found: FieldError[];
    try {
      found = await this.backend.checkSettings(built.value);
    } catch {
      // Not a field's problem (a scope gone, the engine away): the save says.
      found = [];
    }
    if (mine === this.asked) this.errors = found;
  }
}

/** What to show under the fields: the form's own problems found at save,
 * else the fields of the engine's refusal, else the dry run's findings. */
export function shownErrors(submission: Submission, live: LiveCheck): FieldError[] {
  if (submission.problems.length > 0) return submission.problems;
  const refused = submission.error?.fields ?? [];
  return refused.length > 0 ? refused : live.errors;
}

/** The errors of `field` and of what it holds (`rules.allow` holds
 * `rules.allow[2]`, `policy.evaluator` holds `policy.evaluator.model`). */
export function errorsAt(errors: readonly FieldError[], field: string): FieldError[] {
  return errors.filter((e) => e.field === field || e.field.startsWith(`${field}.`) || e.field.startsWith(`${field}[`));
}
