import { and, eq, inArray, ne } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database, Transaction } from "@/lib/db/client";
import { credentials, hosts, powerTargetFeeds, powerTargets, upsDevices } from "@/lib/db/schema";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { seal } from "@/lib/secrets/seal";
import { recordPowerEvents } from "../records/power-events";
import { ZCreatePowerTarget, ZPowerTargetRef, ZUpdatePowerTarget } from "../config/schemas";
import { loadTargets, type TargetRecord } from "../targets/load-targets";
import { describeShutdown } from "../targets/shutdown-call";

/** A protected target as the pages and the API show it (the PBS token's secret never). */
export type PowerTargetView = Omit<TargetRecord, "endpoint"> & {
  address: string | null;
  port: number | null;
  nodeName: string | null;
  tokenId: string | null;
  certSha256: string | null;
  /** The exact shutdown request, secret masked; null when the target cannot be reached. */
  request: string | null;
};

function view(record: TargetRecord): PowerTargetView {
  const { endpoint, ...rest } = record;
  return {
    ...rest,
    address: endpoint?.address ?? null,
    port: endpoint ? (endpoint.kind === "pve-node" ? endpoint.apiPort : endpoint.port) : null,
    nodeName: endpoint?.kind === "pve-node" ? endpoint.nodeName : null,
    tokenId: endpoint
      ? endpoint.kind === "pve-node"
        ? endpoint.apiTokenId
        : endpoint.tokenId
      : null,
    certSha256: endpoint
      ? endpoint.kind === "pve-node"
        ? endpoint.apiCertSha256
        : endpoint.certSha256
      : null,
    request: endpoint ? describeShutdown(endpoint).line : null,
  };
}

export async function listPowerTargets(db: Pick<Database, "select">): Promise<PowerTargetView[]> {
  return (await loadTargets(db)).map(view);
}

type Tx = Transaction;

async function checkFeeds(tx: Tx, feeds: readonly string[]): Promise<void> {
  const found = await tx
    .select({ id: upsDevices.id })
    .from(upsDevices)
    .where(inArray(upsDevices.id, [...feeds]));
  if (found.length !== feeds.length) {
    throw new AppError(
      "invalid_input",
      "A chosen UPS does not exist (any more); reload the page.",
      {
        feeds: ["Choose from the UPS devices listed."],
      },
    );
  }
}

async function checkConsoleHost(tx: Tx, exceptId: string | null): Promise<void> {
  const [other] = await tx
    .select({ id: powerTargets.id, hostName: hosts.name, pbsName: powerTargets.name })
    .from(powerTargets)
    .leftJoin(hosts, eq(hosts.id, powerTargets.hostId))
    .where(
      exceptId
        ? and(eq(powerTargets.runsConsole, true), ne(powerTargets.id, exceptId))
        : eq(powerTargets.runsConsole, true),
    );
  if (other) {
    throw new AppError(
      "conflict",
      `${other.hostName ?? other.pbsName} is already marked as the host the console runs on; unmark it first.`,
      { runsConsole: ["Only one host runs the console."] },
    );
  }
}

async function replaceFeeds(tx: Tx, targetId: string, feeds: readonly string[]): Promise<void> {
  await tx.delete(powerTargetFeeds).where(eq(powerTargetFeeds.targetId, targetId));
  await tx.insert(powerTargetFeeds).values(feeds.map((upsId) => ({ targetId, upsId })));
}

async function viewOf(tx: Tx, id: string): Promise<PowerTargetView> {
  const [record] = await loadTargets(tx, [id]);
  return view(record!);
}

const taken = (what: string) =>
  new AppError("conflict", `${what} is already protected; edit its entry instead.`);

/** Protects a host or a backup server: its feeds, policy and place in the sequence. Admins only. */
export async function createPowerTarget(
  db: Database,
  input: z.input<typeof ZCreatePowerTarget>,
  actor: AuditActor,
): Promise<PowerTargetView> {
  const data = ZCreatePowerTarget.parse(input);
  return audited(
    db,
    { actor, action: "power.target_create", target: (created) => `power_target:${created.id}` },
    () =>
      db.transaction(async (tx) => {
        await checkFeeds(tx, data.feeds);
        if (data.runsConsole) await checkConsoleHost(tx, null);
        const common = {
          feedPolicy: data.feedPolicy,
          stage: data.stage,
          runsConsole: data.runsConsole,
          enabled: data.enabled,
        };
        let values: typeof powerTargets.$inferInsert;
        let label: string;
        if (data.kind === "pve-node") {
          const [host] = await tx.select().from(hosts).where(eq(hosts.id, data.hostId));
          if (!host) throw new AppError("not_found", "That host does not exist (any more).");
          if (host.retiredAt) {
            throw new AppError(
              "conflict",
              `Host ${host.name} is retired; the console no longer manages it.`,
            );
          }
          values = { kind: "pve-node", hostId: host.id, ...common };
          label = `host ${host.name}`;
        } else {
          const [credential] = await tx
            .insert(credentials)
            .values({ kind: "api_token", sealed: seal(data.tokenSecret) })
            .returning({ id: credentials.id });
          values = {
            kind: "pbs",
            name: data.name,
            address: data.address,
            port: data.port,
            tokenId: data.tokenId,
            tokenCredentialId: credential!.id,
            certSha256: data.certSha256.toUpperCase(),
            ...common,
          };
          label = `backup server ${data.name}`;
        }
        const [row] = await tx
          .insert(powerTargets)
          .values(values)
          .returning({ id: powerTargets.id })
          .catch((error: unknown) => {
            throw isUniqueViolation(error) ? taken(label) : error;
          });
        await replaceFeeds(tx, row!.id, data.feeds);
        const created = await viewOf(tx, row!.id);
        await recordPowerEvents(tx, [
          {
            severity: "info",
            kind: "config.changed",
            message: `${label} protected by ${actor.name} (feeds ${created.feeds.map((f) => f.upsName).join(", ")}, policy ${data.feedPolicy}, stage ${data.stage}${data.runsConsole ? ", runs the console" : ""})`,
            targetId: row!.id,
          },
        ]);
        return created;
      }),
  );
}

