import crypto from "node:crypto";
import { expect, test, type Page } from "./support/test";
import pg from "pg";
import { base } from "./support/console";

const slugs: string[] = [];

/** Specs share one console: every plan gets its own slug and template VMID. */
function unique() {
  const slug = `e2e-${crypto.randomBytes(3).toString("hex")}`;
  slugs.push(slug);
  return { slug, vmid: 100_000 + crypto.randomInt(800_000_000) };
}

// A version published here makes its template required on every host, including the lab hosts
// the other specs onboard against the same console: take this spec's plans out again.
test.afterAll(async () => {
  const url = process.env.E2E_DATABASE_URL;
  if (!url || slugs.length === 0) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      "delete from plan_versions where plan_id in (select id from plans where slug = any($1))",
      [slugs],
    );
    await client.query("delete from plans where slug = any($1)", [slugs]);
  } finally {
    await client.end();
  }
});

async function createPlan(page: Page, slug: string) {
  await page.goto(`${base()}/catalog`);
  await page.getByTestId("add-plan").click();
  await expect(page).toHaveURL(/\/catalog\/plans\/new$/);
  await page.getByLabel("Slug").fill(slug);
  await page.getByLabel("Name").fill(`Plan ${slug}`);
  await page.getByTestId("submit-plan").click();
  // Straight on to the plan's first version.
  await expect(page).toHaveURL(/\/catalog\/plans\/[0-9a-f-]{36}\/versions\/new$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText(slug);
}

test("the console nav leads to the catalog", async ({ page }) => {
  await page.goto(`${base()}/hosts`);
  await page
    .getByRole("navigation", { name: "Main" })
    .getByRole("link", { name: "Catalog" })
    .click();
  await expect(page).toHaveURL(/\/catalog$/);
  await expect(page.getByTestId("required-templates")).toBeVisible();
});

test("the new-plan form refuses a bad slug and a taken one, under the field", async ({ page }) => {
  const { slug } = unique();
  await createPlan(page, slug);
  await page.goto(`${base()}/catalog/plans/new`);
  await page.getByLabel("Slug").fill("Not A Slug");
  await page.getByTestId("submit-plan").click();
  await expect(page.getByTestId("error-slug")).toContainText("Lower-case letters");
  await expect(page.getByTestId("error-name")).toBeVisible();
  await expect(page.getByLabel("Slug")).toBeFocused();
  await page.getByLabel("Slug").fill(slug);
  await page.getByLabel("Name").fill("Again");
  await page.getByTestId("submit-plan").click();
  await expect(page.getByTestId("error-slug")).toContainText("Taken");
  await expect(page.getByTestId("form-error")).toContainText(slug);
  await expect(page).toHaveURL(/\/catalog\/plans\/new$/);
});

test("a plan gets a version (bad VMID refused, then fixed), which is published through the confirmation and becomes a required template", async ({
  page,
}) => {
  const { slug, vmid } = unique();
  await createPlan(page, slug);

  // A VMID below Proxmox's range: the field says so, keeps the input and takes the focus.
  const vmidField = page.getByLabel("Template VMID");
  await vmidField.fill("99");
  await page.getByLabel("Cores").fill("2");
  await page.getByLabel("Memory (MiB)").fill("2048");
  await page.getByLabel("Disk (GiB)").fill("40");
  await page.getByTestId("submit-version").click();
  await expect(page.getByTestId("error-templateVmid")).toContainText("start at 100");
  await expect(vmidField).toHaveAttribute("aria-invalid", "true");
  await expect(vmidField).toHaveAttribute("aria-describedby", /templateVmid-error/);
  await expect(vmidField).toBeFocused();
  await expect(vmidField).toHaveValue("99");

  // A sale that ends before it starts is refused on the end field.
  await vmidField.fill(String(vmid));
  await page.getByLabel("Sale starts (UTC, optional)").fill("2099-12-02T10:00");
  await page.getByLabel("Sale ends (UTC, optional)").fill("2099-12-01T10:00");
  await page.getByTestId("submit-version").click();
  await expect(page.getByTestId("error-saleEndsAt")).toContainText("end after it starts");
  await expect(page.getByTestId("error-templateVmid")).toHaveCount(0);
  await expect(page.getByLabel("Sale ends (UTC, optional)")).toBeFocused();

  await page.getByLabel("Sale ends (UTC, optional)").fill("2099-12-31T23:00");
  await page.getByTestId("submit-version").click();
  await expect(page).toHaveURL(new RegExp(`/catalog#plan-${slug}$`));

  const row = page.getByTestId(`version-${slug}-v1`);
  await expect(row.getByTestId("version-vmid")).toHaveText(String(vmid));
  await expect(row).toContainText("2 cores · 2 GiB RAM · 40 GiB disk");
  await expect(row).toContainText("2099-12-02 10:00 UTC – 2099-12-31 23:00 UTC");
  await expect(row.getByTestId("version-state")).toHaveAttribute("data-state", "draft");
  const required = page.getByTestId("required-templates");
  await expect(required.getByTestId(`required-vmid-${vmid}`)).toHaveCount(0);

  // The confirmation says exactly what publishing does; Escape cancels it.
  await row.getByTestId("publish-button").click();
  const dialog = row.getByTestId("publish-dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId("publish-consequence")).toHaveText(
    `Publishing v1 of ${slug} makes template VMID ${vmid} required on every host; hosts without it will build it during onboarding and fail the pre-sale check until they have it.`,
  );
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  await expect(row.getByTestId("version-state")).toHaveAttribute("data-state", "draft");

  await row.getByTestId("publish-button").click();
  await row.getByTestId("publish-dialog-confirm").click();
  await expect(row.getByTestId("version-state")).toHaveAttribute("data-state", "published");
  await expect(row.getByTestId("version-state")).toBeFocused();
  await expect(dialog).toBeHidden();
  await expect(required.getByTestId(`required-vmid-${vmid}`)).toContainText(`${slug} v1`);

  // It stays that way on a fresh load, and the JSON API agrees.
  await page.reload();
  await expect(
    page.getByTestId("required-templates").getByTestId(`required-vmid-${vmid}`),
  ).toBeVisible();
  const api = (await (await page.request.get(`${base()}/api/catalog`)).json()) as {
    requiredTemplateVmids: { vmids: number[] };
  };
  expect(api.requiredTemplateVmids.vmids).toContain(vmid);
});
