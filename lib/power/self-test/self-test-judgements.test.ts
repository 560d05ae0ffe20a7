import { describe, expect, it } from "vitest";
import type { UpsReading } from "../ups/reading";
import { judgeConsoleGuest, type ConsoleGuestFacts } from "./check-console-guest";
import { judgeUpsReading } from "./check-ups";
import { guestVolumes } from "../clusters/guest-volumes";
import { requiredPowerPrivileges } from "./required-privileges";
import { checksOf, overallVerdict } from "./verdict";

const UPS = { id: "u1", name: "ups-a" };
const reading = (values: Partial<Extract<UpsReading, { kind: "reading" }>>): UpsReading => ({
  kind: "reading",
  at: new Date(),
  onBattery: false,
  lowBattery: false,
  chargePercent: 100,
  runtimeSeconds: 1800,
  reportedSecondsOnBattery: null,
  rawStatus: "OL",
  ...values,
});

describe("the self-test's verdict", () => {
  it("is the worst check's, and 'could not check' is never ok", () => {
    expect(overallVerdict([{ verdict: "ok" }, { verdict: "warning" }])).toBe("warning");
    expect(overallVerdict([{ verdict: "ok" }, { verdict: "could-not-check" }])).toBe(
      "could-not-check",
    );
    expect(overallVerdict([{ verdict: "warning" }, { verdict: "could-not-check" }])).toBe(
      "could-not-check",
    );
    expect(overallVerdict([{ verdict: "could-not-check" }, { verdict: "failed" }])).toBe("failed");
    expect(overallVerdict([{ verdict: "ok" }])).toBe("ok");
  });

  it("with no check at all is 'could not check', not ok", () => {
    expect(overallVerdict([])).toBe("could-not-check");
  });
});

describe("a UPS's answer", () => {
  it("on mains with charge and runtime is plausible", () => {
    expect(judgeUpsReading(UPS, reading({}))).toMatchObject({ verdict: "ok", key: "ups:u1" });
  });

  it("without a reliable reading fails with the reason", () => {
    const check = judgeUpsReading(UPS, {
      kind: "unreliable",
      at: new Date(),
      reason: 'upsd answered: ups.status "BOGUS" says neither OL nor OB',
    });
    expect(check.verdict).toBe("failed");
    expect(check.reason).toContain("neither OL nor OB");
    expect(check.next).toMatch(/NUT server or SNMP agent/);
  });

  it("saying no runtime left while on mains fails: the runtime trigger would fire at once", () => {
    const check = judgeUpsReading(UPS, reading({ runtimeSeconds: 0 }));
    expect(check.verdict).toBe("failed");
    expect(check.reason).toContain("runtime trigger would fire");
  });

  it("with a charge outside 0–100 % fails", () => {
    expect(judgeUpsReading(UPS, reading({ chargePercent: 140 })).verdict).toBe("failed");
  });

  it("without charge or runtime is a warning naming the blind trigger", () => {
    const check = judgeUpsReading(UPS, reading({ chargePercent: null, runtimeSeconds: null }));
    expect(check.verdict).toBe("warning");
    expect(check.reason).toContain("the charge trigger and the runtime trigger");
  });
});

describe("the privileges power needs", () => {
  it("on a standalone node: only Sys.PowerMgmt on the node", () => {
    expect(requiredPowerPrivileges("pve1", { cluster: false, ceph: false })).toEqual([
      expect.objectContaining({ privilege: "Sys.PowerMgmt", path: "/nodes/pve1" }),
    ]);
  });

  it("on a cluster member: HA disarm, guests, and Ceph flags only on hyper-converged Ceph", () => {
    const plain = requiredPowerPrivileges("pve1", { cluster: true, ceph: false });
    expect(plain.map((p) => `${p.privilege} ${p.path}`)).toEqual([
      "Sys.PowerMgmt /nodes/pve1",
      "Sys.Console /",
      "VM.PowerMgmt /vms",
      "VM.Audit /vms",
    ]);
    const ceph = requiredPowerPrivileges("pve1", { cluster: true, ceph: true });
    expect(ceph.at(-1)).toMatchObject({ privilege: "Sys.Modify", path: "/" });
    expect(ceph.at(-1)!.purpose).toMatch(/Ceph flags/);
    const consolidating = requiredPowerPrivileges("pve1", {
      cluster: true,
      ceph: false,
      migrate: true,
    });
    expect(consolidating.at(-1)).toMatchObject({ privilege: "VM.Migrate", path: "/vms" });
    expect(consolidating.at(-1)!.purpose).toMatch(/consolidate/);
  });
});

describe("the console's own guest on Ceph", () => {
  const check = checksOf({ id: "c1", name: "lab" })("cluster-console-guest", "guest off Ceph");
  const facts = (over: Partial<ConsoleGuestFacts>): ConsoleGuestFacts => ({
    vmid: 500,
    type: "qemu",
    name: "clupilot",
    node: "pve1",
    volumes: [],
    storageTypes: new Map([
      ["local-lvm", "lvmthin"],
      ["vm-pool", "rbd"],
      ["cephfs", "cephfs"],
    ]),
    ...over,
  });

  it("reads the attached volumes of a VM and a container, not detached or passthrough ones", () => {
    expect(
      guestVolumes("qemu", {
        scsi0: "vm-pool:vm-500-disk-0,size=32G",
        efidisk0: "local-lvm:vm-500-disk-1,efitype=4m",
        ide2: "none,media=cdrom",
        sata1: "/dev/disk/by-id/ata-X,size=1T",
        unused0: "vm-pool:vm-500-disk-9",
        net0: "virtio=AA:BB:CC:DD:EE:FF,bridge=vmbr0",
      }),
    ).toEqual([
      { key: "scsi0", storage: "vm-pool" },
      { key: "efidisk0", storage: "local-lvm" },
    ]);
    expect(
      guestVolumes("lxc", {
        rootfs: "local-lvm:vm-501-disk-0,size=8G",
        mp0: "cephfs:subvol-501-disk-1,mp=/data",
        mp1: "/srv/share,mp=/share",
      }),
    ).toEqual([
      { key: "rootfs", storage: "local-lvm" },
      { key: "mp0", storage: "cephfs" },
    ]);
  });

  it("warns about every volume on RBD or CephFS, and passes one kept off Ceph", () => {
    const own = { node: "pve1", vmid: 500 };
    const warned = judgeConsoleGuest(
      "lab",
      own,
      facts({
        volumes: [
          { key: "scsi0", storage: "local-lvm" },
          { key: "scsi1", storage: "vm-pool" },
          { key: "ide2", storage: "cephfs" },
        ],
      }),
      check,
    );
    expect(warned.verdict).toBe("warning");
    expect(warned.reason).toContain(
      "keeps scsi1 on vm-pool (rbd), ide2 on cephfs (cephfs) on Ceph",
    );
    expect(warned.next).toContain("Move those volumes");
    const ok = judgeConsoleGuest(
      "lab",
      own,
      facts({ volumes: [{ key: "scsi0", storage: "local-lvm" }] }),
      check,
    );
    expect(ok).toMatchObject({
      verdict: "ok",
      reason: expect.stringContaining("scsi0 on local-lvm (lvmthin)"),
    });
  });

  it("a guest HA moved off the configured node is a warning even with its disks off Ceph", () => {
    const moved = judgeConsoleGuest(
      "lab",
      { node: "pve2", vmid: 500 },
      facts({ volumes: [{ key: "scsi0", storage: "local-lvm" }] }),
      check,
    );
    expect(moved.verdict).toBe("warning");
    expect(moved.reason).toContain("It runs on pve1, not on pve2 as set");
  });
});
