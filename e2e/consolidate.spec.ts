import { CONSOLE_PRIVILEGE_NAMES } from "../lib/proxmox/console-identity";
import { expect, test, type Page } from "./support/test";
import { startLabCluster, type LabCluster } from "../lab";
import type { LabGuestSpec } from "../lab/pve/cluster/model";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { addLabUps, databaseUrl } from "./support/console";
import { createDb } from "../lib/db/client";
import { seedActiveLabHost } from "../test/fixtures/active-lab-host";
import { removeFleet } from "../test/fleet-seed";
import { E2E_STORAGE_STATE } from "./auth-state";

/*
 * Issue 14's consolidate form in the browser, and two clusters that share a name. Onboarding is
 * not what this tests (cluster-drill.spec.ts onboards a cluster through Add host): the lab
 * clusters' nodes become active hosts of the console as the integration tests make them, and
 * everything after that goes through the console as an admin uses it. Two non-Ceph lab clusters
 * are both called "e2e-twin": three nodes at one site (guests on NFS: consolidation can work),
 * two at the other. An admin sets the first to consolidate through its card, sees the field
 * errors for bad thresholds, saves the thresholds and the node that stays, sees the check on
 * the card and the first stage in the plan preview; with both consolidating, every control on
 * the page has an id of its own.
 */

test.describe.configure({ mode: "serial" });

const NAME = "e2e-twin";
const UPS = "consolidate-ups";
let site: LabCluster | undefined;
let other: LabCluster | undefined;
let ups: LabUps | undefined;
let upsId = "";
const targetIds: string[] = [];
/** The host names of each site: the cards' labels are the name and these. */
const HOSTS = { site: ["twa-pve1", "twa-pve2", "twa-pve3"], other: ["twb-pve1", "twb-pve2"] };
const label = (hosts: readonly string[]) => `${NAME} (${hosts.join(", ")})`;

let handle: ReturnType<typeof createDb> | null = null;
const db = () => {
  handle ??= createDb(databaseUrl(), 2);
  return handle;
};

test.afterAll(async ({ browser }) => {
  const context = await browser.newContext({ storageState: E2E_STORAGE_STATE });
  for (const id of targetIds) await context.request.delete(`/api/power/targets/${id}`);
  if (upsId) await context.request.delete(`/api/power/ups/${upsId}`);
  await context.close();
  const url = process.env.E2E_DATABASE_URL;
  if (url) {
    await removeFleet(url, "twa");
    await removeFleet(url, "twb");
    // Their clusters have no member left: gone now rather than at the next refresh.
    await db().pool.query(
      `delete from power_clusters c where not exists
         (select 1 from power_cluster_memberships m where m.cluster_id = c.id)`,
    );
  }
  await handle?.pool.end();
  await site?.stop();
  await other?.stop();
  await ups?.stop();
});

/** A click that lands before React hydrated does nothing: the select is changed until it took. */
async function choosePolicy(page: Page, card: string, policy: string, shows: string) {
  const select = page.getByTestId(`cluster-policy-${card}`);
  await expect(async () => {
    if (!(await page.getByTestId(shows).isVisible())) await select.selectOption(policy);
    await expect(page.getByTestId(shows)).toBeVisible({ timeout: 3_000 });
  }).toPass({ timeout: 30_000 });
}

test("set-up: two lab clusters named alike, their nodes active hosts protected by a lab UPS; the console tells them apart", async ({
  page,
}) => {
  test.setTimeout(120_000);
  const guests: LabGuestSpec[] = ["pve2", "pve3"].flatMap((node, i): LabGuestSpec[] => [
    { vmid: 301 + i * 10, type: "qemu", node, storage: "nfs", ha: true },
    { vmid: 302 + i * 10, type: "lxc", node, storage: "nfs" },
  ]);
  [site, other, ups] = await Promise.all([
    startLabCluster({ nodes: 3, name: NAME, guests, apiAuthFailureDelayMs: 50 }),
    startLabCluster({ nodes: 2, name: NAME, apiAuthFailureDelayMs: 50 }),
    startLabUps({ name: "consolidateups" }),
  ]);
  upsId = await addLabUps(page, UPS, ups);
  for (const [lab, names] of [
    [site, HOSTS.site],
    [other, HOSTS.other],
  ] as const) {
    const token = lab.addToken("console", [...CONSOLE_PRIVILEGE_NAMES]);
    for (const [i, node] of lab.nodes.entries()) {
      const hostId = await seedActiveLabHost(
        db().db,
        {
          nodeName: node.name,
          port: node.api.port,
          certSha256: node.api.certSha256,
          token,
        },
        names[i]!,
      );
      const target = await page.request.post("/api/power/targets", {
        data: { kind: "pve-node", hostId, feeds: [upsId], feedPolicy: "any" },
      });
      expect(target.status(), await target.text()).toBe(201);
      targetIds.push(((await target.json()) as { target: { id: string } }).target.id);
    }
  }
  const refresh = await page.request.post("/api/power/clusters/refresh", { data: {} });
  expect(refresh.status(), await refresh.text()).toBeLessThan(300);

  await page.goto("/power/clusters");
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId(`cluster-${label(HOSTS.site)}`)).toBeVisible({
      timeout: 2_000,
    });
  }).toPass({ timeout: 30_000 });
  for (const [mine, theirs] of [
    [HOSTS.site, HOSTS.other],
    [HOSTS.other, HOSTS.site],
  ] as const) {
    const card = page.getByTestId(`cluster-${label(mine)}`);
    await expect(card.getByRole("heading", { level: 2 })).toHaveText(label(mine));
    await expect(card.getByTestId("cluster-membership")).toHaveAttribute(
      "data-verdict",
      "confirmed",
    );
    await expect(card.getByTestId("cluster-apart")).toContainText(
      `Another cluster is also named ${NAME} (${theirs.join(", ")}): a different cluster`,
    );
  }
});

