import fs from "node:fs";
import { expect, test } from "./support/test";
import { generateClientKey, startLab, type LabNode } from "../lab";
import { addLabHost, base } from "./support/console";

/**
 * Issue 8, items 2 and 4 in the browser: an active host's connection is edited (a wrong
 * password is refused on its field and nothing changes; switching to the console's key works
 * once it is installed), then it is decommissioned — the dialog says what will happen, each
 * step's result appears live, the host ends retired with the token and the console's key gone
 * from the lab node — and an admin deletes it.
 */

let node: LabNode | undefined;
test.afterAll(async () => {
  await node?.stop();
});

test("edit a host's connection (refused, then tested and saved), decommission it with live results, delete it", async ({
  page,
}) => {
  node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  const operatorKey = generateClientKey("ops@laptop").publicKey.trim();
  node.authorizeKey(operatorKey);
  await addLabHost(page, "pve-life", node);
  const badge = page.getByTestId("state-badge");
  await expect(badge).toHaveAttribute("data-state", "active", { timeout: 60_000 });

  // Edit with a wrong password: refused by the live test, on the password field; nothing saved.
  await page.getByTestId("edit-host-button").click();
  const form = page.getByTestId("edit-host-form");
  await form.getByTestId("edit-auth-password").check();
  await form.getByLabel("New SSH password").fill("certainly-wrong");
  await form.getByTestId("save-host").click();
  await expect(form.getByTestId("error-password")).toContainText("refused this password");
  await expect(form.getByTestId("form-error")).toContainText("Nothing was saved");
  await expect(form.getByLabel("New SSH password")).toBeFocused();
  await expect(page.getByTestId("host-ssh-user")).toContainText("password");

  // "Test connection" with the current credential: works, saves nothing.
  await form.getByTestId("edit-auth-keep").check();
  await form.getByTestId("test-connection").click();
  await expect(form.getByTestId("test-connection-ok")).toContainText(node.ssh.hostKeySha256);
  await expect(form.getByTestId("test-connection-ok")).toContainText("Nothing was saved");

  // Switch to the console's key: install it on the node as the form says, then test and save.
  await form.getByTestId("edit-auth-console_key").check();
  const install = await form.getByTestId("edit-console-key-install-command").inputValue();
  const consoleKey = /ssh-ed25519 [A-Za-z0-9+/=]+ clupilot-console@[0-9a-f]+/.exec(install)?.[0];
  expect(consoleKey).toBeDefined();
  node.authorizeKey(consoleKey!);
  await form.getByTestId("save-host").click();
  await expect(page.getByTestId("lifecycle-notice")).toContainText(
    "now logs in with the console's key",
  );
  await expect(page.getByTestId("host-ssh-user")).toContainText("the console's key");

  // Decommission: the dialog names each step; Escape cancels.
  await page.getByTestId("decommission-button").click();
  const dialog = page.getByTestId("decommission-dialog");
  await expect(dialog.getByTestId("decommission-plan")).toContainText(
    "Remove the console's API token clupilot@pve!console from node pve1",
  );
  await expect(dialog.getByTestId("decommission-plan")).toContainText(
    "from root's ~/.ssh/authorized_keys",
  );
  await expect(dialog.getByTestId("decommission-plan")).toContainText("Mark pve-life retired");
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await expect(badge).toHaveAttribute("data-state", "active");

  await page.getByTestId("decommission-button").click();
  await page.getByTestId("decommission-dialog-confirm").click();
  await expect(badge).toHaveAttribute("data-state", "retired", { timeout: 60_000 });
  const results = page.getByTestId("decommission-results");
  await expect(results.getByTestId("decommission-result-RemoveApiToken")).toContainText(
    "API token clupilot@pve!console removed from pve1",
  );
  await expect(results.getByTestId("decommission-result-RemoveConsoleKey")).toContainText(
    "removed the console's key (1 line)",
  );
  await expect(results.getByTestId("decommission-result-MarkRetired")).toContainText("retired");
  // On the node: the token and the console's line are gone, the operator's key stays.
  const keys = fs.readFileSync(node.authorizedKeysPath, "utf8");
  expect(keys).not.toContain(consoleKey!);
  expect(keys).toContain(operatorKey);
  expect(fs.readFileSync(`${node.root}/etc/pve/priv/token.cfg`, "utf8")).not.toContain(
    "clupilot@pve!console",
  );
  await expect(page.getByTestId("edit-host-button")).toHaveCount(0);
  await expect(page.getByTestId("decommission-button")).toHaveCount(0);

  // The API agrees: no new runs for a retired host.
  const hostId = new URL(page.url()).pathname.split("/").pop()!;
  expect((await page.request.post(`${base()}/api/hosts/${hostId}/runs`)).status()).toBe(409);

  // The history stays readable: the onboarding run, its timeline and log, one link away.
  await page.reload();
  const history = page.getByTestId("host-runs");
  await expect(history).toContainText("Decommission");
  await history.getByRole("link", { name: "Onboarding" }).click();
  await expect(page.getByTestId("earlier-run-notice")).toBeVisible();
  await expect(page.getByTestId("step-RegisterCapacity").getByTestId("step-state")).toContainText(
    /done/i,
  );
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "retired");

  // Delete (the spec runs as the admin): gone from the console, back on the list.
  await page.getByTestId("delete-host-button").click();
  await expect(page.getByTestId("delete-host-dialog")).toContainText("all its runs");
  await page.getByTestId("delete-host-dialog-confirm").click();
  await expect(page).toHaveURL(/\/hosts$/);
  expect((await page.request.get(`${base()}/api/hosts/${hostId}`)).status()).toBe(404);
});
