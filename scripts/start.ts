/**
 * `npm start`: one command, one Ctrl-C. Brings up Postgres (embedded under .data/ unless
 * DATABASE_URL is set), applies migrations, builds the web app on first start, then keeps the
 * worker and the Next.js server running as child processes: whatever ends by itself — either
 * child or the embedded database — is started again with backoff (lib/supervisor). Only Ctrl-C,
 * SIGTERM or SIGHUP stops everything: the children first, then the database.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { dataDir } from "../lib/config/paths";
import { migrateDatabase } from "../lib/db/migrate";
import { ensureConsoleKeyAt } from "../lib/console-key/ensure-at-start";
import { loadSecretKey } from "../lib/secrets/key";
import { issueFirstStartSetupToken } from "../lib/auth/first-start";
import {
  embeddedDatabase,
  superviseConsole,
  webServerProcess,
  workerProcesses,
} from "./console-processes";

const root = path.resolve(import.meta.dirname, "..");
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOSTNAME ?? "127.0.0.1";
const dev = process.argv.includes("--dev");

function say(line: string) {
  console.log(`[clupilot] ${line}`);
}

const supervision = superviseConsole(say);

async function main() {
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    say(`starting embedded PostgreSQL in ${path.join(dataDir(), "postgres")}`);
    const database = embeddedDatabase(say);
    await supervision.start([database]);
    databaseUrl = await database.handle().createDatabase("clupilot");
  }
  loadSecretKey(); // create .data/secret.key once, before two processes race for it
  say("applying migrations");
  await migrateDatabase(databaseUrl);
  say(`console SSH key ${await ensureConsoleKeyAt(databaseUrl)}`);

  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOSTNAME: host,
    // Next.js reports anonymous usage to Vercel unless told not to: the console sends nothing
    // anywhere by default (its build here and the web server it starts).
    NEXT_TELEMETRY_DISABLED: "1",
  };
  const nextBin = path.join(root, "node_modules", "next", "dist", "bin", "next");
  if (!dev && !fs.existsSync(path.join(root, ".next", "BUILD_ID"))) {
    say("no production build yet: running next build (first start only)");
    await runToEnd(process.execPath, [nextBin, "build"], env);
  }

  // While no user exists, a fresh one-time token for /setup (printed once the server is up).
  const setupToken = await issueFirstStartSetupToken(databaseUrl);

  supervision.recordRestartsIn(databaseUrl);
  await supervision.start([...workerProcesses(env), webServerProcess(env, dev)]);
  const origin = `http://${host === "0.0.0.0" ? "localhost" : host}:${port}`;
  say(`console on ${origin} — Ctrl-C stops everything`);
  if (setupToken) say(`First start: open ${origin}/setup and enter setup token ${setupToken}`);
}

function runToEnd(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: "inherit" });
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(" ")} exited with ${code}`)),
    );
  });
}

main().catch((error: Error) => {
  if (supervision.stopping) return; // what was starting failed because everything is stopping
  console.error(`[clupilot] could not start: ${error.message}`);
  void supervision.stop("could not start", 1);
});
