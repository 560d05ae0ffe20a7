import { AppError } from "@/lib/errors";
import type { PowerMode } from "@/lib/power/config/settings";

/**
 * The server's check of a live drill's confirmation — for its shutdown and for its way back
 * alike: the console must be armed (the mode stored, read under the mode lock by the caller),
 * and `confirmedTargetIds` must be exactly the machines the run will act on now, no more, no
 * fewer. Anything else throws a 409 naming the field, and nothing starts. The browser's dialog
 * only shows the list; this is where it is held to it.
 */
export function checkLiveConfirmation(input: {
  mode: PowerMode;
  confirmedTargetIds: readonly string[];
  planned: readonly { id: string; name: string }[];
  /** What a live run really does, for the "arm first" answer: "sends real shutdowns". */
  whatLiveDoes: string;
  /** The answer when the list differs, given the names planned now. */
  changed: (names: string[]) => string;
}): void {
  if (input.mode !== "armed") {
    throw new AppError(
      "conflict",
      `A live drill ${input.whatLiveDoes}, which only an armed console does: arm first, or run the drill in dry-run.`,
    );
  }
  const confirmed = new Set(input.confirmedTargetIds);
  if (confirmed.size !== input.planned.length || input.planned.some((t) => !confirmed.has(t.id))) {
    const message = input.changed(input.planned.map((t) => t.name));
    throw new AppError("conflict", message, { confirmedTargetIds: [message] });
  }
}
