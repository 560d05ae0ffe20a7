import { describe, expect, it } from "vitest";
import {
  describePowerBack,
  powerBackOriginOf,
  powerBackStepVerdicts,
  type PowerBackFacts,
} from "./power-back-verdict";

const STEPS = [
  "PlanPowerBack",
  "PowerOnHosts",
  "WaitForNodes",
  "RestoreClusters",
  "StartGuests",
  "ReportPowerBack",
];
const allDone = STEPS.map((name) => ({ name, state: "done" }));

const host = (n: number) => ({
  targetId: `t${n}`,
  name: `pve${n}`,
  endpoint: { nodeName: `node${n}` },
});

const plan = (mode: "armed" | "dry-run", over: Record<string, unknown> = {}) => ({
  mode,
  hosts: [host(1), host(2), host(3)],
  clusters: [{ clusterId: "c1", name: "c1", cephFlags: ["noout"], haDisarmed: true }],
  guests: [{ vmid: 100 }, { vmid: 101 }, { vmid: 102 }, { vmid: 103 }, { vmid: 104 }],
  ...over,
});

function facts(over: Partial<PowerBackFacts>): PowerBackFacts {
  return {
    status: "succeeded",
    failureReason: null,
    failedStep: null,
    currentStep: "ReportPowerBack",
    phase: null,
    context: { plan: plan("armed") },
    actions: [],
    abortedBy: null,
    ...over,
  };
}

const would = (lane: string, label: string) => ({
  lane,
  label,
  outcome: "would-do",
  detail: "dry-run: nothing sent",
});

const allBack = {
  "back:power": { t1: "powered-on", t2: "powered-on", t3: "already-on" },
  "back:wait": { up: ["t1", "t2", "t3"], quorate: ["c1"] },
  "back:guests": Object.fromEntries(
    [100, 101, 102, 103, 104].map((v) => [v, { outcome: "running" }]),
  ),
  "back:restore": {
    c1: {
      done: true,
      items: [
        { what: "Ceph flags", outcome: "restored", detail: "cleared" },
        { what: "HA", outcome: "restored", detail: "armed" },
      ],
    },
  },
};

