import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { consolePages } from "./console-pages";
import { addLabHost, base, expectNoReload, markNoReload } from "./support/console";

/*
 * Issue 13 in the browser, against the console as `npm start` runs it (its worker watches the
 * UPS): an admin adds a lab UPS and protects an onboarded lab node through the forms, sees
 * dry-run on every page, arms through a confirmation that lists the target, pulls the lab UPS's
 * plug and watches the card, the chart and the shutdown run move live until the lab node is
 * off; then disarms (confirmed too) and removes what it added.
 */

test.describe.configure({ mode: "serial" });

const UPS = "lab-ups";
const HOST = "pve-power";
let node: LabNode | undefined;
let ups: LabUps | undefined;
let hostId = "";

test.afterAll(async () => {
  await node?.stop();
  await ups?.stop();
});

async function powerMode(page: Page, mode: "dry-run" | "armed") {
  await expect(page.getByTestId("power-mode")).toHaveAttribute("data-mode", mode);
}

test("an admin adds a lab UPS and protects an onboarded lab node through the forms; field errors sit under their field and the UPS password is never shown back", async ({
  page,
}) => {
  test.setTimeout(180_000);
  ups = await startLabUps({ name: "labups" });
  node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  await addLabHost(page, HOST, node);
  hostId = /\/hosts\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 90_000,
  });

  const nut = ups.nut!;
  await page.goto("/power/ups");
  await page.getByLabel("Name", { exact: true }).fill(UPS);
  await page.getByLabel("NUT server address").fill(nut.host);
  await page.getByLabel("Port", { exact: true }).fill("99999");
  await page.getByLabel("UPS name on that server").fill(nut.upsName);
  await page.getByLabel("User (optional)").fill(nut.username);
  await page.getByLabel("Password (optional)").fill(nut.password);
  await page.getByTestId("save-ups").click();
  await expect(page.getByTestId("error-source.port")).toBeVisible();
  await expect(page.getByLabel("Port", { exact: true })).toHaveAttribute("aria-invalid", "true");
  await expect(page.getByLabel("Port", { exact: true })).toBeFocused();

  await page.getByLabel("Port", { exact: true }).fill(String(nut.port));
  await page.getByTestId("save-ups").click();
  await expect(page.getByTestId(`ups-row-${UPS}`)).toContainText(
    `NUT ${nut.upsName}@127.0.0.1:${nut.port}`,
  );
  await expect(page.getByTestId(`ups-row-${UPS}`)).toContainText("credentials stored");

  // Editing: the password field is empty and says one is stored; the page never carries it.
  await page.getByTestId(`ups-row-${UPS}`).getByRole("link", { name: "Edit" }).click();
  await expect(page.getByLabel("Password (optional)")).toHaveValue("");
  await expect(page.getByText("A password is stored — leave empty to keep it.")).toBeVisible();
  expect(await page.content()).not.toContain(nut.password);

  await page.goto("/power/targets");
  await page.getByLabel("Host", { exact: true }).selectOption(hostId);
  await page.getByRole("checkbox", { name: UPS }).check();
  await page.getByTestId("save-target").click();
  await expect(page.getByTestId(`target-row-${HOST}`)).toContainText(
    `POST https://127.0.0.1:${new URL(node.api.url).port}/api2/json/nodes/pve1/status command=shutdown`,
  );

  // The worker's monitor picks the UPS up and reads it on mains.
  await page.goto("/power");
  const card = page.getByTestId(`ups-card-${UPS}`);
  await expect(card).toHaveAttribute("data-condition", "on-mains", { timeout: 30_000 });
  await expect(card.getByTestId("ups-reachable")).toHaveText("yes");
  await expect(page.getByTestId(`protection-${HOST}`)).toHaveAttribute("data-token", "yes");
});

