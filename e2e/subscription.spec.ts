import fs from "node:fs";
import path from "node:path";
import { expect, test } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { LAB_SUBSCRIPTIONS } from "../lab/pve/subscription";
import { apiPort, base } from "./support/console";

/**
 * Issue 31, item 6 in the browser: a host added with a subscription key (a malformed one first:
 * a field error, nothing added) ends active on the enterprise repository; its page says a key is
 * stored and never shows it.
 */

const KEY = Object.keys(LAB_SUBSCRIPTIONS)[0]!;
let node: LabNode | undefined;

test.afterAll(async () => {
  await node?.stop();
});

test("a host added with a subscription key ends active on the enterprise repository; the key is never shown", async ({
  page,
}) => {
  test.setTimeout(300_000);
  node = await startLab({ timeScale: 0.01, rebootMs: 20_000 });
  await page.goto(`${base()}/hosts/new`);
  await page.getByLabel("Name").fill("pve-subscribed");
  await page.getByLabel("Address").fill(node.ssh.host);
  await page.getByLabel("SSH port").fill(String(node.ssh.port));
  await page.getByLabel("Proxmox API port").fill(apiPort(node));
  await page.getByLabel("SSH user").fill(node.ssh.username);
  await page.getByLabel("SSH password").fill(node.ssh.password);
  const keyField = page.getByLabel("Proxmox VE subscription key (optional)");
  await keyField.fill("pve3c-0123456789");
  await page.getByTestId("submit-host").click();
  await expect(page.getByText(/Not a Proxmox VE subscription key/).first()).toBeVisible();
  await expect(keyField).toBeFocused();
  await expect(page).toHaveURL(/\/hosts\/new$/);

  await keyField.fill(KEY);
  await page.getByTestId("submit-host").click();
  await expect(page).toHaveURL(/\/hosts\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 240_000,
  });
  await expect(page.getByTestId("step-ApplySubscription").getByTestId("step-state")).toContainText(
    /done/i,
  );
  await expect(page.getByTestId("host-subscription")).toContainText("key stored");
  expect(await page.content()).not.toContain(KEY);
  expect(
    fs.readFileSync(path.join(node.root, "etc/apt/sources.list.d/pve-enterprise.sources"), "utf8"),
  ).toContain("URIs: https://enterprise.proxmox.com/debian/pve");
});
