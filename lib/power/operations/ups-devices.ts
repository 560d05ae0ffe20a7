import { asc, eq } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database, Transaction } from "@/lib/db/client";
import { credentials, powerTargetFeeds, powerTargets, upsDevices, hosts } from "@/lib/db/schema";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { seal } from "@/lib/secrets/seal";
import { recordPowerEvents } from "../records/power-events";
import { ZCreateUpsDevice, ZUpdateUpsDevice, ZUpsDeviceRef } from "../config/schemas";
import type { TriggerOverrides } from "../config/settings";
import type { TUpsSourceConfig } from "../ups/reading";
import { checkUpsSource, type UpsSourceCheck } from "../config/ups-source-check";
import { readSecret } from "../config/ups-secret-store";
import {
  describeUpsSource,
  joinUpsSource,
  splitUpsSource,
  type PublicUpsSource,
  type UpsSourceSecret,
} from "../config/ups-source-config";

/** A UPS as the pages and the API show it: never a secret, only whether one is stored. */
export type UpsDeviceView = {
  id: string;
  name: string;
  source: PublicUpsSource;
  /** `NUT ups@10.0.0.9:3493`, `SNMP v3 10.0.0.8:161`. */
  sourceLabel: string;
  hasSecret: boolean;
  triggerOverrides: TriggerOverrides;
  /** The console cycles this UPS's output after a shutdown (lib/power/shutdown/cycle-ups-output.ts). */
  outputCycle: boolean;
  createdAt: string;
  updatedAt: string;
};

type Row = typeof upsDevices.$inferSelect;
type Tx = Transaction;

function view(row: Row): UpsDeviceView {
  return {
    id: row.id,
    name: row.name,
    source: row.source,
    sourceLabel: describeUpsSource(row.source),
    hasSecret: row.secretCredentialId !== null,
    triggerOverrides: row.triggerOverrides,
    outputCycle: row.outputCycle,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function listUpsDevices(db: Pick<Database, "select">): Promise<UpsDeviceView[]> {
  const rows = await db.select().from(upsDevices).orderBy(asc(upsDevices.name));
  return rows.map(view);
}

const nameTaken = (name: string) =>
  new AppError("conflict", `A UPS named ${name} already exists.`, {
    name: ["This name is taken; choose another."],
  });

async function storeSecret(tx: Tx, secret: UpsSourceSecret | null): Promise<string | null> {
  if (secret === null) return null;
  const [row] = await tx
    .insert(credentials)
    .values({ kind: "ups_secret", sealed: seal(JSON.stringify(secret)) })
    .returning({ id: credentials.id });
  return row!.id;
}

export type UpsSaveOptions = {
  /**
   * Tries the source before saving it (default: checkUpsSource — a NUT source must take the
   * console's login). Only tests and benchmarks whose UPS has no server pass another.
   */
  checkSource?: UpsSourceCheck;
};

/**
 * Adds a UPS to watch; the monitor picks it up within seconds. Admins only (the caller checks).
 * Its source is tried first (options.checkSource): settings the monitor could not log in with
 * are refused with field errors, and nothing is saved.
 */
export async function createUpsDevice(
  db: Database,
  input: z.input<typeof ZCreateUpsDevice>,
  actor: AuditActor,
  { checkSource = checkUpsSource }: UpsSaveOptions = {},
): Promise<UpsDeviceView> {
  const data = ZCreateUpsDevice.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.ups_create",
      target: (created) => `ups:${created.id}`,
      detail: { name: data.name },
    },
    async () => {
      await checkSource(data.source);
      return db.transaction(async (tx) => {
        const { source, secret } = splitUpsSource(data.source);
        const [row] = await tx
          .insert(upsDevices)
          .values({
            name: data.name,
            source,
            secretCredentialId: await storeSecret(tx, secret),
            triggerOverrides: data.triggerOverrides,
            outputCycle: data.outputCycle,
          })
          .returning()
          .catch((error: unknown) => {
            throw isUniqueViolation(error) ? nameTaken(data.name) : error;
          });
        await recordPowerEvents(tx, [
          {
            severity: "info",
            kind: "config.changed",
            message: `UPS ${data.name} (${describeUpsSource(source)}) added by ${actor.name}`,
            upsId: row!.id,
          },
        ]);
        return view(row!);
      });
    },
  );
}

/**
 * Changes a UPS; secrets left out of a changed source keep the stored ones. A source that
 * differs from the stored one (secrets included) is tried first, as on creation; a rename or
 * new trigger overrides need no answer from the UPS's server.
 */
