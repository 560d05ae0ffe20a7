import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, expect, type FullConfig } from "@playwright/test";
import { labProxmoxKeyringEnv } from "../lab/debian/apt-sources";
import { startImageServer } from "../lab/image/server";
import { embeddedPostgresUrl, freePort } from "../lib/db/embedded-postgres";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../test/chromium";
import { E2E_ADMIN, storageStateOf } from "./auth-state";
import { CONSOLE_ENV } from "./support/console-slot";

/**
 * Starts the console the way `npm start` does (scripts/start.ts: embedded Postgres, migrations,
 * worker, Next.js) on a fresh data folder and free ports, and stops it with one SIGINT, as a
 * Ctrl-C would. The production build must exist (`npm test` builds before the e2e tests). One
 * console per Playwright worker (e2e/support/console-slot.ts), started side by side.
 *
 * Then it does what an operator does on a first start: takes the setup token the console
 * printed, creates the admin on /setup in the browser, and saves that signed-in browser state
 * for every spec (playwright.config.ts `storageState`).
 */
export default async function globalSetup(config: FullConfig) {
  const root = path.resolve(import.meta.dirname, "..");
  // The lab's stand-in for cloud.debian.org and Proxmox's keyring download; the consoles are
  // pointed at it exactly as an operator would point one at a mirror.
  const images = await startImageServer();
  const slots = Array.from({ length: Math.max(1, config.workers) }, (_, slot) => String(slot));
  const started = await Promise.allSettled(slots.map((slot) => startConsole(root, images, slot)));
  const consoles = started.flatMap((result) =>
    result.status === "fulfilled" ? [result.value] : [],
  );
  const stopAll = async () => {
    await Promise.all(consoles.map((one) => one.stop()));
    await images.stop();
  };
  const failure = started.find((result) => result.status === "rejected");
  if (failure) {
    await stopAll();
    throw failure.reason;
  }
  for (const [slot, one] of consoles.entries()) {
    for (const [name, value] of Object.entries(one.env)) process.env[`${name}_${slot}`] = value;
  }
  return stopAll;
}

type ImageServer = Awaited<ReturnType<typeof startImageServer>>;

type StartedConsole = {
  /** What the specs of this console's slot read (e2e/support/console-slot.ts). */
  env: Record<(typeof CONSOLE_ENV)[number], string>;
  stop(): Promise<void>;
};

async function startConsole(
  root: string,
  images: ImageServer,
  slot: string,
): Promise<StartedConsole> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-e2e-"));
  fs.chmodSync(dataDir, 0o755);
  const port = await freePort();
  const pgPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CLUPILOT_DATA_DIR: dataDir,
    PORT: String(port),
    CLUPILOT_PG_PORT: String(pgPort),
    CLUPILOT_CLOUD_IMAGE_URL: images.imageUrl,
    CLUPILOT_CLOUD_IMAGE_SUMS_URL: images.sumsUrl,
    ...labProxmoxKeyringEnv(images.keyringUrl),
    // Lab hosts run on compressed time: poll them as often.
    CLUPILOT_POLL_SECONDS: "0.5",
    CLUPILOT_REBOOT_DEADLINE_SECONDS: "120",
  };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const logFile = path.join(dataDir, "console.log");
  child.stdout!.on("data", (chunk) => {
    output += chunk;
    fs.appendFileSync(logFile, chunk);
  });
  child.stderr!.on("data", (chunk) => {
    output += chunk;
    fs.appendFileSync(logFile, chunk);
  });
  const stop = async () => {
    // One Ctrl-C: SIGINT to the console's process group, like a terminal sends it.
    try {
      process.kill(-child.pid!, "SIGINT");
    } catch {
      // already gone
    }
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
        resolve();
      }, 30_000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 180_000;
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`console ${slot} exited during start-up:\n${output}`);
      try {
        // Up and guarded: the API refuses a request without credentials.
        const response = await fetch(`${baseUrl}/api/hosts`);
        if (response.status === 401) break;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline)
        throw new Error(`console ${slot} did not answer on ${baseUrl}:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const printed = /First start: open (\S+)\/setup and enter setup token (\S+)/.exec(output);
    if (!printed)
      throw new Error(`console ${slot}: npm start printed no setup token line:\n${output}`);
    await createFirstAdmin(baseUrl, printed[2]!, storageStateOf(slot));
    return {
      env: {
        E2E_BASE_URL: baseUrl,
        E2E_DATA_DIR: dataDir,
        // Specs that write rows the console reads (a seeded host's credential) seal them with
        // the console's own key, found through its data folder.
        CLUPILOT_DATA_DIR: dataDir,
        E2E_DATABASE_URL: embeddedPostgresUrl(path.join(dataDir, "postgres"), pgPort, "clupilot"),
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** First start in the browser: /hosts → /login → /setup, token + admin, signed in on /hosts. */
async function createFirstAdmin(
  baseUrl: string,
  setupToken: string,
  storageState: string,
): Promise<void> {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage();
    await page.goto(`${baseUrl}/hosts`);
    await expect(page).toHaveURL(/\/setup$/);
    await page.getByLabel("Setup token").fill(setupToken);
    await page.getByLabel("Admin user name").fill(E2E_ADMIN.name);
    await page.getByLabel("Admin password").fill(E2E_ADMIN.password);
    await page.getByRole("button", { name: "Create admin and sign in" }).click();
    await expect(page).toHaveURL(/\/hosts$/, { timeout: 30_000 });
    await expect(page.getByTestId("signed-in-user")).toHaveText(E2E_ADMIN.name);
    fs.mkdirSync(path.dirname(storageState), { recursive: true, mode: 0o700 });
    await page.context().storageState({ path: storageState });
  } finally {
    await browser.close();
  }
}
