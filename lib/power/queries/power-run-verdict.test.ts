import { describe, expect, it } from "vitest";
import {
  CANCELLED_REASON,
  describePowerRun,
  powerStepVerdicts,
  type PowerRunFacts,
} from "./power-run-verdict";
import { SHUTDOWN_CANCELLED } from "@/lib/power/shutdown/shut-down-targets";

const STEPS = [
  "PlanShutdown",
  "ShutDownTargets",
  "CheckConsolidation",
  "DisarmHa",
  "MigrateGuests",
  "StopClusterGuests",
  "SetCephFlags",
  "ShutDownClusterNodes",
  "VerifyTargetsDown",
];
const allDone = STEPS.map((name) => ({ name, state: "done" }));

const standalone = (mode: "armed" | "dry-run") => ({
  mode,
  targets: [
    { id: "t1", name: "pve1", cluster: null, afterClusters: false },
    { id: "t2", name: "pve2", cluster: null, afterClusters: false },
  ],
  clusters: [],
});

function facts(over: Partial<PowerRunFacts>): PowerRunFacts {
  return {
    status: "succeeded",
    failureReason: null,
    failedStep: null,
    currentStep: "VerifyTargetsDown",
    context: { plan: standalone("armed") },
    calls: [],
    actions: [],
    ...over,
  };
}

const wouldSend = (targetId: string) => ({
  targetId,
  state: "would_send" as const,
  seenDownAt: null,
});
const sent = (targetId: string, seenDownAt: string | null = null) => ({
  targetId,
  state: "sent" as const,
  seenDownAt,
});

describe("describePowerRun", () => {
  it("a dry-run says what would have been sent and that nothing was", () => {
    const run = facts({
      context: { plan: standalone("dry-run") },
      calls: [wouldSend("t1"), wouldSend("t2")],
      actions: [
        { lane: "pve1", outcome: "would-do" },
        { lane: "pve2", outcome: "would-do" },
      ],
    });
    expect(describePowerRun(run)).toEqual({
      tone: "dry-run",
      text: "dry-run: 2 calls would have been sent, nothing sent",
    });
  });

  it("an armed run is a success only for the hosts seen down", () => {
    const both = facts({
      calls: [sent("t1", "2026-01-01T00:00:05Z"), sent("t2", "2026-01-01T00:00:06Z")],
    });
    expect(describePowerRun(both)).toEqual({ tone: "ok", text: "2 of 2 hosts confirmed down" });
  });

  it("a host still answering after its deadline is named", () => {
    const run = facts({
      status: "failed",
      failedStep: "VerifyTargetsDown",
      failureReason: "1 of 2 target(s) still answering after their time to go down: …",
      calls: [
        sent("t1", "2026-01-01T00:00:05Z"),
        { targetId: "t2", state: "failed", seenDownAt: null },
        sent("t2"),
      ],
    });
    expect(describePowerRun(run)).toEqual({
      tone: "failed",
      text: "failed: pve2 still answers after its deadline; 1 of 2 hosts confirmed down",
    });
  });

  it("mains back before any call is a cancellation, not a failure", () => {
    expect(CANCELLED_REASON).toBe(SHUTDOWN_CANCELLED);
    const run = facts({
      status: "failed",
      failedStep: "ShutDownTargets",
      failureReason: SHUTDOWN_CANCELLED,
      context: { plan: standalone("armed"), outcome: "cancelled", dropped: ["t1", "t2"] },
    });
    expect(describePowerRun(run)).toEqual({
      tone: "cancelled",
      text: "cancelled: mains back before any call — nothing sent",
    });
  });

  it("an abort says where and what had been sent", () => {
    const run = facts({
      status: "failed",
      failedStep: "VerifyTargetsDown",
      failureReason: "aborted by operator",
      calls: [sent("t1")],
    });
    expect(describePowerRun(run)).toEqual({
      tone: "aborted",
      text: "aborted during VerifyTargetsDown: 1 host called, 0 confirmed down",
    });
  });

  it("spared targets are named and not counted as down", () => {
    const run = facts({
      context: { plan: standalone("armed"), dropped: ["t2"] },
      calls: [sent("t1", "2026-01-01T00:00:05Z")],
    });
    expect(describePowerRun(run).text).toBe("1 of 1 host confirmed down; pve2 spared (mains back)");
  });

  it("a finished armed run with a host never seen down is not green", () => {
    const run = facts({ calls: [sent("t1", "2026-01-01T00:00:05Z"), sent("t2")] });
    expect(describePowerRun(run)).toEqual({ tone: "failed", text: "1 of 2 hosts confirmed down" });
  });
});

