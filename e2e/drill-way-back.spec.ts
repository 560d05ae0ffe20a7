import { startLab, type LabNode } from "../lab";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { E2E_STORAGE_STATE } from "./auth-state";
import { addLabHost, addLabUps, openDialog } from "./support/console";
import { expect, test, type Page } from "./support/test";

/*
 * Issue 30, item 6 in the browser against the console as `npm start` runs it: the plan preview
 * on /power shows the way back beside the shutdown (the host with its Wake-on-LAN controller,
 * where its guests come from), and a dry-run drill's timeline offers its way back behind a
 * dialog that says exactly what will happen — live is not offered after a dry drill. The way
 * back runs in dry-run, is marked a drill, and nothing reaches the lab node. At 1440 and at
 * 390×844 (nothing scrolls sideways). The spec leaves the console as it found it: its target and
 * UPS removed.
 */

test.describe.configure({ mode: "serial" });

const UPS = "drillback-ups";
const HOST = "pve-drillback";
let node: LabNode | undefined;
let ups: LabUps | undefined;
let upsId = "";
let targetId = "";

test.afterAll(async ({ browser }) => {
  const context = await browser.newContext({ storageState: E2E_STORAGE_STATE });
  const request = context.request;
  await request.post("/api/power/mode", { data: { mode: "dry-run" } });
  if (targetId) await request.delete(`/api/power/targets/${targetId}`);
  if (upsId) await request.delete(`/api/power/ups/${upsId}`);
  await context.close();
  await node?.stop();
  await ups?.stop();
});

/** At 390 wide the document never scrolls sideways. */
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

const changesSent = () => node!.api.requests.filter((r) => r.method !== "GET");

test("set-up: an onboarded lab node with a Wake-on-LAN controller, protected by a lab UPS", async ({
  page,
}) => {
  test.setTimeout(240_000);
  ups = await startLabUps({ name: "drillbackups" });
  node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  await addLabHost(page, HOST, node);
  const hostId = /\/hosts\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 90_000,
  });
  const set = await page.request.put(`/api/hosts/${hostId}/power-controller`, {
    data: { kind: "wol", mac: "52:54:00:d1:11:01", broadcastAddress: "127.255.255.255" },
  });
  expect(set.status(), await set.text()).toBe(200);
  upsId = await addLabUps(page, UPS, ups);
  const target = await page.request.post("/api/power/targets", {
    data: { kind: "pve-node", hostId, feeds: [upsId], feedPolicy: "any" },
  });
  expect(target.status(), await target.text()).toBe(201);
  targetId = ((await target.json()) as { target: { id: string } }).target.id;
  await page.goto("/power");
  await expect(page.getByTestId(`ups-card-${UPS}`)).toHaveAttribute("data-condition", "on-mains", {
    timeout: 30_000,
  });
});

test("the plan preview shows the way back beside the shutdown: the host in power-on order with its controller, and where the guests come from", async ({
  page,
}) => {
  await page.goto("/power");
  const wayBack = page.getByTestId(`way-back-${UPS}`);
  await wayBack.scrollIntoViewIfNeeded();
  await expect(wayBack).toBeVisible();
  const host = wayBack.getByTestId(`way-back-plan-${UPS}-host`);
  await expect(host).toHaveCount(1);
  await expect(host).toHaveAttribute("data-controller", "wol");
  await expect(host).toContainText(`${HOST}: would power on by Wake-on-LAN`);
  await expect(wayBack.getByTestId("way-back-guests-from")).toContainText(
    "no run has listed these nodes yet",
  );
  // Beside the shutdown at 1440: the way back's column starts level with the shutdown's.
  const shutdownBox = (await page.getByTestId(`plan-${UPS}`).boundingBox())!;
  const wayBackBox = (await wayBack.boundingBox())!;
  expect(wayBackBox.x).toBeGreaterThan(shutdownBox.x + shutdownBox.width - 1);
  expect(Math.abs(wayBackBox.y - shutdownBox.y)).toBeLessThan(2);
  await fitsAPhone(page, "/power with the way back");
  // On a phone: under the shutdown, still whole.
  await page.setViewportSize({ width: 390, height: 844 });
  await wayBack.scrollIntoViewIfNeeded();
  await expect(host).toBeVisible();
  const phoneShutdown = (await page.getByTestId(`plan-${UPS}`).boundingBox())!;
  expect((await wayBack.boundingBox())!.y).toBeGreaterThan(phoneShutdown.y);
  await page.setViewportSize({ width: 1440, height: 900 });
});

