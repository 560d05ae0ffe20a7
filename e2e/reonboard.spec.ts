import os from "node:os";
import { expect, test } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { runOnNode } from "../lab/test-helpers";
import { addLabHost, base, expectNoReload, markNoReload } from "./support/console";

/**
 * Issue 5's second run and issue 8's re-onboarding, in the browser: a host that is active shows
 * what onboarding found; "Run onboarding again" on it, with a fault injected, shows the failed
 * step's reason live; Retry after removing the fault brings it back to active. No reload.
 */

let node: LabNode | undefined;
test.afterAll(async () => {
  await node?.stop();
});

/** A command on the lab node, as its administrator would run it in a root shell. */
const onNode = runOnNode;

test("an active host shows its facts; onboarding again with a fault shows the reason live, Retry makes it active again", async ({
  page,
}) => {
  // Proxmox already installed: every step's goal holds, so each run ends in seconds.
  node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  const apiPort = new URL(node.api.url).port;
  await addLabHost(page, "pve-again", node);
  await markNoReload(page);

  const badge = page.getByTestId("state-badge");
  await expect(badge).toHaveAttribute("data-state", "active", { timeout: 60_000 });
  // What onboarding found, as the lab reports it.
  await expect(page.getByTestId("host-node-name")).toHaveText("pve1");
  await expect(page.getByTestId("host-api-port")).toContainText(apiPort);
  await expect(page.getByTestId("host-api-cert").locator("[title]")).toHaveAttribute(
    "title",
    `SHA-256 ${node.api.certSha256}`,
  );
  await expect(page.getByTestId("host-api-token")).toContainText("!");
  await expect(page.getByTestId("host-capacity-cores")).toHaveText(String(os.cpus().length));
  await expect(page.getByTestId("host-capacity-memory")).toHaveAttribute(
    "title",
    `${Math.floor(os.totalmem() / 1024 ** 2)} MiB`,
  );
  await expect(page.getByTestId("host-capacity-images")).toHaveText(/^[1-9]\d*$/);

  // The fault: an administrator disabled every storage that could take disk images. Every other
  // step's goal still holds; ConfigureProxmox finds none to give images to (it never writes
  // storage.cfg, and a disabled `local` is not guessed at) and refuses, saying what to do.
  onNode(node, "pvesm", ["set", "local-lvm", "--disable", "1"]);
  onNode(node, "pvesm", ["set", "local", "--disable", "1"]);
  await page.getByTestId("reonboard-button").click();
  const dialog = page.getByTestId("reonboard-dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText("Runs every onboarding step against pve-again again");
  await expect(dialog).toContainText("Steps whose goal already holds change nothing");
  // Escape cancels: nothing starts.
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await expect(badge).toHaveAttribute("data-state", "active");

  await page.getByTestId("reonboard-button").click();
  await page.getByTestId("reonboard-dialog-confirm").click();
  await expect(dialog).toBeHidden();
  await expect(badge).toHaveAttribute("data-state", "failed", { timeout: 30_000 });
  const reason = page.getByTestId("failure-reason").first();
  await expect(page.getByTestId("phase-line-pve-again")).toContainText("ConfigureProxmox");
  await expect(reason).toContainText("no storage accepts disk images");
  await expect(reason).toContainText("pvesm set");
  await expect(page.getByTestId("step-ConfigureProxmox").getByTestId("step-state")).toContainText(
    /failed/i,
  );
  await expect(page.getByTestId("step-InstallProxmoxVe").getByTestId("step-state")).toContainText(
    /done/i,
  );
  await expect(page.getByTestId("host-node-name")).toHaveText("pve1");
  await expect(page.getByTestId("reonboard-button")).toBeVisible();
  await expectNoReload(page);

  onNode(node, "pvesm", ["set", "local-lvm", "--disable", "0"]);
  onNode(node, "pvesm", ["set", "local", "--disable", "0"]);
  await page.getByTestId("retry-button").click();
  await expect(badge).toHaveAttribute("data-state", "active", { timeout: 60_000 });
  await expect(page.getByTestId("host-capacity-images")).toHaveText(/^[1-9]\d*$/);
  for (const step of ["CheckOperatingSystem", "CreateApiToken", "RegisterCapacity"]) {
    await expect(page.getByTestId(`step-${step}`).getByTestId("step-state")).toContainText(/done/i);
  }
  await expect(page.getByTestId("host-node-name")).toHaveText("pve1");
  await expectNoReload(page);

  // The API says the same: a second request while nothing runs starts a run; while it runs, 409.
  const hostId = new URL(page.url()).pathname.split("/").pop()!;
  const again = await page.request.post(`${base()}/api/hosts/${hostId}/runs`);
  expect(again.status()).toBe(201);
  const refused = await page.request.post(`${base()}/api/hosts/${hostId}/runs`);
  expect(refused.status()).toBe(409);
  await expect(badge).toHaveAttribute("data-state", "active", { timeout: 60_000 });
  await expectNoReload(page);
});
