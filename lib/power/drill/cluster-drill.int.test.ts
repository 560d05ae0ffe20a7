import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { protectLabCluster } from "@/test/fixtures/protected-lab-cluster";
import { runTimeline } from "@/lib/power/queries/timeline";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { startLabCluster, type LabCluster } from "@/lab";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, persistReading } from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";
import { startPowerTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { startDrill } from "./start-drill";

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let lab: LabCluster;
let upsId: string;
let targetIds: string[];

beforeAll(async () => {
  const { db } = database;
  worker = await startPowerTestWorker(database);
  lab = await startLabCluster({
    nodes: 3,
    name: "drill",
    guests: ["pve1", "pve2", "pve3"].map((node, i) => ({
      vmid: 101 + i,
      type: "qemu" as const,
      node,
      storage: "ceph" as const,
      ha: true,
    })),
    ceph: { monitors: ["pve2", "pve3"] },
    apiAuthFailureDelayMs: 50,
  });
  const protectedLab = await protectLabCluster(db, lab, { upsName: "ups-cluster-drill" });
  upsId = protectedLab.upsId;
  targetIds = Object.values(protectedLab.targets);
  await persistReading(db, upsId, false);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await lab?.stop();
});

describe("a drill of a cluster's outage", () => {
  it("in dry-run while armed draws the whole cluster sequence as would-do — the cluster lane on top, then the nodes — and the lab receives no change at all", async () => {
    const { db } = database;
    await setPowerMode(db, { mode: "armed", confirmedTargetIds: targetIds }, ADMIN);
    try {
      const { runId } = await startDrill(db, { upsId, live: false }, ADMIN);
      const run = await settled(db, runId, 60_000);
      expect(run.status).toBe("succeeded");

      const timeline = (await runTimeline(db, runId))!;
      expect(timeline.lanes[0]).toBe("cluster");
      expect(timeline.lanes).toEqual(expect.arrayContaining(["pve1", "pve2", "pve3"]));
      const cluster = timeline.actions.filter((a) => a.lane === "cluster").map((a) => a.label);
      expect(cluster).toEqual(
        expect.arrayContaining(["disarm HA", "stop guests", "set Ceph flags"]),
      );
      expect(timeline.actions.every((a) => a.outcome === "would-do")).toBe(true);

      // Not one POST or PUT reached any node: HA armed, guests running, nodes up.
      const changes = lab.nodes.flatMap((n) =>
        n.api.requests.filter((r) => r.method === "POST" || r.method === "PUT"),
      );
      expect(changes).toEqual([]);
      expect(lab.model.nodes.every((n) => n.online)).toBe(true);
    } finally {
      await setPowerMode(db, { mode: "dry-run" }, ADMIN);
    }
  });
});
