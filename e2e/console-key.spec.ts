import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { expect, test, type Page } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { base } from "./support/console";

const labs: LabNode[] = [];
test.afterAll(async () => {
  await Promise.all(labs.map((lab) => lab.stop()));
});

/** A Proxmox-ready lab node (onboarding ends in seconds) that refuses passwords. */
async function keyOnlyNode() {
  const node = await startLab({
    state: "onboarded",
    storage: "lvm-thin",
    timeScale: 0.01,
    passwordAuthentication: false,
  });
  labs.push(node);
  return node;
}

const apiPort = (node: LabNode) => new URL(node.api.url).port;

/** What an operator does with the install command: paste it into the host's shell. */
function runOnHost(node: LabNode, command: string) {
  const home = path.dirname(path.dirname(node.authorizedKeysPath));
  execFileSync("/bin/bash", ["-c", command], { env: { ...process.env, HOME: home } });
}

type Overview = {
  key: { fingerprint: string; publicKey: string; id: string };
  installCommand: string;
  hostCount: number;
};

async function overview(page: Page): Promise<Overview> {
  const response = await page.request.get(`${base()}/api/console-key`);
  expect(response.status()).toBe(200);
  return (await response.json()) as Overview;
}

test("a host that accepts only the console's key is added with it and becomes active", async ({
  page,
}) => {
  const node = await keyOnlyNode();
  await page.goto(`${base()}/hosts/new`);
  await page.getByLabel("Use the console's key").check();
  const install = page.getByTestId("console-key-install-command");
  await expect(install).toBeVisible();
  const command = await install.inputValue();
  expect(command).toContain("clupilot-console@");
  runOnHost(node, command);
  runOnHost(node, command); // a second paste adds no second line
  const publicKey = await page.getByTestId("console-key-public").inputValue();
  expect((await readFile(node.authorizedKeysPath, "utf8")).split("\n")).toEqual([publicKey, ""]);

  await page.getByLabel("Name").fill("ck-only");
  await page.getByLabel("Address").fill(node.ssh.host);
  await page.getByLabel("SSH port").fill(String(node.ssh.port));
  await page.getByLabel("Proxmox API port").fill(apiPort(node));
  await page.getByLabel("SSH user").fill(node.ssh.username);
  await page.getByTestId("submit-host").click();
  await expect(page).toHaveURL(/\/hosts\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 60_000,
  });
  await expect(page.getByTestId("host-key-fingerprint")).toContainText(node.ssh.hostKeySha256);
  expect(node.authAttempts.some((a) => a.method === "password")).toBe(false);
});

test("Rotate key: confirmation says what happens, progress is live, a refusing host keeps the old key", async ({
  page,
}) => {
  const before = await overview(page);
  // Two more hosts on the console's key, added through the API; "zz-refuser" is visited last.
  const nodes = { "ck-second": await keyOnlyNode(), "zz-refuser": await keyOnlyNode() };
  for (const [name, node] of Object.entries(nodes)) {
    runOnHost(node, before.installCommand);
    const response = await page.request.post(`${base()}/api/hosts`, {
      data: {
        name,
        address: node.ssh.host,
        sshPort: node.ssh.port,
        apiPort: apiPort(node),
        sshUser: node.ssh.username,
        authMethod: "console_key",
      },
    });
    expect(response.status(), await response.text()).toBe(201);
    const { hostId } = (await response.json()) as { hostId: string };
    await expect
      .poll(
        async () =>
          (
            (await (await page.request.get(`${base()}/api/hosts/${hostId}`)).json()) as {
              state?: string;
            }
          ).state,
        { timeout: 60_000 },
      )
      .toBe("active");
  }
  const hostCount = (await overview(page)).hostCount;
  expect(hostCount).toBeGreaterThanOrEqual(2);

  await page.goto(`${base()}/settings/ssh-key`);
  await expect(page.getByTestId("console-key-fingerprint")).toHaveText(before.key.fingerprint);
  await page.getByTestId("rotate-key").click();
  const dialog = page.getByTestId("rotate-dialog");
  await expect(dialog).toContainText(`${hostCount} hosts`);
  await expect(dialog).toContainText("only after that login works is the old key removed");
  // Escape cancels: nothing rotates.
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  expect((await overview(page)).key.id).toBe(before.key.id);

  await page.getByTestId("rotate-key").click();
  await page.getByTestId("rotate-dialog-confirm").click();
  await expect(dialog).toBeHidden();
  const after = await overview(page);
  expect(after.key.id).not.toBe(before.key.id);
  // The last host in name order refuses the new key, though it will be in authorized_keys.
  nodes["zz-refuser"].faults.refusePublicKeys = [after.key.fingerprint];

  await expect(page.getByTestId("console-key-fingerprint")).toHaveText(after.key.fingerprint);
  await expect(page.getByTestId("rotation-summary")).toContainText(
    `${hostCount} of ${hostCount} hosts done`,
    { timeout: 60_000 },
  );
  await expect(
    page.getByTestId("rotation-host-ck-second").locator("[data-outcome]"),
  ).toHaveAttribute("data-outcome", "switched");
  await expect(
    page.getByTestId("rotation-host-zz-refuser").locator("[data-outcome]"),
  ).toHaveAttribute("data-outcome", "new_key_refused");
  await expect(page.getByTestId("rotation-problems")).toContainText("zz-refuser");
  await page.screenshot({ path: "test-results/screenshots/ssh-key-page.png", fullPage: true });

  const lines = async (node: LabNode) =>
    (await readFile(node.authorizedKeysPath, "utf8")).split("\n").filter(Boolean);
  expect(await lines(nodes["ck-second"])).toEqual([after.key.publicKey]);
  expect(await lines(nodes["zz-refuser"])).toContain(before.key.publicKey);
});
