import crypto from "node:crypto";
import { expect, test, type Page } from "./support/test";
import { startWebhookReceiver, type WebhookReceiver } from "../lab/webhook-receiver/receiver";
import { base } from "./support/console";

/*
 * Issue 15's notifications in the browser, against the console as `npm start` runs it (its
 * worker delivers): an admin adds a webhook target through the form (field errors under their
 * field, the auth header never shown back), Test reports a receiver that is down, a power event
 * whose delivery fails is red on the card and the dashboard, and gone once the receiver is back.
 */

test.describe.configure({ mode: "serial" });

const NAME = `e2e-hook-${crypto.randomBytes(3).toString("hex")}`;
const SECRET = `Bearer e2e-${crypto.randomBytes(8).toString("hex")}`;
let receiver: WebhookReceiver | undefined;

test.afterAll(async () => {
  await receiver?.close();
});

/** A config.changed power event, as an admin's settings change makes one (and back again). */
async function changeSettingsTwice(page: Page) {
  const headers = { origin: base(), "content-type": "application/json" };
  const current = await page.request.get(`${base()}/api/power/settings`);
  expect(current.status()).toBe(200);
  const settings = (await current.json()) as { pollIntervalMs: number };
  for (const pollIntervalMs of [settings.pollIntervalMs + 1, settings.pollIntervalMs]) {
    const changed = await page.request.patch(`${base()}/api/power/settings`, {
      headers,
      data: { pollIntervalMs },
    });
    expect(changed.status(), await changed.text()).toBe(200);
  }
}

test("an admin adds a webhook target; a failing delivery is red on its card and the dashboard until the receiver is back", async ({
  page,
}) => {
  test.setTimeout(120_000);
  receiver = await startWebhookReceiver();
  await receiver.down();

  await page.goto("/power/notifications/new");
  // A drill's start is a kind a target can choose, by its words.
  await expect(page.getByRole("checkbox", { name: /Drill started/ })).toBeVisible();
  await page.getByTestId("notify-submit").click();
  await expect(page.getByTestId("error-url")).toBeVisible();
  await expect(page.getByTestId("error-name")).toBeVisible();

  await page.getByLabel("Name", { exact: true }).fill(NAME);
  await page.getByLabel("Format").selectOption("json");
  await page.getByLabel("Webhook URL").fill(receiver.url("/e2e"));
  await page.getByLabel("Minimum severity").selectOption("info");
  await page.getByLabel("More kinds (comma-separated; a family as ups.*)").fill("config.changed");
  await page.getByLabel("Auth header name (optional)").fill("Authorization");
  await page.getByLabel("Auth header value").fill(SECRET);
  await page.getByTestId("notify-submit").click();
  await page.waitForURL(/\/power\/notifications$/);

  const card = page.getByTestId(`notify-card-${NAME}`);
  await expect(card).toContainText("Authorization: set");
  expect(await page.content()).not.toContain(SECRET);

  const id = (await card.getAttribute("id"))!.replace(/^target-/, "");
  await page.getByTestId(`notify-test-${id}`).click();
  await expect(page.getByTestId(`notify-test-result-${id}`)).toContainText(
    "Not delivered: it could not reach it (ECONNREFUSED",
  );
  // The card's last delivery is that test now, not "none yet".
  await expect(page.getByTestId(`notify-last-${NAME}`)).toContainText(
    "Test message by e2e-admin: not delivered",
  );

  await changeSettingsTwice(page);
  await expect(page.getByTestId(`notify-failing-${NAME}`)).toContainText("ECONNREFUSED");
  await page.goto("/power");
  const banner = page.getByTestId("notifications-failing");
  await expect(banner).toContainText(`Notifications to ${NAME} are failing`);

  await receiver.up();
  // The worker's next attempt (5 s, then 10 s after the first failure) delivers; the notice goes.
  await expect(banner).toHaveCount(0, { timeout: 60_000 });
  const got = receiver.received("/e2e");
  expect(got.length).toBeGreaterThanOrEqual(2);
  expect(got.every((r) => r.headers.authorization === SECRET)).toBe(true);
  expect(JSON.parse(got[0]!.body)).toMatchObject({ kind: "config.changed", source: "power" });

  await page.goto("/power/notifications");
  await page.getByTestId(`notify-delete-${id}`).click();
  await page
    .getByTestId(`notify-delete-${id}-dialog`)
    .getByRole("button", { name: `Remove ${NAME}` })
    .click();
  await expect(page.getByTestId(`notify-card-${NAME}`)).toHaveCount(0);
});
