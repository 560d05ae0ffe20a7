/**
 * `npm run bench:power -- [--flips 20] [--load N]`: how fast the console reacts to a UPS that
 * dies without warning — `OL` flipped straight to `OB LB` on a real upsd (Debian nut-server,
 * dummy-ups reading a `.dev` file the bench rewrites) — side by side with NUT's own upsmon
 * watching the same upsd, both timed against the same flips in one run.
 *
 * - Time zero of a flip: the first answer of upsd that reports `OB LB` (the bench asks it every
 *   20 ms on a connection of its own, bench/power/upsd-watch.ts). dummy-ups re-reads its file
 *   only once a second; that pick-up is printed on its own line and is in neither figure.
 * - The console, dry-run flips: the moment the bench first sees the committed
 *   `shutdown.would_send` power event (asked every 20 ms). Armed flips: the moment the first
 *   `POST /nodes/{node}/status command=shutdown` reached the lab node (its API's request log).
 *   Flips alternate dry-run, armed, dry-run, … (arming through setPowerMode, as an admin does).
 * - upsmon: primary, POLLFREQ/POLLFREQALERT 5 s (Debian's defaults), FINALDELAY 0, as the
 *   reference measurement on this machine (median 3.1 s over 5 flips); its SHUTDOWNCMD appends
 *   `date +%s.%N` to a file (bench/power/upsmon.ts). A fresh upsmon per flip, started 6–11 s
 *   (random) before it, so its 5 s poll falls anywhere relative to the flip.
 * - The console reads the UPS anonymously (LIST VAR needs no login), the same request every
 *   second as with a user. With a user it would LOGIN, and a primary upsmon waits for every
 *   logged-in system to log out — up to HOSTSYNC, 15 s — before its SHUTDOWNCMD: measured
 *   here, upsmon took 18–19 s instead of ~3 s, which times that wait, not upsmon's reaction.
 * - Between flips: OL again, dummy-ups restarted at a random moment (a new phase between its
 *   1 s file check and the console's 1 s poll), upsd restarted (a primary upsmon leaves FSD set
 *   in upsd until it restarts), the console's shutdown run left to end, the monitor seen on
 *   mains, its latch released by an admin (releaseLatch), the lab node powered on after an
 *   armed flip.
 * - The console is the real worker side: startWorker (power runner) and startPowerMonitor in a
 *   worker process of its own (bench/power/worker-process.ts), the product's default 1 s poll.
 * - `--load N`: a second round while N onboardings (full pipeline, template build included) are
 *   kept in flight on the same worker — each finished one is replaced by a fresh lab node, all
 *   in a process of their own (bench/power/onboarding-load-process.ts) — and the shift of the
 *   console's median against the idle round.
 * - Where the console's time goes, per round: the flip → the reading that latched (the monitor's
 *   poll), then the run's hops from its step visits — its first tick picked up by the power
 *   runner, PlanShutdown's visit, the second pick-up, ShutDownTargets → the reaction. With
 *   `BENCH_POWER_LOOP_DELAY=1` the worker process also prints its event-loop delay every 15 s.
 */
