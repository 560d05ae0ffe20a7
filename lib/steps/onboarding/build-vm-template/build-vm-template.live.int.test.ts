/**
 * While a template build runs, the operator sees it: every phase on the run's phase line and
 * build.log in the run log as the driver writes them — at the production poll interval (30 s),
 * between visits, so only the worker's waiter can have shown them. At the end the run log holds
 * every line of the host's build.log exactly once, in order.
 */
import fs from "node:fs";
import path from "node:path";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startImageServer, startLab, type ImageServer, type LabNode } from "@/lab";
import { createDb, type Database } from "@/lib/db/client";
import { runs, stepVisits } from "@/lib/db/schema";
import { foldCarriageReturns } from "@/lib/logs/text";
import { createTestDatabase } from "@/test/db";
import {
  buildTemplatePipeline,
  insertOnboardedHost,
  labBuildConfig,
  setCatalog,
  startBuildRun,
} from "@/test/fixtures/build-vm-template";
import { runLogFileLines } from "@/test/runs";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { BUILD_VM_TEMPLATE } from ".";

let db: Database;
let worker: WorkerHandle;
let image: ImageServer;
let node: LabNode;
let hostId: string;
let cleanup: () => Promise<void>;
let builds: ReturnType<typeof buildTemplatePipeline>;

beforeAll(async () => {
  const database = await createTestDatabase();
  const handle = createDb(database.url, 4);
  db = handle.db;
  image = await startImageServer({ imageSizeBytes: 256 * 1024 });
  builds = buildTemplatePipeline("test-bvt-live", labBuildConfig(image, { pollSeconds: 30 }));
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [builds.name]: builds },
    concurrency: 2,
    pollIntervalMs: 100,
    periodicChecks: false,
    log: () => {},
  });
  // Slow enough for a build of several seconds: phases and log lines come one by one.
  node = await startLab({ state: "onboarded", storage: "dir", timeScale: 0.3 });
  hostId = await insertOnboardedHost(db, node);
  await setCatalog(db, [9000]);
  cleanup = async () => {
    await worker.stop();
    await Promise.all([node.stop(), image.stop()]);
    await handle.pool.end();
    await database.drop();
  };
}, 120_000);
afterAll(() => cleanup());

async function buildVisits(runId: string): Promise<number> {
  const rows = await db
    .select({ id: stepVisits.id })
    .from(stepVisits)
    .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, BUILD_VM_TEMPLATE)));
  return rows.length;
}

describe("BuildVmTemplate shows the build while it waits", () => {
  it("phases and build.log lines arrive between visits; the run log ends with every build.log line once", async () => {
    const runId = await startBuildRun(db, builds, hostId);
    /** What the operator saw, sampled: the phase line and the log, with the visits so far. */
    const seen: { phase: string | null; lines: number; visits: number; state: string }[] = [];
    const stateFile = path.join(node.root, "var/lib/clupilot/template-build/state");
    let run = (await db.select().from(runs).where(eq(runs.id, runId)))[0]!;
    while (run.status === "running") {
      let state = "none";
      try {
        state = fs.readFileSync(stateFile, "utf8").trim();
      } catch {
        // not started yet
      }
      seen.push({
        phase: run.currentStep === BUILD_VM_TEMPLATE ? run.phase : null,
        lines: (await runLogFileLines(db, runId)).length,
        visits: await buildVisits(runId),
        state,
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await db.select().from(runs).where(eq(runs.id, runId)))[0]!;
    }
    expect(run.failureReason ?? run.status).toBe("succeeded");

    // While the build ran, between two visits (grouped by the visits so far: which two it is
    // is the step's business):
    const waits = new Map<number, typeof seen>();
    for (const s of seen.filter((s) => s.state === "running" && s.visits > 0))
      waits.set(s.visits, [...(waits.get(s.visits) ?? []), s]);
    const longest = [...waits.values()].sort((a, b) => b.length - a.length)[0]!;
    const phases = [...new Set(longest.map((s) => s.phase).filter(Boolean))];
    expect(phases.length, `phases shown between visits: ${phases.join(" → ")}`).toBeGreaterThan(1);
    expect(phases).toContain("customise image");
    const growth = longest.map((s) => s.lines);
    expect(Math.max(...growth), "build.log lines shown between visits").toBeGreaterThan(
      Math.min(...growth),
    );
    // The start and the end (one more when Proxmox reports the template before the driver has
    // ended): the waiter showed everything in between.
    expect(await buildVisits(runId)).toBeLessThanOrEqual(3);

    const host = fs.readFileSync(
      path.join(node.root, "var/lib/clupilot/template-build/build.log"),
      "utf8",
    );
    const expected = host.split("\n");
    if (expected.at(-1) === "") expected.pop();
    expect(await runLogFileLines(db, runId)).toEqual(expected.map(foldCarriageReturns));
  }, 180_000);
});
