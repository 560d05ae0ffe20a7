/**
 * `Range: bytes=…` for the raw log (RFC 9110 §14): one range, `a-b`, `a-` or `-n` (suffix).
 * Several ranges, other units and malformed values are ignored (the whole log is sent), as the
 * RFC allows; a range that starts past the end is unsatisfiable (416).
 */
export type RangeDecision =
  { kind: "full" } | { kind: "partial"; start: number; end: number } | { kind: "unsatisfiable" };

export function decideRange(header: string | null, total: number): RangeDecision {
  if (!header) return { kind: "full" };
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return { kind: "full" };
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return { kind: "full" };
  if (first === "") {
    const suffix = Number(last);
    if (suffix === 0 || total === 0) return { kind: "unsatisfiable" };
    return { kind: "partial", start: Math.max(0, total - suffix), end: total - 1 };
  }
  const start = Number(first);
  const end = last === "" ? total - 1 : Math.min(Number(last), total - 1);
  if (last !== "" && Number(last) < start) return { kind: "full" };
  if (start >= total) return { kind: "unsatisfiable" };
  return { kind: "partial", start, end };
}
