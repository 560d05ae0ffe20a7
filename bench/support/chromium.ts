import { chromium, type Browser } from "playwright-core";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "@/test/chromium";
import { startUntilEnd } from "./run-bench";

/**
 * Debian's Chromium, as the e2e tests start it, closed when the bench ends. Playwright's own
 * signal handlers are off: on Ctrl-C they close the browser and then exit the process at once,
 * before the web server and Postgres are stopped.
 */
export function launchChromium(): Promise<Browser> {
  return startUntilEnd(
    "Chromium",
    chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    }),
    (browser) => browser.close(),
  );
}
