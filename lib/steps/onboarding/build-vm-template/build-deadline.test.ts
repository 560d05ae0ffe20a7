import { describe, expect, it } from "vitest";
import { buildDeadlineSeconds, MAX_DURATION_SECONDS } from ".";

describe("BuildVmTemplate's own deadline is capped below maxDuration", () => {
  it("the default 45 minutes stays as configured", () => {
    expect(buildDeadlineSeconds(2700, MAX_DURATION_SECONDS, 30)).toBe(2700);
  });
  it("a configured deadline at or above maxDuration is cut to leave a tenth of it for the give-up path", () => {
    expect(buildDeadlineSeconds(3600, MAX_DURATION_SECONDS, 30)).toBe(3240);
    expect(buildDeadlineSeconds(99_999, MAX_DURATION_SECONDS, 30)).toBe(3240);
  });
  it("a poll interval longer than a tenth widens the margin: the last watch still ends before maxDuration", () => {
    expect(buildDeadlineSeconds(3600, 600, 120)).toBe(480);
  });
});
