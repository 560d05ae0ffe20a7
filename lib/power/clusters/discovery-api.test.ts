import { describe, expect, it } from "vitest";
import { ProxmoxPermissionError, ProxmoxUnavailableError } from "@/lib/proxmox/errors";
import { pveApiMethod } from "@/test/fixtures/proxmox/api-schema";
import { cephAbsentReason, CLUSTER_DISCOVERY_REQUESTS } from "./discovery-api";

describe("cluster discovery requests", () => {
  it("exist in Proxmox's published API schema and are allowed for API tokens", () => {
    for (const request of CLUSTER_DISCOVERY_REQUESTS) {
      const [method, template] = request.split(" ") as [string, string];
      expect(pveApiMethod(method, template)?.allowtoken, request).toBe(true);
    }
  });
});

describe("Ceph's absence", () => {
  const unavailable = (message: string, status?: number) =>
    new ProxmoxUnavailableError(
      `GET /cluster/ceph/status on pve1 answered ${status}: ${message}`,
      status,
    );

  it("is Proxmox's 500 saying Ceph is not installed or not set up", () => {
    expect(cephAbsentReason(unavailable("binary not installed: /usr/bin/ceph-mon", 500))).toMatch(
      /binary not installed/,
    );
    expect(
      cephAbsentReason(unavailable("pveceph configuration not initialized", 500)),
    ).not.toBeNull();
    expect(
      cephAbsentReason(unavailable("rados_connect failed - No such file or directory", 500)),
    ).not.toBeNull();
  });

  it("is never read from a failure to ask: another 500, a proxy error, a timeout, a refused token", () => {
    expect(cephAbsentReason(unavailable("got timeout", 500))).toBeNull();
    expect(cephAbsentReason(unavailable("binary not installed", 595))).toBeNull();
    expect(
      cephAbsentReason(new ProxmoxUnavailableError("GET /cluster/ceph/status timed out")),
    ).toBeNull();
    expect(cephAbsentReason(new ProxmoxPermissionError("permission denied (403)"))).toBeNull();
    expect(cephAbsentReason(new Error("ECONNREFUSED"))).toBeNull();
  });
});
