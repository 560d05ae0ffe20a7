import { describe, expect, it } from "vitest";
import { parseLiveMessage } from "@/lib/live/listener";
import { isPowerLiveMessage, powerKeys, powerKeysFor } from "./power-keys";

const UPS = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";

describe("power messages on the live stream", () => {
  it("the web server relays the monitor's power notifications (a reading, an event, a mode change)", () => {
    for (const message of [
      { type: "power", upsId: UPS, eventId: null },
      { type: "power", upsId: UPS, eventId: 42 },
      { type: "power", upsId: null, eventId: null },
    ]) {
      const parsed = parseLiveMessage(JSON.stringify(message));
      expect(parsed).toEqual(message);
      expect(isPowerLiveMessage(parsed)).toBe(true);
    }
    expect(parseLiveMessage(JSON.stringify({ type: "power", upsId: "x", eventId: null }))).toBe(
      null,
    );
  });

  it("a reading refreshes the cards and the plan; an event also the log, the run, the way back, the shed, the protection, the mode and the self-test; a configuration change everything", () => {
    expect(powerKeysFor({ type: "power", upsId: UPS, eventId: null })).toEqual([
      powerKeys.overview,
      powerKeys.plan,
    ]);
    expect(powerKeysFor({ type: "power", upsId: UPS, eventId: 7 })).toEqual([
      powerKeys.overview,
      powerKeys.plan,
      powerKeys.events,
      powerKeys.shutdownRun,
      powerKeys.powerBack,
      powerKeys.shed,
      powerKeys.protection,
      powerKeys.mode,
      powerKeys.selfTest,
    ]);
    expect(powerKeysFor({ type: "power", upsId: null, eventId: null })).toEqual([powerKeys.all]);
  });
});
