import { createHash } from "node:crypto";
import type { Database } from "@/lib/db/client";
import { upsDevices } from "@/lib/db/schema";
import { loadClusterGroups, type ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import {
  effectiveTriggers,
  type PowerSettings,
  type TriggerSettings,
} from "@/lib/power/config/settings";
import { loadTargets, type TargetRecord } from "@/lib/power/targets/load-targets";
import { tokenCredentialOf, tokenSecretOf } from "@/lib/power/targets/shutdown-call";

/**
 * What the power monitor holds in memory so that a shutdown needs no database: the settings
 * (the mode among them), every target with its endpoint and its token's secret, the cluster
 * groups and each UPS's triggers. Read on every supervisor tick while the database answers;
 * the secrets are unsealed again only when the plan changed (its `version`). If the database
 * is unreachable when a trigger fires, the monitor acts on this (./offline-shutdown.ts) and
 * records what it did once the database is back.
 *
 * The secrets live in the worker's memory, as they do during any call; they are never logged
 * nor written anywhere from here.
 */
export type StandbyPlan = {
  /** A digest of everything but the secrets: equal versions, equal plans. */
  version: string;
  loadedAt: Date;
  settings: PowerSettings;
  records: TargetRecord[];
  clusterGroups: ClusterGroup[];
  /** Token secrets by credential id. */
  secrets: ReadonlyMap<string, string>;
  /** Each UPS's name and effective triggers. */
  ups: ReadonlyMap<string, { name: string; triggers: TriggerSettings }>;
};

export async function loadStandbyPlan(
  db: Pick<Database, "select">,
  previous: StandbyPlan | null,
): Promise<StandbyPlan> {
  const settings = await readPowerSettings(db);
  const records = await loadTargets(db);
  const clusterGroups = await loadClusterGroups(db);
  const devices = await db
    .select({
      id: upsDevices.id,
      name: upsDevices.name,
      overrides: upsDevices.triggerOverrides,
    })
    .from(upsDevices);
  const ups = new Map(
    devices.map((d) => [
      d.id,
      { name: d.name, triggers: effectiveTriggers(settings.triggers, d.overrides) },
    ]),
  );
  const version = createHash("sha256")
    .update(JSON.stringify({ settings, records, clusterGroups, ups: [...ups] }))
    .digest("hex");
  if (previous?.version === version) return { ...previous, loadedAt: new Date() };
  const secrets = new Map<string, string>();
  for (const record of records) {
    if (!record.endpoint) continue;
    const id = tokenCredentialOf(record.endpoint);
    if (secrets.has(id)) continue;
    // A secret that cannot be read leaves that target without one: the offline path then says
    // it cannot send to it, as the engine would.
    const secret = await tokenSecretOf(db, record.endpoint).catch(() => null);
    if (secret !== null) secrets.set(id, secret);
  }
  return { version, loadedAt: new Date(), settings, records, clusterGroups, secrets, ups };
}
