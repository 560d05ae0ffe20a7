import { expect, test, type Page } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { E2E_STORAGE_STATE } from "./auth-state";
import { addLabHost, addLabUps, expectNoReload, markNoReload, openDialog } from "./support/console";

/*
 * Issue 14's drill in the browser, against the console as `npm start` runs it: an admin starts a
 * drill of a lab UPS's outage from Runs and drills; the run's timeline draws itself live and is
 * kept (found again from the run list after a reload). A dry-run drill sends nothing; a live
 * drill (armed, every target confirmed) really calls the lab node. The spec leaves the console
 * as it found it: disarmed, its target and UPS removed.
 */

test.describe.configure({ mode: "serial" });

const UPS = "drill-ups";
const HOST = "pve-drill";
let node: LabNode | undefined;
let ups: LabUps | undefined;
let upsId = "";
let targetId = "";

test.afterAll(async ({ browser }) => {
  const context = await browser.newContext({ storageState: E2E_STORAGE_STATE });
  const request = context.request;
  // Whatever happened above: disarmed, and nothing of this spec left in the plan.
  await request.post("/api/power/mode", { data: { mode: "dry-run" } });
  if (targetId) await request.delete(`/api/power/targets/${targetId}`);
  if (upsId) await request.delete(`/api/power/ups/${upsId}`);
  await context.close();
  await node?.switches.apply({ "api.statusPostHang": false });
  await node?.stop();
  await ups?.stop();
});

const shutdownPosts = () =>
  node!.api.requests.filter((r) => r.method === "POST" && r.path.endsWith("/status"));

async function startDrillFromRunsPage(page: Page, how: "dry-run" | "live") {
  await page.goto("/power/runs");
  await openDialog(page, "drill");
  const dialog = page.getByTestId("drill-dialog");
  await expect(dialog).toBeVisible();
  await dialog.getByTestId("drill-ups").selectOption({ label: UPS });
  await expect(dialog.getByTestId(`drill-target-${HOST}`)).toContainText(
    `POST https://127.0.0.1:${new URL(node!.api.url).port}/api2/json/nodes/pve1/status command=shutdown`,
  );
  if (how === "live") {
    await dialog.getByTestId("drill-live").check();
    await expect(dialog.getByTestId("drill-live-warning")).toContainText("really shut down");
  } else {
    await expect(dialog.getByTestId("drill-dry-run")).toBeChecked();
    await expect(dialog).toContainText("nothing is sent");
  }
  await page.getByTestId("drill-dialog-confirm").click();
  await expect(page).toHaveURL(/\/power\/runs\?run=[0-9a-f-]{36}$/);
  return new URL(page.url()).searchParams.get("run")!;
}

test("set-up: an onboarded lab node protected by a lab UPS", async ({ page }) => {
  test.setTimeout(180_000);
  ups = await startLabUps({ name: "drillups" });
  node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  await addLabHost(page, HOST, node);
  const hostId = /\/hosts\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 90_000,
  });
  upsId = await addLabUps(page, UPS, ups);
  const target = await page.request.post("/api/power/targets", {
    data: { kind: "pve-node", hostId, feeds: [upsId], feedPolicy: "any" },
  });
  expect(target.status(), await target.text()).toBe(201);
  targetId = ((await target.json()) as { target: { id: string } }).target.id;
  // The drill is rehearsed on mains: the monitor reads the lab UPS on line.
  await page.goto("/power");
  await expect(page.getByTestId(`ups-card-${UPS}`)).toHaveAttribute("data-condition", "on-mains", {
    timeout: 30_000,
  });
});

