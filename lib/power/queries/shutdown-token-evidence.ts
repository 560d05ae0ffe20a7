/**
 * Whether a target's token can shut it down, as last known. The console does not ask the target
 * for this on every page view: it reads what it learned the last time it asked, and says when
 * and how. "Not asked" is `unknown`, never `yes` — and a failure that said nothing about the
 * privilege is not `no` either.
 */

export type ShutdownTokenAnswer = "yes" | "no" | "unknown";

export type ShutdownTokenEvidence = {
  kind: "pve-node" | "pbs";
  /**
   * Why the console cannot call the target at all (no token or certificate pin yet, host gone or
   * retired), or null when it can.
   */
  problem: string | null;
  nodeName: string | null;
  /** The host's last VerifyProxmoxApi verdict (PVE only): it checks Sys.PowerMgmt on the node. */
  verification: { passed: boolean; detail: string | null; at: Date } | null;
  /** The last real shutdown call to this target (dry-run sends nothing, so it proves nothing). */
  lastCall: { state: "sent" | "failed" | "unknown"; detail: string | null; at: Date } | null;
};

export type ShutdownTokenVerdict = {
  answer: ShutdownTokenAnswer;
  /** One line: what the answer rests on, and what to do when it is not yes. */
  reason: string;
  /** When that was learned. */
  asOf: string | null;
};

const PRIVILEGE = { "pve-node": "Sys.PowerMgmt", pbs: "Sys.PowerManagement" } as const;
const REFUSED = /\b40[13]\b|permission|not allowed|unauthori[sz]ed/i;

export function judgeShutdownToken(evidence: ShutdownTokenEvidence): ShutdownTokenVerdict {
  const privilege = PRIVILEGE[evidence.kind];
  if (evidence.problem !== null) {
    return { answer: "no", reason: `It cannot be called: ${evidence.problem}.`, asOf: null };
  }

  const { lastCall, verification } = evidence;
  const callIsNewer = lastCall && (!verification || lastCall.at >= verification.at);
  if (lastCall && callIsNewer) {
    if (lastCall.state === "sent") {
      return {
        answer: "yes",
        reason: "It accepted the last shutdown call.",
        asOf: lastCall.at.toISOString(),
      };
    }
    if (lastCall.state === "failed" && REFUSED.test(lastCall.detail ?? "")) {
      return {
        answer: "no",
        reason: `It refused the last shutdown call (${lastCall.detail}): grant ${privilege} to the token and its user.`,
        asOf: lastCall.at.toISOString(),
      };
    }
  }

  if (!verification) {
    return {
      answer: "unknown",
      reason:
        evidence.kind === "pve-node"
          ? `Not checked yet: the host's onboarding (VerifyProxmoxApi) checks ${privilege}.`
          : `Not checked yet: the console has not called this backup server with its token.`,
      asOf: null,
    };
  }
  const at = verification.at.toISOString();
  if (verification.passed) {
    return {
      answer: "yes",
      reason: `VerifyProxmoxApi found ${privilege} on /nodes/${evidence.nodeName ?? "?"}.`,
      asOf: at,
    };
  }
  if (verification.detail?.includes(privilege)) {
    return {
      answer: "no",
      reason: `VerifyProxmoxApi found the token lacks ${privilege}: run the onboarding again or grant it.`,
      asOf: at,
    };
  }
  return {
    answer: "unknown",
    reason: `The last check failed before it could tell (${verification.detail ?? "no detail"}).`,
    asOf: at,
  };
}
