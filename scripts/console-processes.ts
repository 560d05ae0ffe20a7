import path from "node:path";
import { childProcessService } from "../lib/supervisor/child-process-service";
import type { Service } from "../lib/supervisor/supervisor";

const root = path.resolve(import.meta.dirname, "..");

/**
 * The console's child processes as `npm start` supervises them. Both run as `node --import tsx`
 * — one process each, no wrapper in between — so the pid a process prints is the one that is
 * signalled, and the supervisor sees exactly how it ended.
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