describe("describePowerBack", () => {
  it("while it runs, says the one thing it waits for, from the phase line", () => {
    const v = describePowerBack(
      facts({
        status: "running",
        currentStep: "WaitForNodes",
        phase: "waiting for quorum of c1: 2 of 3 online",
      }),
    );
    expect(v).toEqual({
      tone: "running",
      text: "bringing back: waiting for quorum of c1: 2 of 3 online",
    });
  });

  it("while it runs without a phase line, says which part it is in", () => {
    expect(describePowerBack(facts({ status: "running", currentStep: "StartGuests" })).text).toBe(
      "bringing back: starting the guests",
    );
    expect(
      describePowerBack(facts({ status: "running", currentStep: "PlanPowerBack", context: {} })),
    ).toEqual({ tone: "running", text: "bringing back: planning the way back" });
  });

  it("every host back and every guest read running is the only green", () => {
    const v = describePowerBack(facts({ context: { plan: plan("armed"), ...allBack } }));
    expect(v).toEqual({ tone: "ok", text: "3 of 3 hosts back, 5 of 5 guests running" });
  });

  it("a host is back when its API answered, not when its power-on was accepted", () => {
    const v = describePowerBack(
      facts({
        context: {
          plan: plan("armed"),
          ...allBack,
          "back:wait": { up: ["t1", "t3"], quorate: ["c1"] },
        },
      }),
    );
    expect(v.tone).toBe("failed");
    expect(v.text).toBe(
      "failed: pve2 was powered on but its API never answered; 2 of 3 hosts back, 5 of 5 guests running",
    );
  });

  it("a controller that failed is named with its reason and what to do; the rest is counted", () => {
    const other = describePowerBack(
      facts({
        context: {
          plan: plan("armed"),
          ...allBack,
          "back:power": { ...allBack["back:power"], t1: "failed" },
        },
        actions: [
          { lane: "node1", label: "power on node1", outcome: "failed", detail: "HTTP 401." },
        ],
      }),
    );
    expect(other.text).toMatch(/^failed: pve1: HTTP 401 — power it on by hand; /);
    const v = describePowerBack(
      facts({
        context: {
          plan: plan("armed"),
          ...allBack,
          "back:power": { t1: "powered-on", t2: "failed", t3: "powered-on" },
          "back:wait": { up: ["t1", "t3"], quorate: ["c1"] },
        },
        actions: [
          {
            lane: "node2",
            label: "power on node2",
            outcome: "failed",
            detail: "pve2's controller refused the login (HTTP 401)\nraw body",
          },
        ],
      }),
    );
    expect(v).toEqual({
      tone: "failed",
      text: "failed: pve2's controller refused the login (HTTP 401) — power it on by hand; 2 of 3 hosts back, 5 of 5 guests running",
    });
  });

  it("a host without a controller will not come back on its own: said, with what to do", () => {
    const v = describePowerBack(
      facts({
        context: {
          plan: plan("armed"),
          ...allBack,
          "back:power": { t1: "powered-on", t2: "powered-on", t3: "no-controller" },
          "back:wait": { up: ["t1", "t2"], quorate: ["c1"] },
        },
      }),
    );
    expect(v.text).toBe(
      "failed: pve3 has no power controller — power it on by hand; 2 of 3 hosts back, 5 of 5 guests running",
    );
  });

  it("guests not started and a cluster not restored are named", () => {
    const v = describePowerBack(
      facts({
        context: {
          plan: plan("armed"),
          ...allBack,
          "back:guests": { ...allBack["back:guests"], 103: { outcome: "failed" } },
          "back:restore": {
            c1: { done: true, items: [{ what: "Ceph flags", outcome: "failed", detail: "PGs" }] },
          },
        },
      }),
    );
    expect(v.text).toBe(
      "failed: guest 103 not started; c1: Ceph flags not restored — restore it on /power; 3 of 3 hosts back, 4 of 5 guests running",
    );
  });

  it("a dry-run names the hosts it would power on by target, even when their node names are alike", () => {
    const twins = plan("dry-run", {
      clusters: [],
      guests: [],
      hosts: [
        { targetId: "t1", name: "pve-a", endpoint: { nodeName: "pve" } },
        { targetId: "t2", name: "pve-b", endpoint: { nodeName: "pve" } },
      ],
    });
    const v = describePowerBack(
      facts({
        context: { plan: twins, "back:power": { t1: "no-controller", t2: "would" } },
        actions: [
          { lane: "pve", label: "power on pve", outcome: "failed", detail: "no power controller" },
          would("pve", "power on pve"),
        ],
      }),
    );
    expect(v.text).toBe(
      "dry-run: would power on pve-b; nothing sent; pve-a has no power controller — power it on by hand",
    );
  });

  it("a dry-run says what it would power on and start, and that nothing was sent", () => {
    const v = describePowerBack(
      facts({
        context: {
          plan: plan("dry-run", { clusters: [], guests: [] }),
          "back:power": { t1: "would", t2: "would", t3: "would" },
        },
        actions: [
          would("node1", "power on node1"),
          would("node2", "power on node2"),
          would("node3", "power on node3"),
        ],
      }),
    );
    expect(v).toEqual({
      tone: "dry-run",
      text: "dry-run: would power on pve1, pve2 and pve3; nothing sent",
    });
  });

  it("a dry-run with guests and a cluster lists those too; a host without a controller is named", () => {
    const v = describePowerBack(
      facts({
        context: {
          plan: plan("dry-run"),
          "back:power": { t1: "would", t2: "would", t3: "no-controller" },
        },
        actions: [
          would("node1", "power on node1"),
          would("node2", "power on node2"),
          {
            lane: "node3",
            label: "power on node3",
            outcome: "failed",
            detail: "no power controller",
          },
          would("cluster", "clear Ceph flags"),
          would("cluster", "re-arm HA"),
          ...[100, 101].map((v) => would("node1", `start qemu ${v}`)),
        ],
      }),
    );
    expect(v.text).toBe(
      "dry-run: would power on pve1 and pve2, clear Ceph flags and re-arm HA, start 2 guests; nothing sent; pve3 has no power controller — power it on by hand",
    );
  });

  it("a dry-run in progress says so and that nothing is sent", () => {
    const v = describePowerBack(
      facts({
        status: "running",
        currentStep: "PowerOnHosts",
        context: { plan: plan("dry-run"), "back:power": { t1: "would" } },
        actions: [would("node1", "power on node1")],
      }),
    );
    expect(v).toEqual({
      tone: "dry-run",
      text: "dry-run in progress: would power on pve1; nothing sent",
    });
  });

  it("mains lost again (the step saw it): stopped, with how far it got", () => {
    const v = describePowerBack(
      facts({
        status: "failed",
        failedStep: "PowerOnHosts",
        failureReason:
          "mains lost again on ups1: the way back stops here, nothing more is powered on or started",
        context: {
          plan: plan("armed"),
          outcome: "new-outage",
          "back:power": { t1: "powered-on" },
          "back:wait": { up: ["t1"] },
        },
      }),
    );
    expect(v).toEqual({
      tone: "stopped",
      text: "stopped: mains lost again on ups1 — 1 of 3 hosts back, 0 of 5 guests running; nothing more is powered on or started",
    });
  });

  it("mains lost again (the monitor aborted it): stopped, never an operator's abort", () => {
    const v = describePowerBack(
      facts({
        status: "failed",
        failedStep: "WaitForNodes",
        failureReason: "aborted by operator",
        abortedBy: "power monitor: mains lost again on ups1, ups2",
      }),
    );
    expect(v.tone).toBe("stopped");
    expect(v.text).toMatch(/^stopped: mains lost again on ups1, ups2 — 0 of 3 hosts back/);
  });

  it("an operator's abort says who, where and how far", () => {
    const v = describePowerBack(
      facts({
        status: "failed",
        failedStep: "StartGuests",
        failureReason: "aborted by operator",
        abortedBy: "alice",
        context: {
          plan: plan("armed"),
          ...allBack,
          "back:guests": { 100: { outcome: "running" } },
        },
      }),
    );
    expect(v).toEqual({
      tone: "aborted",
      text: "aborted during StartGuests by alice: 3 of 3 hosts back, 1 of 5 guests running",
    });
  });

  it("a failed step says where and the first line of why", () => {
    const v = describePowerBack(
      facts({
        status: "failed",
        failedStep: "PlanPowerBack",
        failureReason: "None of the outage's hosts went down: nothing to bring back.\nmore",
        context: {},
      }),
    );
    expect(v).toEqual({
      tone: "failed",
      text: "failed at PlanPowerBack: None of the outage's hosts went down: nothing to bring back.",
    });
  });
});

