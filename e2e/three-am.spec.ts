import fs from "node:fs";
import path from "node:path";
import { startLab, type LabNode } from "../lab";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { E2E_STORAGE_STATE } from "./auth-state";
import { addLabHost, addLabUps, expectNoReload, markNoReload } from "./support/console";
import { expect, test, type Page, type TestInfo } from "./support/test";

/*
 * Issue 32, "the 3 a.m. page, round 2", in the browser against the console as `npm start` runs
 * it. Power: two standalone lab nodes protected by a lab UPS, in dry-run; the self-test result
 * goes stale when a target is added after it; the plug is pulled (the first screen says what
 * will happen and when), the battery runs low, the trigger fires and the dry-run run says what
 * would have been sent and that nothing was, every step that did nothing saying skipped.
 * Onboarding: a failed step reads as one line with the raw output one click away; an aborted
 * run is aborted in the log header; the host's history follows a finished run live.
 * Screenshots at 1440 and 390 wide go to test-results/screenshots/ (and the report).
 */

test.describe.configure({ mode: "serial" });

const UPS = "night-ups";
const nodes: LabNode[] = [];
let ups: LabUps | undefined;
let upsId = "";
const targetIds: string[] = [];

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

async function lab(options: Parameters<typeof startLab>[0] = {}) {
  const node = await startLab(options);
  nodes.push(node);
  return node;
}

