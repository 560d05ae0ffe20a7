import { describe, expect, it } from "vitest";
import { guestTags, isShedGuest, shedDueTargets, type ShedFeed } from "./shed-selection";

const since = new Date("2026-12-05T22:00:00Z");

function feed(upsId: string, over: Partial<ShedFeed> = {}): ShedFeed {
  return {
    upsId,
    name: upsId,
    fresh: true,
    onBattery: true,
    onBatteryMs: 120_000,
    onBatterySince: since,
    latched: false,
    ...over,
  };
}

const on = { enabled: true, afterMinutes: 2 };
const target = (feeds: string[], feedPolicy: "any" | "all" = "any") => ({
  id: "t1",
  name: "pve1",
  feedPolicy,
  feeds,
});

describe("a guest's tags", () => {
  it("splits Proxmox's tags on ; , and spaces and compares them without case", () => {
    expect(guestTags("web;Shed, db  x")).toEqual(["web", "shed", "db", "x"]);
    expect(guestTags(undefined)).toEqual([]);
    const selection = { tag: "shed", guests: [{ node: "pve2", vmid: 110 }] };
    expect(isShedGuest({ node: "pve1", vmid: 101, tags: "prod;SHED" }, selection)).toBe(true);
    expect(isShedGuest({ node: "pve1", vmid: 102, tags: "shedding" }, selection)).toBe(false);
    expect(isShedGuest({ node: "pve2", vmid: 110 }, selection)).toBe(true);
    expect(isShedGuest({ node: "pve1", vmid: 110 }, selection)).toBe(false);
  });
});

describe("which targets shed now", () => {
  it("row 1: off (the default) sheds nothing, however long on battery", () => {
    const feeds = new Map([["u1", feed("u1", { onBatteryMs: 3_600_000 })]]);
    expect(
      shedDueTargets({ settings: { ...on, enabled: false }, targets: [target(["u1"])], feeds }),
    ).toEqual([]);
  });

  it("row 2: the main trigger latched on a feed: the main shutdown has it, no shed", () => {
    const feeds = new Map([["u1", feed("u1", { latched: true })]]);
    expect(shedDueTargets({ settings: on, targets: [target(["u1"])], feeds })).toEqual([]);
  });

  it("row 3: on battery one ms short of the threshold sheds nothing; at it, the target is due once per outage", () => {
    const short = new Map([["u1", feed("u1", { onBatteryMs: 119_999 })]]);
    expect(shedDueTargets({ settings: on, targets: [target(["u1"])], feeds: short })).toEqual([]);
    const due = shedDueTargets({
      settings: on,
      targets: [target(["u1"])],
      feeds: new Map([["u1", feed("u1")]]),
    });
    expect(due).toEqual([
      { targetId: "t1", outages: [`u1@${since.toISOString()}`], why: "u1 on battery for 2 min" },
    ]);
  });

  it("row 3: a feed that cannot be read, a stale reading or mains never counts as on battery", () => {
    for (const over of [{ fresh: false }, { onBattery: false }, { onBattery: null }]) {
      const feeds = new Map([["u1", feed("u1", over)]]);
      expect(shedDueTargets({ settings: on, targets: [target(["u1"])], feeds })).toEqual([]);
    }
  });

  it("row 3: `all` needs every feed on battery that long, `any` one", () => {
    const feeds = new Map([
      ["u1", feed("u1")],
      ["u2", feed("u2", { onBattery: false, onBatteryMs: null })],
    ]);
    expect(shedDueTargets({ settings: on, targets: [target(["u1", "u2"], "all")], feeds })).toEqual(
      [],
    );
    expect(
      shedDueTargets({ settings: on, targets: [target(["u1", "u2"], "any")], feeds }),
    ).toHaveLength(1);
  });
});
