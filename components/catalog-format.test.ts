import { describe, expect, it } from "vitest";
import { formatSaleWindow, formatSize, formatUtc, publishConsequence } from "./catalog-format";

const draft = {
  id: "v",
  version: 2,
  templateVmid: 9001,
  publishedAt: null,
  saleEndsAt: null as string | null,
};

describe("catalog wording", () => {
  it("the publish confirmation says the template becomes required, and what hosts then do", () => {
    expect(publishConsequence("vps-small", draft, "requires")).toBe(
      "Publishing v2 of vps-small makes template VMID 9001 required on every host; hosts without it will build it during onboarding and fail the pre-sale check until they have it.",
    );
  });

  it("the publish confirmation does not claim a change when the template is required already or the window has ended", () => {
    expect(publishConsequence("vps-small", draft, "already-required")).toContain(
      "required on every host already",
    );
    const ended = publishConsequence(
      "vps-small",
      { ...draft, saleEndsAt: "2026-01-31T00:00:00.000Z" },
      "window-ended",
    );
    expect(ended).toContain("ended 2026-01-31 00:00 UTC");
    expect(ended).toContain("requires no template on any host");
  });

  it("instants, sizes and sale windows read the same on server and browser (UTC)", () => {
    expect(formatUtc("2026-12-01T10:05:00.000Z")).toBe("2026-12-01 10:05 UTC");
    expect(formatUtc("2026-12-01T11:05:00+01:00")).toBe("2026-12-01 10:05 UTC");
    expect(formatSize({ cores: 1, memoryMib: 1536, diskGib: 20 })).toBe(
      "1 core · 1536 MiB RAM · 20 GiB disk",
    );
    expect(formatSize({ cores: 2, memoryMib: 2048, diskGib: 40 })).toBe(
      "2 cores · 2 GiB RAM · 40 GiB disk",
    );
    expect(formatSaleWindow({ saleStartsAt: null, saleEndsAt: null })).toBe("open (no dates)");
    expect(
      formatSaleWindow({
        saleStartsAt: "2026-12-01T00:00:00Z",
        saleEndsAt: "2027-01-01T00:00:00Z",
      }),
    ).toBe("2026-12-01 00:00 UTC – 2027-01-01 00:00 UTC");
    expect(formatSaleWindow({ saleStartsAt: null, saleEndsAt: "2027-01-01T00:00:00Z" })).toBe(
      "until 2027-01-01 00:00 UTC",
    );
  });
});