test("a dry-run drill's way back: the dialog says exactly what would happen, live is not offered, it runs marked a drill and sends nothing — at 1440 and 390 px", async ({
  page,
}) => {
  test.setTimeout(180_000);
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto("/power/runs");
  const drill = await openDialog(page, "drill");
  await drill.getByTestId("drill-ups").selectOption({ label: UPS });
  await expect(drill.getByTestId(`drill-target-${HOST}`)).toBeVisible();
  await page.getByTestId("drill-dialog-confirm").click();
  await expect(page).toHaveURL(/\/power\/runs\?run=[0-9a-f-]{36}$/);
  const drillRunId = new URL(page.url()).searchParams.get("run")!;
  await expect(page.getByTestId("run-timeline")).toHaveAttribute("data-run-status", "succeeded", {
    timeout: 60_000,
  });

  // Its timeline offers the way back: the dialog reads what it would do now.
  await page.goto(`/power/runs?run=${drillRunId}`);
  const dialog = await openDialog(page, "drill-way-back");
  const plan = dialog.getByTestId("drill-way-back-plan");
  await expect(plan).toHaveAttribute("data-mode", "dry-run");
  await expect(plan.getByTestId("drill-way-back-plan-host")).toContainText(
    `${HOST}: would power on by Wake-on-LAN`,
  );
  await expect(dialog.getByTestId("drill-way-back-dry-run")).toBeChecked();
  await expect(dialog.getByTestId("drill-way-back-live")).toBeDisabled();
  await expect(dialog).toContainText("This drill ran in dry-run and took nothing down");
  await expect(dialog.getByTestId("drill-way-back-refused")).toHaveCount(0);
  await fitsAPhone(page, "the drill's way back dialog");
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(page.getByTestId("drill-way-back-dialog-confirm")).toBeVisible();
  await expect(page.getByTestId("drill-way-back-dialog-confirm")).toContainText(
    "dry-run: nothing is sent",
  );

  const before = changesSent().length;
  await page.getByTestId("drill-way-back-dialog-confirm").click();
  // The page was the drill's run: wait for the way back's own.
  await expect(page).not.toHaveURL(new RegExp(`run=${drillRunId}$`), { timeout: 30_000 });
  await expect(page).toHaveURL(/\/power\/runs\?run=[0-9a-f-]{36}$/);
  const wayBackRunId = new URL(page.url()).searchParams.get("run")!;
  const timeline = page.getByTestId("run-timeline");
  await expect(timeline.getByTestId("run-origin")).toHaveAttribute("data-origin", "drill-way-back");
  await expect(timeline.getByTestId("run-origin")).toContainText("Way back of a drill, started by");
  await expect(timeline).toHaveAttribute("data-run-status", "succeeded", { timeout: 60_000 });
  await expect(timeline.getByTestId("run-verdict")).toHaveAttribute("data-tone", "dry-run");
  await expect(timeline.getByTestId("run-verdict")).toContainText(
    "drill — dry-run: would power on",
  );
  await fitsAPhone(page, "the drill's way back timeline");
  expect(changesSent().slice(before)).toEqual([]);

  // In the runs list, marked a drill's way back.
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto("/power/runs");
  await expect(page.getByTestId(`power-run-${wayBackRunId}`)).toHaveAttribute(
    "data-origin",
    "drill-way-back",
  );
});
