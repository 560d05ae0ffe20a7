import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerBackGuests, powerEvents } from "@/lib/db/schema";
import { readRunning, writeRunning, writeVmConfig } from "@/lab/pve/state";
import { readLogTail } from "@/lib/logs/read";
import { actionsOfRun } from "@/lib/power/records/run-actions";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { waitUntil, type LabNode } from "@/lab";
import { startControlServer, type ControlServer } from "@/lab/control/server";
import { startLabPbs, type LabPbs } from "@/lab/pbs/server";
import { registerTestDatabase } from "@/test/db";
import {
  addUps,
  ADMIN,
  onboardedLabNode,
  powerTestPipelines,
  persistReading,
  protectHost,
  protectPbs,
  shutdownInput,
} from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import { callsOfRun } from "./calls";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { SHUTDOWN_CANCELLED } from "./shut-down-targets";
import { startShutdownRun } from "../shutdown-pipeline/start-shutdown-run";

const database = registerTestDatabase(6);
let worker: WorkerHandle;
const nodes: Record<"a" | "b" | "c", LabNode> = {} as never;
const targets: Record<"a" | "b" | "c" | "pbs", string> = {} as never;
let pbs: LabPbs;
let upsId: string;
let control: ControlServer;

beforeAll(async () => {
  const { db, url } = database;
  worker = await startWorker({
    connectionString: url,
    pipelines: powerTestPipelines,
    concurrency: 2,
    pollIntervalMs: 200,
    periodicChecks: false,
    log: () => {},
  });
  upsId = await addUps(db);
  for (const [key, name] of [
    ["a", "pve-a"],
    ["b", "pve-b"],
    ["c", "pve-c"],
  ] as const) {
    const { node, hostId } = await onboardedLabNode(db, name);
    nodes[key] = node;
    targets[key] = await protectHost(db, hostId, {
      feeds: [upsId],
      stage: key === "b" ? 1 : 0,
      // pve-c runs the console: last, although its stage is 0.
      runsConsole: key === "c",
    });
  }
  pbs = await startLabPbs({ name: "pbs-lab" });
  targets.pbs = await protectPbs(db, pbs, { feeds: [upsId], stage: 1 });
  await updatePowerSettings(
    db,
    { shutdown: { callTimeoutSeconds: 2, targetDownSeconds: 20 } },
    ADMIN,
  );
  // The lab's own record of what reached each node (never the console's records).
  control = await startControlServer({ nodes: () => Object.values(nodes) });
}, 120_000);

afterAll(async () => {
  await control?.stop();
  await worker?.stop();
  await Promise.all([...Object.values(nodes).map((node) => node.stop()), pbs?.stop()]);
});

const posts = (node: LabNode) => node.api.requests.filter((r) => r.method === "POST");

/** What the lab's control API says a node received and how it is now. */
async function labSays(node: LabNode): Promise<{
  power: string;
  shutdownRequests: Array<{ at: string; status: number }>;
}> {
  const response = await fetch(`${control.url}/api/nodes/${node.name}`);
  return (await response.json()) as never;
}

async function runShutdown(targetIds: string[], dueSince = new Date()) {
  const { db } = database;
  const runId = await db.transaction((tx) =>
    startShutdownRun(tx, shutdownInput(upsId, targetIds, dueSince)),
  );
  return settled(db, runId, 90_000);
}

async function eventsOf(runId: string) {
  return database.db
    .select()
    .from(powerEvents)
    .where(eq(powerEvents.runId, runId))
    .orderBy(asc(powerEvents.id));
}

async function powerOnAll() {
  await Promise.all([...Object.values(nodes).map((node) => node.power.powerOn()), pbs.powerOn()]);
}

