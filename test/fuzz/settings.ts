/**
 * How deep the fuzz tests go. `npm test` sends FUZZ_RUNS cases to every route handler and server
 * action (300 unless set; `FUZZ_RUNS=1000` is the deeper run in docs/testing.md, "Fuzz tests");
 * FUZZ_SEED replays a run: each handler's cases come from this seed plus its index, and a failure
 * names the seed and the case.
 */
export const FUZZ_RUNS = positiveInteger("FUZZ_RUNS", 300);
export const FUZZ_SEED = positiveInteger("FUZZ_SEED", 20261130);

function positiveInteger(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name}=${text}: give a whole number of at least 1`);
  }
  return value;
}
