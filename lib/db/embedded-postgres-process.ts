import { spawn } from "node:child_process";

/** Whom the embedded cluster's programs run as: the console's own user, or as root `postgres`. */
export type PostgresIdentity = { uid?: number; gid?: number };

export type RunResult = { code: number | null; output: string };

const PASSED_ON = new Set(["PATH", "TZ", "LC_ALL"]);

/**
 * Runs a program to its end as `identity` and collects its output. It gets PATH, TZ and the C
 * locale of the console's environment and nothing else: the PostgreSQL server started through
 * pg_ctl inherits this environment, and the postgres user can read its own processes'
 * environment, so the console's secrets (CLUPILOT_SECRET_KEY, DATABASE_URL) must not be in it.
 * It starts in `/`: as the postgres user, the console's working folder (e.g. under /root) may
 * be closed to it.
 */
export function runAs(
  command: string,
  args: string[],
  identity: PostgresIdentity,
): Promise<RunResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: "C" };
  for (const name of Object.keys(env)) if (!PASSED_ON.has(name)) delete env[name];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      ...identity,
      cwd: "/",
      stdio: ["ignore", "pipe", "pipe"],
      env,
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", (error: NodeJS.ErrnoException) => {
      const as = identity.uid === undefined ? "" : ` as uid ${identity.uid}`;
      reject(new Error(`could not run ${command}${as}: ${error.code ?? error.message}`));
    });
    child.on("close", (code) => resolve({ code, output }));
  });
}
