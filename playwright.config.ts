import { defineConfig } from "@playwright/test";

import { E2E_STORAGE_STATE } from "./e2e/auth-state";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "./test/chromium";

/**
 * End-to-end tests drive Debian's Chromium (browsers cannot be downloaded here). The console
 * under test is started by e2e/global-setup.ts exactly as a user starts it (`npm start`'s
 * script), on a throw-away data folder, against lab hosts.
 * Every spec runs signed in as the admin global setup created through /setup (`storageState`);
 * a spec that needs another user, or nobody, opens its own browser context.
 */
export default defineConfig({
  testDir: "e2e",
  timeout: 120_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  outputDir: "test-results",
  globalSetup: "./e2e/global-setup.ts",
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
