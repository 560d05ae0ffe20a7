import { describe, expect, it } from "vitest";
import { completeUtf8Length, LineSplitter } from "./line-splitter";
import { foldCarriageReturns } from "./text";

describe("splitting a stream into lines", () => {
  it("keeps an unterminated line pending until it ends", () => {
    const splitter = new LineSplitter();
    expect(splitter.push("a\nb")).toEqual(["a"]);
    expect(splitter.pending).toBe("b");
    expect(splitter.push("c\nd\n")).toEqual(["bc", "d"]);
    expect(splitter.end()).toEqual([]);
  });

  it("continues from a saved pending line exactly where another splitter stopped", () => {
    const text = "one\ntw\ro\rtwo\nthr";
    for (let cut = 0; cut <= text.length; cut++) {
      const first = new LineSplitter();
      const lines = first.push(text.slice(0, cut));
      const second = new LineSplitter(first.pending);
      lines.push(...second.push(text.slice(cut)), ...second.end());
      expect(lines.map(foldCarriageReturns)).toEqual(["one", "two", "thr"]);
    }
  });

  // 20 000 pieces: seconds of CPU on a busy machine, more than the default 5-s timeout.
  it("folds a long progress line early without changing its result", { timeout: 30_000 }, () => {
    const splitter = new LineSplitter();
    let whole = "";
    for (let i = 0; i < 20_000; i++) {
      const piece = `\u001b[3${i % 8}m${i}%\r`;
      whole += piece;
      splitter.push(piece);
    }
    expect(splitter.pending.length).toBeLessThan(70 * 1024);
    expect(foldCarriageReturns(splitter.pending)).toBe(foldCarriageReturns(whole));
  });

  it("counts only complete UTF-8 characters", () => {
    const bytes = Buffer.from("aé€😀");
    expect(completeUtf8Length(bytes)).toBe(bytes.length);
    expect(completeUtf8Length(bytes.subarray(0, bytes.length - 1))).toBe(bytes.length - 4);
    expect(completeUtf8Length(bytes.subarray(0, 2))).toBe(1);
    expect(completeUtf8Length(bytes.subarray(0, 3))).toBe(3);
  });
});
