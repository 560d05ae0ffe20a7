import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { recordPowerEvents } from "../records/power-events";
import {
  readPowerSettings,
  writePowerSettings,
  type StoredPowerSettings,
} from "../config/power-settings-store";
import { ZUpdatePowerSettings } from "../config/schemas";
import {
  ZPowerBackSettings,
  ZShedSettings,
  ZShutdownSettings,
  ZTriggerSettings,
} from "../config/settings";

/** Changes the global triggers, poll interval or shutdown deadlines; the rest keeps its value. */
export async function updatePowerSettings(
  db: Database,
  input: z.input<typeof ZUpdatePowerSettings>,
  actor: AuditActor,
): Promise<StoredPowerSettings> {
  const data = ZUpdatePowerSettings.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.settings_update",
      target: null,
      detail: { changed: Object.keys(data) },
    },
    () =>
      db.transaction(async (tx) => {
        const current = await readPowerSettings(tx);
        await writePowerSettings(tx, {
          triggers: ZTriggerSettings.parse({ ...current.triggers, ...data.triggers }),
          shutdown: ZShutdownSettings.parse({ ...current.shutdown, ...data.shutdown }),
          powerBack: ZPowerBackSettings.parse({ ...current.powerBack, ...data.powerBack }),
          shed: ZShedSettings.parse({ ...current.shed, ...data.shed }),
          pollIntervalMs: data.pollIntervalMs ?? current.pollIntervalMs,
        });
        await recordPowerEvents(tx, [
          {
            severity: "info",
            kind: "config.changed",
            message: `power settings changed by ${actor.name} (${Object.keys(data).join(", ") || "nothing"})`,
            data,
          },
        ]);
        return readPowerSettings(tx);
      }),
  );
}