describe("powerBackStepVerdicts", () => {
  it("in dry-run: power-ons and starts are dry-run, the wait is skipped — nothing is ever done's tick", () => {
    const v = powerBackStepVerdicts(
      facts({
        context: { plan: plan("dry-run") },
        actions: [
          would("node1", "power on node1"),
          would("node2", "power on node2"),
          would("cluster", "clear Ceph flags"),
          would("node1", "start qemu 100"),
        ],
      }),
      allDone,
    );
    expect(v).toEqual({
      PowerOnHosts: {
        state: "dry-run",
        note: "dry-run — 2 power-ons would have been sent, nothing sent",
      },
      WaitForNodes: { state: "skipped", note: "skipped — dry-run" },
      RestoreClusters: {
        state: "dry-run",
        note: "dry-run — recorded what it would do, nothing sent",
      },
      StartGuests: {
        state: "dry-run",
        note: "dry-run — 1 guest would have been started, nothing sent",
      },
    });
  });

  it("armed: a step with nothing to do says why; the others read as the engine says", () => {
    const v = powerBackStepVerdicts(
      facts({
        context: {
          plan: plan("armed", { clusters: [], guests: [] }),
          "back:power": { t1: "no-controller", t2: "no-controller", t3: "failed" },
        },
      }),
      allDone,
    );
    expect(v).toEqual({
      WaitForNodes: { state: "skipped", note: "skipped — nothing was powered on" },
      RestoreClusters: { state: "skipped", note: "skipped — no cluster" },
      StartGuests: { state: "skipped", note: "skipped — no guest was running before the outage" },
    });
    expect(
      powerBackStepVerdicts(facts({ context: { plan: plan("armed"), ...allBack } }), allDone),
    ).toEqual({});
  });

  it("only steps the engine calls done get a verdict", () => {
    const steps = STEPS.map((name) => ({
      name,
      state: name === "PlanPowerBack" ? "done" : "pending",
    }));
    expect(powerBackStepVerdicts(facts({ context: { plan: plan("dry-run") } }), steps)).toEqual({});
  });
});

describe("powerBackOriginOf", () => {
  const ids = ["2b7e1d2a-1c1a-4c1e-9a51-0f0f0f0f0f0f"];
  it("names the admin who brought it back, or the monitor's why", () => {
    expect(
      powerBackOriginOf({ input: { by: { kind: "admin", name: "alice" }, shutdownRunIds: ids } }),
    ).toEqual({
      kind: "way-back",
      by: "admin",
      name: "alice",
    });
    expect(
      powerBackOriginOf({
        input: { by: { kind: "monitor", why: "mains stable 5 min" }, shutdownRunIds: ids },
      }),
    ).toEqual({ kind: "way-back", by: "monitor", why: "mains stable 5 min" });
    expect(powerBackOriginOf({})).toEqual({ kind: "unknown" });
  });
});
