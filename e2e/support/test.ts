import {
  test as base,
  expect,
  type Browser,
  type BrowserContext,
  type Page,
} from "@playwright/test";

export { expect };
export type { Browser, BrowserContext, Locator, Page, Route, TestInfo } from "@playwright/test";

/**
 * Every spec's `test`: fails a test when any page it opened — in its own context or one it made
 * with `browser.newContext()` / `browser.newPage()` — threw an uncaught error (`pageerror`,
 * React's hydration errors among them) or logged a `console.error`. A test that provokes one on
 * purpose says which, with `consoleErrors.allow(/…/)`; nothing else passes.
 */
export type ConsoleErrors = {
  /** Lets errors matching `pattern` pass in this test (e.g. an expected 403 of a refusal). */
  allow(pattern: RegExp): void;
  /** What was seen so far, allowed or not. */
  readonly seen: readonly string[];
};

export const test = base.extend<{ consoleErrors: ConsoleErrors }>({
  consoleErrors: [
    async ({ context, browser }, provide) => {
      const seen: string[] = [];
      const allowed: RegExp[] = [];
      const watch = (page: Page) => {
        page.on("pageerror", (error) => seen.push(`pageerror on ${page.url()}: ${error.message}`));
        page.on("console", (message) => {
          if (message.type() === "error") {
            seen.push(`console.error on ${page.url()}: ${message.text()}`);
          }
        });
      };
      const watchContext = (watched: BrowserContext) => {
        watched.pages().forEach(watch);
        watched.on("page", watch);
      };
      watchContext(context);
      // Contexts the test makes itself (another user, nobody signed in) are watched too.
      const newContext = browser.newContext.bind(browser);
      const newPage = browser.newPage.bind(browser);
      browser.newContext = async (...args: Parameters<Browser["newContext"]>) => {
        const made = await newContext(...args);
        watchContext(made);
        return made;
      };
      browser.newPage = async (...args: Parameters<Browser["newPage"]>) => {
        const page = await newPage(...args);
        watch(page);
        return page;
      };
      try {
        await provide({ allow: (pattern) => allowed.push(pattern), seen });
      } finally {
        browser.newContext = newContext;
        browser.newPage = newPage;
      }
      const unexpected = seen.filter((line) => !allowed.some((pattern) => pattern.test(line)));
      expect(unexpected, "page errors and console.error calls during the test").toEqual([]);
    },
    { auto: true },
  ],
});
