import { z } from "zod";

/**
 * What one self-test check found. "could-not-check" is its own verdict on purpose: a check that
 * could not ask proves nothing, and is never shown or counted as ok.
 */
export const SELF_TEST_VERDICTS = ["ok", "warning", "failed", "could-not-check"] as const;
export const ZSelfTestVerdict = z.enum(SELF_TEST_VERDICTS);
export type SelfTestVerdict = z.infer<typeof ZSelfTestVerdict>;

export const ZSelfTestCheck = z.object({
  /** Stable within a run: `<kind>:<subject id>` (e.g. `privileges:<target id>`). */
  key: z.string(),
  /** What was checked, e.g. "pve1: API token holds the privileges power needs". */
  title: z.string(),
  /** The target, UPS or cluster it is about, by name. */
  subject: z.string(),
  verdict: ZSelfTestVerdict,
  /** What the check found, in one or two sentences. */
  reason: z.string(),
  /** What to do about it; null when nothing is to be done. */
  next: z.string().nullable(),
});
export type SelfTestCheck = z.infer<typeof ZSelfTestCheck>;

/** The key of a webhook target's check (check-webhooks.ts): what the card finds them by. */
export const webhookCheckKey = (targetId: string) => `webhook:${targetId}`;

/** One check's verdict about one subject, ready to record. */
export type SubjectCheck = (
  verdict: SelfTestVerdict,
  reason: string,
  next?: string | null,
) => SelfTestCheck;

/** The checks of one target: keyed `<kind>:<id>`, titled `<name>: <what was checked>`. */
export function checksOf(subject: { id: string; name: string }) {
  return (kind: string, title: string): SubjectCheck =>
    (verdict, reason, next = null) => ({
      key: `${kind}:${subject.id}`,
      title: `${subject.name}: ${title}`,
      subject: subject.name,
      verdict,
      reason,
      next,
    });
}

/** Worst first: an unknown outranks a warning (it may hide a failure), never an ok. */
const RANK: Record<SelfTestVerdict, number> = {
  failed: 3,
  "could-not-check": 2,
  warning: 1,
  ok: 0,
};

/** The self-test's verdict: its worst check's. No check at all is "could not check", not ok. */
export function overallVerdict(checks: readonly Pick<SelfTestCheck, "verdict">[]): SelfTestVerdict {
  if (checks.length === 0) return "could-not-check";
  return checks.reduce<SelfTestVerdict>(
    (worst, check) => (RANK[check.verdict] > RANK[worst] ? check.verdict : worst),
    "ok",
  );
}

export const VERDICT_LABEL: Record<SelfTestVerdict, string> = {
  ok: "ok",
  warning: "warning",
  failed: "failed",
  "could-not-check": "could not check",
};