import { parseArgs } from "node:util";
import { and, desc, eq, gt, isNull } from "drizzle-orm";
import { startImageServer, startLab, waitUntil, type LabNode } from "@/lab";
import { startUpsdPeer, upsdAvailable, type UpsdPeer } from "@/lab/ups/upsd-peer";
import type { AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import { powerEvents, runs, stepVisits, upsMonitorState } from "@/lib/db/schema";
import { createPowerTarget } from "@/lib/power/operations/power-targets";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import type { ShutdownInput } from "@/lib/power/shutdown/shutdown-plan";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { createUpsDevice } from "@/lib/power/operations/ups-devices";
import { insertLabHost } from "@/test/fixtures/api-steps";
import { settled, startTestRun } from "@/test/runs";
import { fleetBench } from "./power/fleet";
import { hostAccessPipeline } from "./power/host-access";
import type { InFlight } from "./power/onboarding-load";
import { prepareUpsmon, type Upsmon } from "./power/upsmon";
import { whenUpsdReports } from "./power/upsd-watch";
import { startOnboardingLoad, startPowerWorker, type OnboardingLoadProcess } from "./power/worker";
import { openBenchDb, startBenchPostgres } from "./support/postgres";
import { percentile, report } from "./support/report";
import { BenchCannotRun, runBench, startUntilEnd } from "./support/run-bench";

const USAGE = `Usage: npm run bench:power -- [--flips N] [--load N]
       npm run bench:power -- --targets N [--stages N] [--down-after-ms MS]
  --flips N   OL → OB LB flips per round, alternately dry-run and armed (default 20)
  --load N    a second round while N onboardings with template builds are kept in flight
  --targets N the fleet bench instead: N armed targets shut down, trigger → last call and
              → every target down, without faults and with 1 in 100 failing twice
  --stages N  the fleet's stages, N / stages targets each (default 10)
  --down-after-ms MS  a fleet node stops listening this long after its call (default 2000)`;

const UPS = "benchups";
const ONLINE = { "ups.status": "OL", "battery.charge": "100", "battery.runtime": "1800" };
const DYING = { "ups.status": "OB LB", "battery.charge": "8", "battery.runtime": "120" };
const ACTOR: AuditActor = { userId: null, name: "bench-power" };
/** Longest wait for either watcher to react to one flip; a miss is counted, not timed. */
const REACTION_TIMEOUT_MS = 20_000;
const ASK_EVERY_MS = 20;

type Mode = "dry-run" | "armed";
type Flip = {
  mode: Mode;
  /** dummy-ups picking up the rewritten file: rewrite → upsd reports it. */
  pickupMs: number;
  consoleMs: number | null;
  upsmonMs: number | null;
  /** Where the console's time went: its reading that latched, the run's start (null: none). */
  latchedMs: number | null;
  runStartedMs: number | null;
  /**
   * The run's way to the reaction (null: no run): its first tick picked up (run created →
   * PlanShutdown started), PlanShutdown's visit, the second pick-up (PlanShutdown finished →
   * ShutDownTargets started), and ShutDownTargets started → the reaction.
   */
  hops: { firstPickupMs: number; planMs: number; secondPickupMs: number; sendMs: number } | null;
  /** Under --load: the onboardings in flight when the flip was made. */
  load: InFlight | null;
};

type Setup = {
  db: Database;
  peer: UpsdPeer;
  node: LabNode;
  upsmon: Upsmon;
  upsId: string;
  targetId: string;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `found` every ASK_EVERY_MS until it yields a time or the reaction timeout passes. */
async function firstTime(found: () => Promise<number | null> | number | null, since: number) {
  while (Date.now() - since < REACTION_TIMEOUT_MS) {
    const at = await found();
    if (at !== null) return at;
    await sleep(ASK_EVERY_MS);
  }
  return null;
}

async function lastEventId(db: Database): Promise<number> {
  const [row] = await db
    .select({ id: powerEvents.id })
    .from(powerEvents)
    .orderBy(desc(powerEvents.id))
    .limit(1);
  return row?.id ?? 0;
}

/** Everything back to normal before a flip: mains, upsd without FSD, no run, no latch. */
async function backToMains(setup: Setup, mode: Mode) {
  const { db, peer, node, upsmon, upsId, targetId } = setup;
  await upsmon.stop();
  await peer.setVars(UPS, ONLINE);
  // dummy-ups reads its file once a second from its own start, and the console polls once a
  // second: left alone, the two clocks keep one phase for the whole run and every flip waits
  // the same share of the console's poll. A driver restarted at a random moment draws a new one.
  await peer.stopDriver(UPS, "kill");
  await sleep(Math.random() * 1000);
  await peer.startDriver(UPS);
  await peer.stopUpsd();
  await peer.startUpsd();
  await whenUpsdReports({ port: peer.port, ups: UPS, status: "OL" }, 10_000);
  const restarted = new Date();
  await waitUntil(
    async () =>
      (
        await db
          .select({ id: runs.id })
          .from(runs)
          .where(and(eq(runs.pipeline, POWER_SHUTDOWN), eq(runs.status, "running")))
      ).length === 0,
    { timeoutMs: 240_000, what: "the console's power-shutdown run to end" },
  );
  if (node.power.state !== "up") await node.power.powerOn();
  await waitUntil(
    async () => {
      const [state] = await db
        .select()
        .from(upsMonitorState)
        .where(eq(upsMonitorState.upsId, upsId));
      return (
        state?.reachable === true &&
        state.lastReading?.onBattery === false &&
        (state.lastReadingAt?.getTime() ?? 0) > restarted.getTime()
      );
    },
    { timeoutMs: 30_000, what: "the console's monitor to read the UPS on mains again" },
  );
  const [latched] = await db
    .select({ upsId: upsMonitorState.upsId })
    .from(upsMonitorState)
    .where(and(eq(upsMonitorState.upsId, upsId), isNull(upsMonitorState.latchedAt)));
  if (!latched) await releaseLatch(db, { upsId }, ACTOR);
  await setPowerMode(
    db,
    mode === "armed" ? { mode, confirmedTargetIds: [targetId] } : { mode },
    ACTOR,
  );
}

async function flipOnce(
  setup: Setup,
  mode: Mode,
  load: OnboardingLoadProcess | null,
): Promise<Flip> {
  const { db, peer, node, upsmon } = setup;
  await backToMains(setup, mode);
  await upsmon.start();
  // As the reference did: upsmon's 5 s poll lands anywhere relative to the flip.
  await sleep(6000 + Math.random() * 5000);
  const eventsBefore = await lastEventId(db);
  const requestsBefore = node.api.requests.length;
  const upsmonBefore = (await upsmon.shutdownTimes()).length;

  const inFlight = load ? await load.inFlight() : null;
  const rewrittenAt = Date.now();
  await peer.setVars(UPS, DYING);
  const shutdownPath = `/api2/json/nodes/${node.name}/status`;
  const [reportedAt, consoleAt, upsmonAt] = await Promise.all([
    whenUpsdReports({ port: peer.port, ups: UPS, status: "OB LB" }, 10_000),
    firstTime(async () => {
      if (mode === "armed") {
        const call = node.api.requests
          .slice(requestsBefore)
          .find(
            (r) => r.method === "POST" && r.path === shutdownPath && r.body.command === "shutdown",
          );
        return call ? call.at.getTime() : null;
      }
      const [event] = await db
        .select({ id: powerEvents.id })
        .from(powerEvents)
        .where(and(eq(powerEvents.kind, "shutdown.would_send"), gt(powerEvents.id, eventsBefore)))
        .limit(1);
      return event ? Date.now() : null;
    }, rewrittenAt),
    firstTime(async () => (await upsmon.shutdownTimes())[upsmonBefore] ?? null, rewrittenAt),
  ]);
  if (upsmonAt === null) console.error(`bench: upsmon did not react:\n${upsmon.log().trim()}`);
  const [run] = await db
    .select({ id: runs.id, createdAt: runs.createdAt, context: runs.context })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_SHUTDOWN), gt(runs.createdAt, new Date(rewrittenAt))))
    .orderBy(runs.createdAt)
    .limit(1);
  const latchedAt = (run?.context.input as ShutdownInput | undefined)?.trigger.latchedAt;
  const visits = run
    ? await db
        .select({
          step: stepVisits.step,
          startedAt: stepVisits.startedAt,
          finishedAt: stepVisits.finishedAt,
        })
        .from(stepVisits)
        .where(eq(stepVisits.runId, run.id))
        .orderBy(stepVisits.id)
    : [];
  const plan = visits.find((v) => v.step === "PlanShutdown");
  const send = visits.find((v) => v.step === "ShutDownTargets");
  const hops =
    run && plan && send && consoleAt !== null
      ? {
          firstPickupMs: plan.startedAt.getTime() - run.createdAt.getTime(),
          planMs: plan.finishedAt.getTime() - plan.startedAt.getTime(),
          secondPickupMs: send.startedAt.getTime() - plan.finishedAt.getTime(),
          sendMs: consoleAt - send.startedAt.getTime(),
        }
      : null;
  return {
    mode,
    load: inFlight,
    hops,
    latchedMs: latchedAt ? new Date(latchedAt).getTime() - reportedAt : null,
    runStartedMs: run ? run.createdAt.getTime() - reportedAt : null,
    pickupMs: reportedAt - rewrittenAt,
    consoleMs: consoleAt === null ? null : consoleAt - reportedAt,
    upsmonMs: upsmonAt === null ? null : upsmonAt - reportedAt,
  };
}

