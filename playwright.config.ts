import { defineConfig } from "@playwright/test";

import { E2E_STORAGE_STATE } from "./e2e/auth-state";
import { pointAtConsoleOfSlot } from "./e2e/support/console-slot";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "./test/chromium";

// In each worker: E2E_BASE_URL and the others name this worker's own console.
pointAtConsoleOfSlot();

/**
 * End-to-end tests drive Debian's Chromium (browsers cannot be downloaded here). The consoles
 * under test are started by e2e/global-setup.ts exactly as a user starts one (`npm start`'s
 * script), on throw-away data folders, against lab hosts: one per worker, so spec files running
 * at the same moment never share a console (e2e/support/console-slot.ts).
 * Every spec runs signed in as the admin global setup created through /setup (`storageState`);
 * a spec that needs another user, or nobody, opens its own browser context.
 */
export default defineConfig({
  testDir: "e2e",
  timeout: 120_000,
  expect: { timeout: 15_000 },
  // A file's tests run in order in one worker; files run two at a time. E2E_WORKERS=1 runs them
  // one after another against one console.
  fullyParallel: false,
  workers: Number(process.env.E2E_WORKERS ?? 2),
  retries: 0,
  reporter: [["list"]],
  outputDir: "test-results",
  globalSetup: "./e2e/global-setup.ts",
  // No spec times anything (bench/ does): every spec runs in one project, two files at a time.
  projects: [{ name: "console" }],
  use: {
    baseURL: process.env.E2E_BASE_URL,
    storageState: E2E_STORAGE_STATE,
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
    },
  },
});
