/**
 * The browser for e2e tests and benches: Debian's Chromium (browsers cannot be downloaded here),
 * started the same way by playwright.config.ts and bench/*.ts.
 */

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

// One list, so e2e runs and bench timings see the same browser.
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];
