import { describe, expect, it } from "vitest";
import { seededRandom } from "./prng";

describe("the soak's seeded generator (mulberry32)", () => {
  it("gives mulberry32's sequence for a seed, the same on every machine", () => {
    const random = seededRandom(42);
    expect([random.next(), random.next(), random.next()]).toEqual([
      0.6011037519201636, 0.44829055899754167, 0.8524657934904099,
    ]);
  });

  it("keeps whole numbers, ranges, picks and shuffles within what was asked", () => {
    const random = seededRandom(7);
    for (let i = 0; i < 1000; i++) {
      const n = random.int(3, 5);
      expect([3, 4, 5]).toContain(n);
      const x = random.between(1.5, 4);
      expect(x).toBeGreaterThanOrEqual(1.5);
      expect(x).toBeLessThan(4);
      expect(["a", "b"]).toContain(random.pick(["a", "b"]));
    }
    expect(random.shuffle([1, 2, 3, 4, 5]).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(() => random.pick([])).toThrow("pick from an empty list");
  });

  it("forks streams of their own: drawing more from one never shifts the other", () => {
    const a = seededRandom(1);
    const b = seededRandom(1);
    const [aFirst, aSecond] = [a.fork(), a.fork()];
    const [bFirst, bSecond] = [b.fork(), b.fork()];
    for (let i = 0; i < 10; i++) aFirst.next(); // one driver draws more than its twin
    expect([aSecond.next(), aSecond.next()]).toEqual([bSecond.next(), bSecond.next()]);
    expect(bFirst.next()).not.toBe(bSecond.next());
  });
});
