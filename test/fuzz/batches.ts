import fc from "fast-check";
import type pg from "pg";
import { expect } from "vitest";
import { stateFingerprint } from "./state";

export type FuzzOutcome = { accepted: boolean; describe: string };

/**
 * Sends `runs` cases drawn from `arbitrary` (seeded: the same seed, the same cases) through
 * `attempt` in parallel batches and holds both fuzz tests' promise: a batch whose every case was
 * refused changed nothing (no row, no run, no queued job, so no command could reach a host);
 * when some case of a batch was valid after all and the state moved, each refused case of it is
 * replayed alone between two fingerprints. `inspect` checks each outcome on its own terms (never
 * a 500, …). Returns how many cases were refused.
 *
 * A case that breaks a promise is replayed through fast-check (the same seed, its path) and
 * shrunk to the smallest input that still breaks it alone; the failure names the seed and path.
 */
export async function fuzzInBatches<Case, Outcome extends FuzzOutcome>(options: {
  pool: pg.Pool;
  arbitrary: fc.Arbitrary<Case>;
  runs: number;
  seed: number;
  batchSize: number;
  attempt: (fuzz: Case, index: number) => Promise<Outcome>;
  inspect: (outcome: Outcome, fuzz: Case) => void;
}): Promise<number> {
  const { pool, arbitrary, runs, seed, batchSize, attempt, inspect } = options;
  const cases = fc.sample(arbitrary, { numRuns: runs, seed });

  /** The case sent alone: its outcome holds, and refused it changed nothing. */
  const alone = async (fuzz: Case, index: number): Promise<void> => {
    const before = await stateFingerprint(pool);
    const outcome = await attempt(fuzz, index);
    inspect(outcome, fuzz);
    if (!outcome.accepted) expect(await stateFingerprint(pool), outcome.describe).toEqual(before);
  };
  const brokenAlone = async (fuzz: Case, index: number): Promise<boolean> =>
    alone(fuzz, index).then(
      () => false,
      () => true,
    );
  /** fast-check replays run `index` of `seed` (the very case) and shrinks it; this throws. */
  const shrink = async (index: number): Promise<never> => {
    await fc.assert(
      fc.asyncProperty(arbitrary, (fuzz) => alone(fuzz, index)),
      { seed, path: String(index), numRuns: runs },
    );
    throw new Error(`case ${index} (seed ${seed}) broke a promise in its batch but not alone`);
  };

  let refused = 0;
  let before = await stateFingerprint(pool);
  for (let start = 0; start < cases.length; start += batchSize) {
    const batch = cases.slice(start, start + batchSize);
    const outcomes = await Promise.all(batch.map((fuzz, i) => attempt(fuzz, start + i)));
    for (const [i, outcome] of outcomes.entries()) {
      try {
        inspect(outcome, batch[i]!);
      } catch (error) {
        if (await brokenAlone(batch[i]!, start + i)) await shrink(start + i);
        throw error;
      }
    }
    refused += outcomes.filter((outcome) => !outcome.accepted).length;
    const after = await stateFingerprint(pool);
    if (outcomes.every((outcome) => !outcome.accepted)) {
      const unchanged = after.digest === before.digest;
      if (!unchanged) {
        for (const [i, fuzz] of batch.entries()) {
          if (await brokenAlone(fuzz, start + i)) await shrink(start + i);
        }
      }
      expect({ runs: after.runs, jobs: after.jobs }, outcomes[0]!.describe).toEqual({
        runs: before.runs,
        jobs: before.jobs,
      });
      expect(after.digest, "a batch of refused cases changed the database").toBe(before.digest);
    } else if (after.digest !== before.digest) {
      for (const [i, fuzz] of batch.entries()) {
        if (outcomes[i]!.accepted) continue;
        if (await brokenAlone(fuzz, start + i)) await shrink(start + i);
      }
    }
    // Unchanged unless refused cases were replayed one by one above.
    before = after.digest === before.digest ? after : await stateFingerprint(pool);
  }
  return refused;
}
