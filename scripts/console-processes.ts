import path from "node:path";
import { dataDir } from "../lib/config/paths";
import { childProcessService } from "../lib/supervisor/child-process-service";
import { embeddedPostgresService } from "../lib/supervisor/embedded-postgres-service";
import { createRestartRecorder, type RestartRecorder } from "../lib/supervisor/record-restarts";
import { stopOnSignals } from "../lib/supervisor/stop-on-signals";
import { END_WITH_SUPERVISOR_IMPORT } from "../lib/supervisor/supervisor-pid";
import {
  createSupervisor,
  type Service,
  type SupervisorOptions,
} from "../lib/supervisor/supervisor";

const root = path.resolve(import.meta.dirname, "..");

/**
 * The console's processes as `npm start` supervises them, and the supervision itself: one
 * supervisor, restarts and crash loops recorded (for the pages and the notifications) once the
 * database is known, and the one way to end it all (Ctrl-C, SIGTERM, SIGHUP: children first,
 * then the database).
 */
export function superviseConsole(
  say: (line: string) => void,
  /** The restart and crash-loop rules; tests shorten them. */
  rules: Pick<SupervisorOptions, "backoff" | "crashLoop"> = {},
) {
  let recorder: RestartRecorder | undefined;
  const supervisor = createSupervisor({
    ...rules,
    log: say,
    onRestart: (event) => recorder?.record(event),
    onCrashLoop: (event) => recorder?.recordCrashLoop(event),
  });
  let stopping: Promise<never> | undefined;
  const stop = (why: string, code: number): Promise<never> => {
    stopping ??= (async () => {
      say(`${why}: stopping worker, web server and database`);
      await recorder?.close();
      await supervisor.stop();
      say("stopped");
      process.exit(code);
    })();
    return stopping;
  };
  // From the first moment: a Ctrl-C during the migrations or the build stops the database too.
  stopOnSignals((why) => void stop(why, 0));
  return {
    start: (services: Service[]) => supervisor.start(services),
    recordRestartsIn(databaseUrl: string) {
      recorder ??= createRestartRecorder({ databaseUrl, log: say });
    },
    stop,
    get stopping() {
      return stopping !== undefined;
    },
  };
}

/** The embedded PostgreSQL of the data folder (`CLUPILOT_PG_PORT`, default 54329). */
export function embeddedDatabase(say: (line: string) => void) {
  return embeddedPostgresService({
    dir: path.join(dataDir(), "postgres"),
    port: Number(process.env.CLUPILOT_PG_PORT ?? 54329),
    log: say,
    postgresLog: process.env.CLUPILOT_PG_LOG
      ? (line) => console.log(`[postgres] ${line}`)
      : undefined,
  });
}

/**
 * The worker and the web server run as `node --import tsx` — one process each, no wrapper in
 * between — so the pid a process prints is the one that is signalled, and the supervisor sees
 * exactly how it ended.
 */
export function workerProcess(env: NodeJS.ProcessEnv, name = "worker"): Service {
  return childProcessService({
    name,
    command: process.execPath,
    args: ["--import", "tsx", "--import", END_WITH_SUPERVISOR_IMPORT, "worker/main.ts"],
    cwd: root,
    env,
  });
}

/**
 * `CLUPILOT_WORKERS` worker processes (default 1), named `worker` alone or `worker 1` … `worker N`
 * in the log: more processes are more ticks at once, as more `clupilot-worker@N` units are in
 * production; they share the queue (docs/production.md).
 */
export function workerProcesses(env: NodeJS.ProcessEnv): Service[] {
  const count = workerCount(env.CLUPILOT_WORKERS);
  if (count === 1) return [workerProcess(env)];
  return Array.from({ length: count }, (_, i) => workerProcess(env, `worker ${i + 1}`));
}

export function workerCount(value: string | undefined): number {
  if (value === undefined || value.trim() === "") return 1;
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 32) {
    throw new Error(
      `CLUPILOT_WORKERS=${JSON.stringify(value)} is not a number of worker processes: ` +
        "set a whole number from 1 to 32, or unset it for one.",
    );
  }
  return count;
}

/** Not `next start`: our server rewrites forwarding headers first (scripts/web-server.ts). */
export function webServerProcess(env: NodeJS.ProcessEnv, dev: boolean): Service {
  return childProcessService({
    name: "web server",
    command: process.execPath,
    args: ["--import", "tsx", "--import", END_WITH_SUPERVISOR_IMPORT, "scripts/web-server.ts"],
    cwd: root,
    env: { ...env, NODE_ENV: dev ? "development" : "production" },
  });
}
