/**
 * `npm run bench:template`: BuildVmTemplate against a lab node (real SSH, real driver, timeScale
 * 0.01), production poll interval (30 s), in two modes measured in the same run:
 * - waiter (the product): each visit reads and returns at once; between visits the worker's
 *   waiter runs a watch loop on the host over the kept SSH connection and queues the next tick
 *   the moment state, phase or the driver's liveness change (docs/pipeline.md, "Waiting");
 * - in-visit watch (the model before issue 16, the baseline): the same watch, but waited for
 *   inside the visit, holding the worker slot and the run's row, then decided on in the same
 *   visit. It exists only here (`waitingInTheVisit` below wraps the product's step), so the
 *   baseline runs on the same code, lab and machine as the product.
 * Prints the time from the driver writing `state=ok` (and from Proxmox reporting the template)
 * to the step advancing, SSH commands and connections per build (`BENCH_BUILDS` builds per mode,
 * default 3); then, on one slower build per mode, the share of the build a worker slot was held
 * (in all, and after the start visit) and SSH round trips per poll; then, per mode, two slow
 * builds at once (two nodes) on the worker's two slots while a run of another kind polls every
 * 0.5 s: how late that run's ticks start. Last, an Abort of the product's build during
 * `customise image`: until the run has ended, and until the build's process group is gone on the
 * host, beside the poll interval an abort not heard would wait for.
 */
import fs from "node:fs";
import path from "node:path";
import { and, asc, eq, inArray } from "drizzle-orm";
import { liveGroupMembers, startImageServer, startLab } from "@/lab";
import { migrateDatabase } from "@/lib/db/migrate";
import { runs, stepVisits } from "@/lib/db/schema";
import { advance, definePipeline, poll, type Step } from "@/lib/pipeline/step";
import { abortRun } from "@/lib/runs/abort-run";
import { startRun } from "@/lib/runs/start-run";
import { BUILD_VM_TEMPLATE, buildVmTemplate } from "@/lib/steps/onboarding/build-vm-template";
import { connectHost } from "@/lib/steps/onboarding/connect-host";
import { createHostServices, type HostServices } from "@/lib/steps/onboarding/services";
import {
  buildTemplatePipeline,
  insertOnboardedHost,
  labBuildConfig,
  setCatalog,
  settled,
  startBuildRun,
} from "@/test/fixtures/build-vm-template";
import { startWorker } from "@/worker/runner";
import { openBenchDb, startBenchPostgres } from "./support/postgres";
import { report } from "./support/report";
import { runBench, startUntilEnd, stopAtEnd } from "./support/run-bench";

const BUILDS = Number(process.env.BENCH_BUILDS ?? 3);
const POLL_SECONDS = Number(process.env.BENCH_POLL_SECONDS ?? 30);

/** Notes (locally, 10 ms resolution) when the lab host's file first satisfies `test`. */
function watchFile(file: string, test: (text: string) => boolean) {
  let at: number | null = null;
  const timer = setInterval(() => {
    if (at !== null) return;
    try {
      if (test(fs.readFileSync(file, "utf8"))) at = Date.now();
    } catch {
      // not there yet
    }
  }, 10);
  return {
    at: () => at,
    stop: () => clearInterval(timer),
  };
}

/**
 * The baseline's model, in this bench only: a poll's waiter is waited for inside the visit (up
 * to the poll interval), and the step visited again in the same visit; the poll that follows is
 * immediate, as the in-visit watch's was.
 */
function waitingInTheVisit(step: Step<HostServices>): Step<HostServices> {
  return {
    ...step,
    async visit(ctx) {
      const first = await step.visit(ctx);
      if (first.kind !== "poll" || !first.watch) return first;
      // Nothing is shown while it waits: the visit that follows copies the log and the phase.
      await first.watch
        .wait(AbortSignal.any([ctx.signal, AbortSignal.timeout(first.seconds * 1000)]), {
          report: async () => true,
        })
        .catch(() => false);
      const again = await step.visit(ctx);
      return again.kind === "poll" ? poll(0, again.phase) : again;
    },
  };
}

