import type { PowerRunVerdict } from "@/lib/power/queries/power-run-verdict";
import { keepDurationsWhole } from "../format";

const TONE_WORD: Record<PowerRunVerdict["tone"], string> = {
  running: "running",
  ok: "done",
  "dry-run": "dry-run",
  failed: "failed",
  cancelled: "cancelled",
  aborted: "aborted",
  stopped: "stopped",
};

/**
 * A power run's one line — what it did, never onboarding's words — coloured by its tone, which is
 * also said in a word (readable without colour): green only for hosts confirmed down.
 */
export function PowerRunVerdictLine({
  verdict,
  testId,
  as: Tag = "p",
}: {
  verdict: PowerRunVerdict;
  testId: string;
  as?: "p" | "span" | "div";
}) {
  return (
    <Tag
      className={`run-verdict run-verdict-${verdict.tone}`}
      data-testid={testId}
      data-tone={verdict.tone}
    >
      {/* The tone in a word, unless the line already begins with it ("dry-run: …"). */}
      {!verdict.text.startsWith(TONE_WORD[verdict.tone]) && (
        <>
          <span className="run-verdict-tone">{TONE_WORD[verdict.tone]}</span>{" "}
        </>
      )}
      <span className="run-verdict-text">{keepDurationsWhole(verdict.text)}</span>
    </Tag>
  );
}
