import { describe, expect, it } from "vitest";
import {
  decideReboot,
  isProxmoxKernel,
  parseRebootProbe,
  type HostAnswer,
  type RebootRecord,
} from "./reboot-into-pve-kernel";

const debian: HostAnswer = {
  kernel: "6.12.57+deb13-amd64",
  bootId: "boot-1",
  kernelPackageInstalled: true,
};
const record: RebootRecord = {
  requestedAt: "2026-01-01T10:00:00.000Z",
  deadlineAt: "2026-01-01T10:15:00.000Z",
  bootIdBefore: "boot-1",
  kernelBefore: debian.kernel,
  lastSeen: "reboot requested",
};
const during = new Date("2026-01-01T10:01:00.000Z");
const late = new Date("2026-01-01T10:16:00.000Z");

describe("RebootIntoPveKernel", () => {
  it("recognises Proxmox kernels by their -pve suffix", () => {
    expect(isProxmoxKernel("6.17.2-1-pve")).toBe(true);
    expect(isProxmoxKernel("6.12.57+deb13-amd64")).toBe(false);
  });

  it("parses kernel, boot id and whether the Proxmox kernel package is installed", () => {
    expect(
      parseRebootProbe(
        "6.12.57+deb13-amd64\n--clupilot--\nabc\n--clupilot--\nproxmox-default-kernel\tinstalled\n",
      ),
    ).toEqual({ kernel: "6.12.57+deb13-amd64", bootId: "abc", kernelPackageInstalled: true });
  });

  it("a Proxmox kernel running → advance, whether or not this run rebooted (a visit after the reboot never reboots again)", () => {
    const pve = { kind: "answered" as const, answer: { ...debian, kernel: "6.17.2-1-pve" } };
    expect(decideReboot(null, pve, during, 900).kind).toBe("advance");
    expect(decideReboot(record, pve, during, 900).kind).toBe("advance");
  });

  it("no reboot of ours yet: the old kernel with a Proxmox kernel installed → reboot", () => {
    expect(decideReboot(null, { kind: "answered", answer: debian }, during, 900)).toEqual({
      kind: "reboot",
    });
  });

  it("no Proxmox kernel installed → fail instead of a pointless reboot", () => {
    expect(
      decideReboot(
        null,
        { kind: "answered", answer: { ...debian, kernelPackageInstalled: false } },
        during,
        900,
      ),
    ).toMatchObject({
      kind: "fail",
      reason: expect.stringMatching(/InstallProxmoxKernel/) as string,
    });
  });

  it("unreachable without a reboot of ours → the engine's ordinary retry", () => {
    expect(
      decideReboot(null, { kind: "unreachable", what: "connection refused" }, during, 900),
    ).toEqual({ kind: "rethrow" });
  });

  it("while waiting: refused connections and the old boot still up are polled", () => {
    expect(
      decideReboot(record, { kind: "unreachable", what: "connection refused" }, during, 900),
    ).toEqual({ kind: "poll", lastSeen: "connection refused" });
    expect(decideReboot(record, { kind: "answered", answer: debian }, during, 900)).toEqual({
      kind: "poll",
      lastSeen: "still answering with the old kernel 6.12.57+deb13-amd64 (not rebooted yet)",
    });
  });

  it("back with a new boot id but the old kernel → fail at once", () => {
    expect(
      decideReboot(
        record,
        { kind: "answered", answer: { ...debian, bootId: "boot-2" } },
        during,
        900,
      ),
    ).toMatchObject({
      kind: "fail",
      reason: expect.stringMatching(
        /^the host rebooted \(after 60 s\) but came back with kernel 6\.12\.57\+deb13-amd64/,
      ) as string,
    });
  });

  it("past the deadline → fail with how long it waited and what it last saw", () => {
    expect(
      decideReboot(record, { kind: "unreachable", what: "no SSH answer (timeout)" }, late, 900),
    ).toEqual({
      kind: "fail",
      reason:
        "the host did not come back with a Proxmox kernel within 900 s of the reboot (waited 960 s); last seen: no SSH answer (timeout). Check the host's console (boot loader, network), then Retry",
    });
  });
});
