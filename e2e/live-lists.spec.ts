import crypto from "node:crypto";
import { expectNoReload, markNoReload } from "./support/console";
import { expect, test } from "./support/test";

/*
 * Issue 32, point 10: every list follows the live stream. The users page and the catalog are
 * server-rendered lists; a change made elsewhere (a colleague, a script through the API) shows
 * on an open page without a reload.
 */

const suffix = () => crypto.randomBytes(3).toString("hex");

test("the users list follows the live stream: a user added elsewhere shows without a reload", async ({
  page,
}) => {
  await page.goto("/users");
  await expect(page.getByTestId("live-indicator")).toHaveAttribute("data-status", "live");
  await markNoReload(page);
  const name = `e2e-live-${suffix()}`;
  const created = await page.request.post("/api/users", {
    data: { name, password: "live list password 12345", role: "viewer" },
  });
  expect(created.status(), await created.text()).toBe(201);
  await expect(page.getByText(name, { exact: true })).toBeVisible();
  await expectNoReload(page);
});

test("the catalog follows the live stream: a plan added elsewhere shows without a reload", async ({
  page,
}) => {
  await page.goto("/catalog");
  await expect(page.getByTestId("live-indicator")).toHaveAttribute("data-status", "live");
  await markNoReload(page);
  const slug = `live-${suffix()}`;
  const name = `Live plan ${slug}`;
  const created = await page.request.post("/api/catalog/plans", { data: { slug, name } });
  expect(created.status(), await created.text()).toBe(201);
  await expect(page.getByText(name)).toBeVisible();
  await expectNoReload(page);
});
