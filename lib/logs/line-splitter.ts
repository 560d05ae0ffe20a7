import { foldCarriageReturns, MAX_LINE_CHARS } from "./text";

/** A pending line (no `\n` yet) longer than this is compacted (its `\r` redraws folded). */
const COMPACT_AT = 64 * 1024;

/**
 * Splits a stream of text into lines as it arrives. What follows the last `\n` stays pending
 * until its line ends (or `end()`); `pending` can be saved and handed to a new splitter, which
 * then continues exactly where this one stopped (the remote-file tail does that across visits).
 *
 * A pending progress line that redraws itself with `\r` for a long time never grows without
 * bound: everything before its last `\r` is folded early, which gives the same result as
 * folding the whole line at its end (see `foldCarriageReturns`). A pending line without `\r`
 * longer than 2 × MAX_LINE_CHARS is emitted as a line of its own.
 */
export class LineSplitter {
  private partial: string;

  constructor(pending = "") {
    this.partial = pending;
  }

  /** Complete lines (without `\n`, not yet folded) in `text`, joined to what was pending. */
  push(text: string): string[] {
    if (text.length === 0) return [];
    const joined = this.partial + text;
    const last = joined.lastIndexOf("\n");
    if (last < 0) {
      this.partial = compact(joined);
      return [];
    }
    this.partial = compact(joined.slice(last + 1));
    return joined.slice(0, last).split("\n");
  }

  /** Ends the stream: the pending line, if any, as the last line. */
  end(): string[] {
    const rest = this.partial;
    this.partial = "";
    return rest.length > 0 ? [rest] : [];
  }

  /** The unterminated line so far (already compacted). */
  get pending(): string {
    return this.partial;
  }

  /** Takes the pending line out when it has grown past the forced-break length. */
  takeOverlong(): string | null {
    if (this.partial.length <= 2 * MAX_LINE_CHARS || this.partial.includes("\r")) return null;
    const line = this.partial;
    this.partial = "";
    return line;
  }
}

function compact(partial: string): string {
  if (partial.length < COMPACT_AT) return partial;
  const cr = partial.lastIndexOf("\r");
  if (cr <= 0) return partial;
  return foldCarriageReturns(partial.slice(0, cr)) + partial.slice(cr);
}

/**
 * How many leading bytes of `bytes` form complete UTF-8 characters: a read cut by `head -c`
 * can end inside a multi-byte character, whose first bytes must be read again next time rather
 * than decoded into U+FFFD.
 */
export function completeUtf8Length(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const byte = bytes[n - back]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: look further back
    if (byte < 0x80) return n; // ASCII: complete
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    return back >= need ? n : n - back;
  }
  return n;
}
