import type { Severity } from "./message";

/**
 * Pipeline and step names as runs store them (lib/steps/onboarding, lib/console-key/rotation): spelled
 * here because the engine calls this module and the pipelines import the engine's modules;
 * onboarding-events.test.ts holds them equal to the pipelines' own.
 */
export const RUN_NAMES = {
  onboard: "onboard-host",
  rotateKey: "rotate-console-key",
  buildTemplate: "BuildVmTemplate",
  verifyTemplate: "VerifyVmTemplate",
} as const;

/** The onboarding-side kinds a target can ask for (the power side's are power_events' own). */
export const ONBOARDING_KINDS = [
  "host.active",
  "onboarding.step_failed",
  "template.build_failed",
  "template.missing",
  "template.back",
  "key_rotation.host_left_behind",
] as const;
export type OnboardingKind = (typeof ONBOARDING_KINDS)[number];

export type RunEventFacts = {
  /** The run event's own kind: `run.succeeded`, `run.failed`, … */
  kind: string;
  message: string;
  pipeline: string;
  step: string;
};

export type Classified = { kind: OnboardingKind; severity: Severity };

/**
 * Which run events are worth a notification, and as what: a finished onboarding (the host is
 * active), a failed one (by the step it failed at: the template build, the template check, any
 * other), a key rotation that failed or finished with hosts it could not move (`hostsLeft`, from
 * the rotation's per-host outcomes). Everything else a run records (step advanced, …) is not.
 */
export function classifyRunEvent(event: RunEventFacts, hostsLeft: number): Classified | null {
  if (event.pipeline === RUN_NAMES.onboard) {
    if (event.kind === "run.succeeded") return { kind: "host.active", severity: "info" };
    if (event.kind !== "run.failed") return null;
    if (event.step === RUN_NAMES.buildTemplate) {
      return { kind: "template.build_failed", severity: "warning" };
    }
    if (event.step === RUN_NAMES.verifyTemplate) {
      return { kind: "template.missing", severity: "warning" };
    }
    return { kind: "onboarding.step_failed", severity: "warning" };
  }
  if (event.pipeline === RUN_NAMES.rotateKey) {
    if (event.kind === "run.failed" || (event.kind === "run.succeeded" && hostsLeft > 0)) {
      return { kind: "key_rotation.host_left_behind", severity: "warning" };
    }
  }
  return null;
}