/** Changes a target's protection (and a PBS's connection; a secret left out is kept). */
export async function updatePowerTarget(
  db: Database,
  input: z.input<typeof ZUpdatePowerTarget>,
  actor: AuditActor,
): Promise<PowerTargetView> {
  const data = ZUpdatePowerTarget.parse(input);
  return audited(
    db,
    { actor, action: "power.target_update", target: `power_target:${data.id}` },
    () =>
      db.transaction(async (tx) => {
        const [current] = await tx
          .select()
          .from(powerTargets)
          .where(eq(powerTargets.id, data.id))
          .for("update");
        if (!current) throw new AppError("not_found", "That target does not exist (any more).");
        const pbsChange = [
          data.name,
          data.address,
          data.port,
          data.tokenId,
          data.tokenSecret,
          data.certSha256,
        ];
        if (current.kind !== "pbs" && pbsChange.some((v) => v !== undefined)) {
          throw new AppError(
            "invalid_input",
            "A Proxmox VE node is reached through its host's own settings; edit the host instead.",
          );
        }
        if (data.feeds) await checkFeeds(tx, data.feeds);
        if (data.runsConsole) await checkConsoleHost(tx, data.id);
        let tokenCredentialId = current.tokenCredentialId;
        if (data.tokenSecret !== undefined) {
          const [credential] = await tx
            .insert(credentials)
            .values({ kind: "api_token", sealed: seal(data.tokenSecret) })
            .returning({ id: credentials.id });
          tokenCredentialId = credential!.id;
        }
        await tx
          .update(powerTargets)
          .set({
            feedPolicy: data.feedPolicy ?? current.feedPolicy,
            stage: data.stage ?? current.stage,
            runsConsole: data.runsConsole ?? current.runsConsole,
            enabled: data.enabled ?? current.enabled,
            name: data.name ?? current.name,
            address: data.address ?? current.address,
            port: data.port ?? current.port,
            tokenId: data.tokenId ?? current.tokenId,
            tokenCredentialId,
            certSha256: data.certSha256?.toUpperCase() ?? current.certSha256,
            updatedAt: new Date(),
          })
          .where(eq(powerTargets.id, data.id))
          .catch((error: unknown) => {
            throw isUniqueViolation(error) ? taken(`backup server ${data.name}`) : error;
          });
        if (tokenCredentialId !== current.tokenCredentialId && current.tokenCredentialId) {
          await tx.delete(credentials).where(eq(credentials.id, current.tokenCredentialId));
        }
        if (data.feeds) await replaceFeeds(tx, data.id, data.feeds);
        const updated = await viewOf(tx, data.id);
        await recordPowerEvents(tx, [
          {
            severity: "info",
            kind: "config.changed",
            message: `${updated.name}: protection changed by ${actor.name}`,
            targetId: data.id,
          },
        ]);
        return updated;
      }),
  );
}

/** Stops protecting a target (its host stays; only the power settings for it go). */
export async function deletePowerTarget(
  db: Database,
  input: z.input<typeof ZPowerTargetRef>,
  actor: AuditActor,
): Promise<void> {
  const { id } = ZPowerTargetRef.parse(input);
  await audited(db, { actor, action: "power.target_delete", target: `power_target:${id}` }, () =>
    db.transaction(async (tx) => {
      const [record] = await loadTargets(tx, [id]);
      if (!record) throw new AppError("not_found", "That target does not exist (any more).");
      const [row] = await tx
        .delete(powerTargets)
        .where(eq(powerTargets.id, id))
        .returning({ tokenCredentialId: powerTargets.tokenCredentialId });
      if (row?.tokenCredentialId) {
        await tx.delete(credentials).where(eq(credentials.id, row.tokenCredentialId));
      }
      await recordPowerEvents(tx, [
        {
          severity: "info",
          kind: "config.changed",
          message: `${record.name}: no longer protected (removed by ${actor.name})`,
        },
      ]);
    }),
  );
}
