/**
 * Issue 16: waiting costs no worker slot. Eight template builds in flight on a worker with two
 * slots: the builds wait between their visits, so an unrelated run's ticks get slots and it
 * finishes while every build still waits, and each build advances as soon as its driver is done
 * — with a poll interval of 10 minutes, so only the worker's waiters can explain either: a wait
 * that held a slot would hold both for that long, and a build that waited for its poll tick
 * would not advance before it. (How soon, in seconds, is bench:template's to measure.)
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq, inArray } from "drizzle-orm";
import {
  liveGroupMembers,
  startImageServer,
  startLab,
  type ImageServer,
  type LabNode,
} from "@/lab";
import { createDb, type Database } from "@/lib/db/client";
import { runs, stepVisits } from "@/lib/db/schema";
import { definePipeline, poll, advance } from "@/lib/pipeline/step";
import { createTestDatabase } from "@/test/db";
import {
  buildTemplatePipeline,
  insertOnboardedHost,
  labBuildConfig,
  setCatalog,
  settled,
  startBuildRun,
} from "@/test/fixtures/build-vm-template";
import { startRun } from "@/lib/runs/start-run";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { BUILD_VM_TEMPLATE } from ".";

const BUILDS = 8;
/** Longer than the whole test: no build visit here comes from its poll tick. */
const POLL_SECONDS = 600;
const UNRELATED_POLL_SECONDS = 0.5;
const UNRELATED_VISITS = 12;

let db: Database;
let worker: WorkerHandle;
let image: ImageServer;
const nodes: LabNode[] = [];
const hostIds: string[] = [];
let cleanup: () => Promise<void>;

const pipeline = () =>
  buildTemplatePipeline("test-bvt-waiting", labBuildConfig(image, { pollSeconds: POLL_SECONDS }));
let builds: ReturnType<typeof pipeline>;

/** A run of another kind: a step that polls every half second, doing nothing else. */
const unrelated = definePipeline<null>({
  name: "test-unrelated-poller",
  steps: [
    {
      name: "Poller",
      maxDuration: () => 600,
      async visit(ctx) {
        return ctx.visit >= UNRELATED_VISITS
          ? advance()
          : poll(UNRELATED_POLL_SECONDS, `visit ${ctx.visit}`);
      },
    },
  ],
  services: () => ({ services: null, dispose: async () => {} }),
});

beforeAll(async () => {
  const database = await createTestDatabase();
  const handle = createDb(database.url, 6);
  db = handle.db;
  image = await startImageServer({ imageSizeBytes: 256 * 1024 });
  builds = pipeline();
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [builds.name]: builds, [unrelated.name]: unrelated },
    concurrency: 2,
    pollIntervalMs: 100,
    engine: { backoffSeconds: () => 0.5, maxTransientErrors: 3 },
    periodicChecks: false,
    log: () => {},
  });
  for (let i = 0; i < BUILDS; i++) {
    // Slow enough that every build is still running once the last one has started.
    const node = await startLab({ state: "onboarded", storage: "dir", timeScale: 0.3 });
    nodes.push(node);
    hostIds.push(await insertOnboardedHost(db, node));
  }
  await setCatalog(db, [9000]);
  cleanup = async () => {
    await worker.stop();
    await Promise.all([...nodes.map((node) => node.stop()), image.stop()]);
    await handle.pool.end();
    await database.drop();
  };
}, 180_000);
afterAll(() => cleanup());

const stateFile = (node: LabNode) => path.join(node.root, "var/lib/clupilot/template-build/state");
const readState = (node: LabNode) => {
  try {
    return fs.readFileSync(stateFile(node), "utf8").trim();
  } catch {
    return null;
  }
};

/** Waiters' watch loops (remote-watch.ts) on these nodes whose process group still lives. */
function watchLoops(): number[] {
  return nodes
    .flatMap((node) => node.commands)
    .filter((c) => c.command.includes("clupilot-watch: unchanged"))
    .filter((c) => c.exit === null || liveGroupMembers(c.pid).length > 0)
    .map((c) => c.pid);
}

describe("waiting costs no worker slot", () => {
  it(`${BUILDS} template builds in flight on 2 slots: an unrelated run gets slots and finishes while they wait, and each build advances before its poll tick`, async () => {
    const runIds: string[] = [];
    for (const hostId of hostIds) runIds.push(await startBuildRun(db, builds, hostId));
    await waitFor(
      "every build's driver to run",
      async () => nodes.every((node) => readState(node) === "running") || null,
      120_000,
      50,
    );

    const pollerId = await db.transaction((tx) =>
      startRun(tx, { pipeline: unrelated, hostId: null, actor: "test" }),
    );
    const poller = await settled(db, pollerId, 120_000);
    expect(poller.status).toBe("succeeded");
    const pollerVisits = await db
      .select()
      .from(stepVisits)
      .where(eq(stepVisits.runId, pollerId))
      .orderBy(asc(stepVisits.visit));
    expect(pollerVisits).toHaveLength(UNRELATED_VISITS);
    // Every build was still waiting while the poller ran: this is the load it had to get by.
    const finishedBefore = await db
      .select({ id: runs.id })
      .from(runs)
      .where(and(inArray(runs.id, runIds), eq(runs.status, "succeeded")));
    expect(finishedBefore.length).toBeLessThan(BUILDS);

    const ended = await Promise.all(runIds.map((id) => settled(db, id, 240_000)));
    expect(ended.map((run) => run.failureReason ?? run.status)).toEqual(
      runIds.map(() => "succeeded"),
    );
    for (const runId of runIds) {
      const visits = await db
        .select()
        .from(stepVisits)
        .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, BUILD_VM_TEMPLATE)))
        .orderBy(asc(stepVisits.id));
      // Each visit that followed a poll came before the tick that poll asked for: a waiter saw
      // the build change on the host and woke the run.
      expect(visits.at(-1)!.outcome).toBe("advance");
      const afterPolls = visits.slice(1).filter((_, i) => visits[i]!.outcome === "poll");
      expect(afterPolls.length).toBeGreaterThan(0);
      for (const [i, visit] of visits.slice(1).entries()) {
        if (visits[i]!.outcome !== "poll") continue;
        const pollDue = visits[i]!.finishedAt.getTime() + POLL_SECONDS * 1000;
        expect(visit.startedAt.getTime()).toBeLessThan(pollDue);
      }
    }
    // Nothing of the waiters is left: not in the worker, not on the hosts.
    expect(worker.waits.watching()).toEqual([]);
    await waitFor("no watch loop on any host", async () => watchLoops().length === 0, 5000);
  }, 400_000);
});
