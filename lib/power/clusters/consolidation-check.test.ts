import { describe, expect, it } from "vitest";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import { DEFAULT_CONSOLIDATE_SETTINGS } from "@/lib/power/clusters/schemas";
import { guestDevices } from "@/lib/power/clusters/guest-volumes";
import {
  HOST_MEMORY_RESERVE_BYTES,
  judgeConsolidation,
  type ConsolidateFacts,
  type ConsolidatePlanFacts,
} from "./consolidation-check";
import { consolidationOf, remainingNodeOf } from "./remaining-node";

const GiB = 1024 ** 3;
const NOW = new Date("2026-12-01T10:00:00Z");

const plan = (over: Partial<ConsolidatePlanFacts> = {}): ConsolidatePlanFacts => ({
  cluster: "prod",
  hyperConverged: false,
  mode: "migrate",
  remaining: { node: "pve3", why: "chosen by an admin" },
  leaving: ["pve1", "pve2"],
  ...over,
});

/** A cluster where everything is fine: two guests on NFS, 8 GiB needed, 30 GiB free. */
const facts = (over: Partial<ConsolidateFacts> = {}): ConsolidateFacts => ({
  quorate: true,
  vmPrivileges: new Set(["VM.Audit", "VM.Migrate", "VM.PowerMgmt"]),
  guests: [
    { vmid: 101, type: "qemu", node: "pve1", name: "web", maxmemBytes: 4 * GiB },
    { vmid: 201, type: "lxc", node: "pve2", name: null, maxmemBytes: 4 * GiB },
  ],
  configs: new Map([
    [101, { volumes: [{ key: "scsi0", storage: "nfs-vm" }], devices: [] }],
    [201, { volumes: [{ key: "rootfs", storage: "rbd-ext" }], devices: [] }],
  ]),
  storages: new Map([
    ["nfs-vm", { type: "nfs", shared: false, nodes: null }],
    ["rbd-ext", { type: "rbd", shared: true, nodes: null }],
    ["local", { type: "dir", shared: false, nodes: null }],
    ["san", { type: "lvm", shared: true, nodes: ["pve1", "pve2"] }],
  ]),
  memory: { totalBytes: 64 * GiB, usedBytes: 34 * GiB },
  ha: { disarm: true, resources: 2 },
  ...over,
});

