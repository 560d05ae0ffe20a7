import crypto from "node:crypto";
import { expect, test, type Locator, type Page } from "./support/test";
import { startWebhookReceiver, type WebhookReceiver } from "../lab/webhook-receiver/receiver";
import { createDb } from "../lib/db/client";
import { queueSelfTest } from "../lib/power/self-test/queue-self-test";
import { E2E_STORAGE_STATE } from "./auth-state";
import { base, databaseUrl } from "./support/console";

/*
 * Issue 15's self-test card in the browser, against the console as `npm start` runs it (its
 * worker runs the self-test): an operator presses "Run self-test now" on the power dashboard and
 * every check shows its verdict with what it found. Two webhook targets of this run make one
 * check pass and one fail for a known reason (a receiver answering 500): the failing one is red
 * and says what to do. Other specs' targets, UPSes and hosts add checks of their own; this spec
 * only reads its own rows by name and removes its targets afterwards.
 */

test.describe.configure({ mode: "serial" });

const RUN = crypto.randomBytes(3).toString("hex");
const OK_NAME = `e2e-st-ok-${RUN}`;
const FAILING_NAME = `e2e-st-500-${RUN}`;
const headers = () => ({ origin: base(), "content-type": "application/json" });
let receiver: WebhookReceiver | undefined;
const targetIds: string[] = [];

test.afterAll(async ({ browser }) => {
  const context = await browser.newContext({ storageState: E2E_STORAGE_STATE });
  for (const id of targetIds) {
    await context.request.delete(`${base()}/api/notifications/targets/${id}`, {
      headers: headers(),
    });
  }
  await context.close();
  await receiver?.close();
});

async function addTarget(page: Page, name: string, path: string): Promise<void> {
  const created = await page.request.post(`${base()}/api/notifications/targets`, {
    headers: headers(),
    data: { name, format: "json", url: receiver!.url(path), minSeverity: "critical" },
  });
  expect(created.status(), await created.text()).toBe(201);
  targetIds.push(((await created.json()) as { target: { id: string } }).target.id);
}

/** The colour the stylesheet's `--danger` resolves to, as the browser computes colours. */
function dangerColour(page: Page): Promise<string> {
  return page.evaluate(() => {
    const probe = document.createElement("span");
    probe.style.color = "var(--danger)";
    document.body.append(probe);
    const colour = getComputedStyle(probe).color;
    probe.remove();
    return colour;
  });
}

/** A check's row by its title, on the page or within one part of the card. */
const checkRow = (scope: Page | Locator, title: string): Locator =>
  scope.getByTestId("self-test-check").filter({ hasText: title });

test("the self-test runs from its button; each check shows its verdict and reason, a failing one in red with what to do", async ({
  page,
}) => {
  test.setTimeout(200_000);
  receiver = await startWebhookReceiver();
  receiver.setMode("fail", "/failing");
  await addTarget(page, OK_NAME, "/ok");
  await addTarget(page, FAILING_NAME, "/failing");

  await page.goto("/power");
  const card = page.getByTestId("self-test");
  // The button is disabled until the page hydrated, so one click is one request: a second one
  // after the worker took the first would be a second run and a second test message.
  await card.getByTestId("run-self-test").click();

  // The worker runs it; the card follows on the live stream ("Self-test queued" shows until the
  // result does, and not at all when the result is quicker than the answer to the click).
  // Webhooks are tested on the button only, so this run's own targets in the table prove it is
  // the run just asked for; an hourly run landing meanwhile keeps them under "as last tested
  // by hand", where the same rows are found.
  const passing = checkRow(page, `${OK_NAME}: the webhook delivers`);
  const failing = checkRow(page, `${FAILING_NAME}: the webhook delivers`);
  await expect(passing).toHaveAttribute("data-verdict", "ok", { timeout: 120_000 });
  await expect(passing.locator("td").nth(0)).toHaveText("ok");
  await expect(passing.locator("td").nth(1)).toContainText(
    `${new URL(receiver.url()).origin} took a test message (HTTP 200).`,
  );
  await expect(passing.locator("td").nth(2)).toHaveText("—");

  await expect(failing).toHaveAttribute("data-verdict", "failed");
  const verdict = failing.locator("td").nth(0);
  await expect(verdict).toHaveText("failed");
  await expect(verdict).toHaveCSS("color", await dangerColour(page));
  await expect(failing.locator("td").nth(1)).toContainText("did not take a test message");
  await expect(failing.locator("td").nth(1)).toContainText("500");
  await expect(failing.locator("td").nth(2)).toContainText(
    "Check the URL, the auth header and the service",
  );
  // The overall verdict is the worst check's: this run's failure makes it failed, never ok.
  await expect(card.getByTestId("self-test-verdict")).toHaveAttribute("data-verdict", "failed");

  // Every check of the run, this spec's or not, has a verdict and says what it found.
  const rows = await card.getByTestId("self-test-check").all();
  expect(rows.length).toBeGreaterThanOrEqual(2);
  for (const row of rows) {
    await expect(row.locator("td").nth(0)).toHaveText(/^(ok|warning|failed|could not check)$/);
    await expect(row.locator("th")).not.toBeEmpty();
    await expect(row.locator("td").nth(1)).not.toBeEmpty();
  }

  // Each target got exactly one real test message.
  expect(receiver.received("/ok")).toHaveLength(1);
  expect(receiver.received("/failing").length).toBeGreaterThanOrEqual(1);

  // A later run that sends no test messages — the hourly one, queued here the way the worker's
  // crontab queues it — becomes the latest: what the run by hand found about the webhooks stays
  // on the card, with its time, the failing one still red.
  const { db, pool } = createDb(databaseUrl(), 1);
  try {
    await queueSelfTest(db, "schedule");
  } finally {
    await pool.end();
  }
  await expect(card.getByTestId("self-test-when")).toContainText("hourly run", {
    timeout: 60_000,
  });
  const kept = card.getByTestId("self-test-last-webhook-test");
  await expect(kept).toContainText("Webhooks, as last tested by hand");
  const keptFailing = checkRow(kept, `${FAILING_NAME}: the webhook delivers`);
  await expect(keptFailing).toHaveAttribute("data-verdict", "failed");
  await expect(keptFailing.locator("td").nth(0)).toHaveCSS("color", await dangerColour(page));
  await expect(checkRow(kept, `${OK_NAME}: the webhook delivers`)).toHaveAttribute(
    "data-verdict",
    "ok",
  );
  // The hourly run itself sent nothing.
  expect(receiver.received("/ok")).toHaveLength(1);
});
