import { describe, expect, it } from "vitest";
import { powerFormInput } from "./power-form-input";

const form = (entries: [string, string][]) => {
  const data = new FormData();
  for (const [key, value] of entries) data.append(key, value);
  return data;
};

describe("a power form as the domain's nested input", () => {
  it("nests dotted names, keeps strings as strings (a numeric password stays text) and numbers as numbers", () => {
    expect(
      powerFormInput(
        form([
          ["name", "ups1"],
          ["source.type", "nut"],
          ["source.host", "10.0.0.9"],
          ["source.port", "3493"],
          ["source.password", "1234"],
          ["triggerOverrides.chargeBelowPercent", "40"],
        ]),
      ),
    ).toEqual({
      name: "ups1",
      source: { type: "nut", host: "10.0.0.9", port: 3493, password: "1234" },
      triggerOverrides: { chargeBelowPercent: 40 },
    });
  });

  it("an empty secret is left out (the stored one stays); an empty override follows the default; 'off' turns it off", () => {
    expect(
      powerFormInput(
        form([
          ["source.password", ""],
          ["triggerOverrides.runtimeBelowSeconds", ""],
          ["triggerOverrides.onBatteryForSeconds", "off"],
        ]),
      ),
    ).toEqual({ triggerOverrides: { onBatteryForSeconds: null } });
  });

  it("in the global settings an empty threshold is off; yes/no fields become booleans; lists keep every value", () => {
    expect(
      powerFormInput(
        form([
          ["triggers.runtimeBelowSeconds", ""],
          ["triggers.lowBattery", "false"],
          ["runsConsole", "on"],
          ["feeds", "a"],
          ["feeds", "b"],
          ["confirmPlanChange", "yes"],
        ]),
        "null",
      ),
    ).toEqual({
      triggers: { runtimeBelowSeconds: null, lowBattery: false },
      runsConsole: true,
      feeds: ["a", "b"],
      confirmPlanChange: "yes",
    });
  });

  it("a node name stays text even when it is all digits; empty, it means none", () => {
    expect(
      powerFormInput(
        form([
          ["shutdown.consoleGuest.node", "100"],
          ["shutdown.consoleGuest.vmid", "390"],
          ["consolidate.remainingNode", ""],
          ["consolidate.firstThreshold.chargeBelowPercent", "60"],
          ["consolidate.firstThreshold.runtimeBelowSeconds", ""],
        ]),
        "null",
      ),
    ).toEqual({
      shutdown: { consoleGuest: { node: "100", vmid: 390 } },
      consolidate: {
        remainingNode: null,
        firstThreshold: { chargeBelowPercent: 60, runtimeBelowSeconds: null },
      },
    });
  });

  it("a number that is not one stays text, for the schema to refuse with its own message", () => {
    expect(powerFormInput(form([["stage", "first"]]))).toEqual({ stage: "first" });
  });

  it("plain objects pass through untouched; anything else is refused as not a form", () => {
    const input = { mode: "armed", confirmedTargetIds: ["x"] };
    expect(powerFormInput(input)).toBe(input);
    for (const value of [null, "x", [1], 3]) {
      expect(() => powerFormInput(value as never)).toThrow(/not a form/);
    }
  });
});
