import {
  CRASH_LOOP,
  crashLoopBeganText,
  crashLoopOf,
  crashLoopOverText,
  type CrashLoopRule,
  type Restart,
} from "./crash-loop";
import { formatSpan } from "./format-span";
import { RESTART_BACKOFF, restartDelayMs, type RestartBackoff } from "./restart-backoff";

/**
 * Keeps the console's processes running: `npm start` (scripts/start.ts) supervises the embedded
 * database, the worker and the web server with it.
 *
 * Terminology:
 * - **service**: something kept running — a child process, or the detached embedded Postgres.
 * - **run**: one life of a service, from its start until it ends.
 * - **ending**: how a run ended, in words: `killed by SIGKILL`, `exit code 1`, `could not start: …`.
 * - **restart**: starting a service again after its run ended by itself. Every ending is
 *   followed by one, after a backoff (restart-backoff.ts); only `stop()` ends supervision.
 * - **crash loop**: too many restarts of one service in a short time (crash-loop.ts), reported
 *   once when it begins and once when it is over.
 *
 * Every start is a line with the new process's pid (`worker 2 started again (pid 4242)`): with
 * several workers, the line is what tells which one a `[worker] ready (pid 4242)` is.
 */

export type ServiceRun = {
  /** Resolves once, with how the run ended; never rejects. */
  ended: Promise<string>;
  /** Ends the run on purpose; resolves once it is over. */
  stop(): Promise<void>;
  /** The process's id, where the run is one process of ours (for the log). */
  pid?: number;
};

export type Service = {
  /** As operators read it in the log and on the banner: "worker", "web server", "database". */
  name: string;
  /** Starts one run; rejects if it could not start at all. */
  start(): Promise<ServiceRun>;
  /** Where this service's restarts wait otherwise than the supervisor's rule says. */
  backoff?: Partial<RestartBackoff>;
};

export type RestartEvent = {
  service: string;
  endedAt: Date;
  ending: string;
  /** How long the run had been up; null when it never started. */
  upMs: number | null;
  delayMs: number;
};

/** A crash loop beginning (`began`) or over, at the moment the log says so. */
export type CrashLoopEvent = {
  service: string;
  began: boolean;
  at: Date;
  /** The log's words for it (crash-loop.ts), without the `CRASH LOOP:` mark. */
  text: string;
  /** Restarts within the window when it began; null when it is over. */
  restarts: number | null;
  /** How the latest run ended. */
  lastEnding: string;
  windowMs: number;
};

export type SupervisorOptions = {
  log(line: string): void;
  /** Called for every restart, e.g. to record it where the console's pages can see it. */
  onRestart?(event: RestartEvent): void;
  /** Called when a crash loop begins and when it is over, e.g. to notify someone. */
  onCrashLoop?(event: CrashLoopEvent): void;
  backoff?: RestartBackoff;
  crashLoop?: CrashLoopRule;
};

export type Supervisor = {
  /**
   * Starts `services` side by side and keeps them running. Rejects if one could not be started
   * the first time (the ones that did start stay supervised, so `stop()` ends them).
   */
  start(services: Service[]): Promise<void>;
  /** Stops everything, in the reverse order of the `start` calls; each group side by side. */
  stop(): Promise<void>;
};

