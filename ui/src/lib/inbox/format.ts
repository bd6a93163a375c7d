// Times as the inbox shows them: ages ("3 min ago") and countdowns
// ("proceeds in 8 s"). `now` always comes from the display clock.
import type { GateView, StepReviewChoice, SupervisorPauseChoice } from "../types";
import { optionLabel } from "./order";

/** A duration in words: "8 s", "4 min 10 s", "2 h 5 min", "3 d". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 || m >= 10 ? `${m} min` : `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d`;
}

/** How long ago `at` was. */
export function age(at: number, now: number): string {
  const ms = now - at;
  if (ms < 5_000) return "just now";
  return `${duration(ms)} ago`;
}

/** What a gate's timer will do and when, or null without a timer. */
export function countdown(g: GateView, now: number): string | null {
  if (g.auto_at === null) return null;
  // The display clock ticks once a second, so it may lag the engine's by up
  // to a second: never show more than the timer's whole length.
  const whole = g.auto_at - g.opened_at;
  const left = whole > 0 ? Math.min(g.auto_at - now, whole) : g.auto_at - now;
  const when = left > 500 ? `in ${duration(left)}` : "now";
  const label = optionLabel(g, g.auto_option);
  switch (g.kind) {
    case "step_review":
      return g.auto_option === ("proceed" satisfies StepReviewChoice) ? `Proceeds ${when} unless you stop it` : `${label} ${when}`;
    case "supervisor_pause":
      return `Nobody answered: the run ${g.auto_option === ("abort" satisfies SupervisorPauseChoice) ? "is terminated" : `chooses “${label}”`} ${when}`;
    case "question":
      return `Expires ${when}; then the default answer: ${label || "none"}`;
    case "plan":
    case "tool_call":
    case "deviation":
    case "merge_review":
      return `“${label}” is chosen ${when}`;
  }
}

/** What an autonomous supervisor decided and when it takes effect, counted
 * down from the deadline the engine sent with the gate (the display clock
 * ticks; nothing is polled), or null when no decision waits. */
export function supervisorCountdown(g: GateView, now: number): string | null {
  const p = g.pending_effect;
  if (!p) return null;
  const left = p.at - now;
  const what = p.verdict === "approve" ? "approve" : "reject";
  const label = optionLabel(g, p.option);
  const chosen = label && label.toLowerCase() !== what ? ` (“${label}”)` : "";
  return left > 500
    ? `The supervisor will ${what}${chosen} in ${duration(left)}: decide now to override`
    : `The supervisor's decision to ${what}${chosen} takes effect now`;
}

/** The supervisor's latest word on a gate, in words, for its card: its
 * advice (which option, why), its approval awaiting a co-sign, or its
 * hand-over to you. Null when it said nothing yet, or when its decision
 * waits for its grace (the countdown says that). */
export function supervisorAdvice(g: GateView): string | null {
  const a = g.advice;
  if (!a || g.pending_effect) return null;
  const label = a.option ? optionLabel(g, a.option) || a.option : null;
  const why = a.rationale ? `: ${a.rationale}` : "";
  switch (a.verdict) {
    case "advise":
      return label ? `The supervisor advises “${label}”${why}` : `The supervisor advises${why}`;
    case "approve":
      return `The supervisor approves${label ? ` (“${label}”)` : ""}${why}`;
    case "reject":
      return `The supervisor would refuse${label ? ` (“${label}”)` : ""}${why}`;
    case "escalate":
      return `The supervisor hands this to you${why}`;
    default:
      return null;
  }
}

/** A time of day with the date when it is not today. */
export function clock(at: number, now: number): string {
  const d = new Date(at);
  const today = new Date(now).toDateString() === d.toDateString();
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return today ? time : `${d.toLocaleDateString()} ${time}`;
}
