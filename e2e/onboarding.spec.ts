import fs from "node:fs";
import path from "node:path";
import { expect, test } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { addLabHost, apiPort, base, expectNoReload, markNoReload } from "./support/console";

const labs: LabNode[] = [];
test.afterAll(async () => {
  await Promise.all(labs.map((lab) => lab.stop()));
});

async function lab(options: Parameters<typeof startLab>[0] = {}) {
  const node = await startLab(options);
  labs.push(node);
  return node;
}

test("the add-host form shows field errors and keeps the input", async ({ page }) => {
  await page.goto(`${base()}/hosts/new`);
  await page.getByLabel("Name").fill("bad name!");
  await page.getByLabel("SSH port").fill("70000");
  await page.getByTestId("submit-host").click();
  await expect(page.getByTestId("error-name")).toBeVisible();
  await expect(page.getByTestId("error-sshPort")).toContainText("65535");
  await expect(page.getByTestId("error-address")).toBeVisible();
  await expect(page.getByLabel("Name")).toHaveValue("bad name!");
  await expect(page).toHaveURL(/\/hosts\/new$/);
});

test("a host is added, its key is pinned, and the phase line finishes live without reload", async ({
  page,
}, testInfo) => {
  // Proxmox already installed: every step's goal holds or is quick, so the run ends in seconds.
  const node = await lab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  await page.goto(`${base()}/hosts`);
  await markNoReload(page);
  // Add the host through the API in the background while the list is open: the row must appear live.
  const response = await page.request.post(`${base()}/api/hosts`, {
    data: {
      name: "pve-live",
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: apiPort(node),
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
    },
  });
  expect(response.status()).toBe(201);
  const row = page.getByTestId("host-row-pve-live");
  await expect(row.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 30_000,
  });
  await expectNoReload(page);

  await addLabHost(page, "pve-form", node);
  await markNoReload(page);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 30_000,
  });
  await expect(page.getByTestId("host-key-fingerprint")).toContainText(node.ssh.hostKeySha256);
  await expect(page.getByTestId("step-ConnectHost").getByTestId("step-state")).toContainText(
    /done/i,
  );
  await expect(
    page.getByTestId("step-CheckOperatingSystem").getByTestId("step-state"),
  ).toContainText(/done/i);
  await expectNoReload(page);

  const shot = testInfo.outputPath("host-page.png");
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach("host page", { path: shot, contentType: "image/png" });
  const kept = path.join("test-results", "screenshots");
  fs.mkdirSync(kept, { recursive: true });
  fs.copyFileSync(shot, path.join(kept, "host-page.png"));
});

test("a failure shows its one-line reason; Retry after fixing the host succeeds", async ({
  page,
}) => {
  const node = await lab({ os: "debian12", timeScale: 0.01 });
  await addLabHost(page, "pve-bookworm", node);
  await markNoReload(page);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "failed", {
    timeout: 30_000,
  });
  await expect(page.getByTestId("failure-reason").first()).toContainText(
    "found Debian GNU/Linux 12 (bookworm); CluPilot onboards Debian 13 (trixie) only",
  );
  // The reason is on the first screen, under the host's name, not only in the run card.
  await expect(page.getByTestId("host-header-reason")).toContainText("CheckOperatingSystem");
  await expect(page.getByTestId("host-header-reason")).toBeInViewport();
  await expect(
    page.getByTestId("step-CheckOperatingSystem").getByTestId("step-state"),
  ).toContainText(/failed/i);

  await page.goto(`${base()}/hosts`);
  await expect(
    page.getByTestId("host-row-pve-bookworm").getByTestId("failure-reason"),
  ).toContainText("bookworm");
  await page.getByRole("link", { name: "pve-bookworm" }).click();
  await markNoReload(page);

  await node.setOs("debian13");
  await page.getByTestId("retry-button").click();
  // The retried step passes and the run moves on (the rest of the chain: full-onboarding.spec).
  const step = page.getByTestId("step-CheckOperatingSystem");
  await expect(step.getByTestId("step-state")).toContainText(/done/i, { timeout: 30_000 });
  // Each attempt on the timeline: the failed one, the Retry by whom, the one that succeeded.
  const attempts = step.getByTestId("step-attempt");
  await expect(attempts).toHaveCount(2);
  await expect(attempts.nth(0)).toHaveAttribute("data-state", "failed");
  await expect(attempts.nth(1)).toHaveAttribute("data-state", "done");
  await expect(attempts.nth(1).getByTestId("step-retry")).toContainText("Retry by ");
  // The log: the failed attempt's section, the Retry's own, then a section that did not fail.
  // The run goes on meanwhile (at this time scale it may be done within seconds): the viewer
  // follows the tail and virtualizes the first sections out of the page. They are at the top,
  // where an operator scrolls to read them; scrolling there ends follow mode.
  const sections = page.locator('[data-testid="log-section-CheckOperatingSystem"]');
  await expect(async () => {
    await page.getByTestId("log-scroll").evaluate((element) => element.scrollTo({ top: 0 }));
    await expect(sections).toHaveCount(2, { timeout: 1_000 });
    await expect(sections.nth(0)).toContainText("failed", { timeout: 1_000 });
    await expect(sections.nth(1)).not.toContainText("failed", { timeout: 1_000 });
    await expect(page.locator('[data-testid^="log-section-Retry by "]')).toHaveCount(1, {
      timeout: 1_000,
    });
  }).toPass({ timeout: 20_000 });
  await expectNoReload(page);
});

test("Abort asks for confirmation, says what will stop, and ends the run as aborted by operator", async ({
  page,
}) => {
  const node = await lab();
  node.faults.refuseConnections = true; // ConnectHost keeps retrying with backoff: the run stays running
  await addLabHost(page, "pve-unreachable", node);
  await markNoReload(page);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "onboarding");
  await page.getByTestId("abort-button").click();
  const dialog = page.getByTestId("abort-dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText("pve-unreachable");
  await expect(dialog).toContainText("ConnectHost");
  await expect(dialog).toContainText("ends as aborted");
  // Escape cancels: nothing is aborted.
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "onboarding");

  await page.getByTestId("abort-button").click();
  await page.getByTestId("abort-dialog-confirm").click();
  // Aborted is its own state and colour, not a failure; the result names the step it stopped in.
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "aborted", {
    timeout: 15_000,
  });
  await expect(page.getByTestId("abort-result").first()).toHaveText(
    "aborted by operator during ConnectHost",
  );
  await expect(page.getByTestId("step-ConnectHost")).toHaveAttribute("data-state", "aborted");
  await expect(page.getByTestId("failure-reason")).toHaveCount(0);
  await expect(page.getByTestId("retry-button")).toBeVisible();
  await expectNoReload(page);

  // The list counts it as aborted, not failed.
  await page.goto(`${base()}/hosts?q=pve-unreachable`);
  await expect(page.getByTestId("count-aborted")).toContainText(/\b1\b/);
  await expect(page.getByTestId("count-failed")).toContainText(/\b0\b/);
  await expect(
    page.getByTestId("host-row-pve-unreachable").getByTestId("state-badge"),
  ).toHaveAttribute("data-state", "aborted");

  // The audit log names the host of the aborted run and links to it.
  await page.goto(`${base()}/audit?action=run.abort&target=run:`);
  await expect(page.getByTestId("audit-host").filter({ hasText: "pve-unreachable" })).toHaveCount(
    1,
  );
});
