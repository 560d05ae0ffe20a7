/**
 * The soak's one source of chance: mulberry32, a 32-bit seeded generator (Tommy Ettinger's,
 * public domain). Small, fast and the same sequence on every machine for a given seed, which is
 * all a replayable soak needs — nothing here is cryptographic.
 */
export type Random = {
  /** A float in [0, 1). */
  next(): number;
  /** A whole number in [min, max]. */
  int(min: number, max: number): number;
  /** A float in [min, max). */
  between(min: number, max: number): number;
  /** One of `items` (which must not be empty). */
  pick<T>(items: readonly T[]): T;
  /** A copy of `items` in a random order (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[];
  /** A generator of its own, seeded from this one: one stream per driver, so adding a draw to one never shifts the other's. */
  fork(): Random;
};

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    between: (min, max) => min + next() * (max - min),
    pick(items) {
      if (items.length === 0) throw new Error("pick from an empty list");
      return items[Math.floor(next() * items.length)]!;
    },
    shuffle(items) {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy;
    },
    fork: () => seededRandom(Math.floor(next() * 4_294_967_296)),
  };
  return random;
}