describe("the consolidation check", () => {
  it("ok: the guests fit, their storage is shared, the token may migrate, HA can be disarmed — and says so", () => {
    const check = judgeConsolidation(plan(), facts(), NOW);
    expect(check.verdict).toBe("ok");
    expect(check.problems).toEqual([]);
    expect(check.memory).toEqual({
      neededBytes: 8 * GiB,
      freeBytes: 30 * GiB,
      reserveBytes: HOST_MEMORY_RESERVE_BYTES,
    });
    expect(check.findings).toEqual([
      "stays up: pve3 (chosen by an admin)",
      "HA: disarmed first (resource-mode=ignore), so nobody fences the node that stays",
      "memory: the 2 guest(s) moving need 8.0 GiB; pve3 has 30.0 GiB free of 64.0 GiB, 1.0 GiB kept for the host",
      "storage: every node reaches nfs-vm (nfs, shared), rbd-ext (rbd, shared)",
    ]);
    expect(check.summary).toBe(
      "consolidation can work: migrate 2 guest(s) from pve1, pve2 to pve3, then shut pve1, pve2 down",
    );
  });

  it("fails when the node that stays cannot hold the load (the host's reserve counted)", () => {
    const check = judgeConsolidation(
      plan(),
      facts({ memory: { totalBytes: 16 * GiB, usedBytes: 7.5 * GiB } }),
      NOW,
    );
    expect(check.verdict).toBe("failed");
    expect(check.problems).toEqual([
      "not enough memory: the 2 guest(s) moving need 8.0 GiB; pve3 has 8.5 GiB free of 16.0 GiB, 1.0 GiB kept for the host",
    ]);
  });

  it("fails on a volume on the node's own storage, on storage the node that stays lacks, and on a passed-through device", () => {
    const check = judgeConsolidation(
      plan(),
      facts({
        configs: new Map([
          [
            101,
            {
              volumes: [
                { key: "scsi0", storage: "local" },
                { key: "scsi1", storage: "san" },
              ],
              devices: ["hostpci0"],
            },
          ],
          [201, { volumes: [{ key: "rootfs", storage: "nfs-vm" }], devices: [] }],
        ]),
      }),
      NOW,
    );
    expect(check.verdict).toBe("failed");
    expect(check.problems).toEqual([
      "qemu 101 (web) on pve1 is tied to its node (hostpci0): Proxmox does not migrate it",
      "qemu 101 (web) on pve1 has scsi0 on local (dir, local to pve1): it cannot be migrated live without copying the disk, which takes as long as the disk is big — use mode stop, or move the disk to shared storage",
      "qemu 101 (web) on pve1 has scsi1 on san, which is not available on pve3 (nodes pve1,pve2)",
    ]);
  });

  it("could not check is never ok: storage it may not audit, a config it could not read, memory it could not read", () => {
    const check = judgeConsolidation(
      plan(),
      facts({
        storages: new Map(),
        configs: new Map([
          [101, { error: "HTTP 500" }],
          [201, { volumes: [{ key: "rootfs", storage: "rbd-ext" }], devices: [] }],
        ]),
        memory: { error: "HTTP 403: Permission check failed (/nodes/pve3, Sys.Audit)" },
      }),
      NOW,
    );
    expect(check.verdict).toBe("could-not-check");
    expect(check.problems).toEqual([
      "the free memory of pve3 could not be read: HTTP 403: Permission check failed (/nodes/pve3, Sys.Audit)",
      "the config of qemu 101 (web) on pve1 could not be read: HTTP 500",
      "lxc 201 on pve2 has rootfs on rbd-ext, a storage the console's token may not audit (GET /storage leaves it out): whether every node reaches it is not known",
    ]);
    expect(check.summary).toMatch(/^consolidation could not be checked: the free memory of pve3/);
    // Without VM.Audit the guest list may leave guests out: not known which would move.
    const blind = judgeConsolidation(plan(), facts({ vmPrivileges: new Set(["VM.Migrate"]) }), NOW);
    expect(blind.verdict).toBe("could-not-check");
  });

  it("refuses without the privilege its mode needs, and says how to grant it", () => {
    const check = judgeConsolidation(
      plan(),
      facts({ vmPrivileges: new Set(["VM.Audit", "VM.PowerMgmt"]) }),
      NOW,
    );
    expect(check.verdict).toBe("failed");
    expect(check.problems[0]).toMatch(/lacks VM\.Migrate on \/vms.*pveum role modify CluPilot/);
    // Mode stop needs no migration, no memory and no shared storage.
    const stop = judgeConsolidation(
      plan({ mode: "stop" }),
      facts({
        vmPrivileges: new Set(["VM.Audit", "VM.PowerMgmt"]),
        memory: null,
        configs: new Map(),
      }),
      NOW,
    );
    expect(stop.verdict).toBe("ok");
    expect(stop.summary).toBe(
      "consolidation can work: stop 2 guest(s) on pve1, pve2, then shut pve1, pve2 down",
    );
  });

  it("refuses without quorum, on HA that cannot be disarmed while HA resources exist, on Ceph, and without a node that stays", () => {
    expect(judgeConsolidation(plan(), facts({ quorate: false }), NOW).problems[0]).toMatch(
      /has no quorum now/,
    );
    expect(
      judgeConsolidation(plan(), facts({ ha: { disarm: false, resources: 1 } }), NOW).problems,
    ).toEqual([
      "HA cannot be disarmed on this Proxmox VE (disarm-ha arrived with 9.2) and 1 HA resource(s) exist: once the other nodes are down, pve3 has no quorum and an armed HA's watchdog resets it",
    ]);
    expect(
      judgeConsolidation(plan(), facts({ ha: { disarm: false, resources: 0 } }), NOW).verdict,
    ).toBe("ok");
    expect(judgeConsolidation(plan({ hyperConverged: true }), facts(), NOW).problems[0]).toMatch(
      /is hyper-converged: Not offered on hyper-converged Ceph/,
    );
    const none = judgeConsolidation(
      plan({ remaining: { node: null, why: "choose the node that stays" } }),
      facts(),
      NOW,
    );
    expect(none).toMatchObject({ verdict: "failed", problems: ["choose the node that stays"] });
    expect(judgeConsolidation(plan({ leaving: [] }), facts({ guests: [] }), NOW).problems[0]).toBe(
      "no protected node of prod but pve3: nothing would go down at the first threshold",
    );
  });
});

