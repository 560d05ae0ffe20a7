import { describe, expect, it } from "vitest";
import { ansiToSpans, findInText, markRanges, spansText } from "./ansi";

describe("ANSI colours become text spans that cannot inject HTML", () => {
  it("turns SGR colours and decorations into span styles", () => {
    expect(ansiToSpans("\u001b[1;31mfailed\u001b[0m ok")).toEqual([
      { text: "failed", fg: "187, 0, 0", bold: true },
      { text: " ok" },
    ]);
  });
  it("keeps markup as plain text", () => {
    const line = `<script>alert(1)</script><img src=x onerror="alert(2)">`;
    expect(spansText(ansiToSpans(line))).toBe(line);
    expect(spansText(ansiToSpans(`\u001b[32m${line}\u001b[0m`))).toBe(line);
  });
  it("drops cursor movement, window titles and control characters", () => {
    expect(spansText(ansiToSpans("\u001b]0;title\u0007a\u001b[2K\u001b[1Gb\u0000c\u0007"))).toBe(
      "abc",
    );
  });
  it("only ever emits rgb triples as colours (no CSS injection)", () => {
    for (const span of ansiToSpans("\u001b[38;2;1;2;3mx\u001b[48;5;200my\u001b[38;2;999;0;0mz")) {
      for (const colour of [span.fg, span.bg]) {
        if (colour !== undefined) expect(colour).toMatch(/^\d{1,3}, \d{1,3}, \d{1,3}$/);
      }
    }
  });
});

describe("search", () => {
  it("finds case-insensitive, non-overlapping matches", () => {
    expect(findInText("Error error ERROR", "error")).toEqual([
      { start: 0, end: 5 },
      { start: 6, end: 11 },
      { start: 12, end: 17 },
    ]);
    expect(findInText("aaaa", "aa")).toHaveLength(2);
    expect(findInText("abc", "")).toEqual([]);
  });
  it("marks matches across colour boundaries without losing the colours", () => {
    const spans = ansiToSpans("\u001b[31mfoo\u001b[32mbar\u001b[0m");
    const marked = markRanges(spans, [{ start: 2, end: 4, current: true }]);
    expect(marked.map((s) => [s.text, s.fg, s.mark])).toEqual([
      ["fo", "187, 0, 0", undefined],
      ["o", "187, 0, 0", "current"],
      ["b", "0, 187, 0", "current"],
      ["ar", "0, 187, 0", undefined],
    ]);
  });
});