describe("the UPS output cycle in the run's line and its step", () => {
  const cycle = (outcome: string | null, detail: string | null = null) => ({
    lane: "ups1",
    label: "cycle output ups1",
    outcome,
    detail,
  });
  const down = [sent("t1", "2026-01-01T00:00:05Z"), sent("t2", "2026-01-01T00:00:06Z")];
  const withStep = [...allDone, { name: "CycleUpsOutput", state: "done" }];

  it("asked: the line says upsd accepted it (not that the output cycled), and the step stays done", () => {
    const run = facts({ calls: down, actions: [cycle("ok", "upsd answered OK: …")] });
    expect(describePowerRun(run)).toEqual({
      tone: "ok",
      text: "2 of 2 hosts confirmed down; ups1 asked to cycle its output (upsd accepted)",
    });
    expect(powerStepVerdicts(run, withStep).CycleUpsOutput).toBeUndefined();
  });

  it("refused before sending, or refused by upsd: never done, the step says why", () => {
    const refused = facts({
      calls: down,
      actions: [cycle("failed", "not sent: pve9 is fed by ups1 but not shut down by this run")],
    });
    expect(describePowerRun(refused).text).toBe(
      "2 of 2 hosts confirmed down; output cycle of ups1 not sent",
    );
    expect(powerStepVerdicts(refused, withStep).CycleUpsOutput).toEqual({
      state: "skipped",
      note: "skipped — not done: not sent: pve9 is fed by ups1 but not shut down by this run",
    });
    const failed = facts({ calls: down, actions: [cycle("failed", "… (ERR ACCESS-DENIED) …")] });
    expect(describePowerRun(failed).text).toBe(
      "2 of 2 hosts confirmed down; output cycle of ups1 failed",
    );
  });

  it("in dry-run: counted apart from the shutdown calls, as 'would ask'", () => {
    const run = facts({
      context: { plan: standalone("dry-run") },
      calls: [wouldSend("t1"), wouldSend("t2")],
      actions: [
        { lane: "pve1", outcome: "would-do" },
        { lane: "pve2", outcome: "would-do" },
        cycle("would-do", "dry-run: nothing sent"),
      ],
    });
    expect(describePowerRun(run).text).toBe(
      "dry-run: 2 calls would have been sent, nothing sent; would ask ups1 to cycle its output",
    );
    expect(powerStepVerdicts(run, withStep).CycleUpsOutput).toEqual({
      state: "dry-run",
      note: "dry-run — recorded what it would do, nothing sent",
    });
  });

  it("off: the step reads skipped, the line says nothing of it", () => {
    const run = facts({ calls: down });
    expect(describePowerRun(run).text).toBe("2 of 2 hosts confirmed down");
    expect(powerStepVerdicts(run, withStep).CycleUpsOutput).toEqual({
      state: "skipped",
      note: "skipped — the UPS's output cycle is off",
    });
  });
});