describe("the node that stays", () => {
  const node = (name: string, targetId: string | null = `t-${name}`) => ({
    name,
    ip: null,
    online: true,
    cephMon: false,
    hostId: targetId && `h-${name}`,
    targetId,
    runningGuests: null as number | null,
  });
  const group = (remainingNode: string | null): ClusterGroup => ({
    id: "c1",
    name: "prod",
    label: "prod",
    policy: "consolidate",
    chosenPolicy: "consolidate",
    policyNote: null,
    membership: null,
    ambiguity: null,
    hyperConverged: false,
    quorate: true,
    consolidate: { ...DEFAULT_CONSOLIDATE_SETTINGS, remainingNode },
    consolidateCheck: null,
    nodes: [node("pve1"), node("pve2"), node("pve3"), node("pve4", null)],
    refreshedAt: null,
    refreshError: null,
  });
  const records = (console?: string) =>
    ["pve1", "pve2", "pve3"].map((n) => ({
      id: `t-${n}`,
      runsConsole: n === console,
      enabled: true,
    }));

  it("is the console's node when the console runs on the cluster (marked, or its guest), else the admin's choice", () => {
    expect(consolidationOf(group(null), records("pve2"), null)).toMatchObject({
      remaining: { node: "pve2", why: "the console's node: marked as running the console" },
      leaving: ["pve1", "pve3"],
      leavingTargetIds: ["t-pve1", "t-pve3"],
      remainingTargetId: "t-pve2",
    });
    expect(
      consolidationOf(group("pve1"), records(), { node: "pve1", vmid: 390 }).remaining,
    ).toEqual({ node: "pve1", why: "the console's node: runs the console's guest 390" });
    // An unprotected member neither stays nor goes: the console cannot shut it down.
    expect(consolidationOf(group("pve3"), records(), null)).toMatchObject({
      remaining: { node: "pve3", why: "chosen by an admin" },
      leaving: ["pve1", "pve2"],
    });
  });

  it("is never guessed: none chosen, a choice against the console's node, or one that is no member", () => {
    expect(remainingNodeOf(group(null), { remainingNode: null }, null)).toEqual({
      node: null,
      why: "no node of prod is set to stay up and the console does not run on one: choose the node that stays",
    });
    expect(
      remainingNodeOf(group("pve1"), { remainingNode: "pve1" }, { node: "pve3", why: "x" }).why,
    ).toMatch(/^pve1 is set to stay up, but the console runs on pve3/);
    expect(remainingNodeOf(group("pve9"), { remainingNode: "pve9" }, null).why).toMatch(
      /^pve9 is set to stay up but is not a member of prod/,
    );
  });
});

describe("what ties a guest to its node", () => {
  it("a VM's passed-through PCI or USB device (not a SPICE port), a container's bind mount unless shared", () => {
    expect(
      guestDevices("qemu", {
        hostpci0: "0000:01:00.0",
        usb0: "host=1-2",
        usb1: "spice",
        scsi0: "local:1",
      }),
    ).toEqual(["hostpci0", "usb0"]);
    expect(
      guestDevices("lxc", {
        mp0: "/srv/data,mp=/data",
        mp1: "/mnt/nfs,mp=/nfs,shared=1",
        mp2: "nfs-vm:subvol-1-disk-1,mp=/x",
      }),
    ).toEqual(["mp0"]);
  });
});