test("a dry-run drill from Runs and drills sends nothing; its timeline shows every action as would-do, reachable by keyboard, and is found again from the run list after a reload", async ({
  page,
}) => {
  const runId = await startDrillFromRunsPage(page, "dry-run");
  const timeline = page.getByTestId("run-timeline");
  await expect(timeline.getByTestId("run-origin")).toHaveAttribute("data-origin", "drill");
  await expect(timeline.getByTestId("run-origin")).toContainText("in dry-run: nothing sent");
  await expect(timeline).toHaveAttribute("data-run-status", "succeeded", { timeout: 30_000 });
  const bar = timeline.locator('[data-lane="pve1"][data-label="shutdown pve1"]');
  await expect(bar).toHaveAttribute("data-outcome", "would-do");

  // Keyboard: the bar is in the Tab order and, focused, shows its request below the picture.
  await expect(bar).toHaveAttribute("tabindex", "0");
  await bar.focus();
  await expect(bar).toBeFocused();
  await expect(timeline.getByTestId("timeline-detail")).toContainText(
    "would do (dry-run: nothing sent)",
  );
  await expect(timeline.getByTestId("timeline-detail")).toContainText(
    "/api2/json/nodes/pve1/status command=shutdown",
  );
  expect(shutdownPosts()).toEqual([]);
  expect(node!.power.state).toBe("up");

  // Its one line says what would have been sent and that nothing was — on the timeline, and on
  // the power page's run card (never onboarding's "all steps done").
  await expect(timeline.getByTestId("run-verdict")).toHaveAttribute("data-tone", "dry-run");
  await expect(timeline.getByTestId("run-verdict")).toContainText(
    "dry-run: 1 call would have been sent, nothing sent",
  );
  await page.goto("/power");
  const verdict = page.getByTestId("shutdown-run").getByTestId("shutdown-verdict");
  await expect(verdict).toContainText("dry-run: 1 call would have been sent, nothing sent");
  await expect(page.getByTestId("shutdown-run")).not.toContainText("all steps done");
  // …and says it was a drill, not an outage.
  await expect(page.getByTestId("shutdown-origin")).toContainText("Drill of drill-ups's outage");

  // Kept: after a reload, from the list of runs.
  await page.goto("/power/runs");
  await page.reload();
  const row = page.getByTestId(`power-run-${runId}`);
  await expect(row).toHaveAttribute("data-origin", "drill");
  await expect(row).toContainText("would do");
  await row.getByTestId("power-run-link").click();
  await expect(page).toHaveURL(new RegExp(`/power/runs\\?run=${runId}$`));
  await expect(
    page.getByTestId("run-timeline").locator('[data-lane="pve1"][data-outcome="would-do"]'),
  ).toBeVisible();
});

test("a live drill while armed draws its timeline live: the shutdown call's bar is in flight while the lab node hangs, then ends failed at its deadline, without a reload", async ({
  page,
}) => {
  test.setTimeout(120_000);
  await node!.switches.apply({ "api.statusPostHang": true });
  // A failed call is sent again until the target is seen down or its time to go down is over:
  // 30 s to go down ends the run soon after its first call failed, and leaves the page that
  // long to see the call in flight (a busy machine may take seconds to draw the run).
  const settings = await page.request.get("/api/power/settings");
  const before = ((await settings.json()) as { shutdown: { targetDownSeconds: number } }).shutdown
    .targetDownSeconds;
  const shorter = await page.request.patch("/api/power/settings", {
    data: { shutdown: { targetDownSeconds: 30 } },
  });
  expect(shorter.status(), await shorter.text()).toBe(200);
  await page.goto("/power");
  await openDialog(page, "arm");
  await expect(page.getByTestId("arm-dialog").getByTestId(`arm-target-${HOST}`)).toBeVisible();
  await page.getByTestId("arm-dialog-confirm").click();
  await expect(page.getByTestId("power-mode")).toHaveAttribute("data-mode", "armed");

  const runId = await startDrillFromRunsPage(page, "live");
  await markNoReload(page);
  const timeline = page.getByTestId("run-timeline");
  await expect(timeline.getByTestId("run-origin")).toContainText("Live drill");
  const bar = timeline.locator('[data-lane="pve1"][data-label="shutdown pve1"]').first();
  // The call hangs for its whole deadline (30 s): the bar is in flight, then fails, live.
  await expect(bar).toHaveAttribute("data-outcome", "open");
  await expect(timeline).toHaveAttribute("data-run-status", "running");
  await expect(bar).toHaveAttribute("data-outcome", "failed", { timeout: 60_000 });
  await expect(timeline).toHaveAttribute("data-run-status", "failed", { timeout: 60_000 });
  // Its one line names the host that never went down — never a success.
  await expect(timeline.getByTestId("run-verdict")).toHaveAttribute("data-tone", "failed");
  await expect(timeline.getByTestId("run-verdict")).toContainText(
    "pve-drill still answers after its deadline",
  );
  await expectNoReload(page);
  expect(shutdownPosts().length).toBeGreaterThanOrEqual(1);

  await page.goto("/power");
  await openDialog(page, "disarm");
  await page.getByTestId("disarm-dialog-confirm").click();
  await expect(page.getByTestId("power-mode")).toHaveAttribute("data-mode", "dry-run");
  await page.goto(`/power/runs?run=${runId}`);
  await expect(page.getByTestId("run-timeline")).toHaveAttribute("data-run-status", "failed");
  const restored = await page.request.patch("/api/power/settings", {
    data: { shutdown: { targetDownSeconds: before } },
  });
  expect(restored.status(), await restored.text()).toBe(200);
});
