import { expect, test } from "./support/test";

/*
 * Early shedding's settings in the browser (issue 30, item 7): an admin turns it on through the
 * settings form — hostile values come back as field errors under their own field, nothing is
 * saved — then with good values it is saved, and /power says the rule in effect. The settings
 * are put back as they were at the end.
 */

test("an admin turns early shedding on: hostile values get field errors under their field; saved, /power states the rule", async ({
  page,
}) => {
  const before = await page.request.get("/api/power/settings");
  expect(before.status()).toBe(200);
  const { shed } = (await before.json()) as { shed: unknown };
  expect(shed).toEqual({ enabled: false, afterMinutes: 2, tag: "shed", guests: [] });
  try {
    await page.goto("/power/settings");
    const minutes = page.getByLabel(
      "Shed after on battery for (minutes, by the console's own clock)",
    );
    const tag = page.getByLabel("Proxmox tag that marks a guest as shed");
    const list = page.getByLabel("Also shed these guests (node/VMID, comma-separated)");
    await page.locator('select[name="shed.enabled"]').selectOption("true");
    await minutes.fill("0");
    await tag.fill("-shed");
    await list.fill("pve1/abc");
    await page.getByTestId("save-power-settings").click();
    await expect(page.getByTestId("error-shed.afterMinutes")).toBeVisible();
    await expect(page.getByTestId("error-shed.tag")).toBeVisible();
    await expect(page.getByTestId("error-shed.guests")).toContainText("node/VMID");
    const unchanged = (await (await page.request.get("/api/power/settings")).json()) as {
      shed: unknown;
    };
    expect(unchanged.shed).toEqual(shed);

    await minutes.fill("3");
    await tag.fill("low-prio");
    await list.fill("pve1/105, pve2/110");
    await page.getByTestId("save-power-settings").click();
    await expect(page.getByText("Saved.")).toBeVisible();
    const saved = (await (await page.request.get("/api/power/settings")).json()) as {
      shed: unknown;
    };
    expect(saved.shed).toEqual({
      enabled: true,
      afterMinutes: 3,
      tag: "low-prio",
      guests: [
        { node: "pve1", vmid: 105 },
        { node: "pve2", vmid: 110 },
      ],
    });

    await page.goto("/power");
    const rule = page.getByTestId("shed-rule");
    await expect(rule).toContainText("On: after 3 min on battery");
    await expect(rule).toContainText("low-prio");
    await expect(rule).toContainText("pve2/110");
  } finally {
    const restored = await page.request.patch("/api/power/settings", {
      data: { shed: { enabled: false, afterMinutes: 2, tag: "shed", guests: [] } },
    });
    expect(restored.status()).toBe(200);
  }
});
