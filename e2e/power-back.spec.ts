import { startLab, type LabNode } from "../lab";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { E2E_STORAGE_STATE } from "./auth-state";
import { addLabHost, addLabUps, expectNoReload, markNoReload } from "./support/console";
import { expect, test, type Page } from "./support/test";

/*
 * Issue 30, item 9 in the browser against the console as `npm start` runs it: the way back on
 * the power page. Two standalone lab nodes protected by a lab UPS, in dry-run; one has a
 * Wake-on-LAN controller, the other none (the targets view warns it will not come back on its
 * own). The plug is pulled, the battery runs low and the dry-run shutdown runs; mains returns;
 * an admin presses Bring back now — the dialog says exactly what will happen — and the "Latest
 * way back" card shows the dry-run's verdict live, without a reload: what it would power on,
 * that nothing was sent, the host without a controller named. The runs list shows it as a way
 * back and opens its timeline. At 390×844 nothing scrolls sideways. The spec leaves the console
 * as it found it: its targets and UPS removed, the latch released.
 */

test.describe.configure({ mode: "serial" });

const UPS = "back-ups";
const WITH = "pve-back-wol";
const WITHOUT = "pve-back-bare";
const nodes: LabNode[] = [];
let ups: LabUps | undefined;
let upsId = "";
const targetIds: string[] = [];
let powerBackRunId = "";

test.afterAll(async ({ browser }) => {
  const context = await browser.newContext({ storageState: E2E_STORAGE_STATE });
  const request = context.request;
  if (upsId) {
    await request.post(`/api/power/ups/${upsId}/release-latch`, {
      data: { confirmDuringOutage: true },
    });
  }
  for (const id of targetIds) await request.delete(`/api/power/targets/${id}`);
  if (upsId) await request.delete(`/api/power/ups/${upsId}`);
  await context.close();
  await Promise.all(nodes.map((node) => node.stop()));
  await ups?.stop();
});

/** At 390 wide the document never scrolls sideways (its tables stack or scroll in their box). */
async function fitsAPhone(page: Page, what: string) {
  const original = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  await expect
    .poll(
      () =>
        page.evaluate(
          () => document.documentElement.scrollWidth <= document.documentElement.clientWidth,
        ),
      { message: `${what}: wider than a phone` },
    )
    .toBe(true);
  if (original) await page.setViewportSize(original);
}

test("set-up: two standalone lab nodes, one with a Wake-on-LAN controller, protected by a lab UPS; the targets view says which comes back on its own", async ({
  page,
}) => {
  test.setTimeout(240_000);
  ups = await startLabUps({ name: "backups" });
  upsId = await addLabUps(page, UPS, ups);
  for (const name of [WITH, WITHOUT]) {
    const node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
    nodes.push(node);
    await addLabHost(page, name, node);
    const hostId = /\/hosts\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
      timeout: 90_000,
    });
    if (name === WITH) {
      const set = await page.request.put(`/api/hosts/${hostId}/power-controller`, {
        data: { kind: "wol", mac: "52:54:00:b0:0b:01", broadcastAddress: "127.255.255.255" },
      });
      expect(set.status(), await set.text()).toBe(200);
    }
    const target = await page.request.post("/api/power/targets", {
      data: { kind: "pve-node", hostId, feeds: [upsId], feedPolicy: "any", stage: 1 },
    });
    expect(target.status(), await target.text()).toBe(201);
    targetIds.push(((await target.json()) as { target: { id: string } }).target.id);
  }

  // Item 9: each target's stored controller, no BMC read for the list.
  await page.goto("/power/targets");
  await expect(page.getByTestId(`target-controller-${WITH}`)).toHaveAttribute(
    "data-controller",
    "wol",
  );
  await expect(page.getByTestId(`target-controller-${WITH}`)).toContainText(
    "Wake-on-LAN to 52:54:00:b0:0b:01",
  );
  await expect(page.getByTestId(`target-controller-${WITHOUT}`)).toHaveAttribute(
    "data-controller",
    "none",
  );
  await expect(page.getByTestId(`target-controller-${WITHOUT}`)).toContainText(
    "none: will not come back on its own",
  );
  await fitsAPhone(page, "/power/targets");
});