export async function updateUpsDevice(
  db: Database,
  input: z.input<typeof ZUpdateUpsDevice>,
  actor: AuditActor,
  { checkSource = checkUpsSource }: UpsSaveOptions = {},
): Promise<UpsDeviceView> {
  const data = ZUpdateUpsDevice.parse(input);
  return audited(db, { actor, action: "power.ups_update", target: `ups:${data.id}` }, () =>
    db.transaction(async (tx) => {
      const [current] = await tx
        .select()
        .from(upsDevices)
        .where(eq(upsDevices.id, data.id))
        .for("update");
      if (!current) throw new AppError("not_found", "That UPS does not exist (any more).");
      let secretCredentialId = current.secretCredentialId;
      let source = current.source;
      if (data.source) {
        const stored = await readSecret(tx, current.secretCredentialId);
        // Reading a NUT UPS anonymously (no user) takes no password: the stored one goes.
        const anonymous = data.source.type === "nut" && (data.source.username ?? "") === "";
        const merged = anonymous
          ? withoutEmpty(data.source)
          : { ...stored, ...withoutEmpty(data.source) };
        let config;
        try {
          config = joinUpsSource(data.source as PublicUpsSource, merged);
        } catch {
          throw new AppError(
            "invalid_input",
            "The UPS's credentials are incomplete for this source: enter them again.",
            { source: ["Enter the password, community or SNMPv3 keys for this source."] },
          );
        }
        if (!sameSource(config, storedConfig(current.source, stored))) await checkSource(config);
        const split = splitUpsSource(config);
        source = split.source;
        if (JSON.stringify(split.secret) !== JSON.stringify(stored)) {
          secretCredentialId = await storeSecret(tx, split.secret);
        }
      }
      const [row] = await tx
        .update(upsDevices)
        .set({
          name: data.name ?? current.name,
          source,
          secretCredentialId,
          triggerOverrides: data.triggerOverrides ?? current.triggerOverrides,
          outputCycle: data.outputCycle ?? current.outputCycle,
          updatedAt: new Date(),
        })
        .where(eq(upsDevices.id, data.id))
        .returning()
        .catch((error: unknown) => {
          throw isUniqueViolation(error) ? nameTaken(data.name ?? current.name) : error;
        });
      if (secretCredentialId !== current.secretCredentialId && current.secretCredentialId) {
        await tx.delete(credentials).where(eq(credentials.id, current.secretCredentialId));
      }
      await recordPowerEvents(tx, [
        {
          severity: "info",
          kind: "config.changed",
          message:
            `UPS ${row!.name} changed by ${actor.name}` +
            (row!.outputCycle !== current.outputCycle
              ? `: output cycle after a shutdown ${row!.outputCycle ? "on" : "off"}`
              : ""),
          upsId: row!.id,
        },
      ]);
      return view(row!);
    }),
  );
}

/**
 * Removes a UPS with its history and state. Refused while it still feeds a target: removing it
 * would leave that target unprotected without anyone deciding so.
 */
export async function deleteUpsDevice(
  db: Database,
  input: z.input<typeof ZUpsDeviceRef>,
  actor: AuditActor,
): Promise<void> {
  const { id } = ZUpsDeviceRef.parse(input);
  await audited(db, { actor, action: "power.ups_delete", target: `ups:${id}` }, () =>
    db.transaction(async (tx) => {
      const [current] = await tx
        .select()
        .from(upsDevices)
        .where(eq(upsDevices.id, id))
        .for("update");
      if (!current) throw new AppError("not_found", "That UPS does not exist (any more).");
      const fed = await tx
        .select({ name: hosts.name, pbsName: powerTargets.name })
        .from(powerTargetFeeds)
        .innerJoin(powerTargets, eq(powerTargets.id, powerTargetFeeds.targetId))
        .leftJoin(hosts, eq(hosts.id, powerTargets.hostId))
        .where(eq(powerTargetFeeds.upsId, id));
      if (fed.length > 0) {
        const names = fed.map((f) => f.name ?? f.pbsName ?? "?").join(", ");
        throw new AppError(
          "conflict",
          `UPS ${current.name} still feeds ${names}. Remove it from their feeds first, so no target is left unprotected by accident.`,
        );
      }
      await tx.delete(upsDevices).where(eq(upsDevices.id, id));
      if (current.secretCredentialId) {
        await tx.delete(credentials).where(eq(credentials.id, current.secretCredentialId));
      }
      await recordPowerEvents(tx, [
        {
          severity: "info",
          kind: "config.changed",
          message: `UPS ${current.name} removed by ${actor.name}`,
        },
      ]);
    }),
  );
}

/** The stored source with its secrets; null when they no longer fit together. */
function storedConfig(
  source: PublicUpsSource,
  secret: UpsSourceSecret | null,
): TUpsSourceConfig | null {
  try {
    return joinUpsSource(source, secret);
  } catch {
    return null;
  }
}

function sameSource(a: TUpsSourceConfig, b: TUpsSourceConfig | null): boolean {
  if (b === null) return false;
  const canonical = (config: TUpsSourceConfig) =>
    JSON.stringify(Object.entries(config).sort(([x], [y]) => x.localeCompare(y)));
  return canonical(a) === canonical(b);
}

function withoutEmpty(source: object): UpsSourceSecret {
  const secret: UpsSourceSecret = {};
  for (const key of ["password", "community", "authKey", "privKey"] as const) {
    const value = (source as Record<string, unknown>)[key];
    if (typeof value === "string" && value !== "") secret[key] = value;
  }
  return secret;
}
