import { RESOLVE_BUILD_DIR } from "@/lib/steps/onboarding/build-vm-template/commands";
import { buildGroupsOn } from "./build-processes";
import { coveredMs, type Window } from "./away-windows";
import { replacementOf } from "./console-output";
import { compareSnapshot, takeSnapshot, waitForDatabase } from "./durability";
import { processTable, signal, type ProcessInfo } from "./proc";
import { choose, type ChaosEvent, type Fault } from "./schedule";
import type { SoakContext } from "./soak-context";
import { templatesOn } from "./soak-lab";
import type { SwitchChanges } from "./switchboard";

/**
 * What became of a process the chaos killed. `restartSeconds`: until npm start's supervisor had
 * started a new one (null: not within 2 min). `seconds`: until the new one was of use again — a
 * worker that said ready, a web server that answers, a database that takes connections (null:
 * not within 2 min). A worker is ready only once the database answers, so for a worker the time
 * the soak itself held the database away (`databaseAwaySeconds`, its database faults) is not
 * counted against the 2 min.
 */
export type Recovery = {
  process: "worker" | "web server" | "database";
  restartSeconds: number | null;
  seconds: number | null;
  databaseAwaySeconds: number;
};

export type FaultOutcome =
  | { injected: true; detail: string; overAt: number; recovery?: Recovery }
  | { injected: false; reason: string };

/** Durability across database restarts: what each restart was checked against. */
export type DurabilityReport = { checked: number; problems: string[] };

/**
 * A build fault waits for a build as long as the chaos lasts: builds come and go, the decision
 * to hit one is the seed's.
 */
