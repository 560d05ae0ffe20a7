/**
 * A failure reason as an operator reads it: one line — what failed and what to do — and the raw
 * output it quoted apart, one click away. Steps write reasons as
 * `<what failed>: <output line> ⏎ <output line> … — <what to do>` (a remote job's last lines, apt's
 * errors); others are several lines, or already one. Pure (failure-text.test.ts).
 */
export type FailureText = {
  /** What failed and what to do, on one line. */
  headline: string;
  /** The quoted output, line by line; empty when the reason quoted none. */
  output: string[];
};

const JOINED = " ⏎ ";
const ADVICE = " — ";

export function splitFailure(reason: string | null | undefined): FailureText {
  const text = (reason ?? "").trim();
  if (text === "") return { headline: "failed without a reason", output: [] };
  const firstJoin = text.indexOf(JOINED);
  if (firstJoin >= 0) {
    const colon = text.indexOf(": ");
    const adviceAt = text.lastIndexOf(ADVICE);
    const advice = adviceAt > text.lastIndexOf(JOINED) ? text.slice(adviceAt + ADVICE.length) : "";
    const body = advice ? text.slice(0, adviceAt) : text;
    if (colon >= 0 && colon < firstJoin) {
      const what = body.slice(0, colon).trim();
      const output = body
        .slice(colon + 2)
        .split(JOINED)
        .map((line) => line.trim())
        .filter(Boolean);
      return { headline: advice ? `${what} — ${advice}` : what, output };
    }
  }
  const lines = text
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "");
  return { headline: lines[0]!.trim(), output: lines.slice(1) };
}
