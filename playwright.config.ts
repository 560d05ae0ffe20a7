import { defineConfig } from "@playwright/test";

import { CHROMIUM_ARGS, CHROMIUM_PATH } from "./test/chromium";

/**
 * End-to-end tests drive Debian's Chromium (browsers cannot be downloaded here). The console
 * under test is started by e2e/global-setup.ts exactly as a user starts it (`npm start`'s
 * script), on a throw-away data folder, against lab hosts.
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
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
    },
  },
});
