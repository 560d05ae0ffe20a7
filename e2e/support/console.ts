import { expect, type Page } from "@playwright/test";
import type { LabNode } from "../../lab";
import { labUpsSources, type LabUps } from "../../lab/ups/lab-ups";

/** The console under test, started by the global setup (playwright.config.ts). */
export const base = () => {
  const url = process.env.E2E_BASE_URL;
  if (!url)
    throw new Error("E2E_BASE_URL is not set: run through playwright.config.ts (global setup)");
  return url;
};

/** The database of the console under test, for a spec that commits what the engine would. */
export const databaseUrl = () => {
  const url = process.env.E2E_DATABASE_URL;
  if (!url)
    throw new Error("E2E_DATABASE_URL is not set: run through playwright.config.ts (global setup)");
  return url;
};

/** Marks the window; if the page ever reloads or navigates away, the mark is gone. */
export async function markNoReload(page: Page) {
  await page.evaluate(() => ((window as unknown as { __noReload: boolean }).__noReload = true));
}

/** The page has not reloaded since markNoReload: what changed came live. */
export async function expectNoReload(page: Page) {
  expect(
    await page.evaluate(() => (window as unknown as { __noReload?: boolean }).__noReload),
  ).toBe(true);
}

/**
 * Opens the dialog behind a button (`<name>-button` → `<name>-dialog`). A click that lands
 * before React hydrated the page does nothing (the server-rendered button has no handler yet;
 * the power page hydrates later since it carries the self-test and cluster cards), so the click
 * is repeated until the dialog shows — never while it already does.
 */
export async function openDialog(page: Page, name: string) {
  const dialog = page.getByTestId(`${name}-dialog`);
  await expect(async () => {
    if (!(await dialog.isVisible()))
      await page.getByTestId(`${name}-button`).click({ timeout: 2_000 });
    await expect(dialog).toBeVisible({ timeout: 2_000 });
  }).toPass({ timeout: 20_000 });
  return dialog;
}

/** The lab's API listens on a free port, not 8006: the form's API port field says where. */
/** What the add-host form needs of a lab node: a standalone one or a lab cluster's member. */
export type LabHostForm = { ssh: LabNode["ssh"]; api?: { url: string } };

export const apiPort = (node: LabHostForm) => (node.api ? new URL(node.api.url).port : "8006");

/**
 * Adds the lab node as a host through the add-host form (password login), and waits for the
 * host page the form leads to.
 */
export async function addLabHost(page: Page, name: string, node: LabHostForm) {
  await page.goto(`${base()}/hosts/new`);
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Address").fill(node.ssh.host);
  await page.getByLabel("SSH port").fill(String(node.ssh.port));
  await page.getByLabel("Proxmox API port").fill(apiPort(node));
  await page.getByLabel("SSH user").fill(node.ssh.username);
  await page.getByLabel("SSH password").fill(node.ssh.password);
  await page.getByTestId("submit-host").click();
  await expect(page).toHaveURL(/\/hosts\/[0-9a-f-]{36}$/);
}

/** Adds a lab UPS, read through its NUT face, as an admin does through the API; its id. */
export async function addLabUps(page: Page, name: string, ups: LabUps): Promise<string> {
  const created = await page.request.post("/api/power/ups", {
    data: { name, source: labUpsSources(ups).nut },
  });
  expect(created.status(), await created.text()).toBe(201);
  return ((await created.json()) as { ups: { id: string } }).ups.id;
}
