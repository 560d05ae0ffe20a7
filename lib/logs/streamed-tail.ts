import type { SourcePosition } from "./append";
import type { LogEntry } from "./chunks";
import { RECREATED_MARKER } from "./tail-remote-file";

/**
 * The tail of a host file delivered as a stream (a waiter's watch loop, lib/steps/onboarding/
 * remote-watch.ts) instead of read by a visit: complete lines as they come, the byte offset
 * they end at, and a new file when the one read before was replaced. Turns them into run-log
 * entries and the position to save WITH them (appendRunLog's `source`), so the next visit's
 * tail (tail-remote-file.ts) goes on exactly where the stream stopped: nothing skipped, nothing
 * twice. Same semantics as that tail: the unterminated line the console carried is joined to
 * its end when it comes, or kept as a line of its own before the marker of a recreated file.
 */
export class StreamedTail {
  private position: SourcePosition;
  private carried: string;
  /** Lines whose end offset has come: safe to save with `position`. */
  private ready: LogEntry[] = [];
  /** Lines whose end offset has not come yet: saved only once it has. */
  private unplaced: { text: string; at: Date }[] = [];
  private moved = false;

  constructor(
    start: SourcePosition,
    private readonly step: string,
  ) {
    this.position = { ...start, pending: "" };
    this.carried = start.pending;
  }

  /** What the stream read is not the file `start` was from: it starts again at byte 0. */
  recreated(identity: string): void {
    const at = new Date();
    if (this.position.inode !== null) {
      if (this.carried.length > 0) this.ready.push(this.entry("file", this.carried, at));
      this.ready.push(this.entry("marker", RECREATED_MARKER(this.position.path), at));
    }
    this.carried = "";
    this.unplaced = [];
    this.position = { ...this.position, offset: 0, inode: identity };
    this.moved = true;
  }

  line(text: string): void {
    this.unplaced.push({ text, at: new Date() });
  }

  /** The lines so far end at `offset` bytes into the file. */
  at(offset: number): void {
    for (const { text, at } of this.unplaced) {
      this.ready.push(this.entry("file", this.carried + text, at));
      this.carried = "";
    }
    this.unplaced = [];
    this.position = { ...this.position, offset };
    this.moved = true;
  }

  /**
   * Lines whose place in the file is known, with the position after them; null when nothing
   * moved since the last take. Lines still waiting for their offset stay: a stream that ends
   * before it comes leaves them to the next visit's tail.
   */
  take(): { entries: LogEntry[]; source: SourcePosition } | null {
    if (!this.moved) return null;
    const entries = this.ready;
    this.ready = [];
    this.moved = false;
    return { entries, source: { ...this.position, pending: this.carried } };
  }

  private entry(kind: LogEntry["kind"], text: string, at: Date): LogEntry {
    return { step: this.step, kind, text, at };
  }
}
