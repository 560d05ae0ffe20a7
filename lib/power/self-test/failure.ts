import {
  ProxmoxAuthError,
  ProxmoxCertificateMismatchError,
  ProxmoxPermissionError,
} from "@/lib/proxmox/errors";
import { safeErrorSummary } from "@/lib/errors";
import type { SelfTestVerdict } from "./verdict";

/**
 * What a failed first call to a target's API means for the shutdown path. Every way of not
 * getting an answer is a failure of that path (the shutdown call would meet the same), with
 * what to do about each.
 */
export function apiFailure(
  error: unknown,
  where: string,
): { verdict: SelfTestVerdict; reason: string; next: string } {
  if (error instanceof ProxmoxCertificateMismatchError) {
    return {
      verdict: "failed",
      reason: `${where} offers another TLS certificate than the one pinned: the console will not send its token there. ${error.message}`,
      next: "If the certificate was renewed, update the pin; if another machine now answers at this address, correct the address.",
    };
  }
  if (error instanceof ProxmoxAuthError) {
    return {
      verdict: "failed",
      reason: `${where} refused the console's API token (401): a shutdown call would be refused too.`,
      next: "Create the token again (for an onboarded host: run its onboarding again; CreateApiToken makes a new one) and store its secret.",
    };
  }
  if (error instanceof ProxmoxPermissionError) {
    return {
      verdict: "failed",
      reason: `${where} denied the token even GET /version: ${error.message}`,
      next: "Grant the token and its user the console's role again.",
    };
  }
  return {
    verdict: "failed",
    reason: `${where} did not answer: ${safeErrorSummary(error)}. A shutdown call now would not arrive.`,
    next: "Check that the machine is up and that its API port is reachable from the console.",
  };
}
