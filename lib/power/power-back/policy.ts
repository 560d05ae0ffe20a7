import type { PowerBackSettings } from "@/lib/power/config/settings";
import type { FeedFacts } from "@/lib/power/targets/feed-status";

export type { FeedFacts };

export type PowerBackDecision =
  { holds: true; why: string } | { holds: false; waitingFor: string; newOutage: boolean };

/** A reading older than this is no evidence the mains are back: the monitor stopped reading. */
export const READING_FRESH_MS = 30_000;

/**
 * Whether the fleet may come back now — the spec's policy, one row per condition, every feed
 * of the hosts that went down:
 *
 * | row | condition | else |
 * |---|---|---|
 * | 1 | a fresh, reliable reading of the feed | wait: no reliable reading |
 * | 2 | on mains (a feed on battery is a new outage: it wins) | a new outage |
 * | 3 | on mains for `mainsStableMinutes` without a break (monotonic) | wait for stable mains |
 * | 4 | charge ≥ `minChargePercent` | wait for the charge |
 * | 5 | runtime ≥ the shutdown plan's budget (a second outage must be survivable) | wait for runtime |
 *
 * Pure: `now` is the caller's clock, used only for the age of a reading.
 */
export function decidePowerBack(input: {
  feeds: readonly FeedFacts[];
  settings: PowerBackSettings;
  /** Seconds the shutdown of these hosts takes by its plan. */
  budgetSeconds: number;
  now: Date;
}): PowerBackDecision {
  const { feeds, settings, budgetSeconds, now } = input;
  if (feeds.length === 0) {
    return { holds: false, waitingFor: "no UPS feeds the hosts that went down", newOutage: false };
  }
  const stableMs = settings.mainsStableMinutes * 60_000;
  for (const feed of feeds) {
    // Row 2 first: a feed back on battery is a new outage whatever else is missing.
    if (feed.onBattery === true && feed.reachable === true) {
      return { holds: false, waitingFor: `${feed.name} is on battery again`, newOutage: true };
    }
  }
  for (const feed of feeds) {
    // Row 1.
    if (
      feed.reachable !== true ||
      feed.readingAt === null ||
      now.getTime() - feed.readingAt.getTime() > READING_FRESH_MS ||
      feed.onBattery === null
    ) {
      return {
        holds: false,
        waitingFor: `a reliable reading of ${feed.name}`,
        newOutage: false,
      };
    }
    // Row 3.
    if ((feed.mainsMs ?? 0) < stableMs) {
      const seconds = Math.floor((feed.mainsMs ?? 0) / 1000);
      return {
        holds: false,
        waitingFor: `${feed.name} on mains for ${settings.mainsStableMinutes} min (${seconds} s so far)`,
        newOutage: false,
      };
    }
    // Row 4.
    if (feed.chargePercent === null || feed.chargePercent < settings.minChargePercent) {
      return {
        holds: false,
        waitingFor: `${feed.name} charged to ${settings.minChargePercent} % (${feed.chargePercent ?? "unknown"} %)`,
        newOutage: false,
      };
    }
    // Row 5.
    if (feed.runtimeSeconds === null || feed.runtimeSeconds < budgetSeconds) {
      return {
        holds: false,
        waitingFor: `${feed.name}'s runtime to cover the shutdown again (${budgetSeconds} s; ${feed.runtimeSeconds ?? "unknown"} s now)`,
        newOutage: false,
      };
    }
  }
  return {
    holds: true,
    why: `mains back for ${settings.mainsStableMinutes} min on ${feeds.map((f) => f.name).join(", ")}, charge ≥ ${settings.minChargePercent} %, runtime covers the ${budgetSeconds} s shutdown`,
  };
}
