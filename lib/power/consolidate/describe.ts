import { formatDuration } from "@/lib/logs/text";
import type { ConsolidateSettings } from "@/lib/power/clusters/schemas";
import type { Thresholds } from "@/lib/power/config/settings";

/** `runtime below 15 min 0 s, charge below 60 %, 5 min 0 s on battery` (the rows set). */
export function describeThresholds(t: Thresholds): string {
  return [
    t.runtimeBelowSeconds !== null
      ? `runtime below ${formatDuration(t.runtimeBelowSeconds * 1000)}`
      : null,
    t.chargeBelowPercent !== null ? `charge below ${t.chargeBelowPercent} %` : null,
    t.onBatteryForSeconds !== null
      ? `${formatDuration(t.onBatteryForSeconds * 1000)} on battery`
      : null,
  ]
    .filter((row): row is string => row !== null)
    .join(", ");
}

/** `migrate to pve3 at the first of: runtime below 15 min 0 s, charge below 60 %`. */
export function describeConsolidate(settings: ConsolidateSettings): string {
  const stays = settings.remainingNode ?? "the console's node";
  const what = settings.mode === "migrate" ? `migrate to ${stays}` : `stop, ${stays} staying up`;
  return `${what} at the first of: ${describeThresholds(settings.firstThreshold)}`;
}
