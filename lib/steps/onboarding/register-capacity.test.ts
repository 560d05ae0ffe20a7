import { describe, expect, it } from "vitest";
import type { TNodeStatus } from "@/lib/proxmox/schemas";
import { computeCapacity, judgeCapacity } from "./register-capacity";

const GIB = 1024 ** 3;
const status: TNodeStatus = {
  cpuinfo: { cpus: 16, cores: 8, sockets: 1 },
  memory: { total: 64 * GIB + 123 },
};
const storage = (over: Record<string, unknown>) => ({
  storage: "local-lvm",
  type: "lvmthin",
  content: "images,rootdir",
  active: 1,
  enabled: 1,
  total: 256 * GIB,
  ...over,
});

describe("RegisterCapacity", () => {
  it("records logical CPUs, memory in MiB and the image storages' total in GiB", () => {
    const capacity = computeCapacity(status, [
      storage({}),
      storage({ storage: "local", type: "dir", content: "images,iso", total: 100.7 * GIB }),
    ]);
    expect(capacity).toMatchObject({ cores: 16, memoryMib: 65536, imageStorageGib: 356 });
    expect(judgeCapacity("pve1", capacity)).toMatchObject({ kind: "advance" });
  });

  it("no storage accepts disk images → fail saying how to add images", () => {
    const outcome = judgeCapacity("pve1", computeCapacity(status, []));
    expect(outcome).toMatchObject({ kind: "fail" });
    expect(outcome.kind === "fail" && outcome.reason).toMatch(
      /no storage on pve1 accepts disk images.*pvesm set local/,
    );
  });

  it("an inactive or disabled image storage offers nothing", () => {
    const inactive = computeCapacity(status, [storage({ active: 0, total: 0 })]);
    expect(inactive.imageStorageGib).toBe(0);
    const outcome = judgeCapacity("pve1", inactive);
    expect(outcome.kind === "fail" && outcome.reason).toMatch(/local-lvm.*not active/);
    expect(computeCapacity(status, [storage({ enabled: 0 })]).imageStorageGib).toBe(0);
  });

  it("a storage without images in its content is not counted", () => {
    expect(
      computeCapacity(status, [storage({ content: "iso,vztmpl,backup" })]).imageStorages,
    ).toEqual([]);
  });
});
