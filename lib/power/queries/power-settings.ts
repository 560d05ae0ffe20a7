import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerSettings } from "@/lib/db/schema";
import type { PowerPlanSnapshot } from "@/lib/power/plan-snapshot";
import { DEFAULT_POWER_SETTINGS, ZPowerSettings, type PowerSettings } from "@/lib/power/settings";

export type StoredPowerSettings = {
  settings: PowerSettings;
  /** When and by whom it was armed; null in dry-run. */
  armedAt: Date | null;
  armedBy: string | null;
  /** The plan the admin confirmed when arming; null in dry-run. */
  armedPlan: PowerPlanSnapshot | null;
  updatedAt: Date | null;
};

/**
 * The power settings as saved. No row means nothing was ever saved: the installation's defaults,
 * dry-run. The row is parsed like input (only validated settings are ever written), so missing
 * keys of an older version take their defaults.
 */
export async function readPowerSettings(db: Database): Promise<StoredPowerSettings> {
  const [row] = await db.select().from(powerSettings).where(eq(powerSettings.id, 1));
  if (!row) {
    return {
      settings: DEFAULT_POWER_SETTINGS,
      armedAt: null,
      armedBy: null,
      armedPlan: null,
      updatedAt: null,
    };
  }
  const settings = ZPowerSettings.parse({
    mode: row.mode,
    triggers: row.triggers,
    pollIntervalMs: row.pollIntervalMs,
    shutdown: row.shutdown,
  });
  const armed = row.mode === "armed";
  return {
    settings,
    armedAt: armed ? row.armedAt : null,
    armedBy: armed ? row.armedBy : null,
    armedPlan: armed ? row.armedPlan : null,
    updatedAt: row.updatedAt,
  };
}

export type PowerModeView = {
  mode: PowerSettings["mode"];
  armedAt: string | null;
  armedBy: string | null;
};

/** The mode as every page shows it. */
export function powerModeView(stored: StoredPowerSettings): PowerModeView {
  return {
    mode: stored.settings.mode,
    armedAt: stored.armedAt?.toISOString() ?? null,
    armedBy: stored.armedBy,
  };
}

/** The mode every page shows. */
export async function readPowerMode(db: Database): Promise<PowerModeView> {
  return powerModeView(await readPowerSettings(db));
}
