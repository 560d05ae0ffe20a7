import { describe, expect, it } from "vitest";
import { requiredFromVersions } from "./required-template-vmids";

const now = new Date("2026-11-30T12:00:00Z");
const day = 86_400_000;
const at = (offsetDays: number) => new Date(now.getTime() + offsetDays * day);

describe("requiredTemplateVmids", () => {
  it("no published catalog → nothing required, and says so", () => {
    expect(
      requiredFromVersions([{ templateVmid: 9000, publishedAt: null, saleEndsAt: null }], now),
    ).toEqual({
      catalogPublished: false,
      vmids: [],
    });
    expect(requiredFromVersions([], now).catalogPublished).toBe(false);
  });

  it("published versions on sale require their templates, once each, ascending", () => {
    expect(
      requiredFromVersions(
        [
          { templateVmid: 9001, publishedAt: at(-3), saleEndsAt: null },
          { templateVmid: 9000, publishedAt: at(-3), saleEndsAt: at(10) },
          { templateVmid: 9001, publishedAt: at(-1), saleEndsAt: null },
        ],
        now,
      ),
    ).toEqual({ catalogPublished: true, vmids: [9000, 9001] });
  });

  it("a version whose sale window ended no longer requires its template", () => {
    expect(
      requiredFromVersions([{ templateVmid: 9000, publishedAt: at(-30), saleEndsAt: at(-1) }], now),
    ).toEqual({
      catalogPublished: true,
      vmids: [],
    });
  });

  it("the window ends at its end instant, not after", () => {
    expect(
      requiredFromVersions([{ templateVmid: 9000, publishedAt: at(-30), saleEndsAt: now }], now)
        .vmids,
    ).toEqual([]);
  });

  it("a version published for the future is not yet required", () => {
    expect(
      requiredFromVersions([{ templateVmid: 9000, publishedAt: at(1), saleEndsAt: null }], now),
    ).toEqual({
      catalogPublished: false,
      vmids: [],
    });
  });
});
