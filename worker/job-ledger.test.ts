import { EventEmitter } from "node:events";
import type { WorkerEvents } from "graphile-worker";
import { describe, expect, it } from "vitest";
import { createJobLedger } from "./job-ledger";

function ledger() {
  const events = new EventEmitter() as WorkerEvents;
  let now = 0;
  const jobs = createJobLedger(events, { settleMs: 5_000, now: () => now });
  const job = (id: string) => ({ job: { id } }) as never;
  return {
    jobs,
    start: (id: string) => events.emit("job:start", job(id)),
    complete: (id: string, error?: Error) =>
      events.emit("job:complete", { ...(job(id) as object), error } as never),
    advance: (ms: number) => void (now += ms),
  };
}

describe("the worker's ledger of the jobs it took", () => {
  it("counts a running job as busy, and a finished one until its release had time to land", () => {
    const { jobs, start, complete, advance } = ledger();
    start("1");
    start("2");
    expect(jobs.busy()).toEqual(new Set(["1", "2"]));
    complete("1");
    complete("2", new Error("tick failed"));
    advance(4_000);
    expect(jobs.busy()).toEqual(new Set(["1", "2"]));
    expect(jobs.succeeded()).toEqual(new Set());
    advance(2_000);
    expect(jobs.busy()).toEqual(new Set());
    expect(jobs.succeeded()).toEqual(new Set(["1"])); // "2" failed: handed back, not deleted
  });

  it("forgets finished jobs after ten minutes", () => {
    const { jobs, start, complete, advance } = ledger();
    start("1");
    complete("1");
    advance(11 * 60_000);
    expect(jobs.succeeded()).toEqual(new Set());
  });
});
