import { describe, expect, it } from "vitest";
import { compareStartupOrder, NO_STARTUP_ORDER, parseStartupOrder } from "./startup-order";

describe("a guest's startup option, read as Proxmox reads it", () => {
  it("takes every form the typetext allows", () => {
    expect(parseStartupOrder("order=2,up=30,down=60")).toEqual({
      order: 2,
      upSeconds: 30,
      downSeconds: 60,
    });
    expect(parseStartupOrder("3")).toEqual({ order: 3, upSeconds: null, downSeconds: null });
    expect(parseStartupOrder("up=15")).toEqual({ order: null, upSeconds: 15, downSeconds: null });
    expect(parseStartupOrder("order=1,,up=5")).toEqual({
      order: 1,
      upSeconds: 5,
      downSeconds: null,
    });
  });

  it("has no order without the option", () => {
    expect(parseStartupOrder(undefined)).toEqual(NO_STARTUP_ORDER);
    expect(parseStartupOrder("")).toEqual(NO_STARTUP_ORDER);
  });

  it("refuses what Proxmox refuses rather than guessing", () => {
    expect(parseStartupOrder("order=-1")).toBeNull();
    expect(parseStartupOrder("first")).toBeNull();
    expect(parseStartupOrder("order=1,up=soon")).toBeNull();
    expect(parseStartupOrder(" order=1")).toBeNull();
  });

  it("orders as startall does: by order, unordered last, then by VMID", () => {
    const guest = (vmid: number, startup: string) => ({
      vmid,
      startup: parseStartupOrder(startup)!,
    });
    const sorted = [guest(300, ""), guest(120, "order=2"), guest(110, "order=2"), guest(200, "1")]
      .sort(compareStartupOrder)
      .map((g) => g.vmid);
    expect(sorted).toEqual([200, 110, 120, 300]);
  });
});
