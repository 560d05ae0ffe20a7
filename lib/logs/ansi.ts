import Anser from "anser";

/**
 * ANSI colours → styled text spans, for the viewer to render as React text nodes. Nothing here
 * produces HTML: a span's `text` is whatever the line said (a `<script>` stays seven characters
 * of text), and its colours are validated `r, g, b` triples, so neither can inject markup or
 * CSS. anser interprets SGR (colours, bold, …) and drops cursor movement; OSC sequences (window
 * titles, hyperlinks) and stray control characters are removed before it sees the line.
 */
export type Span = {
  text: string;
  /** `r, g, b` */
  fg?: string;
  bg?: string;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
  strike?: boolean;
};

const RGB = /^\d{1,3}, \d{1,3}, \d{1,3}$/;

// OSC: ESC ] … (BEL | ESC \); C0 controls other than tab and ESC; DEL.
const OSC = /\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g;
const CONTROL = /[\u0000-\u0008\u000a-\u001a\u001c-\u001f\u007f]/g;
const STRAY_ESCAPE = /\u001b(?:\[[0-?]*[ -/]*[@-~]?|[@-Z\\-_]?)/g;

export function ansiToSpans(line: string): Span[] {
  const cleaned = line.replace(OSC, "").replace(CONTROL, "");
  if (!cleaned.includes("\u001b")) return cleaned.length > 0 ? [{ text: cleaned }] : [];
  const spans: Span[] = [];
  for (const entry of Anser.ansiToJson(cleaned, { json: true, remove_empty: true })) {
    const text = entry.content.replace(STRAY_ESCAPE, "");
    if (text.length === 0) continue;
    const span: Span = { text };
    if (entry.fg && RGB.test(entry.fg)) span.fg = entry.fg;
    if (entry.bg && RGB.test(entry.bg)) span.bg = entry.bg;
    for (const decoration of entry.decorations ?? []) {
      if (decoration === "bold") span.bold = true;
      else if (decoration === "dim") span.dim = true;
      else if (decoration === "italic") span.italic = true;
      else if (decoration === "underline") span.underline = true;
      else if (decoration === "strikethrough") span.strike = true;
    }
    spans.push(span);
  }
  return spans;
}

/** The text a line shows (colours and control sequences removed). */
export function spansText(spans: readonly Span[]): string {
  return spans.map((span) => span.text).join("");
}

export type MarkedSpan = Span & { mark?: "match" | "current" };

/**
 * Splits spans at search-match boundaries so matches can be highlighted without touching the
 * colours around them. `ranges` are [start, end) offsets into `spansText(spans)`, sorted.
 */
export function markRanges(
  spans: readonly Span[],
  ranges: readonly { start: number; end: number; current?: boolean }[],
): MarkedSpan[] {
  if (ranges.length === 0) return spans as MarkedSpan[];
  const out: MarkedSpan[] = [];
  let offset = 0;
  let r = 0;
  for (const span of spans) {
    const spanEnd = offset + span.text.length;
    let cursor = offset;
    while (cursor < spanEnd) {
      while (r < ranges.length && ranges[r]!.end <= cursor) r += 1;
      const range = ranges[r];
      if (!range || range.start >= spanEnd) {
        out.push({ ...span, text: span.text.slice(cursor - offset) });
        cursor = spanEnd;
      } else if (range.start > cursor) {
        out.push({ ...span, text: span.text.slice(cursor - offset, range.start - offset) });
        cursor = range.start;
      } else {
        const end = Math.min(range.end, spanEnd);
        out.push({
          ...span,
          text: span.text.slice(cursor - offset, end - offset),
          mark: range.current ? "current" : "match",
        });
        cursor = end;
      }
    }
    offset = spanEnd;
  }
  return out;
}

/** Case-insensitive occurrences of `query` in `text` ([start, end) offsets), non-overlapping. */
export function findInText(text: string, query: string): { start: number; end: number }[] {
  if (query.length === 0) return [];
  const haystack = text.toLowerCase();
  const needle = query.toLowerCase();
  const found: { start: number; end: number }[] = [];
  for (
    let at = haystack.indexOf(needle);
    at >= 0;
    at = haystack.indexOf(needle, at + needle.length)
  ) {
    found.push({ start: at, end: at + needle.length });
  }
  return found;
}
