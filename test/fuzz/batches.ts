import type pg from "pg";
import { expect } from "vitest";
import { stateFingerprint } from "./state";

export type FuzzOutcome = { accepted: boolean; describe: string };

/**
 * Runs `cases` through `attempt` in parallel batches and holds both fuzz tests' promise: a
 * batch whose every case was refused changed nothing (no row, no run, no queued job, so no
 * command could reach a host); when some case of a batch was valid after all and the state
 * moved, each refused case of it is replayed alone between two fingerprints. `inspect` checks
 * each outcome on its own terms (never a 500, …). Returns how many cases were refused.
 */
export async function fuzzInBatches<Case, Outcome extends FuzzOutcome>(options: {
  pool: pg.Pool;
  cases: readonly Case[];
  batchSize: number;
  attempt: (fuzz: Case, index: number) => Promise<Outcome>;
  inspect: (outcome: Outcome, fuzz: Case) => void;
}): Promise<number> {
  const { pool, cases, batchSize, attempt } = options;
  let refused = 0;
  let before = await stateFingerprint(pool);
  for (let start = 0; start < cases.length; start += batchSize) {
    const batch = cases.slice(start, start + batchSize);
    const outcomes = await Promise.all(batch.map((fuzz, i) => attempt(fuzz, start + i)));
    outcomes.forEach((outcome, i) => options.inspect(outcome, batch[i]!));
    refused += outcomes.filter((outcome) => !outcome.accepted).length;
    const after = await stateFingerprint(pool);
    if (outcomes.every((outcome) => !outcome.accepted)) {
      expect({ runs: after.runs, jobs: after.jobs }, outcomes[0]!.describe).toEqual({
        runs: before.runs,
        jobs: before.jobs,
      });
      expect(after.digest, "a batch of refused cases changed the database").toBe(before.digest);
    } else if (after.digest !== before.digest) {
      for (const [i, fuzz] of batch.entries()) {
        if (outcomes[i]!.accepted) continue;
        const one = await stateFingerprint(pool);
        const replay = await attempt(fuzz, start + i);
        if (!replay.accepted) expect(await stateFingerprint(pool), replay.describe).toEqual(one);
      }
    }
    // Unchanged unless refused cases were replayed one by one above.
    before = after.digest === before.digest ? after : await stateFingerprint(pool);
  }
  return refused;
}
