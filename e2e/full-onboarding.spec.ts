import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { expect, test } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { addLabHost, base, expectNoReload, markNoReload } from "./support/console";

/**
 * Onboarding's acceptance goal: a fresh Debian 13 machine, add host, watch, active — without a
 * single manual step. The lab node starts as plain Debian 13 (no Proxmox), on compressed time;
 * the catalog requires one template, so the whole chain runs, BuildVmTemplate included.
 */

const slug = `e2e-full-${Date.now().toString(36)}`;
const VMID = 9100;
let node: LabNode | undefined;

test.afterAll(async () => {
  await node?.stop();
  // This spec's published version must not stay required for the other specs' hosts.
  const client = new pg.Client({ connectionString: process.env.E2E_DATABASE_URL });
  await client.connect();
  try {
    await client.query(
      "delete from plan_versions where plan_id in (select id from plans where slug = $1)",
      [slug],
    );
    await client.query("delete from plans where slug = $1", [slug]);
  } finally {
    await client.end();
  }
});

test("a fresh Debian 13 machine becomes an active Proxmox host with its template, no manual step", async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  const plan = await page.request.post(`${base()}/api/catalog/plans`, {
    data: { slug, name: "E2E full onboarding" },
  });
  expect(plan.status()).toBe(201);
  const { planId } = (await plan.json()) as { planId: string };
  const version = await page.request.post(`${base()}/api/catalog/plans/${planId}/versions`, {
    data: { templateVmid: VMID, cores: 2, memoryMib: 2048, diskGib: 20 },
  });
  expect(version.status()).toBe(201);
  const { planVersionId } = (await version.json()) as { planVersionId: string };
  expect(
    (await page.request.post(`${base()}/api/catalog/versions/${planVersionId}/publish`)).status(),
  ).toBe(200);

  node = await startLab({ timeScale: 0.01, rebootMs: 20_000 });
  await addLabHost(page, "pve-fresh", node);
  await markNoReload(page);

  // The phase line follows the long steps live (apt progress, the template build's phases).
  await expect(page.getByTestId("step-BuildVmTemplate").getByTestId("step-state")).toContainText(
    /running|done/i,
    {
      timeout: 240_000,
    },
  );
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 240_000,
  });
  for (const step of [
    "ConnectHost",
    "CheckOperatingSystem",
    "PrepareHostname",
    "InstallProxmoxRepository",
    "InstallProxmoxKernel",
    "RebootIntoPveKernel",
    "InstallProxmoxVe",
    "ConfigureProxmox",
    "CreateApiToken",
    "VerifyProxmoxApi",
    "BuildVmTemplate",
    "VerifyVmTemplate",
    "RegisterCapacity",
  ]) {
    await expect(page.getByTestId(`step-${step}`).getByTestId("step-state")).toContainText(/done/i);
  }
  await expectNoReload(page);

  // The host really is what the console says: Proxmox kernel, the template with a base- disk.
  expect(fs.readFileSync(path.join(node.root, ".lab/kernel"), "utf8")).toMatch(/-pve/);
  const conf = fs.readFileSync(path.join(node.root, `etc/pve/qemu-server/${VMID}.conf`), "utf8");
  expect(conf).toMatch(/^template: 1$/m);
  expect(conf).toMatch(/^scsi0: [^,\n]*base-/m);

  const shot = testInfo.outputPath("full-onboarding.png");
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach("fresh host onboarded", { path: shot, contentType: "image/png" });
  fs.mkdirSync(path.join("test-results", "screenshots"), { recursive: true });
  fs.copyFileSync(shot, path.join("test-results", "screenshots", "full-onboarding.png"));
});
