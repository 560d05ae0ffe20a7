import { expect, test } from "./support/test";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";

/*
 * Issue 30, item 8 in the browser: the UPS output cycle is off on a new UPS; turning it on opens
 * a confirmation that says what it will do, Cancel leaves it off, confirming and saving stores
 * it, and the UPS card on /power says so.
 */

test.describe.configure({ mode: "serial" });

const UPS = "cycle-ups";
let ups: LabUps | undefined;
let upsId = "";

test.afterAll(async ({ request }) => {
  if (upsId) await request.delete(`/api/power/ups/${upsId}`);
  await ups?.stop();
});

test("an admin turns the UPS output cycle on through a confirmation that says what it does; Cancel leaves it off", async ({
  page,
}) => {
  test.setTimeout(120_000);
  ups = await startLabUps({ name: "rack1", snmp: false });
  const nut = ups.nut!;
  await page.goto("/power/ups");
  await page.getByLabel("Name", { exact: true }).fill(UPS);
  await page.getByLabel("NUT server address").fill(nut.host);
  await page.getByLabel("Port", { exact: true }).fill(String(nut.port));
  await page.getByLabel("UPS name on that server").fill(nut.upsName);
  await page.getByLabel("User (optional)").fill(nut.username);
  await page.getByLabel("Password (optional)").fill(nut.password);
  const cycle = page.getByTestId("output-cycle");
  await expect(cycle).toHaveValue("false");

  // Turning it on asks first; Cancel leaves it off.
  await cycle.selectOption("true");
  const dialog = page.getByTestId("output-cycle-dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText("turn its output off");
  await expect(dialog).toContainText("INSTCMD shutdown.return");
  await expect(dialog).toContainText("never sent while any host");
  await page.getByTestId("output-cycle-dialog-cancel").click();
  await expect(dialog).toBeHidden();
  await expect(cycle).toHaveValue("false");

  await cycle.selectOption("true");
  await page.getByTestId("output-cycle-dialog-confirm").click();
  await expect(cycle).toHaveValue("true");
  await page.getByTestId("save-ups").click();
  await expect(page.getByTestId(`ups-row-${UPS}`)).toBeVisible();

  const list = await page.request.get("/api/power/ups");
  const saved = (
    (await list.json()) as { ups: { id: string; name: string; outputCycle: boolean }[] }
  ).ups.find((u) => u.name === UPS)!;
  upsId = saved.id;
  expect(saved.outputCycle).toBe(true);

  await page.getByTestId(`ups-row-${UPS}`).getByRole("link", { name: "Edit" }).click();
  await expect(page.getByTestId("output-cycle")).toHaveValue("true");

  await page.goto("/power");
  await expect(page.getByTestId(`ups-card-${UPS}`).getByTestId("ups-output-cycle")).toHaveText(
    "output cycled once every host on it is seen down",
  );
});