async function round(
  setup: Setup,
  flips: number,
  label: string,
  load: OnboardingLoadProcess | null = null,
): Promise<Flip[]> {
  const results: Flip[] = [];
  for (let i = 0; i < flips; i++) {
    const flip = await flipOnce(setup, i % 2 === 0 ? "dry-run" : "armed", load);
    const seconds = (ms: number | null) => (ms === null ? "none" : `${(ms / 1000).toFixed(2)} s`);
    console.error(
      `bench: ${label} flip ${i + 1}/${flips} (${flip.mode}): console ${seconds(flip.consoleMs)}, upsmon ${seconds(flip.upsmonMs)}`,
    );
    results.push(flip);
  }
  return results;
}

const timed = (values: (number | null)[]) =>
  values.filter((v): v is number => v !== null).map((ms) => ms / 1000);
const median = (values: number[]) => percentile(values, 50);

type Medians = Record<Mode | "all", number>;

/** Prints one round's figures; returns the console's medians (per mode and over all flips). */
function reportRound(flips: Flip[], label: string): Medians {
  const prefix = label ? `${label}: ` : "";
  const upsmon = timed(flips.map((f) => f.upsmonMs));
  const upsmonMedian = median(upsmon);
  const consoleOf = (mode: Mode | "all") =>
    timed(flips.filter((f) => mode === "all" || f.mode === mode).map((f) => f.consoleMs));
  const medians = {} as Medians;
  for (const mode of ["dry-run", "armed"] as const) {
    const values = consoleOf(mode);
    const what =
      mode === "armed" ? "first shutdown call at the lab node" : "'would shut down' event";
    medians[mode] = median(values);
    report(`${prefix}console median (${mode}: ${what})`, medians[mode], "s");
    report(`${prefix}console p95 (${mode})`, percentile(values, 95), "s");
    report(`${prefix}ratio console/upsmon (${mode})`, medians[mode] / upsmonMedian, "×");
  }
  const all = consoleOf("all");
  medians.all = median(all);
  report(`${prefix}console median`, medians.all, "s");
  report(`${prefix}console p95`, percentile(all, 95), "s");
  report(`${prefix}upsmon median`, upsmonMedian, "s");
  report(`${prefix}upsmon p95`, percentile(upsmon, 95), "s");
  report(`${prefix}ratio console/upsmon`, medians.all / upsmonMedian, "×");
  for (const mode of ["dry-run", "armed"] as const) {
    const met = medians[mode] <= 1 && medians[mode] < upsmonMedian;
    console.log(
      `${prefix}goal, console median (${mode}) ≤ 1.0 s and below upsmon's: ${met ? "met" : "NOT met"}`,
    );
  }
  // Where the console's time goes, from the flip: its poll, the run's start, the run's steps.
  report(
    `${prefix}console: flip → the reading that latched, median (the 1 s poll)`,
    median(timed(flips.map((f) => f.latchedMs))),
    "s",
  );
  report(
    `${prefix}console: flip → power-shutdown run started, median`,
    median(timed(flips.map((f) => f.runStartedMs))),
    "s",
  );
  report(
    `${prefix}console: power-shutdown run started → reaction (engine and steps), median`,
    median(
      timed(
        flips.map((f) =>
          f.consoleMs === null || f.runStartedMs === null ? null : f.consoleMs - f.runStartedMs,
        ),
      ),
    ),
    "s",
  );
  const hops = flips.flatMap((f) => (f.hops ? [f.hops] : []));
  for (const [key, what] of [
    ["firstPickupMs", "run created → PlanShutdown picked up by the power runner"],
    ["planMs", "PlanShutdown's visit"],
    ["secondPickupMs", "PlanShutdown done → ShutDownTargets picked up"],
    ["sendMs", "ShutDownTargets started → reaction"],
  ] as const) {
    report(`${prefix}console: ${what}, median`, median(hops.map((h) => h[key] / 1000)), "s");
  }
  const loads = flips.flatMap((f) => (f.load ? [f.load] : []));
  if (loads.length > 0) {
    report(
      `${prefix}onboardings in flight at a flip, median`,
      median(loads.map((l) => l.running)),
      "runs",
    );
    report(
      `${prefix}of them building their template, median`,
      median(loads.map((l) => l.buildingTemplate)),
      "runs",
    );
  }
  report(`${prefix}flips (dry-run and armed alternately)`, flips.length, "flips");
  report(`${prefix}flips the console missed`, flips.length - all.length, "flips");
  report(`${prefix}flips upsmon missed`, flips.length - upsmon.length, "flips");
  report(
    `${prefix}dummy-ups pick-up, file rewritten → upsd reports it (in neither figure), median`,
    median(flips.map((f) => f.pickupMs / 1000)),
    "s",
  );
  // Timed from the rewrite instead, as the reference upsmon measurement on this machine was.
  const fromRewrite = (of: (f: Flip) => number | null) =>
    median(timed(flips.map((f) => (of(f) === null ? null : of(f)! + f.pickupMs))));
  report(
    `${prefix}console median from the rewrite`,
    fromRewrite((f) => f.consoleMs),
    "s",
  );
  report(
    `${prefix}upsmon median from the rewrite`,
    fromRewrite((f) => f.upsmonMs),
    "s",
  );
  return medians;
}

