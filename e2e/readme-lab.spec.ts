import { expect, test } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { addLabHost, base } from "./support/console";

/**
 * The README's "Try it without hardware: the lab", followed literally: a fresh Debian 13 lab
 * node at `--time-scale 0.05`, added in the browser, no catalog published — it ends `active`
 * (issue 19: it ended `failed` in RegisterCapacity because nothing gave `local` the `images`
 * content type). What a new user sees on the way is checked too: no 404 for the favicon, no
 * live stream opened before a session exists, and events in the order they committed.
 */

let node: LabNode | undefined;
test.afterAll(async () => {
  await node?.stop();
});

test("the README's lab path ends active: a fresh Debian node with no catalog gets an image storage and its capacity", async ({
  page,
}) => {
  test.setTimeout(180_000);
  node = await startLab({ state: "fresh", timeScale: 0.05 });
  await addLabHost(page, "pve-readme", node);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 170_000,
  });
  await expect(page.getByTestId("host-capacity-images")).not.toHaveText("0");
  await expect(page.getByTestId("step-ConfigureProxmox")).toHaveAttribute("data-state", "done");
  // The onboarding's own verification is the host's first template check.
  await expect(page.getByTestId("host-template-check")).not.toContainText("not checked yet");

  // Recent events in commit order, their times never going backwards.
  const times = await page
    .getByTestId("run-events")
    .locator("time")
    .evaluateAll((elements) => elements.map((e) => Date.parse(e.getAttribute("datetime")!)));
  expect(times.length).toBeGreaterThan(3);
  expect(times).toEqual([...times].sort((a, b) => a - b));
});

test("a signed-out page opens no live stream, and /favicon.ico is the app's icon", async ({
  browser,
  request,
}) => {
  const favicon = await request.get(`${base()}/favicon.ico`);
  expect(favicon.status()).toBe(200);
  expect(favicon.headers()["content-type"]).toContain("image/svg+xml");

  const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  const page = await context.newPage();
  const live: string[] = [];
  page.on("request", (r) => {
    if (new URL(r.url()).pathname === "/api/live") live.push(r.url());
  });
  await page.goto(`${base()}/login`);
  await expect(page.getByLabel("Password")).toBeVisible();
  await page.waitForTimeout(500);
  expect(live).toEqual([]);
  await context.close();
});
