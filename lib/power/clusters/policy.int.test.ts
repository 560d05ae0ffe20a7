import { desc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { auditLog, powerClusters, powerEvents } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { registerTestDatabase } from "@/test/db";
import { CONSOLIDATE_ON_CEPH, DEFAULT_CONSOLIDATE_SETTINGS } from "./schemas";
import { setClusterPolicy } from "../operations/set-cluster-policy";

const database = registerTestDatabase();
const admin = { userId: null, name: "alice" };

async function cluster(name: string, hyperConverged: boolean): Promise<string> {
  const [row] = await database.db
    .insert(powerClusters)
    .values({
      name,
      hyperConverged,
      quorate: true,
      nodes: ["pve1", "pve2", "pve3"].map((n, i) => ({
        name: n,
        ip: null,
        online: true,
        nodeid: i + 1,
        cephMon: false,
      })),
    })
    .returning({ id: powerClusters.id });
  return row!.id;
}

async function policyOf(id: string) {
  const [row] = await database.db.select().from(powerClusters).where(eq(powerClusters.id, id));
  return row!.policy;
}

async function lastAudit() {
  const [row] = await database.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1);
  return row!;
}

describe("a cluster's shutdown policy", () => {
  it("is 'cluster' (only what lost power, as one unit when all did) until an admin changes it; the change is audited and logged", async () => {
    const id = await cluster("plain", false);
    expect(await policyOf(id)).toBe("cluster");
    await expect(
      setClusterPolicy(database.db, { id, policy: "consolidate" }, admin),
    ).resolves.toEqual({
      id,
      name: "plain",
      policy: "consolidate",
      consolidate: DEFAULT_CONSOLIDATE_SETTINGS,
    });
    expect(await policyOf(id)).toBe("consolidate");
    expect(await lastAudit()).toMatchObject({
      action: "power.cluster_policy",
      actorName: "alice",
      target: id,
      outcome: "success",
    });
    const [event] = await database.db
      .select()
      .from(powerEvents)
      .orderBy(desc(powerEvents.id))
      .limit(1);
    expect(event!.message).toBe(
      "cluster plain goes down consolidate (was cluster: only the nodes that lost power, as one unit when all did), set by alice",
    );
  });

  it("consolidate on hyper-converged Ceph is refused with the reason under the policy field; nothing changes", async () => {
    const id = await cluster("ceph", true);
    await setClusterPolicy(database.db, { id, policy: "per-host" }, admin);
    const refusal = await setClusterPolicy(database.db, { id, policy: "consolidate" }, admin).catch(
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(AppError);
    expect((refusal as AppError).code).toBe("invalid_input");
    expect((refusal as AppError).fieldErrors).toEqual({ policy: [CONSOLIDATE_ON_CEPH] });
    expect(await policyOf(id)).toBe("per-host");
    expect(await lastAudit()).toMatchObject({ action: "power.cluster_policy", outcome: "failure" });
  });

  it("refuses a policy that does not exist and a cluster that is no longer known", async () => {
    const id = await cluster("other", false);
    await expect(
      setClusterPolicy(database.db, { id, policy: "everything" as "cluster" }, admin),
    ).rejects.toThrow(
      /Choose cluster \(only what lost power\), whole cluster always, per host, or consolidate/,
    );
    await expect(
      setClusterPolicy(database.db, { id: crypto.randomUUID(), policy: "cluster" }, admin),
    ).rejects.toThrow(/no longer known/);
  });

  it("keeps a consolidating cluster's settings: the node that stays must be a member, a first threshold must be set; a key left out keeps its value", async () => {
    const id = await cluster("consolidating", false);
    const saved = await setClusterPolicy(
      database.db,
      {
        id,
        policy: "consolidate",
        consolidate: {
          mode: "stop",
          remainingNode: "pve2",
          firstThreshold: { chargeBelowPercent: 50 },
        },
      },
      admin,
    );
    expect(saved.consolidate).toEqual({
      mode: "stop",
      remainingNode: "pve2",
      firstThreshold: {
        runtimeBelowSeconds: 900,
        chargeBelowPercent: 50,
        onBatteryForSeconds: 300,
      },
    });
    const [event] = await database.db
      .select()
      .from(powerEvents)
      .orderBy(desc(powerEvents.id))
      .limit(1);
    expect(event!.message).toBe(
      "cluster consolidating goes down consolidate (was cluster: only the nodes that lost power, as one unit when all did); consolidates: stop, pve2 staying up at the first of: runtime below 15 min 0 s, charge below 50 %, 5 min 0 s on battery, set by alice",
    );

    const stranger = await setClusterPolicy(
      database.db,
      { id, policy: "consolidate", consolidate: { remainingNode: "pve9" } },
      admin,
    ).catch((error: unknown) => error);
    expect((stranger as AppError).fieldErrors).toEqual({
      "consolidate.remainingNode": [
        "pve9 is not a member of consolidating (members: pve1, pve2, pve3).",
      ],
    });
    const none = await setClusterPolicy(
      database.db,
      {
        id,
        policy: "consolidate",
        consolidate: {
          firstThreshold: {
            runtimeBelowSeconds: null,
            chargeBelowPercent: null,
            onBatteryForSeconds: null,
          },
        },
      },
      admin,
    ).catch((error: unknown) => error);
    expect((none as AppError).fieldErrors).toEqual({
      "consolidate.firstThreshold": [
        "Set at least one first threshold: runtime, charge or time on battery.",
      ],
    });
    const [row] = await database.db.select().from(powerClusters).where(eq(powerClusters.id, id));
    expect(row!.consolidate).toEqual(saved.consolidate);
  });
});
