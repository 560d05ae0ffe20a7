import type { Database } from "@/lib/db/client";
import {
  readPowerSettings,
  type StoredPowerSettings,
} from "@/lib/power/config/power-settings-store";
import type { PowerMode } from "@/lib/power/config/settings";

export type PowerModeView = {
  mode: PowerMode;
  /** When and by whom it was armed; null in dry-run. */
  armedAt: string | null;
  armedBy: string | null;
};

/** The mode as every page shows it. */
export function powerModeView(stored: StoredPowerSettings): PowerModeView {
  const armed = stored.mode === "armed";
  return {
    mode: stored.mode,
    armedAt: armed ? (stored.armedAt?.toISOString() ?? null) : null,
    armedBy: armed ? stored.armedBy : null,
  };
}

/** The mode every page shows (no settings saved yet: the installation's default, dry-run). */
export async function readPowerMode(db: Database): Promise<PowerModeView> {
  return powerModeView(await readPowerSettings(db));
}
