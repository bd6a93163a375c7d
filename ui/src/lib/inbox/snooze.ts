// Snoozing an inbox item: the times the card offers, as the moment the item
// comes back (milliseconds since the epoch, the engine's `until`). "Tomorrow
// 9:00" is the user's own local morning.

export type SnoozeChoice = "15m" | "1h" | "tomorrow";

export const SNOOZE_CHOICES: readonly { choice: SnoozeChoice; label: string }[] = [
  { choice: "15m", label: "15 min" },
  { choice: "1h", label: "1 h" },
  { choice: "tomorrow", label: "Until tomorrow 9:00" },
];

/** When an item snoozed at `now` with `choice` comes back. */
export function snoozeUntil(choice: SnoozeChoice, now: Date): number {
  switch (choice) {
    case "15m":
      return now.getTime() + 15 * 60_000;
    case "1h":
      return now.getTime() + 60 * 60_000;
    case "tomorrow": {
      const t = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1, 9, 0, 0, 0);
      return t.getTime();
    }
  }
}
