import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { credentials, hosts, powerShutdownCalls, runs } from "@/lib/db/schema";
import { ABORT_REASON } from "@/lib/pipeline/abort-reason";
import type { ShutdownInput } from "@/lib/power/shutdown/shutdown-plan";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import type { Latch } from "@/lib/power/triggers/state";
import { seal } from "@/lib/secrets/seal";
import { registerTestDatabase } from "@/test/db";
import { addUps, protectHost } from "@/test/fixtures/power";
import { outageTargets } from "./outage-done";

/**
 * What the console's records say about a UPS's outage, target by target: seen down by a call of
 * this outage, or ended with an armed run of this outage at VerifyTargetsDown. Rows are written
 * here as the shutdown writes them; no worker runs.
 */

const database = registerTestDatabase(3);
const latchedAt = new Date("2026-03-01T03:00:00.000Z");
const latch: Latch = { trigger: "low_battery", at: latchedAt, reason: "OB LB", reading: null };
let upsA: string;
let upsB: string;
const target: Record<"a1" | "a2" | "b" | "ab", string> = {} as never;

async function host(name: string): Promise<string> {
  const { db } = database;
  const [ssh] = await db
    .insert(credentials)
    .values({ kind: "password", sealed: seal("{}") })
    .returning();
  const [token] = await db
    .insert(credentials)
    .values({ kind: "api_token", sealed: seal("unused") })
    .returning();
  const [row] = await db
    .insert(hosts)
    .values({
      name,
      address: "192.0.2.10",
      sshUser: "root",
      credentialId: ssh!.id,
      nodeName: name,
      apiCertSha256: "AB:".repeat(31) + "AB",
      apiTokenId: "clupilot@pve!console",
      apiTokenCredentialId: token!.id,
    })
    .returning();
  return row!.id;
}

beforeAll(async () => {
  const { db } = database;
  upsA = await addUps(db, "ups-a");
  upsB = await addUps(db, "ups-b");
  target.a1 = await protectHost(db, await host("pve-a1"), { feeds: [upsA] });
  target.a2 = await protectHost(db, await host("pve-a2"), { feeds: [upsA] });
  target.b = await protectHost(db, await host("pve-b"), { feeds: [upsB] });
  // Redundant supplies on both UPSes: with ups-b on mains it stays up whatever ups-a does.
  target.ab = await protectHost(db, await host("pve-ab"), {
    feeds: [upsA, upsB],
    feedPolicy: "all",
  });
});

/** A power-shutdown run of these targets, ended (or not) as given. */
async function run(
  targetIds: string[],
  dueSince: Date,
  end: {
    mode: "armed" | "dry-run";
    status: "running" | "succeeded" | "failed";
    failedStep?: string;
    failureReason?: string;
    handedBack?: string[];
  },
): Promise<string> {
  const { db } = database;
  const input: ShutdownInput = {
    trigger: {
      upsId: upsA,
      upsName: "ups-a",
      trigger: "low_battery",
      reason: "OB LB",
      latchedAt: dueSince.toISOString(),
    },
    targets: targetIds.map((targetId) => ({ targetId, dueSince: dueSince.toISOString() })),
    mode: end.mode,
  };
  const runId = await db.transaction((tx) => startShutdownRun(tx, input));
  await db
    .update(runs)
    .set({
      // As the monitor starts it: once its targets are due.
      createdAt: new Date(dueSince.getTime() + 1000),
      status: end.status,
      failedStep: end.failedStep ?? null,
      failureReason: end.failureReason ?? null,
      context: { input, ...(end.handedBack ? { handedBack: end.handedBack } : {}) },
    })
    .where(eq(runs.id, runId));
  return runId;
}

async function seenDownCall(runId: string, targetId: string, dueSince: Date): Promise<void> {
  await database.db.insert(powerShutdownCalls).values({
    runId,
    targetId,
    dueSince,
    state: "sent",
    request: "POST https://192.0.2.10:8006/api2/json/nodes/x/status command=shutdown",
    seenDownAt: new Date(dueSince.getTime() + 30_000),
  });
}

const standing = async () =>
  Object.fromEntries(
    (await outageTargets(database.db, { id: upsA, latch })).map((t) => [
      t.name,
      { seenDown: t.seenDown, ended: t.ended },
    ]),
  );

describe("the records of a UPS's outage", () => {
  it("lists the targets the UPS's latch makes due — not another UPS's, not redundant ones fed elsewhere — with nothing done yet", async () => {
    expect(await standing()).toEqual({
      "pve-a1": { seenDown: false, ended: false },
      "pve-a2": { seenDown: false, ended: false },
    });
  });

  it("does not count what an earlier outage did, nor runs that did not end at VerifyTargetsDown", async () => {
    const earlier = new Date(latchedAt.getTime() - 3_600_000);
    await seenDownCall(
      await run([target.a1], earlier, { mode: "armed", status: "succeeded" }),
      target.a1,
      earlier,
    );
    await run([target.a1, target.a2], latchedAt, { mode: "dry-run", status: "succeeded" });
    await run([target.a1], latchedAt, {
      mode: "armed",
      status: "failed",
      failedStep: "ShutDownTargets",
      failureReason: "connect ECONNREFUSED",
    });
    await run([target.a2], latchedAt, {
      mode: "armed",
      status: "failed",
      failedStep: "VerifyTargetsDown",
      failureReason: ABORT_REASON,
    });
    await run([target.a2], latchedAt, {
      mode: "armed",
      status: "succeeded",
      handedBack: [target.a2],
    });
    await run([target.a1, target.a2], latchedAt, { mode: "armed", status: "running" });
    expect(await standing()).toEqual({
      "pve-a1": { seenDown: false, ended: false },
      "pve-a2": { seenDown: false, ended: false },
    });
  });

  it("a target seen down in this outage, and one whose armed run ended past its deadline", async () => {
    const runId = await run([target.a1, target.a2], latchedAt, {
      mode: "armed",
      status: "failed",
      failedStep: "VerifyTargetsDown",
      failureReason: "1 of 2 target(s) still answering after their time to go down: pve-a2",
    });
    await seenDownCall(runId, target.a1, latchedAt);
    expect(await standing()).toEqual({
      "pve-a1": { seenDown: true, ended: true },
      "pve-a2": { seenDown: false, ended: true },
    });
  });
});
