import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "@/lib/db/embedded-postgres";
import { DATABASE_UNREACHABLE_MESSAGE } from "@/lib/db/unreachable";
import { startRestartablePostgres, type RestartablePostgres } from "./restartable-postgres";
import { waitFor } from "./worker-process";

/**
 * The console's own web server (scripts/web-server.ts, the production build) across a PostgreSQL
 * restart: 503 while the database is away, the console again once it is back, the same process.
 * It needs the production build: npm test runs it after `npm run build` (the vitest project
 * `after-build`); a bare `vitest run` without a build skips it, and
 * lib/http/database-restart.int.test.ts proves the same request handling without Next.js.
 */
const root = path.resolve(import.meta.dirname, "..");
const built = fs.existsSync(path.join(root, ".next", "BUILD_ID"));

let postgres: RestartablePostgres;
let server: ChildProcess | null = null;
let output = "";
let base = "";
let dataDir = "";

beforeAll(async () => {
  if (!built) return;
  postgres = await startRestartablePostgres();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-web-restart-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(process.execPath, ["--import", "tsx", "scripts/web-server.ts"], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: postgres.url,
      NODE_ENV: "production",
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      CLUPILOT_DATA_DIR: dataDir,
      CLUPILOT_SECRET_KEY: crypto.randomBytes(32).toString("hex"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout!.on("data", (chunk) => (output += chunk));
  server.stderr!.on("data", (chunk) => (output += chunk));
  await waitFor("the web server to listen", async () => /listening on/.test(output), 60_000);
}, 180_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  }
  await postgres?.close();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const get = (pathname: string, accept: string) =>
  fetch(`${base}${pathname}`, {
    headers: { accept },
    redirect: "manual",
    signal: AbortSignal.timeout(15_000),
  });

describe.skipIf(!built)("the console's web server while PostgreSQL restarts", () => {
  it("answers 503 while the database is away and serves the console again once it is back, in the same process", async () => {
    const up = await get("/setup", "text/html");
    expect(up.status, output).toBe(200);

    await postgres.stop("fast");
    await waitFor("the 503 page", async () => (await get("/setup", "text/html")).status === 503);
    const page = await get("/hosts", "text/html");
    expect(page.status).toBe(503);
    expect(await page.text()).toContain("The console's database is unreachable");
    const api = await get("/api/hosts", "application/json");
    expect(api.status).toBe(503);
    expect(await api.json()).toEqual({ error: DATABASE_UNREACHABLE_MESSAGE, fieldErrors: {} });

    await postgres.start();
    await waitFor(
      "the console to answer again",
      async () => (await get("/setup", "text/html")).status === 200,
      30_000,
    );
    expect((await get("/api/hosts", "application/json")).status).toBe(401);
    expect(server!.exitCode, output).toBeNull();
    expect(output).toMatch(/database unreachable \(/);
    expect(output).toMatch(/database reachable again after/);
  }, 120_000);
});
