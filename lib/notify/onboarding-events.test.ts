import { describe, expect, it } from "vitest";
import { ROTATE_CONSOLE_KEY } from "@/lib/console-key/rotation/pipeline";
import { onboardHostPipeline } from "@/lib/steps/onboarding";
import { retryDelayMs } from "./backoff";
import { classifyRunEvent, RUN_NAMES } from "./onboarding-events";

const event = (kind: string, step: string, pipeline: string = RUN_NAMES.onboard) => ({
  kind,
  step,
  pipeline,
  message: `${step}: something`,
});

describe("run events as notifications", () => {
  it("spell the pipelines' and steps' names as the pipelines do", () => {
    expect(RUN_NAMES.onboard).toBe(onboardHostPipeline.name);
    expect(RUN_NAMES.rotateKey).toBe(ROTATE_CONSOLE_KEY);
    const steps = onboardHostPipeline.steps.map((s) => s.name);
    expect(steps).toContain(RUN_NAMES.buildTemplate);
    expect(steps).toContain(RUN_NAMES.verifyTemplate);
  });

  it("a finished onboarding is a host going active; a failed one is named by the step it failed at", () => {
    expect(classifyRunEvent(event("run.succeeded", "VerifyVmTemplate"), 0)).toEqual({
      kind: "host.active",
      severity: "info",
    });
    expect(classifyRunEvent(event("run.failed", "BuildVmTemplate"), 0)?.kind).toBe(
      "template.build_failed",
    );
    expect(classifyRunEvent(event("run.failed", "VerifyVmTemplate"), 0)?.kind).toBe(
      "template.missing",
    );
    expect(classifyRunEvent(event("run.failed", "InstallProxmox"), 0)?.kind).toBe(
      "onboarding.step_failed",
    );
    expect(classifyRunEvent(event("step.advanced", "InstallProxmox"), 0)).toBeNull();
  });

  it("a key rotation leaving hosts behind (failed, or finished with hosts not moved) is one; a clean one is not", () => {
    const rotation = (kind: string) => event(kind, "SwitchHostsToNewKey", RUN_NAMES.rotateKey);
    expect(classifyRunEvent(rotation("run.failed"), 0)?.kind).toBe("key_rotation.host_left_behind");
    expect(classifyRunEvent(rotation("run.succeeded"), 2)?.kind).toBe(
      "key_rotation.host_left_behind",
    );
    expect(classifyRunEvent(rotation("run.succeeded"), 0)).toBeNull();
    expect(classifyRunEvent(event("run.failed", "X", "decommission-host"), 0)).toBeNull();
  });
});

describe("the retry backoff", () => {
  it("doubles from its base and stops growing at ten minutes", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 5000))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(30, 5000)).toBe(600_000);
  });
});
