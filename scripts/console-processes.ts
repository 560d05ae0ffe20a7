import path from "node:path";
import { dataDir } from "../lib/config/paths";
import { childProcessService } from "../lib/supervisor/child-process-service";
import { embeddedPostgresService } from "../lib/supervisor/embedded-postgres-service";
import { createRestartRecorder, type RestartRecorder } from "../lib/supervisor/record-restarts";
import { stopOnSignals } from "../lib/supervisor/stop-on-signals";
import { createSupervisor, type Service } from "../lib/supervisor/supervisor";

const root = path.resolve(import.meta.dirname, "..");

/**
 * The console's processes as `npm start` supervises them, and the supervision itself: one
 * supervisor, restarts recorded for the pages once the database is known, and the one way to
 * end it all (Ctrl-C, SIGTERM, SIGHUP: children first, then the database).
 */
export function superviseConsole(say: (line: string) => void) {
  let recorder: RestartRecorder | undefined;
  const supervisor = createSupervisor({ log: say, onRestart: (event) => recorder?.record(event) });
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
export function workerProcess(env: NodeJS.ProcessEnv): Service {
  return childProcessService({
    name: "worker",
    command: process.execPath,
    args: ["--import", "tsx", "worker/main.ts"],
    cwd: root,
    env,
  });
}

/** Not `next start`: our server rewrites forwarding headers first (scripts/web-server.ts). */
export function webServerProcess(env: NodeJS.ProcessEnv, dev: boolean): Service {
  return childProcessService({
    name: "web server",
    command: process.execPath,
    args: ["--import", "tsx", "scripts/web-server.ts"],
    cwd: root,
    env: { ...env, NODE_ENV: dev ? "development" : "production" },
  });
}