test("an admin sets a cluster to consolidate on its card: bad thresholds are refused under their fields; saved, the check shows on the card and the first stage in the plan preview", async ({
  page,
}) => {
  test.setTimeout(120_000);
  const siteLabel = label(HOSTS.site);
  await page.goto("/power/clusters");
  await choosePolicy(page, siteLabel, "consolidate", `consolidate-form-${siteLabel}`);
  const form = page.getByTestId(`consolidate-form-${siteLabel}`);
  const runtime = form.getByLabel("Runtime left below (seconds)");
  const charge = form.getByLabel("Charge below (%)");
  const onBattery = form.getByLabel("On battery for (seconds, by the console's clock)");

  // Bad input: each error under its own field, tied to the control; the first one focused.
  await runtime.fill("soon");
  await charge.fill("150");
  await form.getByTestId(`consolidate-save-${siteLabel}`).click();
  const runtimeError = form.getByTestId("error-consolidate.firstThreshold.runtimeBelowSeconds");
  await expect(runtimeError).toBeVisible();
  await expect(runtime).toHaveAttribute("aria-invalid", "true");
  await expect(runtime).toHaveAttribute(
    "aria-describedby",
    new RegExp(`${(await runtimeError.getAttribute("id"))!.replace(/[.]/g, "\\.")}`),
  );
  await expect(runtime).toBeFocused();
  await runtime.fill("600");
  await form.getByTestId(`consolidate-save-${siteLabel}`).click();
  await expect(
    form.getByTestId("error-consolidate.firstThreshold.chargeBelowPercent"),
  ).toBeVisible();
  await expect(charge).toHaveAttribute("aria-invalid", "true");
  // None at all: the first threshold needs one.
  await runtime.fill("");
  await charge.fill("");
  await onBattery.fill("");
  await form.getByTestId(`consolidate-save-${siteLabel}`).click();
  await expect(form.getByTestId("form-error")).toBeVisible();
  await expect(form).toContainText("Set at least one first threshold");

  // Good input: migrate, pve1 stays, runtime below 10 min or charge below 50 %.
  await form
    .getByLabel("At the first threshold, the guests of the nodes that go down are")
    .selectOption("migrate");
  await form.getByLabel("The node that stays up").selectOption("pve1");
  await runtime.fill("600");
  await charge.fill("50");
  await form.getByTestId(`consolidate-save-${siteLabel}`).click();
  await expect(form.getByTestId("consolidate-saved")).toBeVisible();
  await expect(runtime).not.toHaveAttribute("aria-invalid", "true");

  // The console checks against the cluster as it is now: the verdict shows on the card.
  const card = page.getByTestId(`cluster-${siteLabel}`);
  const check = card.getByTestId("consolidate-check");
  await expect(check).toHaveAttribute("data-verdict", "ok", { timeout: 30_000 });
  await expect(check).toContainText("stays up: pve1 (chosen by an admin)");
  await expect(check).toContainText("storage: every node reaches nfs-vm");

  // The plan preview: the cluster's sequence, and what its first stage will do.
  await page.goto("/power");
  const stage = page.getByTestId(`plan-consolidate-${siteLabel}`);
  await expect(stage).toContainText(
    "the guests of pve2, pve3 move to pve1 and those nodes go down",
  );
  await expect(stage).toContainText("runtime below 10 min 0 s, charge below 50 %");
  await expect(stage.getByTestId("consolidate-check")).toHaveAttribute("data-verdict", "ok");
});

test("with two clusters consolidating, every control on the page has an id of its own and each label names its own cluster's control", async ({
  page,
}) => {
  const otherLabel = label(HOSTS.other);
  await page.goto("/power/clusters");
  await choosePolicy(page, otherLabel, "consolidate", `consolidate-form-${otherLabel}`);
  await expect(page.locator("form[data-testid^='consolidate-form-']")).toHaveCount(2);
  const duplicates = await page.evaluate(() => {
    const ids = [...document.querySelectorAll("[id]")].map((el) => el.id);
    return ids.filter((id, i) => ids.indexOf(id) !== i);
  });
  expect(duplicates).toEqual([]);
  for (const testId of [
    `consolidate-form-${label(HOSTS.site)}`,
    `consolidate-form-${otherLabel}`,
  ]) {
    const outside = await page
      .getByTestId(testId)
      .evaluate((form) =>
        [...form.querySelectorAll("label[for]")]
          .filter((l) => !form.contains(document.getElementById(l.getAttribute("for")!)))
          .map((l) => l.textContent),
      );
    expect(outside, testId).toEqual([]);
  }
  // Each form's node that stays offers its own cluster's nodes.
  await expect(
    page
      .getByTestId(`consolidate-form-${otherLabel}`)
      .getByLabel("The node that stays up")
      .locator("option"),
  ).toHaveText(["the console's node (none chosen)", "pve1", "pve2"]);
});
