import { describe, expect, it } from "vitest";
import { parseStartup } from "@/lib/power/records/startup-order";
import { startBatches } from "./start-order";

describe("the startup property as Proxmox writes it", () => {
  it("reads order, up and down, with or without 'order='", () => {
    expect(parseStartup("order=2,up=30,down=60")).toEqual({ order: 2, up: 30, down: 60 });
    expect(parseStartup("1,up=15")).toEqual({ order: 1, up: 15, down: null });
    expect(parseStartup("up=5")).toEqual({ order: null, up: 5, down: null });
    expect(parseStartup("3")).toEqual({ order: 3, up: null, down: null });
  });

  it("counts a missing or malformed value as no order at all", () => {
    for (const value of [undefined, null, "", "order=x", "up=1,2", "order=-1", 5, "foo=1"]) {
      expect(parseStartup(value)).toEqual({ order: null, up: null, down: null });
    }
  });
});

describe("the start order (pve-manager's startall)", () => {
  const g = (vmid: number, order: number | null, up: number | null = null) => ({
    vmid,
    order,
    up,
  });

  it("starts by order ascending, guests without an order last, ties by VMID", () => {
    const batches = startBatches([g(300, null), g(104, 2), g(101, 2), g(200, 1), g(150, null)]);
    expect(batches.map((b) => b.map((x) => x.vmid))).toEqual([[200], [101, 104], [150, 300]]);
  });

  it("keeps order 0 before order 1 and an empty list empty", () => {
    expect(startBatches([g(2, 1), g(1, 0)]).map((b) => b[0]!.vmid)).toEqual([1, 2]);
    expect(startBatches([])).toEqual([]);
  });
});