/** A full-page screenshot at 1440 and at 390 wide, kept under test-results/screenshots/. */
async function screenshots(page: Page, testInfo: TestInfo, name: string) {
  const kept = path.join("test-results", "screenshots");
  fs.mkdirSync(kept, { recursive: true });
  const original = page.viewportSize();
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: width === 1440 ? 900 : 844 });
    // The layout settles at the new width before the picture: two frames, and a build log's
    // rows drawn again by its virtualizer.
    await page.evaluate(
      () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))),
    );
    const log = page.getByTestId("log-scroll");
    if ((await log.count()) > 0 && (await log.isVisible())) {
      await expect(log.getByRole("listitem").first()).toBeVisible();
    }
    const shot = testInfo.outputPath(`${name}-${width}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    await testInfo.attach(`${name} at ${width} px`, { path: shot, contentType: "image/png" });
    fs.copyFileSync(shot, path.join(kept, `${name}-${width}.png`));
  }
  if (original) await page.setViewportSize(original);
}

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

async function hostIdOf(page: Page): Promise<string> {
  return /\/hosts\/([0-9a-f-]{36})/.exec(page.url())![1]!;
}

test("set-up: two standalone lab nodes and a lab UPS; the Protect form starts empty after each save", async ({
  page,
}) => {
  test.setTimeout(240_000);
  ups = await startLabUps({ name: "nightups" });
  upsId = await addLabUps(page, UPS, ups);
  const hostIds: string[] = [];
  for (const name of ["pve-night-1", "pve-night-2"]) {
    const node = await lab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
    await addLabHost(page, name, node);
    hostIds.push(await hostIdOf(page));
    await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
      timeout: 90_000,
    });
  }

  // The first target through the form.
  await page.goto("/power/targets");
  const host = page.getByLabel("Host", { exact: true });
  await host.selectOption(hostIds[0]!);
  await page.getByRole("checkbox", { name: UPS }).check();
  await page.getByTestId("save-target").click();
  await expect(page.getByTestId("target-row-pve-night-1")).toBeVisible();
  // Item 16: nothing of pve-night-1's is left in the form, no host is chosen for the next save.
  await expect(host).toHaveValue("");
  await expect(page.getByRole("checkbox", { name: UPS })).not.toBeChecked();
  const listed = (await (await page.request.get("/api/power/targets")).json()) as {
    targets: { id: string }[];
  };
  targetIds.push(...listed.targets.map((t) => t.id));

  await page.goto("/power");
  await expect(page.getByTestId(`ups-card-${UPS}`)).toHaveAttribute("data-condition", "on-mains", {
    timeout: 30_000,
  });
});

test("a self-test older than a configuration change says so: run again", async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto("/power");
  const card = page.getByTestId("self-test");
  const result = card.getByTestId("self-test-result");
  // Run it now: the button is disabled until the page hydrated, so the click is one request
  // (the queued note may never show when the result is quicker than the answer to the click).
  const when = card.getByTestId("self-test-when");
  const finished = when.locator("time");
  const before = (await finished.count()) > 0 ? await finished.getAttribute("datetime") : null;
  await card.getByTestId("run-self-test").click();
  // The result arrives live; the queued note goes with it; the button stayed where it was.
  if (before !== null)
    await expect(finished).not.toHaveAttribute("datetime", before, { timeout: 90_000 });
  await expect(when).toContainText("run by hand", { timeout: 90_000 });
  await expect(card.getByTestId("run-self-test-message")).toHaveCount(0);
  await expect(result).toHaveAttribute("data-stale", "false");
  await expect(card.getByTestId("self-test-stale")).toHaveCount(0);
  await expect(card).toContainText("Found, as of");

  // A second target after it: the result no longer describes the configuration.
  await markNoReload(page);
  const hosts = (await (await page.request.get("/api/hosts?q=pve-night-2")).json()) as {
    hosts: { id: string; name: string }[];
  };
  const second = hosts.hosts.find((h) => h.name === "pve-night-2")!;
  const created = await page.request.post("/api/power/targets", {
    data: { kind: "pve-node", hostId: second.id, feeds: [upsId], feedPolicy: "any", stage: 1 },
  });
  expect(created.status(), await created.text()).toBe(201);
  targetIds.push(((await created.json()) as { target: { id: string } }).target.id);
  await expect(result).toHaveAttribute("data-stale", "true", { timeout: 15_000 });
  await expect(card.getByTestId("self-test-stale")).toContainText(
    "Before the last change — run again",
  );
  await expect(card.getByTestId("self-test-stale")).toContainText("a target was protected");
  await expect(card.getByTestId("self-test-verdict")).toContainText("(before the last change)");
  await expectNoReload(page);
});

test("a dry-run outage: the first screen says what will happen and when; the run says what would have been sent and that nothing was; every step that did nothing says skipped", async ({
  page,
}, testInfo) => {
  test.setTimeout(240_000);
  const labUps = ups!;
  await page.goto("/power");
  await expect(page.getByTestId("power-mode")).toHaveAttribute("data-mode", "dry-run");
  const card = page.getByTestId(`ups-card-${UPS}`);
  await expect(card).toHaveAttribute("data-condition", "on-mains", { timeout: 30_000 });
  await expect(card.getByTestId("ups-outlook")).toContainText(
    "pve-night-1 and pve-night-2 would shut down (dry-run) when",
  );
  await markNoReload(page);

  labUps.control.pullPlug();
  await expect(card).toHaveAttribute("data-condition", "on-battery", { timeout: 15_000 });
  const outlook = card.getByTestId("ups-outlook");
  await expect(outlook).toContainText(
    /on battery: pve-night-1 and pve-night-2 would shut down \(dry-run\) in \d+m\s\d\ds/,
  );
  // The first screen holds it: the mode, the card with its outlook, Arm….
  for (const element of [page.getByTestId("power-mode"), outlook, page.getByTestId("arm-button")]) {
    const box = (await element.boundingBox())!;
    expect(box.y + box.height).toBeLessThanOrEqual(900);
  }
  await screenshots(page, testInfo, "power-dry-run-on-battery");

  labUps.control.jumpToLowBattery();
  await expect(card.getByTestId("ups-latch")).toBeVisible({ timeout: 30_000 });
  const run = page.getByTestId("shutdown-run");
  const verdict = run.getByTestId("shutdown-verdict");
  await expect(verdict).toHaveAttribute("data-tone", "dry-run", { timeout: 60_000 });
  await expect(verdict).toContainText("dry-run: 2 calls would have been sent, nothing sent");
  await expect(run).not.toContainText("all steps done");
  await expect(run.getByTestId("shutdown-origin")).toContainText(`Outage: ${UPS}`);
  await expectNoReload(page);

  // Steps: only the planning is done; nothing that did nothing wears done's tick.
  await run.getByText("Steps, calls, events and log").click();
  const step = (name: string) => run.getByTestId(`step-${name}`);
  await expect(step("PlanShutdown")).toHaveAttribute("data-state", "done");
  await expect(step("ShutDownTargets")).toHaveAttribute("data-state", "dry-run");
  await expect(step("ShutDownTargets").getByTestId("step-state")).toHaveText(
    "dry-run — 2 calls would have been sent, nothing sent",
  );
  for (const name of ["DisarmHa", "StopClusterGuests", "SetCephFlags", "ShutDownClusterNodes"]) {
    await expect(step(name)).toHaveAttribute("data-state", "skipped");
    await expect(step(name).getByTestId("step-state")).toHaveText("skipped — no cluster");
  }
  await expect(step("VerifyTargetsDown")).toHaveAttribute("data-state", "skipped");
  await expect(step("VerifyTargetsDown").getByTestId("step-state")).toHaveText("skipped — dry-run");
  await expect(run.getByTestId("log-phase-line")).toContainText(
    "dry-run: 2 calls would have been sent, nothing sent",
  );
  for (const name of ["pve-night-1", "pve-night-2"]) {
    await expect(run.getByTestId(`shutdown-call-${name}`)).toHaveAttribute(
      "data-state",
      "would_send",
    );
  }
  for (const node of nodes.slice(0, 2)) expect(node.power.state).toBe("up");

  // While the trigger is latched the page renders and hydrates without an error (#418: the
  // fixture fails the test on any console error or page error).
  await page.reload();
  await expect(card.getByTestId("ups-latch")).toContainText("Trigger latched");
  await expect(
    card.getByTestId("ups-latch").getByRole("button", { name: "Release latch…" }),
  ).toBeVisible();
  await screenshots(page, testInfo, "power-dry-run-after-the-run");
  // With the run's steps, calls, events and log open, the events and targets listed.
  await run.getByText("Steps, calls, events and log").click();
  await fitsAPhone(page, "/power after a dry-run outage");

  labUps.control.restore();
});

test("a failed step reads as one line — what failed, what to do — with its raw output one click away", async ({
  page,
}, testInfo) => {
  test.setTimeout(240_000);
  const node = await lab({ timeScale: 0.01 });
  node.setDebianFaults({ aptNetworkDown: true });
  await addLabHost(page, "pve-no-mirror", node);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "failed", {
    timeout: 180_000,
  });
  const phase = page.getByTestId("phase-line-pve-no-mirror");
  const reason = phase.getByTestId("failure-reason");
  await expect(reason).toBeVisible();
  // One line: no quoted output line in it.
  expect(await reason.innerText()).not.toContain("⏎");
  expect((await reason.innerText()).split("\n")).toHaveLength(1);
  // The output is one click away, and only there (not in the step, the events or the log header).
  const output = phase.getByTestId("failure-output");
  await expect(output).toBeVisible();
  await expect(output.locator("pre")).toBeHidden();
  await output.locator("summary").click();
  await expect(output.locator("pre")).toBeVisible();
  await expect(page.getByTestId("step-timeline").getByTestId("failure-reason")).toHaveCount(0);
  await expect(page.getByTestId("log-phase-line")).toHaveText(/^failed at /);
  await expect(page.getByTestId("run-events")).not.toContainText("⏎");
  await screenshots(page, testInfo, "host-failed-step");
  await fitsAPhone(page, "a host page with a failed step");
  node.setDebianFaults({ aptNetworkDown: false });
});

test("an aborted run is aborted in the log header and its section, never failed", async ({
  page,
}, testInfo) => {
  const node = await lab();
  node.faults.refuseConnections = true; // ConnectHost retries: the run stays running
  await addLabHost(page, "pve-stopped", node);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "onboarding");
  await page.getByTestId("abort-button").click();
  await page.getByTestId("abort-dialog-confirm").click();
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "aborted", {
    timeout: 15_000,
  });
  await expect(page.getByTestId("log-phase-line")).toHaveText(
    "aborted by operator during ConnectHost",
  );
  const section = page.getByTestId("log-section-ConnectHost").last();
  await expect(section).toHaveAttribute("data-state", "aborted");
  await expect(section).toContainText("aborted");
  await expect(section).not.toContainText("failed");
  // The API says so too.
  const host = (await (await page.request.get(`/api/hosts/${await hostIdOf(page)}`)).json()) as {
    latestRun: { outcome: string };
  };
  expect(host.latestRun.outcome).toBe("aborted");
  await screenshots(page, testInfo, "host-after-abort");
  await fitsAPhone(page, "a host page after an abort");
  node.faults.refuseConnections = false;
});

test("the host's history follows a run to its end live, without a reload", async ({ page }) => {
  test.setTimeout(180_000);
  const node = await lab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  await addLabHost(page, "pve-history", node);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 90_000,
  });
  const hostId = await hostIdOf(page);
  await markNoReload(page);

  // Onboarding again while the host refuses connections: the new run stays running.
  node.faults.refuseConnections = true;
  const again = await page.request.post(`/api/hosts/${hostId}/runs`, { data: {} });
  expect(again.status(), await again.text()).toBe(201);
  const { runId } = (await again.json()) as { runId: string };
  const entry = page.getByTestId(`host-run-${runId}`);
  await expect(entry).toHaveAttribute("data-outcome", "running", { timeout: 15_000 });
  await expect(entry.getByTestId("host-run-outcome")).toHaveText("running");

  node.faults.refuseConnections = false;
  await expect(entry).toHaveAttribute("data-outcome", "succeeded", { timeout: 120_000 });
  await expect(entry.getByTestId("host-run-outcome")).toHaveText("succeeded");
  await expectNoReload(page);
});