describe("the power-shutdown pipeline", () => {
  it("in dry-run runs the whole chain, records the exact requests as 'would …', and sends nothing", async () => {
    await persistReading(database.db, upsId, true);
    const run = await runShutdown(Object.values(targets));
    expect(run.status).toBe("succeeded");

    const events = await eventsOf(run.id);
    const wouldSend = events.filter((e) => e.kind === "shutdown.would_send");
    const line = (node: LabNode) =>
      `would POST https://127.0.0.1:${node.api.port}/api2/json/nodes/${node.name}/status command=shutdown`;
    const pbsLine = `would POST https://127.0.0.1:${pbs.port}/api2/json/nodes/localhost/status command=shutdown`;
    expect(wouldSend).toHaveLength(4);
    // Stage 1 (pve-b and the PBS) goes out together, in either order.
    const middle = wouldSend.slice(1, 3).map((e) => e.message);
    expect(middle.filter((m) => m.includes(line(nodes.b)))).toHaveLength(1);
    expect(middle.filter((m) => m.includes(pbsLine))).toHaveLength(1);
    // The console's host comes last; the stage-0 host first.
    expect(wouldSend[0]!.message).toContain(line(nodes.a));
    expect(wouldSend[3]!.message).toContain(line(nodes.c));
    expect(wouldSend[0]!.data).toMatchObject({
      request: {
        method: "POST",
        url: `https://127.0.0.1:${nodes.a.api.port}/api2/json/nodes/pve-a/status`,
        form: { command: "shutdown" },
        authorization: "PVEAPIToken=clupilot@pve!console=***",
      },
    });

    // Nothing reached any target.
    for (const node of Object.values(nodes)) expect(posts(node)).toEqual([]);
    expect(pbs.requests).toEqual([]);
    const log = (await readLogTail(database.db, run.id, 200)).map((l) => l.text).join("\n");
    expect(log).toContain("mode: dry-run");
    expect(log).toContain(`${line(nodes.a)} (dry-run: nothing sent)`);
    expect(log).not.toMatch(/PVEAPIToken=[^*\s]*=[0-9a-f-]{36}/);

    // The timeline's record: one would-do action per target, its lane the target's name.
    const actions = await actionsOfRun(database.db, run.id);
    expect(actions.map((a) => a.outcome)).toEqual(Array(4).fill("would-do"));
    expect(actions[0]).toMatchObject({ lane: "pve-a", label: "shutdown pve-a" });
    expect(actions[0]!.request).toBe(line(nodes.a).replace(/^would /, ""));
    expect(actions.every((a) => a.finishedAt)).toBe(true);
  });

  it("armed: one call per target in order — stages, then the console's host last; PBS gets its header and path; all go down", async () => {
    const { db } = database;
    await setPowerMode(db, { mode: "armed", confirmedTargetIds: Object.values(targets) }, ADMIN);
    await persistReading(db, upsId, true);
    const run = await runShutdown(Object.values(targets));
    expect(run.status).toBe("succeeded");

    for (const node of Object.values(nodes)) {
      expect(posts(node)).toHaveLength(1);
      expect(posts(node)[0]).toMatchObject({
        path: `/api2/json/nodes/${node.name}/status`,
        body: { command: "shutdown" },
        authid: "clupilot@pve!console",
        status: 200,
      });
    }
    const pbsPosts = pbs.requests.filter((r) => r.method === "POST");
    expect(pbsPosts).toHaveLength(1);
    expect(pbsPosts[0]).toMatchObject({
      path: "/api2/json/nodes/localhost/status",
      scheme: "PBSAPIToken",
      authid: pbs.token.id,
      body: { command: "shutdown" },
      status: 200,
    });
    const at = (node: LabNode) => posts(node)[0]!.at.getTime();
    expect(at(nodes.a)).toBeLessThan(at(nodes.b));
    expect(at(nodes.a)).toBeLessThan(pbsPosts[0]!.at.getTime());
    expect(at(nodes.b)).toBeLessThan(at(nodes.c));
    expect(pbsPosts[0]!.at.getTime()).toBeLessThan(at(nodes.c));

    for (const node of Object.values(nodes)) expect(node.power.state).toBe("down");
    expect(pbs.state).toBe("down");
    const kinds = (await eventsOf(run.id)).map((e) => e.kind);
    expect(kinds.filter((k) => k === "shutdown.sent")).toHaveLength(4);
    expect(kinds.filter((k) => k === "target.down")).toHaveLength(4);
    const actions = await actionsOfRun(db, run.id);
    expect(actions.map((a) => [a.lane, a.outcome])).toEqual([
      ["pve-a", "ok"],
      ...actions.slice(1, 3).map((a) => [a.lane, "ok"]),
      ["pve-c", "ok"],
    ]);
    expect(
      actions
        .slice(1, 3)
        .map((a) => a.lane)
        .sort(),
    ).toEqual(["pbs-lab", "pve-b"]);
    for (const action of actions) {
      expect(action.finishedAt!.getTime()).toBeGreaterThanOrEqual(action.startedAt.getTime());
    }
    await powerOnAll();
  });

  it("a target that never answers is called again until its time is over, reported, and the sequence goes on", async () => {
    const { db } = database;
    await persistReading(db, upsId, true);
    await nodes.a.switches.apply({ "api.statusPostHang": true });
    const before = posts(nodes.b).length;
    const heard = (await labSays(nodes.a)).shutdownRequests.length;
    try {
      const run = await runShutdown([targets.a, targets.b]);
      expect(run.status).toBe("failed");
      expect(run.failureReason).toMatch(
        /1 of 2 target\(s\) still answering after their time to go down: .*\(no call accepted; last: .*timed out after 2000 ms\)/,
      );
      expect(run.failureReason).toMatch(/seen down: /);
      // The next group did not wait for the hanging one: its single call went out and it is down.
      expect(posts(nodes.b)).toHaveLength(before + 1);
      expect(nodes.b.power.state).toBe("down");
      expect(nodes.a.power.state).toBe("up");
      // pve-a was asked again and again while its time lasted; the lab heard every one.
      const attempts = (await callsOfRun(db, run.id)).filter((c) => c.targetId === targets.a);
      expect(attempts.length).toBeGreaterThanOrEqual(3);
      expect(attempts.map((c) => c.attempt)).toEqual(attempts.map((_, i) => i + 1));
      expect(attempts.every((c) => c.state === "failed")).toBe(true);
      expect((await labSays(nodes.a)).shutdownRequests.length - heard).toBe(attempts.length);
      const failed = (await eventsOf(run.id)).filter((e) => e.kind === "shutdown.failed");
      expect(failed.length).toBe(attempts.length);
      expect(failed.every((e) => e.targetId === targets.a)).toBe(true);
      expect((await eventsOf(run.id)).filter((e) => e.kind === "target.still_up")).toHaveLength(1);
      const actions = await actionsOfRun(db, run.id);
      expect(actions.find((a) => a.lane === "pve-a")).toMatchObject({
        outcome: "failed",
        detail: expect.stringMatching(/timed out after 2000 ms/),
      });
    } finally {
      await nodes.a.switches.apply({ "api.statusPostHang": false });
      await powerOnAll();
    }
  });

  it("a shutdown POST that hangs past its deadline, then is acted on: called again meanwhile, and the node goes down", async () => {
    const { db } = database;
    await persistReading(db, upsId, true);
    // The node receives the call and acts on it 8 s later; the console gives up after 2 s and
    // sends again 1 s after that, well inside the 8 s even on a busy machine (20 s to go down).
    await nodes.a.switches.apply({ "api.statusPostDelayMs": 8000 });
    const heard = (await labSays(nodes.a)).shutdownRequests.length;
    try {
      const run = await runShutdown([targets.a]);
      expect(run.status).toBe("succeeded");
      expect((await labSays(nodes.a)).power).toBe("down");
      const attempts = (await callsOfRun(db, run.id)).filter((c) => c.targetId === targets.a);
      expect(attempts.length).toBeGreaterThanOrEqual(2);
      expect(attempts[0]).toMatchObject({
        state: "failed",
        detail: expect.stringMatching(/timed out/),
      });
      expect(attempts.some((c) => c.seenDownAt !== null)).toBe(true);
      // Every request the node heard is a recorded attempt. One sent after the node went down
      // but before a probe saw it down (a busy machine probes later) reaches no one: the node
      // does not hear it, and it is recorded failed, never as accepted.
      const heardNow = (await labSays(nodes.a)).shutdownRequests.length - heard;
      expect(heardNow).toBeGreaterThanOrEqual(2);
      expect(heardNow).toBeLessThanOrEqual(attempts.length);
      for (const unheard of attempts.slice(heardNow)) expect(unheard.state).toBe("failed");
      const log = (await readLogTail(db, run.id, 200)).map((l) => l.text).join("\n");
      expect(log).toMatch(
        /FAILED: .*timed out after 2000 ms; sent again in 1 s unless it is seen down/,
      );
      expect(log).toMatch(/stopped answering at .*after its first call/);
    } finally {
      await nodes.a.switches.apply({ "api.statusPostDelayMs": null });
      await powerOnAll();
    }
  });

  it("two 5xx answers then success: three attempts recorded, the third accepted, the node down", async () => {
    const { db } = database;
    await persistReading(db, upsId, true);
    await nodes.a.switches.apply({ "api.statusPostFailures": 2 });
    const heard = (await labSays(nodes.a)).shutdownRequests.length;
    try {
      const run = await runShutdown([targets.a]);
      expect(run.status).toBe("succeeded");
      const attempts = (await callsOfRun(db, run.id)).filter((c) => c.targetId === targets.a);
      expect(attempts.map((c) => [c.attempt, c.state])).toEqual([
        [1, "failed"],
        [2, "failed"],
        [3, "sent"],
      ]);
      expect(attempts[0]!.detail).toMatch(/500/);
      const lab = await labSays(nodes.a);
      expect(lab.shutdownRequests.slice(heard).map((r) => r.status)).toEqual([500, 500, 200]);
      expect(lab.power).toBe("down");
      const kinds = (await eventsOf(run.id)).map((e) => e.kind);
      expect(kinds.filter((k) => k === "shutdown.failed")).toHaveLength(2);
      expect(kinds.filter((k) => k === "shutdown.sent")).toHaveLength(1);
      expect(kinds.filter((k) => k === "target.down")).toHaveLength(1);
    } finally {
      await nodes.a.switches.apply({ "api.statusPostFailures": null });
      await powerOnAll();
    }
  });

  it("mains back before anything was sent: the run is cancelled and says so, nothing is sent", async () => {
    const { db } = database;
    await persistReading(db, upsId, false);
    const before = Object.values(nodes).map((node) => posts(node).length);
    const run = await runShutdown([targets.a, targets.c]);
    expect(run.status).toBe("failed");
    expect(run.failureReason).toBe(SHUTDOWN_CANCELLED);
    expect((await eventsOf(run.id)).map((e) => e.kind)).toEqual(["shutdown.cancelled"]);
    expect(Object.values(nodes).map((node) => posts(node).length)).toEqual(before);
  });

  it("two runs for the same target and the same outage send exactly one call", async () => {
    const { db } = database;
    await persistReading(db, upsId, true);
    const before = posts(nodes.b).length;
    const dueSince = new Date();
    const [first, second] = await Promise.all([
      runShutdown([targets.b], dueSince),
      runShutdown([targets.b], dueSince),
    ]);
    expect(posts(nodes.b)).toHaveLength(before + 1);
    const logs = await Promise.all(
      [first, second].map(async (run) =>
        (await readLogTail(db, run.id, 200)).map((l) => l.text).join("\n"),
      ),
    );
    expect(
      logs.filter((log) =>
        /not sent from this run — run .* holds its call for this outage/.test(log),
      ),
    ).toHaveLength(1);
    await waitUntil(() => nodes.b.power.state === "down", { timeoutMs: 10_000 });
    await powerOnAll();
  });

  it("what ran before: a node's running guests are recorded with their startup order (a stopped one never); a node whose list hangs is recorded as unknown, and its shutdown call never waits for it", async () => {
    const { db } = database;
    await setPowerMode(db, { mode: "armed", confirmedTargetIds: Object.values(targets) }, ADMIN);
    await persistReading(db, upsId, true);
    const vm = (name: string, startup?: string) =>
      new Map([
        ["name", name],
        ["memory", "1024"],
        ["cores", "1"],
        ...(startup ? [["startup", startup]] : []),
      ] as [string, string][]);
    writeVmConfig(nodes.a.root, nodes.a.name, 140, vm("web", "order=2,up=30"));
    writeVmConfig(nodes.a.root, nodes.a.name, 141, vm("db"));
    writeVmConfig(nodes.a.root, nodes.a.name, 142, vm("kept-off", "order=1"));
    writeRunning(nodes.a.root, new Set([...readRunning(nodes.a.root), 140, 141]));
    await nodes.b.switches.apply({ "api.vmListHang": true });
    try {
      const run = await runShutdown([targets.a, targets.b]);
      expect(run.status, run.failureReason ?? "").toBe("succeeded");
      // The listings run beside the calls, never awaited by them: wait for both records.
      const records = () =>
        db
          .select()
          .from(powerBackGuests)
          .where(eq(powerBackGuests.runId, run.id))
          .orderBy(asc(powerBackGuests.node), asc(powerBackGuests.vmid));
      await waitUntil(async () => new Set((await records()).map((g) => g.node)).size === 2, {
        timeoutMs: 30_000,
        what: "both nodes' guests recorded",
      });
      const recorded = await records();
      expect(
        recorded.map((g) => [g.node, g.state, g.vmid, g.startupOrder, g.upSeconds, g.haManaged]),
      ).toEqual([
        ["pve-a", "running", 140, 2, 30, false],
        ["pve-a", "running", 141, null, null, false],
        ["pve-b", "unknown", null, null, null, null],
      ]);
      expect(recorded[2]!.problem).toMatch(/could not be listed/);
      // pve-b's shutdown went out before its listing gave up, and it went down.
      const call = posts(nodes.b).at(-1)!;
      expect(call.path).toBe(`/api2/json/nodes/${nodes.b.name}/status`);
      expect(call.at.getTime()).toBeLessThan(recorded[2]!.recordedAt.getTime());
      await waitUntil(() => nodes.b.power.state === "down", { timeoutMs: 30_000 });
    } finally {
      await nodes.b.switches.apply({ "api.vmListHang": false });
      await powerOnAll();
    }
  });
});
