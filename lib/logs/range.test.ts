import { describe, expect, it } from "vitest";
import { decideRange } from "./range";

describe("Range requests on the raw log", () => {
  it.each([
    [null, 100, { kind: "full" }],
    ["bytes=0-9", 100, { kind: "partial", start: 0, end: 9 }],
    ["bytes=90-", 100, { kind: "partial", start: 90, end: 99 }],
    ["bytes=90-500", 100, { kind: "partial", start: 90, end: 99 }],
    ["bytes=-10", 100, { kind: "partial", start: 90, end: 99 }],
    ["bytes=-500", 100, { kind: "partial", start: 0, end: 99 }],
    ["bytes=100-", 100, { kind: "unsatisfiable" }],
    ["bytes=-0", 100, { kind: "unsatisfiable" }],
    ["bytes=0-", 0, { kind: "unsatisfiable" }],
    ["bytes=0-1,5-6", 100, { kind: "full" }],
    ["items=0-1", 100, { kind: "full" }],
    ["bytes=9-3", 100, { kind: "full" }],
  ] as const)("%s of %i bytes", (header, total, expected) => {
    expect(decideRange(header, total)).toEqual(expected);
  });
});
