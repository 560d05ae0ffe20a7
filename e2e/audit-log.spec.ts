import crypto from "node:crypto";
import { expect, test } from "./support/test";
import { E2E_ADMIN } from "./auth-state";

test("the audit log page shows who did what, filtered from the keyboard, newest first", async ({
  page,
}) => {
  const name = `audit-${crypto.randomBytes(3).toString("hex")}`;
  const created = await page.request.post("/api/hosts", {
    data: {
      name,
      address: "127.0.0.1",
      sshPort: 1,
      sshUser: "root",
      authMethod: "password",
      password: "not-used-anywhere",
    },
  });
  expect(created.status()).toBe(201);
  const { hostId } = (await created.json()) as { hostId: string };
  // A refused retry (no such run) is recorded as a failure, with the reason given.
  const runId = crypto.randomUUID();
  expect((await page.request.post(`/api/runs/${runId}/retry`)).status()).toBe(404);

  await page.goto("/audit");
  await page.getByLabel("Action").selectOption("host.create");
  await page.getByLabel("Target").fill(hostId);
  await page.getByLabel("Target").press("Enter");
  await expect(page).toHaveURL(/action=host.create/);
  const rows = page.getByTestId("audit-row");
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(E2E_ADMIN.name);
  await expect(rows.first()).toContainText(`host:${hostId}`);
  await expect(rows.first().getByTestId("audit-outcome")).toHaveAttribute(
    "data-outcome",
    "success",
  );

  await page.goto(`/audit?action=run.retry&outcome=failure&target=${runId}`);
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(`Run ${runId} does not exist.`);

  // Bad filters are answered on the page with the field's message, not an error page.
  await page.goto("/audit?from=yesterday");
  await expect(page.getByTestId("audit-filter-error")).toContainText("Some filters need attention");
  await expect(page.getByLabel("From (UTC)")).toHaveAttribute("aria-invalid", "true");
});