test("a dry-run outage, then Bring back now: the dialog says what will happen, the way back's card says live what it would have done and that nothing was sent", async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  const labUps = ups!;
  await page.goto("/power");
  await expect(page.getByTestId("power-mode")).toHaveAttribute("data-mode", "dry-run");
  const card = page.getByTestId(`ups-card-${UPS}`);
  await expect(card).toHaveAttribute("data-condition", "on-mains", { timeout: 30_000 });
  await markNoReload(page);

  // The outage: the plug pulled, the battery low, the trigger fires, the dry-run shutdown runs.
  labUps.control.pullPlug();
  await expect(card).toHaveAttribute("data-condition", "on-battery", { timeout: 15_000 });
  labUps.control.jumpToLowBattery();
  const shutdown = page.getByTestId("shutdown-run");
  // This outage's run, not a drill an earlier spec left as the latest run on this console.
  await expect(shutdown.getByTestId("shutdown-origin")).toContainText(`Outage: ${UPS}`, {
    timeout: 90_000,
  });
  const shutdownVerdict = shutdown.getByTestId("shutdown-verdict");
  await expect(shutdownVerdict).toHaveAttribute("data-tone", "dry-run", { timeout: 90_000 });
  await expect(shutdownVerdict).toContainText("nothing sent");

  // Mains back: a feed still on battery would stop the way back at its first step.
  labUps.control.restore();
  await expect(card).toHaveAttribute("data-condition", "on-mains", { timeout: 30_000 });

  // Bring back now: the button waits for hydration (disabled until then), so one click opens it.
  const button = page.getByTestId("bring-back-now");
  await button.scrollIntoViewIfNeeded();
  await expect(button).toBeEnabled();
  await button.click();
  const dialog = page.getByTestId("bring-back-dialog");
  await expect(dialog).toBeVisible();
  const what = dialog.getByTestId("bring-back-what");
  await expect(what).toHaveAttribute("data-mode", "dry-run", { timeout: 15_000 });
  await expect(what).toContainText("Dry-run: nothing is sent.");
  await expect(what).toContainText(`${WITH} (Wake-on-LAN)`);
  await expect(what).toContainText(`${WITHOUT} (no power controller)`);
  await expect(dialog.getByTestId("bring-back-without-controller")).toContainText(
    `${WITHOUT} has no power controller: it does not come back on its own — power it on by hand.`,
  );
  await page.getByTestId("bring-back-dialog-confirm").click();
  await expect(dialog).toBeHidden();
  const started = page.getByTestId("bring-back-run");
  await expect(started).toContainText("The way back started");
  const runLink = started.getByRole("link", { name: "its own page" });
  powerBackRunId = new URL(
    (await runLink.getAttribute("href"))!,
    "http://console",
  ).searchParams.get("run")!;
  expect(powerBackRunId).toMatch(/^[0-9a-f-]{36}$/);

  // The card: live, without a reload, the dry-run's verdict from what the run recorded.
  const back = page.getByTestId("power-back-run");
  const verdict = back.getByTestId("power-back-verdict");
  await expect(verdict).toHaveAttribute("data-tone", "dry-run", { timeout: 60_000 });
  await expect(verdict).toContainText(/^dry-run: would power on .*; nothing sent/, {
    timeout: 60_000,
  });
  await expect(verdict).toContainText(WITH);
  await expect(verdict).toContainText(`${WITHOUT} has no power controller — power it on by hand`);
  await expect(back.getByTestId("power-back-timeline-link")).toHaveAttribute(
    "href",
    `/power/runs?run=${powerBackRunId}`,
  );
  await expect(back.getByTestId("power-back-origin")).toContainText("Bring back now");
  await expectNoReload(page);

  // Its steps: nothing that did nothing wears done's tick.
  await back.getByText("Steps, events and log").click();
  const step = (name: string) => back.getByTestId(`step-${name}`);
  await expect(step("PlanPowerBack")).toHaveAttribute("data-state", "done");
  await expect(step("PowerOnHosts")).toHaveAttribute("data-state", "dry-run");
  await expect(step("PowerOnHosts").getByTestId("step-state")).toContainText(
    "would have been sent, nothing sent",
  );
  await expect(step("WaitForNodes")).toHaveAttribute("data-state", "skipped");
  await expect(step("WaitForNodes").getByTestId("step-state")).toHaveText("skipped — dry-run");
  await expect(step("RestoreClusters")).toHaveAttribute("data-state", "skipped");
  // Nothing was sent: both lab nodes are as the dry-run shutdown left them, up.
  for (const node of nodes) expect(node.power.state).toBe("up");
  await fitsAPhone(page, "/power with the way back");
  // The first screen at 1440 and at 390 wide, as test artifacts to look at.
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: width === 1440 ? 900 : 844 });
    const shot = testInfo.outputPath(`power-way-back-${width}.png`);
    await page.screenshot({ path: shot });
    await testInfo.attach(`/power with the way back at ${width} px`, {
      path: shot,
      contentType: "image/png",
    });
  }
});

test("the runs list shows the way back as such, and opens its timeline", async ({ page }) => {
  expect(powerBackRunId, "the way back of the test before").not.toBe("");
  await page.goto("/power/runs");
  const row = page.getByTestId(`power-run-${powerBackRunId}`);
  await expect(row).toHaveAttribute("data-kind", "way-back");
  await expect(row).toContainText("Way back: brought back by");
  await expect(row.getByTestId("power-run-verdict")).toContainText("nothing sent");
  await fitsAPhone(page, "/power/runs");
  await row.getByTestId("power-run-link").click();
  await expect(page).toHaveURL(new RegExp(`/power/runs\\?run=${powerBackRunId}$`));
  const timeline = page.getByTestId("run-timeline");
  await expect(timeline).toHaveAttribute("data-run-status", "succeeded");
  await expect(timeline.getByTestId("run-verdict")).toHaveAttribute("data-tone", "dry-run");
  await expect(timeline.getByTestId("run-verdict")).toContainText("nothing sent");
  await expect(timeline.getByTestId("run-origin")).toContainText("Way back");
  // The would-do power-on is a bar of its own on the timeline.
  await expect(
    timeline.locator('[data-outcome="would-do"][data-label^="power on"]').first(),
  ).toBeVisible();
  await fitsAPhone(page, "a way back's timeline");
});