const UNRELATED_POLL_SECONDS = 0.5;
const UNRELATED_VISITS = 12;

/** A run of another kind: a step that polls every half second, doing nothing else. */
const unrelated = definePipeline<null>({
  name: "bench-template-unrelated",
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

/** Resolves once `test` holds, checking every 20 ms; throws after `timeoutMs`. */
async function until(what: string, test: () => boolean | Promise<boolean>, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const readFileOrNull = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
};

async function main() {
  const pg = await startBenchPostgres("template");
  const image = await startUntilEnd(
    "image server",
    startImageServer({ imageSizeBytes: 256 * 1024 }),
    (server) => server.stop(),
  );
  const node = await startUntilEnd(
    "lab node",
    startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 }),
    (lab) => lab.stop(),
  );
  // The second host of the two builds at once (one build per host).
  const second = await startUntilEnd(
    "second lab node",
    startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 }),
    (lab) => lab.stop(),
  );
  const url = await pg.createDatabase("bench");
  await migrateDatabase(url);
  const { db } = openBenchDb(url, 8);
  const config = labBuildConfig(image, { pollSeconds: POLL_SECONDS });
  const modes = {
    waiter: buildTemplatePipeline("bench-template-waiter", config),
    "in-visit watch (baseline)": definePipeline<HostServices>({
      name: "bench-template-in-visit",
      steps: [connectHost, waitingInTheVisit(buildVmTemplate(config))],
      services: (run, database, resources) => createHostServices(database, run, config, resources),
    }),
  };
  const worker = await startWorker({
    connectionString: url,
    pipelines: {
      ...Object.fromEntries(Object.values(modes).map((p) => [p.name, p])),
      [unrelated.name]: unrelated,
    },
    concurrency: 2,
    pollIntervalMs: 100,
    log: () => {},
  });
  stopAtEnd("worker", () => worker.stop());
  const hostId = await insertOnboardedHost(db, node);
  const secondHostId = await insertOnboardedHost(db, second);
  const buildDir = path.join(node.root, "var/lib/clupilot/template-build");
  let vmid = 9000;

  // Warm-up build (installs libguestfs-tools, downloads and verifies the image once).
  await setCatalog(db, [vmid++]);
  await settled(db, await startBuildRun(db, modes.waiter, hostId), 120_000);

  for (const [mode, pipeline] of Object.entries(modes)) {
    const okToAdvance: number[] = [];
    const readyToAdvance: number[] = [];
    const hostCommands: number[] = [];
    const connections: number[] = [];
    const slotShare: number[] = [];
    for (let i = 0; i < BUILDS; i++) {
      const current = vmid++;
      await setCatalog(db, [current]);
      const confFile = path.join(
        node.root,
        "etc/pve/nodes",
        node.name,
        "qemu-server",
        `${current}.conf`,
      );
      const since = node.commands.length;
      const loginsSince = node.authAttempts.filter((a) => a.accepted).length;
      const startedAt = Date.now();
      const runId = await startBuildRun(db, pipeline, hostId);
      const ready = watchFile(confFile, (t) => /^template: 1$/m.test(t) && /base-/.test(t));
      // "ok" counts only after this build said "running" (the previous build left "ok").
      let seenRunning = false;
      const ok = watchFile(path.join(buildDir, "state"), (t) => {
        if (t.trim() === "running") seenRunning = true;
        return seenRunning && t.trim() === "ok";
      });
      const run = await settled(db, runId, 300_000);
      // The driver may write ok just after the step advanced (Proxmox reported the template
      // first): give it a moment.
      const waitUntil = Date.now() + 5000;
      while (ok.at() === null && Date.now() < waitUntil)
        await new Promise((resolve) => setTimeout(resolve, 20));
      ready.stop();
      ok.stop();
      if (run.status !== "succeeded") throw new Error(`${mode} build failed: ${run.failureReason}`);
      const visits = await db
        .select()
        .from(stepVisits)
        .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, BUILD_VM_TEMPLATE)))
        .orderBy(asc(stepVisits.id));
      const advancedAt = visits.at(-1)!.finishedAt.getTime();
      const okAt = ok.at();
      if (okAt !== null) okToAdvance.push((advancedAt - okAt) / 1000);
      const readyAt = ready.at();
      if (readyAt !== null) readyToAdvance.push((advancedAt - readyAt) / 1000);
      hostCommands.push(node.commands.slice(since).length);
      connections.push(node.authAttempts.filter((a) => a.accepted).length - loginsSince);
      const busy = visits.reduce(
        (sum, v) => sum + (v.finishedAt.getTime() - v.startedAt.getTime()),
        0,
      );
      slotShare.push((busy / (advancedAt - startedAt)) * 100);
    }
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
    const max = (xs: number[]) => (xs.length ? Math.max(...xs) : NaN);
    report(`${mode}: builds`, BUILDS, "builds");
    report(`${mode}: state=ok → advance, mean`, mean(okToAdvance), "s");
    report(`${mode}: state=ok → advance, max`, max(okToAdvance), "s");
    report(`${mode}: template reported → advance, mean`, mean(readyToAdvance), "s");
    report(`${mode}: template reported → advance, max`, max(readyToAdvance), "s");
    report(`${mode}: SSH commands per build (start to advance)`, mean(hostCommands), "commands");
    report(`${mode}: SSH connections per build`, mean(connections), "connections");
    report(`${mode}: worker slot held during the build`, mean(slotShare), "%");
  }
  report("poll interval", POLL_SECONDS, "s");

  // Slot occupancy needs a build that outlasts its start: a slower lab (customise and the
  // templates take seconds), the same 30 s poll interval, one build per mode. Commands of the
  // visits that polled are counted for the round trips per poll.
  node.setTiming({ timeScale: 0.5 });
  for (const [mode, pipeline] of Object.entries(modes)) {
    const current = vmid++;
    await setCatalog(db, [current]);
    const since = node.commands.length;
    const startedAt = Date.now();
    const runId = await startBuildRun(db, pipeline, hostId);
    const run = await settled(db, runId, 300_000);
    if (run.status !== "succeeded") throw new Error(`${mode} build failed: ${run.failureReason}`);
    const visits = await db
      .select()
      .from(stepVisits)
      .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, BUILD_VM_TEMPLATE)))
      .orderBy(asc(stepVisits.id));
    const held = (v: (typeof visits)[number]) => v.finishedAt.getTime() - v.startedAt.getTime();
    const buildMs = visits.at(-1)!.finishedAt.getTime() - startedAt;
    const polls = visits.filter((v) => v.visit > 1 && v.outcome === "poll");
    const inPolls = node.commands.slice(since).filter((c) => {
      const at = c.startedAt.getTime();
      return polls.some((v) => at >= v.startedAt.getTime() && at <= v.finishedAt.getTime());
    });
    report(`${mode}, slow build: duration`, buildMs / 1000, "s");
    report(
      `${mode}, slow build: worker slot held`,
      (visits.reduce((sum, v) => sum + held(v), 0) / buildMs) * 100,
      "%",
    );
    // After the start visit (uploads, start): following the build, waiting included.
    report(
      `${mode}, slow build: worker slot held after the start`,
      (visits.slice(1).reduce((sum, v) => sum + held(v), 0) / buildMs) * 100,
      "%",
    );
    report(`${mode}, slow build: visits`, visits.length, "visits");
    if (polls.length > 0)
      report(
        `${mode}, slow build: SSH round trips per poll`,
        inPolls.length / polls.length,
        "round trips",
      );
  }

  // Two slow builds waiting at once on the worker's two slots, and a run of another kind
  // polling meanwhile: a wait that holds a slot makes that run's ticks late.
  second.setTiming({ timeScale: 0.5 });
  for (const [mode, pipeline] of Object.entries(modes)) {
    await setCatalog(db, [vmid++]);
    const builds = [
      await startBuildRun(db, pipeline, hostId),
      await startBuildRun(db, pipeline, secondHostId),
    ];
    const states = [node, second].map((lab) =>
      path.join(lab.root, "var/lib/clupilot/template-build/state"),
    );
    await until("both builds' drivers to run", () =>
      states.every((file) => readFileOrNull(file) === "running"),
    );
    const pollerStartedAt = Date.now();
    const pollerId = await db.transaction((tx) =>
      startRun(tx, { pipeline: unrelated, hostId: null, actor: "bench" }),
    );
    const poller = await settled(db, pollerId, 600_000);
    if (poller.status !== "succeeded")
      throw new Error(`the unrelated run failed: ${poller.failureReason}`);
    const stillBuilding = await db
      .select({ id: runs.id })
      .from(runs)
      .where(and(eq(runs.status, "running"), inArray(runs.id, builds)));
    for (const runId of builds) {
      const run = await settled(db, runId, 600_000);
      if (run.status !== "succeeded") throw new Error(`${mode} build failed: ${run.failureReason}`);
    }
    const visits = await db
      .select()
      .from(stepVisits)
      .where(eq(stepVisits.runId, pollerId))
      .orderBy(asc(stepVisits.visit));
    // Each tick against when it was due: the first at the run's start, the others a poll
    // interval after the visit before.
    const late = visits.map(
      (v, i) =>
        (v.startedAt.getTime() -
          (i === 0
            ? pollerStartedAt
            : visits[i - 1]!.finishedAt.getTime() + UNRELATED_POLL_SECONDS * 1000)) /
        1000,
    );
    report(
      `${mode}, 2 builds waiting on 2 slots: unrelated run's tick lateness, mean`,
      late.reduce((a, b) => a + b, 0) / late.length,
      "s",
    );
    report(
      `${mode}, 2 builds waiting on 2 slots: unrelated run's tick lateness, max`,
      Math.max(...late),
      "s",
    );
    report(
      `${mode}, 2 builds waiting on 2 slots: builds still running when the run ended`,
      stillBuilding.length,
      "builds",
    );
  }

  // An Abort of the product's build while it customises the image: how soon the run ends, and
  // how soon every process of the build is gone from the host.
  await setCatalog(db, [vmid++]);
  const aborted = await startBuildRun(db, modes.waiter, hostId);
  const phaseFile = path.join(buildDir, "phase");
  await until(
    "the build to customise the image",
    () => readFileOrNull(phaseFile) === "customise image",
  );
  const group = Number(readFileOrNull(path.join(buildDir, "pid")));
  if (!(group > 1 && liveGroupMembers(group).length > 0))
    throw new Error(`the build's process group (${group}) is not running`);
  const abortedAt = performance.now();
  await abortRun(db, { runId: aborted, actor: "bench" });
  let runEndedMs: number | null = null;
  let groupGoneMs: number | null = null;
  await until("the run to end and the build's processes to be gone", async () => {
    if (runEndedMs === null) {
      const [row] = await db.select({ status: runs.status }).from(runs).where(eq(runs.id, aborted));
      if (row!.status !== "running") runEndedMs = performance.now() - abortedAt;
    }
    if (groupGoneMs === null && liveGroupMembers(group).length === 0)
      groupGoneMs = performance.now() - abortedAt;
    return runEndedMs !== null && groupGoneMs !== null;
  });
  report("baseline: the poll tick an abort not heard would wait for", POLL_SECONDS, "s");
  report("abort during customise → run ended", runEndedMs! / 1000, "s");
  report(
    "abort during customise → the build's process group gone on the host",
    groupGoneMs! / 1000,
    "s",
  );
}

runBench(main);
