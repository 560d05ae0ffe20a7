import { describe, expect, it } from "vitest";

import { acceptsParameter, pveApiMethod } from "@/test/fixtures/proxmox/api-schema";
import { LabClusterModel } from "./model";
import { clusterRoutes } from "./routes";

/**
 * The lab cluster may not invent endpoints either: every method, path and parameter its nodes
 * answer from the cluster model exists in Proxmox VE's published API schema (test/fixtures).
 */
const model = new LabClusterModel({
  nodes: [{ name: "pve1", ip: "10.10.10.11" }],
  pveVersion: "9.2",
  ceph: true,
});
const routes = clusterRoutes(model);

describe("lab cluster route table against Proxmox's schema", () => {
  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))(
    "%s exists in Proxmox's API with every parameter the lab accepts",
    (_, route) => {
      const method = pveApiMethod(route.method, route.path);
      expect(method, `${route.method} ${route.path}`).toBeDefined();
      const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      for (const param of [...pathParams, ...route.params]) {
        expect(
          acceptsParameter(method!, param),
          `${route.method} ${route.path} parameter ${param}`,
        ).toBe(true);
      }
    },
  );

  it("answers the endpoints the cluster shutdown sequence needs, each once", () => {
    const keys = routes.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of [
      "GET /cluster/status",
      "GET /cluster/config/join",
      "GET /cluster/resources",
      "POST /nodes/{node}/qemu/{vmid}/status/shutdown",
      "POST /nodes/{node}/lxc/{vmid}/status/stop",
      "POST /nodes/{node}/stopall",
      "POST /cluster/bulk-action/guest/shutdown",
      "POST /cluster/ha/status/disarm-ha",
      "GET /cluster/ha/status/current",
      "PUT /cluster/ceph/flags",
      "PUT /cluster/ceph/flags/{flag}",
      "GET /cluster/ceph/status",
    ]) {
      expect(keys).toContain(key);
    }
  });

  it("offers the bulk action only from Proxmox VE 9 on", () => {
    const old = clusterRoutes(
      new LabClusterModel({ nodes: [{ name: "pve1", ip: "10.10.10.11" }], pveVersion: "8.4" }),
    );
    expect(old.map((r) => r.path)).not.toContain("/cluster/bulk-action/guest/shutdown");
  });
});
