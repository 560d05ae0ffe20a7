import { desc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { auditLog, powerClusters, powerEvents } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { registerTestDatabase } from "@/test/db";
import { CONSOLIDATE_ON_CEPH } from "./schemas";
import { setClusterPolicy } from "./set-cluster-policy";

const database = registerTestDatabase();
const admin = { userId: null, name: "alice" };

async function cluster(name: string, hyperConverged: boolean): Promise<string> {
  const [row] = await database.db
    .insert(powerClusters)
    .values({ name, hyperConverged, quorate: true, nodes: [] })
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
  it("is cluster as one unit until an admin changes it; the change is audited and logged", async () => {
    const id = await cluster("plain", false);
    expect(await policyOf(id)).toBe("cluster");
    await expect(
      setClusterPolicy(database.db, { id, policy: "consolidate" }, admin),
    ).resolves.toEqual({
      id,
      name: "plain",
      policy: "consolidate",
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
      "cluster plain goes down consolidate (was cluster as one unit), set by alice",
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
    ).rejects.toThrow(/Choose cluster as one unit, per host, or consolidate/);
    await expect(
      setClusterPolicy(database.db, { id: crypto.randomUUID(), policy: "cluster" }, admin),
    ).rejects.toThrow(/no longer known/);
  });
});
