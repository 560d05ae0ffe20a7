import type { Database } from "@/lib/db/client";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { shedFeeds, SHED_READING_FRESH_MS } from "@/lib/power/shed/shed-feeds";
import { shedDueTargets } from "@/lib/power/shed/shed-selection";
import { shedsToUndo, startShedBackRun, startShedRun } from "@/lib/power/shed-pipeline/start-shed";
import { feedsBackFor } from "@/lib/power/targets/feed-status";
import { loadTargets } from "@/lib/power/targets/load-targets";

/**
 * The monitor's part in early load shedding (issue 30, item 7), each supervisor tick:
 *
 * - the shed guests of every target whose feeds have been on battery for the shed threshold
 *   (by the monitor's monotonic clock) while the main trigger has not fired go down — one shed
 *   run per outage (lib/power/shed/shed-selection.ts decides; a blip shorter than the threshold
 *   never sheds);
 * - a shed whose feeds are back on mains (for the trigger's confirmation) before the main
 *   trigger fired starts its guests again at once, once. After the main trigger the way back
 *   starts them with everything else.
 *
 * `now` is the caller's clock, for the age of a reading.
 */
export async function watchShedding(
  db: Database,
  now: Date,
  log: (line: string) => void,
): Promise<void> {
  const settings = await readPowerSettings(db);
  if (settings.shed.enabled) {
    const targets = (await loadTargets(db)).filter((t) => t.enabled && t.kind === "pve-node");
    const feeds = await shedFeeds(
      db,
      [...new Set(targets.flatMap((t) => t.feeds.map((f) => f.upsId)))],
      now,
    );
    const due = shedDueTargets({
      settings: settings.shed,
      targets: targets.map((t) => ({
        id: t.id,
        name: t.name,
        feedPolicy: t.feedPolicy,
        feeds: t.feeds.map((f) => f.upsId),
      })),
      feeds,
    });
    if (due.length > 0) {
      const started = await db.transaction((tx) => startShedRun(tx, due, now));
      if (started) log(`power monitor: ${started.input.why}: shed run ${started.runId} started`);
    }
  }
  for (const shed of await shedsToUndo(db, now)) {
    const back = await feedsBackFor(db, shed.feeds, now, SHED_READING_FRESH_MS);
    if (shed.feeds.length === 0 || !shed.feeds.every((id) => back.get(id) === true)) continue;
    const why = `mains back before the main trigger: the guests shed by run ${shed.id} (${shed.guests.join(", ")}) start again`;
    const runId = await db.transaction((tx) =>
      startShedBackRun(tx, { shedRunId: shed.id, why }, now),
    );
    if (runId) log(`power monitor: ${why}: run ${runId} started`);
  }
}