const UNTIL_THE_CHAOS_IS_OVER = Number.POSITIVE_INFINITY;
/** How long a killed process or the database may take to come back before the soak says so. */
const BACK_WITHIN_MS = 120_000;
/** However long the soak keeps the database away, a killed worker is given up on after this. */
const GIVE_UP_MS = 600_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createFaults(
  ctx: SoakContext,
  durability: DurabilityReport,
  /** True once the chaos is over: a fault still waiting for its target gives up. */
  over: () => boolean,
) {
  /** Waits until `find` returns something (polling every `everyMs`), or gives up after `ms`. */
  const waitFor = async <T>(
    find: () => T | undefined,
    ms: number,
    everyMs = 500,
  ): Promise<T | undefined> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = find();
      if (found !== undefined || Date.now() > deadline || over()) return found;
      await sleep(everyMs);
    }
  };

  /** Database faults one after the other: the next waits until the database is back. */
  let databaseTurn: Promise<unknown> = Promise.resolve();
  /** When the soak held the database away: from its fault until it took connections again. */
  const databaseAway: Window[] = [];

  /** What a kill is waited for: a new process started, and that one of use again. */
  type Back = { restarted(): boolean; back(): Promise<boolean>; needsDatabase: boolean };

  /**
   * kill -9 of one of the console's processes, then the wait until npm start's supervisor has
   * brought a new one up: `watchBack` is asked just before the kill and returns the checks
   * (asked every 250 ms, for at most two minutes — for a worker, two minutes of the database
   * being there).
   */
  const killProcess =
    (
      what: Recovery["process"],
      find: () => ProcessInfo | undefined,
      watchBack: (killed: ProcessInfo) => Back,
    ) =>
    async (): Promise<FaultOutcome> => {
      // A process the supervisor is restarting right now is not there yet: wait for it a little.
      const target = await waitFor(find, 10_000);
      if (!target) return { injected: false, reason: `no ${what} running` };
      const watch = watchBack(target);
      const killedAt = Date.now();
      signal(target.pid, "SIGKILL");
      let restartedAt: number | null = null;
      let backAt: number | null = null;
      const awayMs = (now: number) =>
        watch.needsDatabase ? coveredMs(databaseAway, killedAt, now) : 0;
      for (;;) {
        const now = Date.now();
        if (restartedAt === null && watch.restarted()) restartedAt = now;
        if (restartedAt !== null && (await watch.back())) {
          backAt = now;
          break;
        }
        const late = restartedAt === null ? now - killedAt : now - killedAt - awayMs(now);
        if (late > BACK_WITHIN_MS || now - killedAt > GIVE_UP_MS) break;
        await sleep(250);
      }
      const end = backAt ?? Date.now();
      const away = awayMs(end);
      const seconds = (at: number | null) => (at === null ? null : (at - killedAt) / 1000);
      const recovery: Recovery = {
        process: what,
        restartSeconds: seconds(restartedAt),
        seconds: seconds(backAt),
        databaseAwaySeconds: away / 1000,
      };
      const awayText = away > 0 ? ` (${(away / 1000).toFixed(1)} s of it the database away)` : "";
      const detail =
        `kill -9 of the ${what} (pid ${target.pid}); ` +
        (restartedAt === null
          ? `NO new one started within ${BACK_WITHIN_MS / 1000} s`
          : `a new one started after ${recovery.restartSeconds!.toFixed(1)} s, ` +
            (backAt === null
              ? `NOT up within ${BACK_WITHIN_MS / 1000} s${awayText}`
              : `up after ${recovery.seconds!.toFixed(1)} s${awayText}`));
      return { injected: true, detail, overAt: Date.now(), recovery };
    };

  /** The supervisor's new process for the killed worker's own service, and its `ready`. */
  const workerBack = (killed: ProcessInfo): Back => {
    const mark = ctx.console.output().length;
    const replacement = () => replacementOf(ctx.console.output(), mark, killed.pid);
    return {
      restarted: () => replacement().started,
      back: async () => replacement().ready,
      needsDatabase: true,
    };
  };

  /** Another web server process, and it answers HTTP (any status: it is up). */
  const webServerBack = (killed: ProcessInfo): Back => {
    const restarted = () => {
      const current = ctx.console.webServer();
      return current !== undefined && current.pid !== killed.pid;
    };
    return {
      restarted,
      back: async () =>
        restarted() &&
        fetch(`${ctx.console.base}/api/hosts`, { signal: AbortSignal.timeout(2000) }).then(
          () => true,
          () => false,
        ),
      needsDatabase: false,
    };
  };

  /**
   * Takes the database away (`how`), waits until it takes connections again (npm start's
   * supervisor restarts it), and checks that everything committed before is still there.
   */
  const databaseFault =
    (
      describe: string,
      how: (postmaster: ProcessInfo, backends: ProcessInfo[], event: ChaosEvent) => Promise<void>,
    ) =>
    (event: ChaosEvent): Promise<FaultOutcome> => {
      const turn = databaseTurn.then(async (): Promise<FaultOutcome> => {
        const running = ctx.console.postgres();
        if (!running) return { injected: false, reason: "the database is not running" };
        let before;
        try {
          before = await takeSnapshot(ctx.console.databaseUrl);
        } catch (error) {
          return {
            injected: false,
            reason: `could not count rows first: ${(error as Error).message}`,
          };
        }
        const takenAt = Date.now();
        const away: Window = { from: takenAt, to: null };
        databaseAway.push(away);
        await how(running.postmaster, running.backends, event);
        const backAt = await waitForDatabase(ctx.console.databaseUrl, BACK_WITHIN_MS);
        away.to = backAt ?? Date.now();
        if (backAt === null) {
          return {
            injected: true,
            detail: `${describe}: NOT back within ${BACK_WITHIN_MS / 1000} s`,
            overAt: Date.now(),
            recovery: databaseRecovery(null),
          };
        }
        durability.checked += 1;
        try {
          const lost = await compareSnapshot(ctx.console.databaseUrl, before);
          durability.problems.push(
            ...lost.map((problem) => `after ${describe} at ${ctx.since(backAt)}: ${problem}`),
          );
        } catch (error) {
          durability.problems.push(
            `after ${describe}: could not count rows again: ${(error as Error).message}`,
          );
        }
        return {
          injected: true,
          detail: `${describe} (pid ${running.postmaster.pid}); took connections again after ${((backAt - takenAt) / 1000).toFixed(1)} s`,
          overAt: backAt,
          recovery: databaseRecovery((backAt - takenAt) / 1000),
        };
      });
      databaseTurn = turn.catch(() => {});
      return turn;
    };

  /** The database is its own restart: back when it takes connections. */
  const databaseRecovery = (seconds: number | null): Recovery => ({
    process: "database",
    restartSeconds: seconds,
    seconds,
    databaseAwaySeconds: 0,
  });

  /** A switch change on one node for the event's duration. */
  const windowed =
    (describe: string, changes: (event: ChaosEvent) => SwitchChanges) =>
    async (event: ChaosEvent): Promise<FaultOutcome> => {
      const board = ctx.boards[event.node]!;
      const name = ctx.nodes[event.node]!.node.name;
      const layer = await board.on(changes(event));
      await sleep(event.durationMs);
      await board.off(layer);
      return {
        injected: true,
        detail: `${describe} on ${name} for ${(event.durationMs / 1000).toFixed(1)} s`,
        overAt: Date.now(),
      };
    };

  /** A build's process on whichever node runs one (in node order), chosen by the event's pick. */
  const killBuildProcess =
    (which: "driver" | "child") =>
    async (event: ChaosEvent): Promise<FaultOutcome> => {
      const target = await waitFor(() => {
        const table = processTable();
        const candidates = ctx.nodes.flatMap(({ node }) =>
          buildGroupsOn(node, table).flatMap((group) =>
            group.members
              .filter((p) => (which === "driver" ? p.pid === group.pgid : p.pid !== group.pgid))
              .map((p) => ({ node: node.name, process: p })),
          ),
        );
        return choose(candidates, event.pick);
      }, UNTIL_THE_CHAOS_IS_OVER);
      if (!target) return { injected: false, reason: `no template build ${which} running` };
      // The driver with its whole group: the build is gone at once. A child alone: the driver
      // sees one of its commands die and must report it.
      if (which === "driver") signal(-target.process.pid, "SIGKILL");
      else signal(target.process.pid, "SIGKILL");
      return {
        injected: true,
        detail: `kill -9 build ${which} on ${target.node} (pid ${target.process.pid}: ${target.process.cmdline.slice(0, 80)})`,
        overAt: Date.now(),
      };
    };

  const faults: Record<Fault, (event: ChaosEvent) => Promise<FaultOutcome>> = {
    "worker.kill9": (event) =>
      killProcess(
        "worker",
        () =>
          choose(
            ctx.console.workers().sort((a, b) => a.pid - b.pid),
            event.pick,
          ),
        workerBack,
      )(),
    "web.kill9": killProcess("web server", () => ctx.console.webServer(), webServerBack),
    "postgres.crash": databaseFault("kill -9 of the postmaster", async (postmaster) => {
      signal(postmaster.pid, "SIGKILL");
    }),
    "postgres.fastRestart": databaseFault(
      "fast shutdown of Postgres (SIGINT)",
      async (postmaster) => {
        signal(postmaster.pid, "SIGINT");
      },
    ),
    "postgres.pauseThenRestart": databaseFault(
      "Postgres frozen (SIGSTOP), then killed",
      async (postmaster, backends, event) => {
        const all = [postmaster, ...backends];
        for (const p of all) signal(p.pid, "SIGSTOP");
        await sleep(event.durationMs);
        signal(postmaster.pid, "SIGKILL");
        // The backends go on only to notice their postmaster is gone, and exit.
        for (const p of all) signal(p.pid, "SIGCONT");
      },
    ),
    "ssh.dropMidCommand": windowed("SSH connections cut after each command's start", (event) => ({
      "ssh.dropAfterMs": event.amount,
    })),
    "ssh.dropMidUpload": async () => {
      // BuildVmTemplate resolves its build dir and then uploads its scripts: the moment a node
      // is asked for the build dir, every command there is cut 5 ms after it starts, for 3 s.
      const seen = ctx.nodes.map(({ node }) => node.commands.length);
      const found = await waitFor(
        () => {
          const i = ctx.nodes.findIndex(({ node }, n) =>
            node.commands.slice(seen[n]).some((c) => c.command.includes(RESOLVE_BUILD_DIR)),
          );
          return i < 0 ? undefined : i;
        },
        UNTIL_THE_CHAOS_IS_OVER,
        10,
      );
      if (found === undefined) return { injected: false, reason: "no template build began" };
      const layer = await ctx.boards[found]!.on({ "ssh.dropAfterMs": 5 });
      await sleep(3000);
      await ctx.boards[found]!.off(layer);
      const name = ctx.nodes[found]!.node.name;
      return {
        injected: true,
        detail: `SSH cut 5 ms into every command on ${name} for 3 s, as a build began its uploads`,
        overAt: Date.now(),
      };
    },
    "api.vmList502": windowed("502 on the VM list", () => ({ "api.vmList502": true })),
    "api.config500": windowed("500 on every VM config", (event) => ({
      "api.config500Vmids": [...templatesOn(ctx.nodes[event.node]!.node).keys()],
    })),
    "api.vmListHang": windowed("the VM list never answers", () => ({ "api.vmListHang": true })),
    "api.slowAnswers": windowed("slow API answers", (event) => ({ "api.delayMs": event.amount })),
    "node.unreachable": windowed(
      "the node stops answering (SSH refused and cut, API silent)",
      (event) => ({
        "ssh.refuseConnections": true,
        "ssh.dropAfterMs": 0,
        "api.delayMs": event.durationMs,
      }),
    ),
    "node.reboot": async (event) => {
      const { node } = ctx.nodes[event.node]!;
      if (node.power.state !== "up") return { injected: false, reason: `${node.name} is not up` };
      await node.switches.run("reboot.reboot");
      await waitFor(() => (node.power.state === "up" ? undefined : true), 5_000);
      const upAt = await node.power
        .waitUntilUp(60_000)
        .then(() => Date.now())
        .catch(() => Date.now());
      return { injected: true, detail: `${node.name} rebooted unexpectedly`, overAt: upAt };
    },
    "build.killDriver": killBuildProcess("driver"),
    "build.killChild": killBuildProcess("child"),
  };
  return faults;
}
