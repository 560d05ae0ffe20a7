import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startLab, type LabNode } from "../index";
import { labExec, labExecOk } from "../test-helpers";
import { LAB_SHOP_INVALID_MESSAGE, LAB_SHOP_UNREACHABLE, LAB_SUBSCRIPTIONS } from "./subscription";
import { apiGet, apiPut, tokenAuth } from "./test-helpers";

/**
 * The lab's subscription (lab/pve/subscription.ts) as pve-manager's PVE::API2::Subscription
 * answers it, and the enterprise repository that lets in only an active subscription.
 */

const VALID = Object.keys(LAB_SUBSCRIPTIONS)[0]!;
const ENTERPRISE =
  "Types: deb\nURIs: https://enterprise.proxmox.com/debian/pve\nSuites: trixie\nComponents: pve-enterprise\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n";

let lab: LabNode;
beforeAll(async () => {
  lab = await startLab({ state: "onboarded", timeScale: 0.01 });
}, 60_000);
afterAll(async () => {
  await lab?.stop();
});

async function subscription(): Promise<Record<string, unknown>> {
  return JSON.parse(
    await labExecOk(lab, "pvesh get /nodes/pve1/subscription --output-format json"),
  ) as Record<string, unknown>;
}

describe("a lab node's subscription", () => {
  it("reads notfound without a key, and refuses a malformed key with Proxmox's parameter error", async () => {
    expect(await subscription()).toMatchObject({
      status: "notfound",
      message: "There is no subscription key",
    });
    const bad = await labExec(lab, "pvesh set /nodes/pve1/subscription --key pve3c-0123456789");
    expect(bad.code).toBe(255);
    expect(bad.stderr).toContain("key: value does not match the regex pattern");
    expect(fs.existsSync(path.join(lab.root, "etc/subscription"))).toBe(false);
  });

  it("the console's token may read but not set it (Sys.Modify)", async () => {
    const auth = tokenAuth(lab.pve.token!);
    const put = await apiPut(lab, "/nodes/pve1/subscription", auth, { key: VALID });
    expect(put.status).toBe(403);
    expect(put.statusMessage).toContain("Sys.Modify");
    const get = await apiGet(lab, "/nodes/pve1/subscription", auth);
    expect(get.status).toBe(200);
    expect((get.json?.data as { status: string }).status).toBe("notfound");
  });

  it("without network (debian.aptNetworkDown) the shop is not reached: pvesh set fails, the key stays new", async () => {
    lab.setDebianFaults({ aptNetworkDown: true });
    try {
      const set = await labExec(lab, `pvesh set /nodes/pve1/subscription --key ${VALID}`);
      expect(set.code).toBe(255);
      expect(set.stderr).toContain(LAB_SHOP_UNREACHABLE);
      expect(await subscription()).toMatchObject({ status: "new", key: VALID });
    } finally {
      lab.setDebianFaults({ aptNetworkDown: false });
    }
  });

  it("an unknown key is stored as invalid with the shop's message; enterprise answers 401", async () => {
    await labExecOk(lab, "pvesh set /nodes/pve1/subscription --key pve2c-00000000ff");
    expect(await subscription()).toMatchObject({
      status: "invalid",
      key: "pve2c-00000000ff",
      message: LAB_SHOP_INVALID_MESSAGE,
    });
    fs.writeFileSync(
      path.join(lab.root, "etc/apt/sources.list.d/pve-enterprise.sources"),
      ENTERPRISE,
    );
    const update = await labExec(lab, "apt-get update --error-on=any");
    expect(update.code).toBe(100);
    expect(update.stderr).toContain(
      "Failed to fetch https://enterprise.proxmox.com/debian/pve/dists/trixie/InRelease  401  Unauthorized",
    );
  });

  it("a key the shop sold is active with level, product and due date; enterprise then answers", async () => {
    await labExecOk(lab, `pvesh set /nodes/pve1/subscription --key ' ${VALID} '`);
    const info = await subscription();
    expect(info).toMatchObject({
      status: "active",
      key: VALID,
      level: VALID[4],
      productname: LAB_SUBSCRIPTIONS[VALID]!.productname,
      nextduedate: LAB_SUBSCRIPTIONS[VALID]!.nextduedate,
    });
    expect(fs.readFileSync(path.join(lab.root, "etc/apt/auth.conf.d/pve.conf"), "utf8")).toContain(
      `machine enterprise.proxmox.com/debian/pve\n login ${VALID}\n password ${String(info.serverid)}`,
    );
    const update = await labExec(lab, "apt-get update --error-on=any");
    expect(update.code).toBe(0);
    expect(update.stdout).toContain(
      "https://enterprise.proxmox.com/debian/pve trixie/pve-enterprise amd64 Packages",
    );
  });
});
