import { z } from "zod";
import type { PowerMode } from "@/lib/power/config/settings";

/**
 * What marks a `power-shutdown` run as a drill: the `drill` field of the run's input, beside the
 * trigger (whose `trigger` is "drill"). The pipeline reads it through the two functions below,
 * the only places a drill behaves differently from an outage.
 */
export const ZDrillMark = z.object({
  /** Who started it (the audited actor's name). */
  by: z.string().min(1),
  /**
   * false: a rehearsal in dry-run whatever the console's mode — the whole sequence is planned
   * and every action recorded as would-do, nothing is sent. true: a live drill, started while
   * armed after a confirmation that named every target: the calls really go out.
   */
  live: z.boolean(),
  startedAt: z.iso.datetime(),
});
export type DrillMark = z.infer<typeof ZDrillMark>;

export const DRILL_TRIGGER = "drill";

/** The drill mark of a run's input, or null for a run a real trigger started. */
export function drillOf(input: unknown): DrillMark | null {
  if (!hasDrillField(input)) return null;
  const mark = ZDrillMark.safeParse((input as { drill: unknown }).drill);
  return mark.success ? mark.data : null;
}

/**
 * The mode a run plans with. A dry-run drill is dry-run even while the console is armed: an
 * admin rehearsing must never power a host off by accident. A live drill follows the console's
 * mode, so it sends only what arming already allowed (and nothing once disarmed).
 */
export function planModeOf(input: unknown, consoleMode: PowerMode): PowerMode {
  if (!hasDrillField(input)) return consoleMode;
  // A mark this version cannot read is a drill all the same: never a live one.
  const drill = drillOf(input);
  return drill?.live ? consoleMode : "dry-run";
}

/** Whether a run's input is a drill's — a mark this version cannot read counts too. */
export function isDrill(input: unknown): boolean {
  return hasDrillField(input);
}

function hasDrillField(input: unknown): boolean {
  return typeof input === "object" && input !== null && "drill" in input;
}

/**
 * Whether the run asks the feeds before its first call (power back → cancelled). A drill is
 * rehearsed on mains by design, so it does not: it would always be cancelled.
 */
export function cancelsOnMainsBack(input: unknown): boolean {
  return drillOf(input) === null;
}