describe("powerStepVerdicts", () => {
  it("dry-run on two standalone nodes: no step after planning reads done", () => {
    const run = facts({
      context: { plan: standalone("dry-run") },
      calls: [wouldSend("t1"), wouldSend("t2")],
    });
    expect(powerStepVerdicts(run, allDone)).toEqual({
      ShutDownTargets: {
        state: "dry-run",
        note: "dry-run — 2 calls would have been sent, nothing sent",
      },
      CheckConsolidation: { state: "skipped", note: "skipped — no consolidation" },
      DisarmHa: { state: "skipped", note: "skipped — no cluster" },
      MigrateGuests: { state: "skipped", note: "skipped — no migration" },
      StopClusterGuests: { state: "skipped", note: "skipped — no cluster" },
      SetCephFlags: { state: "skipped", note: "skipped — no cluster" },
      ShutDownClusterNodes: { state: "skipped", note: "skipped — no cluster" },
      VerifyTargetsDown: { state: "skipped", note: "skipped — dry-run" },
    });
  });

  it("armed with hosts seen down: ShutDownTargets and VerifyTargetsDown stay done", () => {
    const run = facts({
      calls: [sent("t1", "2026-01-01T00:00:05Z"), sent("t2", "2026-01-01T00:00:06Z")],
    });
    const verdicts = powerStepVerdicts(run, allDone);
    expect(verdicts.ShutDownTargets).toBeUndefined();
    expect(verdicts.VerifyTargetsDown).toBeUndefined();
    expect(verdicts.DisarmHa).toEqual({ state: "skipped", note: "skipped — no cluster" });
  });

  it("a Ceph-less cluster run skips only the Ceph flags; a fallen-back cluster skips its preparation", () => {
    const plan = {
      mode: "armed",
      targets: [
        { id: "a", name: "pve1", cluster: "c1", afterClusters: false },
        { id: "b", name: "pve2", cluster: "c1", afterClusters: false },
      ],
      clusters: [
        {
          clusterId: "c1",
          name: "lab",
          hyperConverged: false,
          nodes: [{ targetId: "a" }, { targetId: "b" }],
          consolidate: null,
        },
      ],
    };
    const run = facts({ context: { plan }, calls: [sent("a", "x"), sent("b", "y")] });
    const verdicts = powerStepVerdicts(run, allDone);
    expect(verdicts.SetCephFlags).toEqual({ state: "skipped", note: "skipped — no Ceph" });
    expect(verdicts.DisarmHa).toBeUndefined();
    expect(verdicts.ShutDownClusterNodes).toBeUndefined();
    expect(verdicts.ShutDownTargets).toEqual({
      state: "skipped",
      note: "skipped — every target goes down with its cluster",
    });

    const fell = facts({
      context: { plan, "cluster:fallback": { c1: "no member's API answers" } },
      calls: [sent("a", "x"), sent("b", "y")],
    });
    expect(powerStepVerdicts(fell, allDone).DisarmHa).toEqual({
      state: "skipped",
      note: "skipped — every cluster fell back to node-by-node shutdown",
    });
  });

  it("a partial outage: HA is not disarmed, and the step says why", () => {
    const plan = {
      mode: "armed",
      targets: [{ id: "a", name: "pve1", cluster: "c1", afterClusters: false }],
      clusters: [
        {
          clusterId: "c1",
          name: "lab",
          hyperConverged: true,
          nodes: [{ targetId: "a" }],
          consolidate: null,
          partial: { staying: ["pve2", "pve3"] },
        },
      ],
    };
    const verdicts = powerStepVerdicts(
      facts({ context: { plan }, calls: [sent("a", "x")] }),
      allDone,
    );
    expect(verdicts.DisarmHa).toEqual({
      state: "skipped",
      note: "skipped — partial outage: HA stays armed for the nodes that keep power",
    });
    expect(verdicts.StopClusterGuests).toBeUndefined();
    expect(verdicts.SetCephFlags).toBeUndefined();
  });

  it("leaves steps that are not done as the engine says", () => {
    const run = facts({ context: { plan: standalone("dry-run") } });
    expect(
      powerStepVerdicts(run, [
        { name: "DisarmHa", state: "running" },
        { name: "VerifyTargetsDown", state: "pending" },
      ]),
    ).toEqual({});
  });
});
