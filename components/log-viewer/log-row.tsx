"use client";

import { memo, type CSSProperties } from "react";
import { ansiToSpans, findInText, markRanges, spansText, type Span } from "@/lib/logs/ansi";
import { formatClock } from "../format";
import { displayText, type LogLine } from "./model";

// Parsing colours is the costliest part of drawing a line; lines never change, so cache it.
const spanCache = new WeakMap<LogLine, Span[]>();
function spansOf(line: LogLine): Span[] {
  let spans = spanCache.get(line);
  if (!spans) {
    spans = ansiToSpans(displayText(line));
    spanCache.set(line, spans);
  }
  return spans;
}

function spanStyle(span: Span): CSSProperties | undefined {
  if (
    !span.fg &&
    !span.bg &&
    !span.bold &&
    !span.dim &&
    !span.italic &&
    !span.underline &&
    !span.strike
  )
    return undefined;
  return {
    color: span.fg ? `rgb(${span.fg})` : undefined,
    backgroundColor: span.bg ? `rgb(${span.bg})` : undefined,
    fontWeight: span.bold ? 600 : undefined,
    opacity: span.dim ? 0.7 : undefined,
    fontStyle: span.italic ? "italic" : undefined,
    textDecoration:
      [span.underline && "underline", span.strike && "line-through"].filter(Boolean).join(" ") ||
      undefined,
  };
}

/**
 * One log line: permalink line number, optional time, and the text as React text nodes — a
 * line saying `<script>` shows those characters and nothing else.
 */
export const LogRow = memo(function LogRow({
  line,
  query,
  currentMatchStart,
  showTime,
  target,
  style,
}: {
  line: LogLine;
  query: string;
  /** Start offset of the current search match, when it is on this line. */
  currentMatchStart: number | null;
  showTime: boolean;
  target: boolean;
  style: CSSProperties;
}) {
  const spans = spansOf(line);
  const ranges = query
    ? findInText(spansText(spans), query).map((r) => ({
        ...r,
        current: r.start === currentMatchStart,
      }))
    : [];
  const marked = markRanges(spans, ranges);
  return (
    <div
      className={`log-row log-kind-${line.kind}${target ? " log-row-target" : ""}`}
      style={style}
      data-line={line.n}
      role="listitem"
    >
      <a className="log-ln" href={`#L${line.n}`} aria-label={`Line ${line.n}`} tabIndex={-1}>
        {line.n}
      </a>
      {showTime && (
        <time className="log-time" dateTime={line.at}>
          {formatClock(line.at)}
        </time>
      )}
      <span className="log-text">
        {marked.map((span, i) =>
          span.mark ? (
            <mark
              key={i}
              className={span.mark === "current" ? "log-match log-match-current" : "log-match"}
              style={spanStyle(span)}
            >
              {span.text}
            </mark>
          ) : (
            <span key={i} style={spanStyle(span)}>
              {span.text}
            </span>
          ),
        )}
      </span>
    </div>
  );
});
