/**
 * `npm start`: one command, one Ctrl-C. Brings up Postgres (embedded under .data/ unless
 * DATABASE_URL is set), applies migrations, builds the web app on first start, then runs the
 * worker and the Next.js server as child processes and stops all of them together.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { dataDir } from "../lib/config/paths";
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from "../lib/db/embedded-postgres";
import { migrateDatabase } from "../lib/db/migrate";
import { ensureConsoleKeyAt } from "../lib/console-key/ensure-at-start";
import { loadSecretKey } from "../lib/secrets/key";
import { issueFirstStartSetupToken } from "../lib/auth/first-start";

const root = path.resolve(import.meta.dirname, "..");
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOSTNAME ?? "127.0.0.1";
const dev = process.argv.includes("--dev");

function say(line: string) {
  console.log(`[clupilot] ${line}`);
}

async function main() {
  let pg: EmbeddedPostgresHandle | undefined;
  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    const dir = path.join(dataDir(), "postgres");
    say(`starting embedded PostgreSQL in ${dir}`);
    pg = await startEmbeddedPostgres({
      dir,
      port: Number(process.env.CLUPILOT_PG_PORT ?? 54329),
      log: process.env.CLUPILOT_PG_LOG ? (line) => console.log(`[postgres] ${line}`) : undefined,
    });
    databaseUrl = await pg.createDatabase("clupilot");
  }
  loadSecretKey(); // create .data/secret.key once, before two processes race for it
  say("applying migrations");
  await migrateDatabase(databaseUrl);
  say(`console SSH key ${await ensureConsoleKeyAt(databaseUrl)}`);

  const env = { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOSTNAME: host };
  const nextBin = path.join(root, "node_modules", "next", "dist", "bin", "next");
  if (!dev && !fs.existsSync(path.join(root, ".next", "BUILD_ID"))) {
    say("no production build yet: running next build (first start only)");
    await runToEnd(process.execPath, [nextBin, "build"], env);
  }

  // While no user exists, a fresh one-time token for /setup (printed once the server is up).
  const setupToken = await issueFirstStartSetupToken(databaseUrl);

  const children: ChildProcess[] = [];
  const tsx = path.join(root, "node_modules", "tsx", "dist", "cli.mjs");
  children.push(
    spawn(process.execPath, [tsx, "worker/main.ts"], { cwd: root, env, stdio: "inherit" }),
  );
  // Not `next start`: our server rewrites forwarding headers first (scripts/web-server.ts).
  children.push(
    spawn(process.execPath, ["--import", "tsx", "scripts/web-server.ts"], {
      cwd: root,
      env: { ...env, NODE_ENV: dev ? "development" : "production" },
      stdio: "inherit",
    }),
  );
  say(
    `console on http://${host === "0.0.0.0" ? "localhost" : host}:${port} — Ctrl-C stops everything`,
  );
  if (setupToken) {
    say(
      `First start: open http://${host === "0.0.0.0" ? "localhost" : host}:${port}/setup and enter setup token ${setupToken}`,
    );
  }

  let stopping = false;
  const stop = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    say(`${why}: stopping worker, web server and database`);
    await Promise.all(children.map((child) => stopChild(child)));
    say("children stopped; stopping database");
    await pg?.stop().catch((e: Error) => say(`database stop failed: ${e.message}`));
    say("database stopped");
    process.exit(code);
  };
  process.on("SIGINT", () => void stop("Ctrl-C"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  for (const child of children) {
    child.on("exit", (code, signal) => {
      if (!stopping) void stop(`a child process exited (${code ?? signal})`, 1);
    });
  }
}

function runToEnd(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: "inherit" });
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(" ")} exited with ${code}`)),
    );
  });
}

/** SIGTERM, then SIGKILL after a grace period; resolves once the child is gone. */
function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

main().catch((error: Error) => {
  console.error(`[clupilot] could not start: ${error.message}`);
  process.exit(1);
});
