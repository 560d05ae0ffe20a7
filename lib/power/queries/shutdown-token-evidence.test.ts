import { describe, expect, it } from "vitest";
import { judgeShutdownToken, type ShutdownTokenEvidence } from "./shutdown-token-evidence";

const t = (minute: number) => new Date(Date.UTC(2026, 11, 1, 10, minute));
const pve: ShutdownTokenEvidence = {
  kind: "pve-node",
  problem: null,
  nodeName: "pve1",
  verification: null,
  lastCall: null,
};

describe("whether a target's token can shut it down, as last known", () => {
  it("a target the console cannot call (no token or certificate pin yet) is 'no', whatever was learned before", () => {
    const verdict = judgeShutdownToken({
      ...pve,
      problem: "host pve1 has no Proxmox API token or certificate pin yet; finish its onboarding",
      verification: { passed: true, detail: null, at: t(0) },
    });
    expect(verdict.answer).toBe("no");
    expect(verdict.reason).toContain("finish its onboarding");
  });

  it("never checked is 'unknown', never 'yes'", () => {
    expect(judgeShutdownToken(pve).answer).toBe("unknown");
    expect(judgeShutdownToken({ ...pve, kind: "pbs", nodeName: null }).answer).toBe("unknown");
  });

  it("VerifyProxmoxApi passing is 'yes' as of then; failing on Sys.PowerMgmt is 'no'; failing otherwise tells nothing", () => {
    expect(
      judgeShutdownToken({ ...pve, verification: { passed: true, detail: "ok", at: t(1) } }),
    ).toEqual({
      answer: "yes",
      reason: expect.stringContaining("/nodes/pve1"),
      asOf: t(1).toISOString(),
    });
    expect(
      judgeShutdownToken({
        ...pve,
        verification: {
          passed: false,
          detail: "the API token lacks Sys.PowerMgmt on /nodes/pve1",
          at: t(1),
        },
      }).answer,
    ).toBe("no");
    expect(
      judgeShutdownToken({
        ...pve,
        verification: { passed: false, detail: "connect ECONNREFUSED", at: t(1) },
      }),
    ).toMatchObject({ answer: "unknown", reason: expect.stringContaining("ECONNREFUSED") });
  });

  it("a newer shutdown call wins: accepted is 'yes', refused with 401/403 is 'no'; a timeout says nothing about the token", () => {
    const verification = { passed: true, detail: "ok", at: t(1) };
    expect(
      judgeShutdownToken({
        ...pve,
        verification,
        lastCall: { state: "failed", detail: "HTTP 403: Permission check failed", at: t(2) },
      }).answer,
    ).toBe("no");
    expect(
      judgeShutdownToken({
        ...pve,
        verification: { passed: false, detail: "lacks Sys.PowerMgmt", at: t(1) },
        lastCall: { state: "sent", detail: null, at: t(2) },
      }).answer,
    ).toBe("yes");
    expect(
      judgeShutdownToken({
        ...pve,
        verification,
        lastCall: { state: "failed", detail: "no answer within 10 s", at: t(2) },
      }).answer,
    ).toBe("yes");
    // An older refusal is superseded by a newer successful verification.
    expect(
      judgeShutdownToken({
        ...pve,
        verification: { passed: true, detail: "ok", at: t(3) },
        lastCall: { state: "failed", detail: "HTTP 401", at: t(2) },
      }).answer,
    ).toBe("yes");
  });

  it("a backup server's refusal names its own privilege, Sys.PowerManagement", () => {
    const verdict = judgeShutdownToken({
      kind: "pbs",
      problem: null,
      nodeName: null,
      verification: null,
      lastCall: { state: "failed", detail: "HTTP 403 permission check failed", at: t(2) },
    });
    expect(verdict).toMatchObject({
      answer: "no",
      reason: expect.stringContaining("Sys.PowerManagement"),
    });
  });
});
