import { describe, expect, it } from "vitest";
import type { UpsReading } from "../ups/reading";
import { judgeUpsReading } from "./check-ups";
import { requiredPowerPrivileges } from "./required-privileges";
import { overallVerdict } from "./verdict";

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
  });
});
