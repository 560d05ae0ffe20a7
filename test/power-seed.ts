import crypto from "node:crypto";
import type { Database } from "@/lib/db/client";
import {
  credentials,
  hosts,
  powerEvents,
  powerTargetFeeds,
  powerTargets,
  runs,
  stepVisits,
  upsDevices,
  upsMonitorState,
  upsReadings,
} from "@/lib/db/schema";
import type { TriggerOverrides } from "@/lib/power/config/settings";
import { seal } from "@/lib/secrets/seal";

/*
 * Rows of the power tables as the monitor, the shutdown pipeline and onboarding leave them, for
 * tests of what the pages and the API read. Names are random so one database holds many.
 */

const suffix = () => crypto.randomBytes(3).toString("hex");

async function credential(db: Database, kind: "password" | "api_token", secret: string) {
  const [row] = await db
    .insert(credentials)
    .values({ kind, sealed: seal(secret) })
    .returning({ id: credentials.id });
  return row!.id;
}

/** An onboarded host: node name, API token and pinned certificate, unless `token: false`. */
export async function seedHost(
  db: Database,
  options: { name?: string; token?: boolean } = {},
): Promise<{ id: string; name: string; nodeName: string }> {
  const name = options.name ?? `pve-${suffix()}`;
  const withToken = options.token ?? true;
  const [host] = await db
    .insert(hosts)
    .values({
      name,
      address: "127.0.0.1",
      sshUser: "root",
      credentialId: await credential(db, "password", JSON.stringify({ password: "x" })),
      nodeName: name,
      apiCertSha256: withToken ? "AB:CD:EF" : null,
      apiTokenId: withToken ? "clupilot@pve!console" : null,
      apiTokenCredentialId: withToken ? await credential(db, "api_token", "token-secret") : null,
    })
    .returning({ id: hosts.id });
  return { id: host!.id, name, nodeName: name };
}

/** The host's VerifyProxmoxApi visit as the onboarding engine records it. */
export async function seedVerification(
  db: Database,
  hostId: string,
  outcome: "advance" | "fail",
  detail: string,
  at: Date,
): Promise<void> {
  const [run] = await db
    .insert(runs)
    .values({ pipeline: "onboard-host", hostId, currentStep: "VerifyProxmoxApi" })
    .returning({ id: runs.id });
  await db.insert(stepVisits).values({
    runId: run!.id,
    step: "VerifyProxmoxApi",
    visit: 1,
    startedAt: at,
    finishedAt: at,
    outcome,
    detail,
  });
}

export async function seedUps(
  db: Database,
  options: { name?: string; triggerOverrides?: TriggerOverrides } = {},
): Promise<{ id: string; name: string }> {
  const name = options.name ?? `ups-${suffix()}`;
  const [ups] = await db
    .insert(upsDevices)
    .values({
      name,
      source: { type: "nut", host: "127.0.0.1", port: 3493, upsName: "lab" },
      triggerOverrides: options.triggerOverrides ?? {},
    })
    .returning({ id: upsDevices.id });
  return { id: ups!.id, name };
}

export async function seedMonitorState(
  db: Database,
  upsId: string,
  state: Omit<typeof upsMonitorState.$inferInsert, "upsId">,
): Promise<void> {
  await db
    .insert(upsMonitorState)
    .values({ upsId, ...state })
    .onConflictDoUpdate({ target: upsMonitorState.upsId, set: state });
}

export async function seedReadings(
  db: Database,
  upsId: string,
  readings: Omit<typeof upsReadings.$inferInsert, "upsId">[],
): Promise<void> {
  if (readings.length === 0) return;
  await db.insert(upsReadings).values(readings.map((reading) => ({ upsId, ...reading })));
}

export async function seedEvent(
  db: Database,
  event: Partial<typeof powerEvents.$inferInsert> = {},
): Promise<number> {
  const [row] = await db
    .insert(powerEvents)
    .values({ severity: "info", kind: "ups.mains_back", message: "test event", ...event })
    .returning({ id: powerEvents.id });
  return row!.id;
}

/** A PVE node target for `hostId`, fed by `feeds`. */
export async function seedPveTarget(
  db: Database,
  hostId: string,
  feeds: string[],
  options: { feedPolicy?: "all" | "any"; stage?: number; runsConsole?: boolean } = {},
): Promise<string> {
  const [target] = await db
    .insert(powerTargets)
    .values({
      kind: "pve-node",
      hostId,
      feedPolicy: options.feedPolicy ?? "any",
      stage: options.stage ?? 0,
      runsConsole: options.runsConsole ?? false,
    })
    .returning({ id: powerTargets.id });
  if (feeds.length > 0) {
    await db
      .insert(powerTargetFeeds)
      .values(feeds.map((upsId) => ({ targetId: target!.id, upsId })));
  }
  return target!.id;
}

/** A Proxmox Backup Server target with its own sealed token. */
export async function seedPbsTarget(
  db: Database,
  feeds: string[],
  options: { name?: string; stage?: number } = {},
): Promise<string> {
  const [target] = await db
    .insert(powerTargets)
    .values({
      kind: "pbs",
      name: options.name ?? `pbs-${suffix()}`,
      address: "127.0.0.1",
      port: 8007,
      tokenId: "root@pam!power",
      tokenCredentialId: await credential(db, "api_token", "pbs-token-secret"),
      certSha256: "AB:CD:EF",
      feedPolicy: "any",
      stage: options.stage ?? 0,
    })
    .returning({ id: powerTargets.id });
  if (feeds.length > 0) {
    await db
      .insert(powerTargetFeeds)
      .values(feeds.map((upsId) => ({ targetId: target!.id, upsId })));
  }
  return target!.id;
}
