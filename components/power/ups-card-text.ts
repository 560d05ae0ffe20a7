import {
  releaseDuringOutageWarning,
  type LatchReleaseState,
} from "@/lib/power/operations/latch-release-warning";
import type { PowerPlanView } from "@/lib/power/queries/power-plan";
import type { UpsCard } from "@/lib/power/queries/ups-cards";
import { formatElapsed } from "../format";

/*
 * The words on a UPS card, kept pure so each case is tested (ups-card-text.test.ts). `nowMs`
 * is the console's clock as the page estimates it (the browser's clock corrected by the offset
 * seen in the last answer), so times on battery are the console's, not the browser's.
 */

export type Tone = "ok" | "warning" | "critical" | "unknown";

export function upsHeadline(card: UpsCard): { text: string; tone: Tone } {
  switch (card.condition) {
    case "not-asked":
      return { text: "Not asked yet", tone: "unknown" };
    case "no-reading":
      return { text: "No reliable reading", tone: "critical" };
    case "on-mains":
      return { text: "On mains", tone: "ok" };
    case "on-battery":
      return { text: "On battery", tone: "warning" };
    case "low-battery":
      return { text: "On battery · LOW", tone: "critical" };
  }
}

/** Time on battery by the console's clock, or null when not on battery (or not known to be). */
export function timeOnBattery(card: UpsCard, nowMs: number): string | null {
  if (!card.onBatterySince) return null;
  return formatElapsed((nowMs - Date.parse(card.onBatterySince)) / 1000);
}

/** `2m 05s ago`, or null when the UPS never gave a reliable reading. */
export function readingAge(card: UpsCard, nowMs: number): string | null {
  if (!card.lastReading) return null;
  return `${formatElapsed((nowMs - Date.parse(card.lastReading.at)) / 1000)} ago`;
}

/**
 * How long a reading may be old before the card says it is stale: a few polls (the monitor
 * keeps `lastReading` current on every poll), never less than 10 s.
 */
export function staleAfterMs(pollIntervalMs: number): number {
  return Math.max(10_000, pollIntervalMs * 5);
}

/**
 * What is wrong with what the card shows, in the order an operator must know it: nobody
 * watching the UPS, no reliable reading, or a reading too old to trust. Null when all is fresh.
 */
export function upsWarning(card: UpsCard, nowMs: number, pollIntervalMs: number): string | null {
  const watched = card.watchedUntil !== null && Date.parse(card.watchedUntil) > nowMs;
  if (!watched) {
    return card.watchedUntil
      ? `No worker is watching this UPS: its monitor's lease ran out ${formatElapsed((nowMs - Date.parse(card.watchedUntil)) / 1000)} ago. Check that the worker runs.`
      : "No worker has picked this UPS up yet. Check that the worker runs.";
  }
  if (card.alarm) {
    const lastSeen = card.lastReading
      ? ` Last reliable reading ${readingAge(card, nowMs)}: ${card.lastReading.onBattery ? "on battery" : "on mains"}.`
      : "";
    return `${card.alarm.reason} (since ${formatElapsed((nowMs - Date.parse(card.alarm.since)) / 1000)}).${lastSeen}`;
  }
  if (card.lastReading && nowMs - Date.parse(card.lastReading.at) > staleAfterMs(pollIntervalMs)) {
    return `The last reading is ${readingAge(card, nowMs)}: the values below may be out of date.`;
  }
  return null;
}

/** `runtime < 5m 00s · charge < 30 % · on battery ≥ 10m 00s · LB`: what would fire. */
export function triggerSummary(triggers: UpsCard["triggers"]): string {
  const parts: string[] = [];
  if (triggers.lowBattery) parts.push("low battery (LB)");
  if (triggers.runtimeBelowSeconds !== null)
    parts.push(`runtime < ${formatElapsed(triggers.runtimeBelowSeconds)}`);
  if (triggers.chargeBelowPercent !== null) parts.push(`charge < ${triggers.chargeBelowPercent} %`);
  if (triggers.onBatteryForSeconds !== null)
    parts.push(`on battery ≥ ${formatElapsed(triggers.onBatteryForSeconds)}`);
  if (triggers.unreachableShutdownAfterSeconds !== null)
    parts.push(
      `lost contact on battery ≥ ${formatElapsed(triggers.unreachableShutdownAfterSeconds)}`,
    );
  return parts.length > 0 ? parts.join(" · ") : "no trigger is on";
}

/**
 * What releasing the card's latch would do, as the release dialog says it: null on mains (or
 * with no reading), else the outage warning (lib/power/operations/latch-release-warning.ts) from the card's
 * last reading, the mode, and what the plan says this UPS's trigger shuts down (`plan` null:
 * not loaded on this page, the warning then speaks of "the targets it feeds").
 */
export function latchReleaseWarning(
  card: UpsCard,
  mode: LatchReleaseState["mode"],
  plan: Pick<PowerPlanView, "groups"> | null,
): string | null {
  const group = plan?.groups.find((g) => g.ups.id === card.id);
  return releaseDuringOutageWarning({
    upsName: card.name,
    reading: card.lastReading,
    readingIsCurrent: card.condition !== "no-reading",
    mode,
    targets: plan === null ? null : (group?.targets.map((t) => t.name) ?? []),
  });
}
