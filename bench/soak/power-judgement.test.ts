import { describe, expect, it } from "vitest";
import { judgePower, type PowerRecord, type PowerRun } from "./power-judgement";
import type { PowerEpisode } from "./power-load";

const since = (at: number) => `+${at} ms`;
const targets = [
  { id: "t1", node: "pwr1" },
  { id: "t2", node: "pwr2" },
];
const armedOutage: PowerEpisode = {
  action: "outage.armed",
  armed: true,
  lowBatteryAt: 1000,
  outage: true,
  endedAt: 5000,
  problems: [],
};
const dryOutage: PowerEpisode = {
  action: "outage.dryRun",
  armed: false,
  lowBatteryAt: 10_000,
  outage: true,
  endedAt: 12_000,
  problems: [],
};

function run(id: string, createdAt: number, latchedAt: string, patch: Partial<PowerRun> = {}) {
  return {
    id,
    createdAt,
    status: "succeeded",
    failureReason: null,
    latchedAt,
    replaces: [],
    ...patch,
  };
}

/** An armed outage at 1000–5000 ms (armed at 500, disarmed at 9000), then a dry-run one. */
function record(patch: Partial<PowerRecord> = {}): PowerRecord {
  return {
    modes: [
      { at: 500, kind: "mode.armed" },
      { at: 9000, kind: "mode.disarmed" },
    ],
    calls: [
      { targetId: "t1", state: "sent", runCreatedAt: 1100 },
      { targetId: "t2", state: "sent", runCreatedAt: 1100 },
      { targetId: "t1", state: "would_send", runCreatedAt: 10_100 },
      { targetId: "t2", state: "would_send", runCreatedAt: 10_100 },
    ],
    runs: [run("armed-run", 1100, "L1"), run("dry-run", 10_100, "L2")],
    requests: [
      { node: "pwr1", at: 1200 },
      { node: "pwr2", at: 1300 },
    ],
    targets,
    episodes: [armedOutage, dryOutage],
    faultsInjected: 3,
    ...patch,
  };
}

const held = (r: PowerRecord) =>
  Object.fromEntries(judgePower(r, since).map((v) => [v.invariant, v.held]));

describe("the soak's power invariants", () => {
  it("hold for one call per target in an armed outage and would-sends in a dry-run one", () => {
    expect(Object.values(held(record()))).toEqual([true, true, true, true, true]);
  });

  it("break when a call reaches a lab node while dry-run", () => {
    const verdicts = held(
      record({ requests: [...record().requests, { node: "pwr1", at: 10_200 }] }),
    );
    expect(verdicts["(power) no shutdown call reached a lab node while dry-run"]).toBe(false);
  });

  it("break when a target gets a second call in one outage, or none", () => {
    const twice = record({ requests: [...record().requests, { node: "pwr2", at: 2000 }] });
    expect(held(twice)["(power) armed: exactly one shutdown call per target per outage"]).toBe(
      false,
    );
    const none = record({ requests: [{ node: "pwr1", at: 1200 }] });
    expect(held(none)["(power) armed: exactly one shutdown call per target per outage"]).toBe(
      false,
    );
  });

  it("allow a call whose outcome is unknown (its worker died mid-call) to have arrived or not", () => {
    const calls = record().calls.map((c) =>
      c.targetId === "t2" && c.state === "sent" ? { ...c, state: "unknown" } : c,
    );
    const r = record({ calls, requests: [{ node: "pwr1", at: 1200 }] });
    expect(held(r)["(power) armed: exactly one shutdown call per target per outage"]).toBe(true);
  });

  it("break when a shutdown run starts without a low battery the soak caused", () => {
    const r = record({ runs: [...record().runs, run("flap", 7000, "L3")] });
    expect(held(r)["(power) no shutdown run without a low battery the soak caused"]).toBe(false);
  });

  const ONE_RUN = "(power) one shutdown run per outage, more only to replace a lost one";
  const lost = { status: "failed", failureReason: "PlanShutdown did not finish within 60 s" };

  it("allow a run that replaces a lost run of its outage, up to the monitor's limit, and no other second run", () => {
    const replaced = record({
      runs: [
        run("armed-run", 1100, "L1", lost),
        run("again", 1500, "L1", { replaces: ["armed-run"] }),
        run("dry-run", 10_100, "L2"),
      ],
    });
    expect(held(replaced)[ONE_RUN]).toBe(true);
    const second = record({ runs: [...record().runs, run("second", 1500, "L1")] });
    expect(held(second)[ONE_RUN]).toBe(false);
    const chain = ["a", "b", "c", "d", "e"].map((id, i) =>
      run(id, 1100 + i, "L1", { ...lost, replaces: i === 0 ? [] : [["a", "b", "c", "d"][i - 1]!] }),
    );
    expect(held(record({ runs: chain }))[ONE_RUN]).toBe(false);
  });

  it("break when a run replaces one that was not lost: aborted, cancelled, succeeded, or of another outage", () => {
    for (const first of [
      run("armed-run", 1100, "L1", { status: "failed", failureReason: "aborted by operator" }),
      run("armed-run", 1100, "L1"),
      run("armed-run", 1100, "L0", lost),
    ]) {
      const r = record({ runs: [first, run("again", 1500, "L1", { replaces: ["armed-run"] })] });
      expect(held(r)[ONE_RUN]).toBe(false);
    }
  });

  it("break when a dry-run outage would send nothing to a target", () => {
    const r = record({ calls: record().calls.filter((c) => c.runCreatedAt < 10_000) });
    expect(held(r)["(power) every low battery the soak caused latched and its run ended"]).toBe(
      false,
    );
  });
});