test("every console page shows the power mode: dry-run after installation", async ({ page }) => {
  test.setTimeout(120_000);
  const plan = await page.request.post("/api/catalog/plans", {
    data: { slug: `power-${crypto.randomBytes(3).toString("hex")}`, name: "Power mode check" },
  });
  expect(plan.status()).toBe(201);
  const planId = ((await plan.json()) as { planId: string }).planId;
  // The sign-in pages are not console pages: they have no session to show a mode to.
  const outside = fs
    .readdirSync(path.resolve(import.meta.dirname, "../app/(auth)"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `/${entry.name}`);
  const pages = consolePages({ hostId, planId }).filter((p) => !outside.includes(p));
  expect(pages).toEqual(expect.arrayContaining(["/hosts", "/power", "/power/ups", "/audit"]));
  for (const pagePath of pages) {
    await page.goto(pagePath);
    const mode = page.getByTestId("power-mode");
    await expect(mode, pagePath).toHaveAttribute("data-mode", "dry-run");
    await expect(mode, pagePath).toContainText("dry-run");
  }
});

test("arming lists every target in a confirmation; armed is a banner on every page; unplugging the lab UPS moves the card, the chart and the shutdown run live until the lab node is off; disarming is confirmed too", async ({
  page,
}) => {
  test.setTimeout(240_000);
  const lab = node!;
  const labUps = ups!;
  // The chart draws through uPlot: nothing it does may need more than the console's CSP allows.
  const problems: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(String(error)));
  await page.goto("/power");
  await powerMode(page, "dry-run");
  const card = page.getByTestId(`ups-card-${UPS}`);
  await expect(card).toHaveAttribute("data-condition", "on-mains", { timeout: 30_000 });

  // Cancel first: nothing changes.
  await page.getByTestId("arm-button").click();
  const dialog = page.getByTestId("arm-dialog");
  await expect(dialog).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await powerMode(page, "dry-run");

  await page.getByTestId("arm-button").click();
  await expect(dialog.getByTestId(`arm-target-${HOST}`)).toContainText(
    `POST https://127.0.0.1:${new URL(lab.api.url).port}/api2/json/nodes/pve1/status command=shutdown`,
  );
  await expect(dialog.getByTestId("arm-targets").locator("li")).toHaveCount(1);
  await expect(dialog).toContainText("for real");
  await page.getByTestId("arm-dialog-confirm").click();
  await expect(dialog).toBeHidden();
  await powerMode(page, "armed");
  await expect(page.getByTestId("power-mode")).toContainText("ARMED");
  for (const other of ["/hosts", "/power/targets", `/hosts/${hostId}`]) {
    await page.goto(other);
    await powerMode(page, "armed");
  }

  await page.goto("/power");
  await expect(card).toHaveAttribute("data-condition", "on-mains", { timeout: 30_000 });
  const chart = page.getByTestId(`readings-chart-${UPS}`);
  await expect(chart).not.toHaveAttribute("data-points", "0", { timeout: 30_000 });
  await markNoReload(page);

  labUps.control.pullPlug();
  await expect(card).toHaveAttribute("data-condition", "on-battery", { timeout: 15_000 });
  await expect(card.getByTestId("ups-on-battery")).not.toHaveText("—");
  await expect(chart).toHaveAttribute("data-last-on-battery", "true", { timeout: 15_000 });

  // The UPS that dies without warning: low battery at once, the trigger fires.
  labUps.control.jumpToLowBattery();
  await expect(card).toHaveAttribute("data-condition", "low-battery", { timeout: 15_000 });
  await expect(card.getByTestId("ups-latch")).toBeVisible({ timeout: 15_000 });
  const run = page.getByTestId("shutdown-run");
  await expect(run.getByTestId("step-PlanShutdown")).toHaveAttribute("data-state", "done", {
    timeout: 30_000,
  });
  await expect(run.getByTestId(`shutdown-call-${HOST}`)).toHaveAttribute("data-state", "sent", {
    timeout: 30_000,
  });
  await expect(run.getByTestId("step-VerifyTargetsDown")).toHaveAttribute("data-state", "done", {
    timeout: 60_000,
  });
  await expect.poll(() => lab.power.state, { timeout: 30_000 }).toBe("down");
  const shutdownCalls = lab.api.requests.filter(
    (r) => r.method === "POST" && r.path.endsWith("/nodes/pve1/status"),
  );
  expect(shutdownCalls.map((r) => r.body.command)).toEqual(["shutdown"]);
  await expect(page.getByTestId("power-events")).toContainText("low battery");
  await expectNoReload(page);
  expect(problems).toEqual([]);

  // Disarming is confirmed as well.
  await page.getByTestId("disarm-button").click();
  await expect(page.getByTestId("disarm-dialog")).toContainText("nothing is sent");
  await page.getByTestId("disarm-dialog-confirm").click();
  await powerMode(page, "dry-run");
  labUps.control.restore();
});

test("operators acknowledge alarms; viewers see the power page read-only and cannot reach the configuration", async ({
  page,
  browser,
}) => {
  const password = `viewer password ${crypto.randomBytes(6).toString("hex")}`;
  const name = `power-viewer-${crypto.randomBytes(3).toString("hex")}`;
  const created = await page.request.post("/api/users", {
    data: { name, role: "viewer", password },
  });
  expect(created.status(), await created.text()).toBe(201);

  // The admin (an operator and more) acknowledges the low-battery alarm of the last test.
  await page.goto("/power?severity=warning&unacknowledged=true#events");
  const acknowledge = page.getByRole("button", { name: "Acknowledge" }).first();
  await expect(acknowledge).toBeVisible();
  const before = await page.getByRole("button", { name: "Acknowledge" }).count();
  await acknowledge.click();
  await expect(page.getByRole("button", { name: "Acknowledge" })).toHaveCount(before - 1);

  const context = await browser.newContext({ storageState: undefined, baseURL: base() });
  try {
    const viewer = await context.newPage();
    await viewer.goto("/login");
    await viewer.getByLabel("User name").fill(name);
    await viewer.getByLabel("Password").fill(password);
    await viewer.getByRole("button", { name: "Sign in" }).click();
    await expect(viewer).toHaveURL(/\/hosts$/);
    await viewer.goto("/power");
    await expect(viewer.getByTestId(`ups-card-${UPS}`)).toBeVisible();
    await expect(viewer.getByTestId("power-plan")).toBeVisible();
    await expect(viewer.getByTestId("arm-button")).toHaveCount(0);
    // The power navigation leaves the admins' configuration pages out for a viewer.
    await expect(viewer.getByTestId("power-nav").getByRole("link")).toHaveText([
      "Overview",
      "Clusters",
      "Notifications",
      "Runs and drills",
    ]);
    await expect(viewer.getByRole("button", { name: "Acknowledge" })).toHaveCount(0);
    await viewer.goto("/power/ups");
    await expect(viewer).toHaveURL(/\/forbidden/);
  } finally {
    await context.close();
  }
});

test("an admin removes the target and the UPS again, each behind a confirmation", async ({
  page,
}) => {
  await page.goto("/power/targets");
  await page.getByTestId(`remove-target-${HOST}`).click();
  await expect(page.getByTestId(`remove-target-${HOST}-dialog`)).toContainText(
    "no longer shut down",
  );
  await page.getByTestId(`remove-target-${HOST}-dialog-confirm`).click();
  await expect(page.getByTestId(`target-row-${HOST}`)).toHaveCount(0);

  await page.goto("/power/ups");
  await page.getByTestId(`remove-ups-${UPS}`).click();
  await page.getByTestId(`remove-ups-${UPS}-dialog-confirm`).click();
  await expect(page.getByTestId(`ups-row-${UPS}`)).toHaveCount(0);
});
