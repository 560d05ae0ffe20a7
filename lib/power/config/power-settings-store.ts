import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerSettings } from "@/lib/db/schema";
import type { PowerPlanSnapshot } from "./armed-plan-snapshot";
import { DEFAULT_POWER_SETTINGS, ZPowerSettings, type PowerSettings } from "./settings";

type Reader = Pick<Database, "select">;
type Writer = Pick<Database, "select" | "insert">;

export type PowerSettingsPatch = Partial<
  Pick<PowerSettings, "mode" | "triggers" | "pollIntervalMs" | "shutdown" | "powerBack" | "shed">
> &
  Partial<Pick<StoredPowerSettings, "armedAt" | "armedBy" | "armedPlan">>;

export type StoredPowerSettings = PowerSettings & {
  armedAt: Date | null;
  armedBy: string | null;
  /** The plan the admin confirmed when arming. */
  armedPlan: PowerPlanSnapshot | null;
  updatedAt: Date | null;
};

/** The power settings as stored, or the defaults (dry-run) when none were ever saved. */
export async function readPowerSettings(db: Reader): Promise<StoredPowerSettings> {
  const [row] = await db.select().from(powerSettings).where(eq(powerSettings.id, 1));
  if (!row) {
    return {
      ...DEFAULT_POWER_SETTINGS,
      armedAt: null,
      armedBy: null,
      armedPlan: null,
      updatedAt: null,
    };
  }
  const parsed = ZPowerSettings.parse({
    mode: row.mode,
    triggers: row.triggers,
    pollIntervalMs: row.pollIntervalMs,
    shutdown: row.shutdown,
    powerBack: row.powerBack,
    shed: row.shed,
  });
  return {
    ...parsed,
    armedAt: row.armedAt,
    armedBy: row.armedBy,
    armedPlan: row.armedPlan,
    updatedAt: row.updatedAt,
  };
}

/** Writes a change of the settings row (creating it from the defaults the first time). */
export async function writePowerSettings(db: Writer, patch: PowerSettingsPatch): Promise<void> {
  const current = await readPowerSettings(db);
  const next = {
    mode: patch.mode ?? current.mode,
    triggers: patch.triggers ?? current.triggers,
    pollIntervalMs: patch.pollIntervalMs ?? current.pollIntervalMs,
    shutdown: patch.shutdown ?? current.shutdown,
    powerBack: patch.powerBack ?? current.powerBack,
    shed: patch.shed ?? current.shed,
    armedAt: patch.armedAt === undefined ? current.armedAt : patch.armedAt,
    armedBy: patch.armedBy === undefined ? current.armedBy : patch.armedBy,
    armedPlan: patch.armedPlan === undefined ? current.armedPlan : patch.armedPlan,
    updatedAt: new Date(),
  };
  await db
    .insert(powerSettings)
    .values({ id: 1, ...next })
    .onConflictDoUpdate({ target: powerSettings.id, set: next });
}
