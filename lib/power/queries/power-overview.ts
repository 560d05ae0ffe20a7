import type { Database } from "@/lib/db/client";
import { countUnacknowledgedPowerEvents } from "./power-events";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { powerModeView, type PowerModeView } from "./power-settings";
import { listUpsCards, type UpsCard } from "./ups-cards";

export type PowerOverview = {
  /**
   * The console's clock when this was read. Times on battery and reading ages are measured by
   * the console's clock, not the browser's: the page corrects for the difference with this.
   */
  serverTime: string;
  mode: PowerModeView;
  /** How often the monitor polls: a reading much older than this is stale. */
  pollIntervalMs: number;
  ups: UpsCard[];
  /** Warnings and criticals nobody acknowledged yet. */
  unacknowledged: number;
};

/** The top of the power page: the mode and a card per UPS. */
export async function getPowerOverview(db: Database): Promise<PowerOverview> {
  const stored = await readPowerSettings(db);
  const [ups, unacknowledged] = await Promise.all([
    listUpsCards(db, stored.triggers),
    countUnacknowledgedPowerEvents(db),
  ]);
  return {
    serverTime: new Date().toISOString(),
    mode: powerModeView(stored),
    pollIntervalMs: stored.pollIntervalMs,
    ups,
    unacknowledged,
  };
}
