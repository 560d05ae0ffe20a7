import { describe, expect, it } from "vitest";
import { trackReachability } from "@/lib/db/reachability";
import { createDatabaseGate } from "./database-gate";

const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
  code: "ECONNREFUSED",
});

/** A gate over a database the test switches on and off, counting what the gate asks it. */
function gate(timings: { timeoutMs?: number } = {}) {
  let now = 0;
  const state = { up: true, silent: false, probes: 0 };
  const lines: string[] = [];
  const subject = createDatabaseGate({
    probe: async () => {
      state.probes += 1;
      if (state.silent) return new Promise<void>(() => {});
      if (!state.up) throw refused;
    },
    reachability: trackReachability({
      log: (line) => lines.push(line),
      meanwhile: "the web server answers 503 until it is back",
      now: () => now,
    }),
    timings,
    now: () => now,
  });
  return { subject, state, lines, advance: (ms: number) => void (now += ms) };
}

describe("the web server's database gate", () => {
  it("asks the database once however many requests arrive together, then goes by that answer for a second", async () => {
    const { subject, state, advance } = gate();
    expect(await Promise.all([1, 2, 3, 4].map(() => subject.reachable()))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(state.probes).toBe(1);
    advance(900);
    await subject.reachable();
    expect(state.probes).toBe(1);
    advance(200);
    await subject.reachable();
    expect(state.probes).toBe(2);
  });

  it("while the database is away answers from the last probe, asking again every half second", async () => {
    const { subject, state, lines, advance } = gate();
    state.up = false;
    expect(await subject.reachable()).toBe(false);
    advance(100);
    expect(await subject.reachable()).toBe(false);
    expect(state.probes).toBe(1);
    state.up = true;
    advance(500);
    expect(await subject.reachable()).toBe(true);
    expect(lines).toEqual([
      "database unreachable (Error [ECONNREFUSED]: connect ECONNREFUSED 127.0.0.1:5432); the web server answers 503 until it is back",
      "database reachable again after 0.6 s",
    ]);
  });

  it("counts a database that does not answer within the timeout as away, so no request hangs on it", async () => {
    const { subject, state, lines } = gate({ timeoutMs: 50 });
    state.silent = true;
    expect(await subject.reachable()).toBe(false);
    expect(lines[0]).toContain("no answer within 0.05 s");
  });
});
