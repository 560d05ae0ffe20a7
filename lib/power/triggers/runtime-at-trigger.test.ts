import { describe, expect, it } from "vitest";
import { ZTriggerSettings } from "@/lib/power/config/settings";
import { runtimeAtTrigger } from "./runtime-at-trigger";

const defaults = ZTriggerSettings.parse({});
const off = { runtimeBelowSeconds: null, chargeBelowPercent: null, onBatteryForSeconds: null };

describe("the runtime left when the trigger fires", () => {
  it("runtime below R leaves R, whatever the UPS reports today", () => {
    expect(
      runtimeAtTrigger(
        { ...defaults, ...off, runtimeBelowSeconds: 300 },
        {
          runtimeSeconds: 3600,
          chargePercent: 100,
        },
      ),
    ).toEqual({ seconds: 300, row: "runtime below 5 min 0 s" });
  });

  it("charge below C % converts with the UPS's own seconds per percent", () => {
    const at = runtimeAtTrigger(
      { ...defaults, ...off, chargeBelowPercent: 30 },
      {
        runtimeSeconds: 1200,
        chargePercent: 80,
      },
    );
    expect(at.seconds).toBe(450);
  });

  it("on battery for N s: a full battery's runtime at this load, less N", () => {
    const at = runtimeAtTrigger(
      { ...defaults, ...off, onBatteryForSeconds: 600 },
      {
        runtimeSeconds: 1200,
        chargePercent: 80,
      },
    );
    expect(at.seconds).toBe(900);
  });

  it("the first row that fires leaves the most: that is the trigger point", () => {
    expect(runtimeAtTrigger(defaults, { runtimeSeconds: 1200, chargePercent: 80 }).seconds).toBe(
      900,
    );
    // A long on-battery limit fires last: the charge row comes first and leaves more.
    expect(
      runtimeAtTrigger(
        { ...defaults, onBatteryForSeconds: 1400 },
        { runtimeSeconds: 1200, chargePercent: 80 },
      ).seconds,
    ).toBe(450);
  });

  it("cannot tell when only the UPS's own low battery fires, or nothing was read", () => {
    expect(
      runtimeAtTrigger({ ...defaults, ...off }, { runtimeSeconds: 1200, chargePercent: 80 }),
    ).toMatchObject({ seconds: null, why: expect.stringMatching(/UPS's own low battery/) });
    expect(runtimeAtTrigger({ ...defaults, ...off, chargeBelowPercent: 30 }, null)).toMatchObject({
      seconds: null,
      why: "no reading of this UPS yet",
    });
    expect(
      runtimeAtTrigger(
        { ...defaults, ...off, chargeBelowPercent: 30 },
        { runtimeSeconds: null, chargePercent: 80 },
      ),
    ).toMatchObject({ seconds: null, why: expect.stringMatching(/no charge and runtime/) });
  });
});