export function createSupervisor(options: SupervisorOptions): Supervisor {
  const supervisorBackoff = options.backoff ?? RESTART_BACKOFF;
  const rule = options.crashLoop ?? CRASH_LOOP;
  const groups: Supervised[][] = [];
  let stopping = false;

  type Supervised = { stop(): Promise<void> };

  function supervise(service: Service, first: ServiceRun): Supervised {
    const backoff: RestartBackoff = { ...supervisorBackoff, ...service.backoff };
    let run: ServiceRun | null = first;
    let startedAt = Date.now();
    let consecutive = 0;
    let restarts: Restart[] = [];
    let inCrashLoop = false;
    let lastEnding = "";
    let restartTimer: NodeJS.Timeout | null = null;
    let calmTimer: NodeJS.Timeout | null = null;
    let starting: Promise<void> | null = null;

    const watch = (current: ServiceRun) => {
      void current.ended.then((ending) => {
        if (run !== current) return;
        run = null;
        ended(ending, Date.now() - startedAt);
      });
    };

    const ended = (ending: string, upMs: number | null) => {
      if (stopping) return;
      const endedAt = new Date();
      lastEnding = ending;
      if (upMs !== null && upMs >= backoff.stableMs) consecutive = 0;
      consecutive += 1;
      const delayMs = restartDelayMs(consecutive, backoff);
      restarts = [...restarts, { endedAt, ending }].filter(
        (r) => r.endedAt.getTime() > endedAt.getTime() - rule.windowMs,
      );
      const after = upMs === null ? "" : ` after ${formatSpan(upMs)}`;
      options.log(
        `${service.name} ended (${ending})${after}; restarting it in ${formatSpan(delayMs)} ` +
          `(restart ${restarts.length} within ${formatSpan(rule.windowMs)})`,
      );
      options.onRestart?.({ service: service.name, endedAt, ending, upMs, delayMs });
      checkCrashLoop();
      restartTimer = setTimeout(() => {
        restartTimer = null;
        starting = restart().finally(() => (starting = null));
      }, delayMs);
    };

    const restart = async () => {
      if (stopping) return;
      startedAt = Date.now();
      try {
        const current = await service.start();
        run = current;
        options.log(`${service.name} started again${pidText(current)}`);
        watch(current);
      } catch (error) {
        ended(`could not start: ${error instanceof Error ? error.message : String(error)}`, null);
      }
    };

    const checkCrashLoop = () => {
      if (calmTimer) clearTimeout(calmTimer);
      calmTimer = null;
      const now = new Date();
      const loop = crashLoopOf(restarts, now, rule);
      if (loop && !inCrashLoop) {
        const text = crashLoopBeganText(service.name, loop, rule, backoff.maxMs);
        options.log(`CRASH LOOP: ${text}; the lines above say why it ends.`);
        options.onCrashLoop?.({
          service: service.name,
          began: true,
          at: now,
          text,
          restarts: loop.restarts,
          lastEnding: loop.lastEnding,
          windowMs: rule.windowMs,
        });
      } else if (!loop && inCrashLoop) {
        const text = crashLoopOverText(service.name, rule);
        options.log(text);
        options.onCrashLoop?.({
          service: service.name,
          began: false,
          at: now,
          text,
          restarts: null,
          lastEnding,
          windowMs: rule.windowMs,
        });
      }
      inCrashLoop = loop !== null;
      if (loop) calmTimer = setTimeout(checkCrashLoop, loop.calmsAt.getTime() - Date.now() + 1);
    };

    const stopRun = async () => {
      const current = run;
      run = null;
      await current?.stop();
    };

    watch(first);
    return {
      async stop() {
        if (restartTimer) clearTimeout(restartTimer);
        if (calmTimer) clearTimeout(calmTimer);
        await starting;
        await stopRun();
      },
    };
  }

  const firstStarts = new Set<Promise<unknown>>();

  return {
    async start(services) {
      if (stopping) throw new Error("the console is stopping; not starting anything more");
      const starting = Promise.allSettled(services.map((service) => service.start()));
      firstStarts.add(starting);
      const started = await starting;
      firstStarts.delete(starting);
      const group: Supervised[] = [];
      groups.push(group);
      started.forEach((result, i) => {
        if (result.status !== "fulfilled") return;
        options.log(`${services[i]!.name} started${pidText(result.value)}`);
        group.push(supervise(services[i]!, result.value));
      });
      const failed = started.find((result) => result.status === "rejected");
      if (failed) throw failed.reason;
    },
    async stop() {
      stopping = true;
      // A service still starting for the first time is stopped too, once it is up.
      await Promise.all(firstStarts);
      for (const group of [...groups].reverse()) {
        await Promise.all(group.map((supervised) => supervised.stop()));
      }
    },
  };
}

function pidText(run: ServiceRun): string {
  return run.pid === undefined ? "" : ` (pid ${run.pid})`;
}
