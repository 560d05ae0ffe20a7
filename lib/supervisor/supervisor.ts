import { CRASH_LOOP, crashLoopOf, type CrashLoopRule, type Restart } from "./crash-loop";
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
 */

export type ServiceRun = {
  /** Resolves once, with how the run ended; never rejects. */
  ended: Promise<string>;
  /** Ends the run on purpose; resolves once it is over. */
  stop(): Promise<void>;
};

export type Service = {
  /** As operators read it in the log and on the banner: "worker", "web server", "database". */
  name: string;
  /** Starts one run; rejects if it could not start at all. */
  start(): Promise<ServiceRun>;
};

export type RestartEvent = {
  service: string;
  endedAt: Date;
  ending: string;
  /** How long the run had been up; null when it never started. */
  upMs: number | null;
  delayMs: number;
};

export type SupervisorOptions = {
  log(line: string): void;
  /** Called for every restart, e.g. to record it where the console's pages can see it. */
  onRestart?(event: RestartEvent): void;
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
  const backoff = options.backoff ?? RESTART_BACKOFF;
  const rule = options.crashLoop ?? CRASH_LOOP;
  const groups: Supervised[][] = [];
  let stopping = false;

  type Supervised = { stop(): Promise<void> };

  function supervise(service: Service, first: ServiceRun): Supervised {
    let run: ServiceRun | null = first;
    let startedAt = Date.now();
    let consecutive = 0;
    let restarts: Restart[] = [];
    let inCrashLoop = false;
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
        watch(current);
      } catch (error) {
        ended(`could not start: ${error instanceof Error ? error.message : String(error)}`, null);
      }
    };

    const checkCrashLoop = () => {
      if (calmTimer) clearTimeout(calmTimer);
      calmTimer = null;
      const loop = crashLoopOf(restarts, new Date(), rule);
      if (loop && !inCrashLoop) {
        options.log(
          `CRASH LOOP: the ${service.name} restarted ${loop.restarts} times within ` +
            `${formatSpan(rule.windowMs)} (last: ${loop.lastEnding}). It keeps being restarted, ` +
            `at most ${formatSpan(backoff.maxMs)} apart; the lines above say why it ends.`,
        );
      } else if (!loop && inCrashLoop) {
        options.log(
          `the ${service.name}'s crash loop is over: fewer than ${rule.restarts} restarts ` +
            `within the last ${formatSpan(rule.windowMs)}`,
        );
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
        if (result.status === "fulfilled") group.push(supervise(services[i]!, result.value));
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

/** A span as the log says it: `250 ms`, `4 s`, `1.5 s`, `5 min`, `2 min 3 s`. */
export function formatSpan(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Number((ms / 1_000).toFixed(1))} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1_000);
  return seconds === 0 ? `${minutes} min` : `${minutes} min ${seconds} s`;
}
