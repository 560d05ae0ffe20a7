import { afterEach, describe, expect, it } from "vitest";

import { SwitchRegistry } from "../../control/switches";
import { startLabCluster, type LabCluster } from "./start";
import { registerClusterSwitches } from "./switches";

let cluster: LabCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

describe("lab cluster switches", () => {
  it("set the cluster's faults and cut and restore a node's power through the registry", async () => {
    cluster = await startLabCluster({
      nodes: 3,
      guests: [{ vmid: 100, type: "qemu", node: "pve2" }],
    });
    const registry = registerClusterSwitches(new SwitchRegistry(), cluster);
    expect(
      await registry.apply({
        "cluster.hangOnShutdown": [100],
        "cluster.bulkFlagsIgnored": true,
        "cluster.singleFlagIgnored": true,
        "cluster.migrationFails": [100],
        "cluster.joinInfoFails": ["pve3"],
      }),
    ).toEqual({ ok: true });
    expect(cluster.faults).toEqual({
      hangOnShutdown: [100],
      bulkFlagsIgnored: true,
      singleFlagIgnored: true,
      migrationFails: [100],
      joinInfoFails: ["pve3"],
    });
    const bad = await registry.apply({ "cluster.hangOnShutdown": [42] });
    expect(bad.ok).toBe(false);
    expect(cluster.faults.hangOnShutdown).toEqual([100]);

    await registry.run("cluster.pve2.powerOff");
    expect(cluster.model.node("pve2")!.online).toBe(false);
    expect(cluster.model.guests.get(100)!.status).toBe("stopped");
    await registry.run("cluster.pve2.powerOn");
    expect(cluster.model.node("pve2")!.online).toBe(true);
    expect(registry.listActions().map((a) => a.name)).toContain("cluster.pve3.powerOff");
  });
});
