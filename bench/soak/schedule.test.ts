import { describe, expect, it } from "vitest";
import { seededRandom } from "./prng";
import {
  chaosSchedule,
  FAULTS,
  loadSchedule,
  LOAD_STOPS_BEFORE_END_MS,
  QUIET_MS,
  soakSchedule,
  type ScheduleOptions,
} from "./schedule";

const TWO_MINUTES: ScheduleOptions = { durationMs: 120_000, nodes: 4 };
const HALF_AN_HOUR: ScheduleOptions = { durationMs: 30 * 60_000, nodes: 4 };

describe("the soak's schedule", () => {
  it("is the same for the same seed (a failure replays) and differs for another", () => {
    expect(soakSchedule(seededRandom(12), HALF_AN_HOUR)).toEqual(
      soakSchedule(seededRandom(12), HALF_AN_HOUR),
    );
    expect(soakSchedule(seededRandom(13), HALF_AN_HOUR)).not.toEqual(
      soakSchedule(seededRandom(12), HALF_AN_HOUR),
    );
  });

  it("leaves the end quiet: no fault in the last 75 s, no new load in the last 30 s", () => {
    for (let seed = 0; seed < 50; seed++) {
      const { chaos, load } = soakSchedule(seededRandom(seed), HALF_AN_HOUR);
      expect(Math.max(...chaos.map((e) => e.atMs))).toBeLessThan(
        HALF_AN_HOUR.durationMs - QUIET_MS,
      );
      expect(Math.max(...load.map((e) => e.atMs))).toBeLessThan(
        HALF_AN_HOUR.durationMs - LOAD_STOPS_BEFORE_END_MS,
      );
    }
  });

  it("deals faults from a deck: each kind once per round, every kind about as often", () => {
    const { chaos } = soakSchedule(seededRandom(3), HALF_AN_HOUR);
    for (let round = 0; round + FAULTS.length <= chaos.length; round += FAULTS.length) {
      const kinds = chaos.slice(round, round + FAULTS.length).map((e) => e.fault);
      expect(new Set(kinds).size).toBe(FAULTS.length);
    }
  });

  it("gives a two-minute soak nearly every kind of fault in its first 45 s", () => {
    for (let seed = 0; seed < 50; seed++) {
      const { chaos } = soakSchedule(seededRandom(seed), TWO_MINUTES);
      expect(new Set(chaos.map((e) => e.fault)).size).toBeGreaterThanOrEqual(FAULTS.length - 4);
    }
  });

  it("aims node faults at existing nodes, with windows of 5 to 20 s", () => {
    const { chaos } = soakSchedule(seededRandom(5), HALF_AN_HOUR);
    for (const event of chaos) {
      expect(event.node).toBeGreaterThanOrEqual(0);
      expect(event.node).toBeLessThan(HALF_AN_HOUR.nodes);
      if (event.fault.startsWith("api.") || event.fault === "ssh.dropMidCommand") {
        expect(event.durationMs).toBeGreaterThanOrEqual(5_000);
        expect(event.durationMs).toBeLessThanOrEqual(20_000);
      }
    }
  });

  it("keeps a seed's onboarding chaos and load as they were before power: power draws from streams of its own", () => {
    const random = seededRandom(7);
    const chaosRandom = random.fork();
    const loadRandom = random.fork();
    const schedule = soakSchedule(seededRandom(7), HALF_AN_HOUR);
    expect(schedule.chaos).toEqual(chaosSchedule(chaosRandom, HALF_AN_HOUR));
    expect(schedule.load).toEqual(loadSchedule(loadRandom, HALF_AN_HOUR));
  });

  it("starts every power load with an outage in dry-run and one armed, and keeps UPS faults out of the quiet end", () => {
    for (let seed = 0; seed < 50; seed++) {
      const { powerLoad, powerFaults } = soakSchedule(seededRandom(seed), TWO_MINUTES);
      expect(
        powerLoad
          .slice(0, 2)
          .map((e) => e.action)
          .sort(),
      ).toEqual(["outage.armed", "outage.dryRun"]);
      expect(powerFaults.length).toBeGreaterThan(0);
      for (const event of powerFaults) {
        expect(event.atMs).toBeLessThan(TWO_MINUTES.durationMs - QUIET_MS);
      }
    }
  });
});
