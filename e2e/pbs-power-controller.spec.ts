import { expect, test, type Locator, type Page } from "./support/test";
import { startLabPbs, type LabPbs } from "../lab/pbs/server";
import {
  labPbsPower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "../lab/power-controllers";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { addLabUps } from "./support/console";

/**
 * Issue 30, item 1 for a backup server in the browser: on /power/targets an admin opens the
 * PBS's Edit and sets its Redfish controller (the same panel as a host's page; no Wake-on-LAN
 * through a cluster member), the "Way back" column names it, and "Power on" — confirmed in a
 * dialog that says what is sent — brings the powered-off lab PBS's API back.
 */

/** Opens a confirmation behind a button (`<id>` → `<id>-dialog`), once the page hydrated. */
async function openConfirm(page: Page, testId: string): Promise<Locator> {
  const dialog = page.getByTestId(`${testId}-dialog`);
  await expect(async () => {
    if (!(await dialog.isVisible())) await page.getByTestId(testId).click({ timeout: 2_000 });
    await expect(dialog).toBeVisible({ timeout: 2_000 });
  }).toPass({ timeout: 20_000 });
  return dialog;
}

let pbs: LabPbs | undefined;
let bmc: LabPowerControllers | undefined;
let ups: LabUps | undefined;
let targetId = "";
let upsId = "";
// The next spec on this worker's console must find neither the backup server nor its UPS.
test.afterAll(async ({ request }) => {
  if (targetId) await request.delete(`/api/power/targets/${targetId}`);
  if (upsId) await request.delete(`/api/power/ups/${upsId}`);
  await bmc?.stop();
  await pbs?.stop();
  await ups?.stop();
});

test("an admin sets a backup server's Redfish controller on /power/targets and powers it on", async ({
  page,
}) => {
  test.setTimeout(180_000);
  pbs = await startLabPbs({ name: "pbs-e2e" });
  bmc = await startLabPowerControllers({ nodes: [labPbsPower(pbs)], password: "Bmc-E2E-pbs" });
  ups = await startLabUps({ name: "pbse2eups" });
  upsId = await addLabUps(page, "pbs-e2e-ups", ups);
  const created = await page.request.post("/api/power/targets", {
    data: {
      kind: "pbs",
      name: pbs.name,
      address: "127.0.0.1",
      port: pbs.port,
      tokenId: pbs.token.id,
      tokenSecret: pbs.token.secret,
      certSha256: pbs.certSha256,
      feeds: [upsId],
      feedPolicy: "any",
    },
  });
  expect(created.status(), await created.text()).toBe(201);
  targetId = ((await created.json()) as { target: { id: string } }).target.id;
  const redfish = bmc.nodes[0]!.redfish;

  await page.goto("/power/targets");
  const wayBack = page.getByTestId(`target-controller-${pbs.name}`);
  await expect(wayBack).toHaveAttribute("data-controller", "none");
  await wayBack.getByRole("link", { name: "Edit" }).click();
  await expect(page).toHaveURL(new RegExp(`edit=${targetId}`));
  await expect(page.getByTestId("power-controller-summary")).toContainText("None");
  await page.getByTestId("power-controller-edit").click();
  await page.getByTestId("power-controller-kind").selectOption("redfish");
  // A backup server is in no Proxmox VE cluster: no member can wake it.
  await expect(
    page.getByTestId("power-controller-kind").locator('option[value="pve-wol"]'),
  ).toHaveCount(0);
  const form = page.getByTestId("power-controller-form");
  await form.getByLabel("BMC address").fill(redfish.address);
  await form.getByLabel("HTTPS port").fill(String(redfish.port));
  await form.getByLabel("BMC user").fill(bmc.username);
  await form.getByLabel("BMC password").fill(bmc.password);
  await form.getByLabel("System id").fill(redfish.systemId);
  await page.getByTestId("power-controller-save").click();
  await expect(page.getByTestId("power-controller-summary")).toContainText(
    `Redfish (HTTPS): ${redfish.address}:${redfish.port} as ${bmc.username}`,
  );
  expect(await page.content()).not.toContain(bmc.password);

  // Read on demand: On while the PBS runs.
  await page.getByTestId("power-controller-read").click();
  await expect(page.getByTestId("power-controller-state")).toContainText("On —");

  // Cut its power: its API answers nothing. Power on, confirmed, brings it back.
  await pbs.powerOff();
  const dialog = await openConfirm(page, "power-controller-power-on");
  await expect(dialog).toContainText(`Power ${pbs.name} on?`);
  await expect(dialog).toContainText(
    `asks the Redfish controller at ${redfish.address}:${redfish.port} for the power state`,
  );
  await dialog.getByRole("button", { name: "Power on" }).click();
  await expect(page.getByTestId("power-controller-message")).toContainText(
    "took the request and reads On",
  );
  expect(bmc.nodes[0]!.chassis.powerOnRequests).toHaveLength(1);
  await expect.poll(() => pbs!.state, { timeout: 30_000 }).toBe("up");

  // The list's "Way back" column names the controller.
  await page.goto("/power/targets");
  await expect(page.getByTestId(`target-controller-${pbs.name}`)).toHaveAttribute(
    "data-controller",
    "redfish",
  );
});
