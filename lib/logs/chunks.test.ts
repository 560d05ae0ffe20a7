import { describe, expect, it } from "vitest";
import { EMPTY_HEAD, planChunks, truncationMarker, type LogEntry } from "./chunks";

const at = new Date("2026-01-01T00:00:00Z");
const out = (text: string, step = "S"): LogEntry => ({ step, kind: "output", text, at });

describe("chunking", () => {
  it("groups consecutive lines of one step and kind, numbering chunks and lines run-wide", () => {
    const { chunks, head } = planChunks(EMPTY_HEAD, [
      { step: "A", kind: "command", text: "▶ A $ ls", at },
      out("one", "A"),
      out("two", "A"),
      { step: "A", kind: "result", text: "◀ exit 0 in 1 ms", at },
      out("three", "B"),
    ]);
    expect(chunks.map((c) => [c.seq, c.step, c.kind, c.firstLine, c.lineCount, c.text])).toEqual([
      [1, "A", "command", 1, 1, "▶ A $ ls\n"],
      [2, "A", "output", 2, 2, "one\ntwo\n"],
      [3, "A", "result", 4, 1, "◀ exit 0 in 1 ms\n"],
      [4, "B", "output", 5, 1, "three\n"],
    ]);
    expect(head).toMatchObject({ lastSeq: 4, lines: 5 });
    // byte offsets make the raw log addressable
    expect(chunks.map((c) => c.firstByte)).toEqual([0, 11, 19, 38]);
    expect(head.bytes).toBe(44);
  });

  it("continues numbering after an existing head", () => {
    const first = planChunks(EMPTY_HEAD, [out("a"), out("b")]);
    const second = planChunks(first.head, [out("c")]);
    expect(second.chunks[0]).toMatchObject({ seq: 2, firstLine: 3, firstByte: 4 });
  });

  it("splits chunks at the line and byte limits", () => {
    const lines = Array.from({ length: 25 }, (_, i) => out(`line ${i}`));
    const { chunks } = planChunks(EMPTY_HEAD, lines, {
      capBytes: 1e9,
      maxChunkLines: 10,
      maxChunkBytes: 1e9,
    });
    expect(chunks.map((c) => c.lineCount)).toEqual([10, 10, 5]);
    const bySize = planChunks(EMPTY_HEAD, lines, {
      capBytes: 1e9,
      maxChunkLines: 1000,
      maxChunkBytes: 20,
    });
    expect(bySize.chunks.every((c) => c.bytes <= 20)).toBe(true);
  });

  it("stops storing output at the cap with one explicit marker, and keeps commands, results and the run's end", () => {
    const limits = { capBytes: 10, maxChunkLines: 1000, maxChunkBytes: 1e9 };
    const first = planChunks(EMPTY_HEAD, [out("12345"), out("67890"), out("dropped")], limits);
    expect(first.chunks.map((c) => c.text)).toEqual(["12345\n", `${truncationMarker(10)}\n`]);
    expect(first.head).toMatchObject({ truncated: true, droppedLines: 2 });
    const later = planChunks(
      first.head,
      [
        out("also dropped"),
        { step: "S", kind: "result", text: "◀ exit 0 in 1 ms", at },
        { step: "S", kind: "run", text: "■ run aborted by operator", at },
      ],
      limits,
    );
    expect(later.chunks.map((c) => c.text)).toEqual([
      "◀ exit 0 in 1 ms\n",
      "■ run aborted by operator\n",
    ]);
    expect(later.head.droppedLines).toBe(3);
  });
});
