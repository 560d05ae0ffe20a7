/**
 * `npm run soak -- --minutes N --seed S [--nodes K]`: the console as `npm start` runs it (two
 * worker processes, the web server, the embedded Postgres, under the supervisor) against lab
 * nodes, a mixed load through the JSON API and a chaos driver hurting it at random moments —
 * both drawn from the seed — then one table: faults injected, load carried, every invariant
 * held or broken. A broken invariant exits 1 with the line that replays the same schedule.
 * docs/soak.md says what each fault and invariant is.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BenchCannotRun, runBench } from "../support/run-bench";
import { createSoakAccounts } from "./accounts";
import { ApiClient } from "./api";
import { startChaos, type FaultCount } from "./chaos";
import { startConsoleUnderTest, type ConsoleUnderTest } from "./console-under-test";
import {
  consoleVerdicts,
  recoveryVerdict,
  databaseVerdicts,
  labVerdicts,
  secretVerdict,
  type Verdict,
} from "./invariants";
import { createLoad, type ActionCount } from "./load";
import { parseSoakOptions, replayLine, SoakUsageError, USAGE, type SoakOptions } from "./options";
import { seededRandom } from "./prng";
import { PROBE_TIMEOUT_MS, startProber } from "./prober";
import { markdownTable, soakRows, type TableRow } from "./report";
import { startPower } from "./power-driver";
import { protectPowerFleet, startPowerLab, type PowerFleet } from "./power-fleet";
import { powerVerdicts } from "./power-invariants";
import { QUIET_MS, soakSchedule } from "./schedule";
import { SecretWatch } from "./secrets";
import { soakClock, type SoakContext } from "./soak-context";
import { startSoakLab } from "./soak-lab";
import { Switchboard } from "./switchboard";
import { STUCK_AFTER_MS, startWatching, type WatchReport } from "./watch";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  let options: SoakOptions;
  try {
    options = parseSoakOptions(process.argv.slice(2));
  } catch (error) {
    if (error instanceof SoakUsageError) throw new BenchCannotRun(error.message);
    throw error;
  }
  if (options.help) {
    console.log(USAGE);
    return;
  }
  const replay = replayLine(options);
  const durationMs = options.minutes * 60_000;
  const schedule = soakSchedule(seededRandom(options.seed), { durationMs, nodes: options.nodes });
  console.log(`soak: ${replay}`);
  console.log(
    `soak: ${schedule.chaos.length} faults and ${schedule.load.length} load actions over ` +
      `${options.minutes} min (the last ${QUIET_MS / 1000} s without faults); ` +
      `${schedule.powerFaults.length} UPS faults and ${schedule.powerLoad.length} power actions`,
  );

  const secrets = new SecretWatch();
  const setupStarted = Date.now();
  const took = () => `${((Date.now() - setupStarted) / 1000).toFixed(1)} s`;
  const [{ images, nodes }, powerLab] = await Promise.all([
    startSoakLab(options.nodes, secrets),
    startPowerLab(secrets),
  ]);
  console.error(
    `soak: ${nodes.length} lab nodes, a lab UPS and the nodes it feeds up after ${took()}`,
  );
  const target = await startConsoleUnderTest(images);
  console.error(`soak: the console (npm start, two workers) answers after ${took()}`);
  try {
    const accounts = await createSoakAccounts(target);
    console.error(`soak: admin and operator tokens made with the admin CLI after ${took()}`);
    for (const account of [accounts.admin, accounts.operator]) {
      secrets.add(`API token of ${account.name}`, account.token);
      secrets.add(`password of ${account.name}`, account.password);
    }
    // Before the soak's clock starts: protected under chaos, the power hosts' onboarding took
    // most of a two-minute soak's chaos window, and the power load came too late to meet it.
    const fleet = await protectPowerFleet(
      {
        api: new ApiClient(target.base, accounts.operator.token, secrets),
        adminApi: new ApiClient(target.base, accounts.admin.token, secrets),
        secrets,
      },
      powerLab,
    );
    console.error(`soak: the lab UPS added and its nodes protected after ${took()}`);
    const verdicts = await soak(target, nodes, fleet, secrets, accounts, schedule, durationMs);
    const broken = verdicts.filter((v) => !v.held);
    if (broken.length === 0 && options.keepLog) {
      console.error(`soak: the console's output: ${keepConsoleLog(target, options)}`);
    }
    if (broken.length > 0) {
      const kept = keepConsoleLog(target, options);
      console.error(`soak: ${broken.length} invariant(s) BROKEN; the console's output: ${kept}`);
      console.error(`soak: replay with: ${replay}`);
      process.exitCode = 1;
    }
  } catch (error) {
    console.error(`soak: the console's output so far: ${keepConsoleLog(target, options)}`);
    console.error(`soak: replay with: ${replay}`);
    throw error;
  }
}

async function soak(
  target: ConsoleUnderTest,
  nodes: Awaited<ReturnType<typeof startSoakLab>>["nodes"],
  fleet: PowerFleet,
  secrets: SecretWatch,
  accounts: Awaited<ReturnType<typeof createSoakAccounts>>,
  schedule: ReturnType<typeof soakSchedule>,
  durationMs: number,
): Promise<Verdict[]> {
  const startedAt = Date.now();
  const clock = soakClock(startedAt);
  const ctx: SoakContext = {
    startedAt,
    console: target,
    nodes,
    boards: nodes.map(({ node }) => new Switchboard(node)),
    api: new ApiClient(target.base, accounts.operator.token, secrets),
    adminApi: new ApiClient(target.base, accounts.admin.token, secrets),
    secrets,
    ...clock,
  };
  const prober = startProber(
    new ApiClient(target.base, accounts.operator.token, secrets, PROBE_TIMEOUT_MS),
    startedAt,
  );
  const load = createLoad(ctx);
  await load.begin();
  const chaos = startChaos(ctx, schedule.chaos);
  const power = startPower(ctx, fleet, schedule);
  const watch = startWatching(ctx, chaos.lastOverAt);
  const loadUnderWay = new Set<Promise<void>>();
  const loadTimers = schedule.load.map((event) =>
    setTimeout(
      () => {
        const done = load.run(event).finally(() => loadUnderWay.delete(done));
        loadUnderWay.add(done);
      },
      Math.max(0, startedAt + event.atMs - Date.now()),
    ),
  );
  const progress = setInterval(() => void printProgress(ctx), 30_000);

  await sleep(Math.max(0, startedAt + durationMs - QUIET_MS - Date.now()));
  ctx.log(`chaos over: every fault healed; quiet for the last ${QUIET_MS / 1000} s`);
  power.stopFaults();
  await chaos.stop();
  // A fault that was still under way (the database coming back) pushes the verdict out: the
  // stuck-run invariant needs a full minute after the last fault to mean anything.
  const lastOverAt = Math.max(chaos.lastOverAt(), power.lastOverAt());
  const verdictAt = Math.max(startedAt + durationMs, lastOverAt + STUCK_AFTER_MS + 15_000);
  if (verdictAt > startedAt + durationMs) {
    ctx.log(
      `the last fault was over only at ${ctx.since(lastOverAt)}: judging at ${ctx.since(verdictAt)}`,
    );
  }
  await sleep(Math.max(0, verdictAt - Date.now()));
  for (const timer of loadTimers) clearTimeout(timer);
  await Promise.all([...loadUnderWay]);
  await power.stop();
  clearInterval(progress);

  const watched = await watch.stop();
  const probes = await prober.stop();
  ctx.log("checking the invariants");
  const verdicts = [
    ...consoleVerdicts(ctx, probes, chaos.counts),
    recoveryVerdict(chaos.recoveries),
    ...(await databaseVerdicts(ctx, watched, chaos.durability, chaos.lastOverAt())),
    ...(await labVerdicts(ctx, watched)),
    ...(await powerVerdicts(
      ctx,
      fleet,
      power.episodes,
      [...power.faultCounts.values()].reduce((n, c) => n + c.injected, 0),
    )),
    await secretVerdict(ctx, accounts, {
      hostIds: [...load.hostIds(), ...fleet.targets.map((t) => t.hostId)],
      powerTargetId: fleet.targets[0]?.id,
    }),
  ];
  const build: TableRow = [
    "machine: the production build (.next)",
    target.buildReplaced() ? "REPLACED" : "unchanged",
    target.buildReplaced()
      ? "someone built the app during the soak: web server restarts fail until it is complete"
      : "",
  ];
  const rows = soakRows(
    new Map<string, FaultCount>([...chaos.counts, ...power.faultCounts]),
    [sshCuts(ctx), machineLoad(watched), build],
    new Map<string, ActionCount>([
      ...load.counts,
      ...[...power.loadCounts].map(([action, count]) => [`power.${action}`, count] as const),
    ]),
    verdicts,
  );
  console.log(markdownTable(["what", "result", "detail"], rows));
  return verdicts;
}

/**
 * Commands whose SSH channel went away while they ran, as the lab's SSH servers saw it (cut
 * connections, unreachable and rebooting nodes, killed workers): the uploads among them are
 * BuildVmTemplate's and the console key's file transfers cut mid-stream.
 */