async function main() {
  const { values } = parseArgs({
    options: {
      flips: { type: "string", default: "20" },
      load: { type: "string", default: "0" },
      targets: { type: "string" },
      stages: { type: "string", default: "10" },
      "down-after-ms": { type: "string", default: "2000" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values.targets !== undefined) {
    const targets = Number(values.targets);
    const stages = Number(values.stages);
    const downAfterMs = Number(values["down-after-ms"]);
    if (!Number.isInteger(stages) || stages < 1 || stages > 100)
      throw new BenchCannotRun(`--stages: a whole number from 1 to 100\n${USAGE}`);
    if (!Number.isInteger(targets) || targets < stages)
      throw new BenchCannotRun(`--targets: a whole number ≥ the stages (${stages})\n${USAGE}`);
    if (!Number.isInteger(downAfterMs) || downAfterMs < 0)
      throw new BenchCannotRun(`--down-after-ms: a whole number ≥ 0\n${USAGE}`);
    await fleetBench({ targets, stages, downAfterMs });
    return;
  }
  const flips = Number(values.flips);
  const load = Number(values.load);
  if (!Number.isInteger(flips) || flips < 2)
    throw new BenchCannotRun(`--flips: a whole number ≥ 2 (one dry-run, one armed)\n${USAGE}`);
  if (!Number.isInteger(load) || load < 0)
    throw new BenchCannotRun(`--load: a whole number ≥ 0\n${USAGE}`);
  if (!upsdAvailable())
    throw new BenchCannotRun(
      "Debian's nut-server (upsd, dummy-ups) is not installed: apt-get install nut-server nut-client",
    );

  const benchStarted = performance.now();
  const pg = await startBenchPostgres("power");
  const url = await pg.createDatabase("clupilot");
  await migrateDatabase(url);
  const { db } = openBenchDb(url, 4);
  const image = await startUntilEnd(
    "image server",
    startImageServer({ imageSizeBytes: 256 * 1024 }),
    (server) => server.stop(),
  );
  const peer = await startUntilEnd(
    "upsd",
    startUpsdPeer({ ups: [{ name: UPS, vars: ONLINE }] }),
    (started) => started.stop(),
  );
  const node = await startUntilEnd(
    "lab node",
    startLab({ name: "pve-power", state: "onboarded", timeScale: 0.01 }),
    (started) => started.stop(),
  );
  await startPowerWorker(url, image);

  // The protected host: onboarded far enough to hold its API token and pinned certificate.
  const hostId = await insertLabHost(db, node);
  const access = await settled(db, await startTestRun(db, hostAccessPipeline, hostId), 120_000);
  if (access.status !== "succeeded")
    throw new Error(`the lab node's API access failed: ${access.failureReason}`);
  const ups = await createUpsDevice(
    db,
    {
      name: "bench-ups",
      // Read anonymously (see the header): no LOGIN, so upsmon does not wait for the console.
      source: { type: "nut", host: "127.0.0.1", port: peer.port, upsName: UPS },
    },
    ACTOR,
  );
  const target = await createPowerTarget(
    db,
    { kind: "pve-node", hostId, feeds: [ups.id], feedPolicy: "any", stage: 0 },
    ACTOR,
  );
  // The node goes down within seconds of its call; a shorter wait keeps a miss from stalling.
  await updatePowerSettings(db, { shutdown: { targetDownSeconds: 30 } }, ACTOR);
  const upsmon = await prepareUpsmon(peer, UPS);
  const setup: Setup = { db, peer, node, upsmon, upsId: ups.id, targetId: target.id };

  const idle = await round(setup, flips, "idle");
  let loaded: Flip[] = [];
  if (load > 0) {
    const onboarding = await startOnboardingLoad(url, load);
    // Flips start once the load is at its heaviest part: template builds under way.
    await waitUntil(async () => (await onboarding.inFlight()).buildingTemplate > 0, {
      timeoutMs: 600_000,
      what: "an onboarding of the load to reach BuildVmTemplate",
    });
    loaded = await round(setup, flips, `load ${load}`, onboarding);
    const ended = await onboarding.stop();
    report("onboardings finished during the load round", ended.finished, "runs");
    report("onboardings failed during the load round", ended.failed, "runs");
  }
  await upsmon.stop();

  const idleMedians = reportRound(idle, load > 0 ? "idle" : "");
  if (load > 0) {
    const loadedMedians = reportRound(loaded, `${load} onboardings in flight`);
    for (const mode of ["dry-run", "armed", "all"] as const) {
      report(
        `console median shift under load${mode === "all" ? "" : ` (${mode})`} (goal ≤ 0.2 s)`,
        loadedMedians[mode] - idleMedians[mode],
        "s",
      );
    }
  }
  report("benchmark took", (performance.now() - benchStarted) / 1000, "s");
}

runBench(main);