function sshCuts(ctx: SoakContext): TableRow {
  const cut = ctx.nodes.flatMap(({ node }) => node.commands.filter((command) => command.hungUp));
  const uploads = cut.filter((command) => command.command.includes("mv -f -T --")).length;
  return ["effect: SSH commands cut mid-way", `×${cut.length}`, `${uploads} of them uploads`];
}

/** How busy the machine was: recoveries take longer on a machine shared with other work. */
function machineLoad(watched: WatchReport): TableRow {
  const loads = watched.loadAverages;
  const mean = loads.reduce((sum, load) => sum + load, 0) / Math.max(1, loads.length);
  return [
    "machine: 1-min load average",
    `mean ${mean.toFixed(1)}`,
    `max ${Math.max(0, ...loads).toFixed(1)} on ${os.availableParallelism()} cores`,
  ];
}

async function printProgress(ctx: SoakContext) {
  const answer = await ctx.api.get("/api/hosts?limit=200&sort=name");
  if (answer.status !== 200)
    return ctx.log(`progress: GET /api/hosts answered ${answer.status ?? "nothing"}`);
  const { countsByState } = answer.body as { countsByState: Record<string, number> };
  ctx.log(
    `progress: hosts ${Object.entries(countsByState)
      .map(([s, n]) => `${s} ${n}`)
      .join(", ")}`,
  );
}

/** The console's output outlives its data folder when something went wrong. */
function keepConsoleLog(target: ConsoleUnderTest, options: SoakOptions): string {
  const kept = path.join(os.tmpdir(), `clupilot-soak-seed-${options.seed}-${Date.now()}.log`);
  try {
    fs.copyFileSync(target.logFile, kept);
    return kept;
  } catch {
    return `(lost: ${target.logFile})`;
  }
}

runBench(main);
