import { CONSOLE_PRIVILEGE_NAMES, CONSOLE_TOKEN_ID } from "@/lib/proxmox/console-identity";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import type { LabNode, StartLabOptions } from "@/lab";
import { parseUserCfg } from "@/lab/pve/access";
import {
  apiTestPipeline,
  hostRow,
  insertLabHost,
  onNode,
  runToEnd,
} from "@/test/fixtures/api-steps";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostTokenSecret, runLogText } from "@/test/runs";
import { connectHost } from "./connect-host";
import { createApiToken } from "./create-api-token";
import { registerCapacity } from "./register-capacity";
import { verifyProxmoxApi } from "./verify-proxmox-api";
import { verifyVmTemplate } from "./verify-vm-template";

const onboard = apiTestPipeline("test-api-steps", [
  connectHost,
  createApiToken,
  verifyProxmoxApi,
  verifyVmTemplate,
  registerCapacity,
]);
const tokenOnly = apiTestPipeline("test-create-api-token", [connectHost, createApiToken]);
const verifyOnly = apiTestPipeline("test-verify-proxmox-api", [verifyProxmoxApi]);
const capacityOnly = apiTestPipeline("test-register-capacity", [registerCapacity]);

let db: Database;
let harness: StepHarness;

beforeAll(async () => {
  harness = await startStepHarness({
    pipelines: Object.fromEntries(
      [onboard, tokenOnly, verifyOnly, capacityOnly].map((p) => [p.name, p]),
    ),
    worker: { concurrency: 2, engine: { backoffSeconds: () => 0.3, maxTransientErrors: 2 } },
    // A short 401 delay: refused tokens are part of these tests.
    lab: { timeScale: 0.01, pve: { apiAuthFailureDelayMs: 50 } },
  });
  db = harness.db;
});
afterAll(() => harness.stop());

const lab = (options?: StartLabOptions) => harness.lab(options);

const userCfg = (node: LabNode) =>
  fs.readFileSync(path.join(node.root, "etc/pve/user.cfg"), "utf8");
const tokenCfg = (node: LabNode) =>
  fs.readFileSync(path.join(node.root, "etc/pve/priv/token.cfg"), "utf8");

const storedSecret = (hostId: string) => hostTokenSecret(db, hostId);

describe("CreateApiToken → VerifyProxmoxApi → VerifyVmTemplate → RegisterCapacity on a 'proxmox' node", () => {
  let node: LabNode;
  let hostId: string;

  beforeAll(async () => {
    node = await lab({ state: "proxmox", storage: "dir" });
    hostId = await insertLabHost(db, node);
  });

  it("creates user, role with exactly the console's privileges, a separated token and both ACLs on /; pins the served certificate; ends with capacity matching the lab", async () => {
    const run = await runToEnd(db, onboard, hostId);
    expect(run).toMatchObject({ status: "succeeded", currentStep: "RegisterCapacity" });

    const cfg = parseUserCfg(userCfg(node));
    expect(cfg.users.map((u) => u.userid)).toContain("clupilot@pve");
    expect([...cfg.roles.get("CluPilot")!].sort()).toEqual([...CONSOLE_PRIVILEGE_NAMES].sort());
    expect(cfg.tokens).toContainEqual(
      expect.objectContaining({ id: CONSOLE_TOKEN_ID, privsep: true }),
    );
    for (const ugid of ["clupilot@pve", CONSOLE_TOKEN_ID]) {
      expect(cfg.acls).toContainEqual(
        expect.objectContaining({
          path: "/",
          ugids: expect.arrayContaining([ugid]),
          roles: ["CluPilot"],
          propagate: true,
        }),
      );
    }

    const host = await hostRow(db, hostId);
    expect(host).toMatchObject({
      nodeName: "pve1",
      apiCertSha256: node.api.certSha256,
      apiTokenId: CONSOLE_TOKEN_ID,
    });
    // The stored (sealed) secret is the one Proxmox holds, and it is nowhere in the run log.
    const secret = await storedSecret(hostId);
    expect(tokenCfg(node)).toContain(`${CONSOLE_TOKEN_ID} ${secret}`);
    expect(await runLogText(db, run.id)).not.toContain(secret);

    // Capacity as the lab's API reports it: its machine's CPUs and memory, `local`'s filesystem.
    const st = fs.statfsSync(node.root);
    expect(host).toMatchObject({
      capacityCores: os.cpus().length,
      capacityMemoryMib: Math.floor(os.totalmem() / 1024 ** 2),
      capacityImageStorageGib: Math.floor((st.blocks * st.bsize) / 1024 ** 3),
    });
    expect(host.capacityRegisteredAt).not.toBeNull();
  });

  it("a second run leaves user, role, ACLs and token untouched", async () => {
    const before = { user: userCfg(node), token: tokenCfg(node) };
    const credentialBefore = (await hostRow(db, hostId)).apiTokenCredentialId;
    const commandsBefore = node.commands.length;
    const run = await runToEnd(db, tokenOnly, hostId);
    expect(run.status).toBe("succeeded");
    expect({ user: userCfg(node), token: tokenCfg(node) }).toEqual(before);
    expect((await hostRow(db, hostId)).apiTokenCredentialId).toBe(credentialBefore);
    const sent = node.commands.slice(commandsBefore).map((c) => c.command);
    expect(sent.some((c) => /token (add|remove)|role (add|modify)|acl modify/.test(c))).toBe(false);
  });

  it("a token whose secret the console lost is rotated (remove + add), and the new secret works", async () => {
    const oldSecret = await storedSecret(hostId);
    await db
      .update(hosts)
      .set({ apiTokenId: null, apiTokenCredentialId: null })
      .where(eq(hosts.id, hostId));
    const run = await runToEnd(db, onboard, hostId);
    expect(run.status).toBe("succeeded");
    const secret = await storedSecret(hostId);
    expect(secret).not.toBe(oldSecret);
    expect(tokenCfg(node)).toContain(`${CONSOLE_TOKEN_ID} ${secret}`);
    expect(tokenCfg(node)).not.toContain(oldSecret);
  });

  it("a secret the API refuses (token recreated behind the console's back) is rotated", async () => {
    onNode(node, "pveum", ["user", "token", "remove", "clupilot@pve", "console"]);
    onNode(node, "pveum", ["user", "token", "add", "clupilot@pve", "console", "--privsep", "1"]);
    const run = await runToEnd(db, onboard, hostId);
    expect(run.status).toBe("succeeded");
    expect(tokenCfg(node)).toContain(`${CONSOLE_TOKEN_ID} ${await storedSecret(hostId)}`);
  });

  it("VerifyProxmoxApi: a token without its own ACL (the privilege-separation trap) fails naming the privileges", async () => {
    onNode(node, "pveum", [
      "acl",
      "delete",
      "/",
      "--tokens",
      CONSOLE_TOKEN_ID,
      "--roles",
      "CluPilot",
    ]);
    const run = await runToEnd(db, verifyOnly, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "VerifyProxmoxApi", errorCount: 0 });
    expect(run.failureReason).toContain("lacks VM.Audit on /vms (template checks");
    expect(run.failureReason).toContain("Sys.Audit on /nodes/pve1");
    expect(run.failureReason).toContain("privilege separation");
    // CreateApiToken puts the token's ACL back; then the check passes.
    expect((await runToEnd(db, tokenOnly, hostId)).status).toBe("succeeded");
    expect((await runToEnd(db, verifyOnly, hostId)).status).toBe("succeeded");
  });

  it("VerifyProxmoxApi: a node name that differs in case fails", async () => {
    await db.update(hosts).set({ nodeName: "PVE1" }).where(eq(hosts.id, hostId));
    const run = await runToEnd(db, verifyOnly, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "VerifyProxmoxApi" });
    expect(run.failureReason).toMatch(/differs in case.*"PVE1".*"pve1"/);
    await db.update(hosts).set({ nodeName: "pve1" }).where(eq(hosts.id, hostId));
  });

  it("VerifyProxmoxApi: a certificate that is not the pinned one fails before the token is sent", async () => {
    const pinned = (await hostRow(db, hostId)).apiCertSha256!;
    const other = "AB:".repeat(31) + "AB";
    await db.update(hosts).set({ apiCertSha256: other }).where(eq(hosts.id, hostId));
    const requestsBefore = node.api.requests.length;
    const run = await runToEnd(db, verifyOnly, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "VerifyProxmoxApi", errorCount: 0 });
    expect(run.failureReason).toContain(`pinned ${other}, offered ${node.api.certSha256}`);
    expect(node.api.requests.length).toBe(requestsBefore);
    await db.update(hosts).set({ apiCertSha256: pinned }).where(eq(hosts.id, hostId));
  });
});

describe("RegisterCapacity", () => {
  it("a host whose only storage does not take disk images has capacity 0 and fails, saying what to fix", async () => {
    const node = await lab({ state: "proxmox", storage: "dir-no-images" });
    const hostId = await insertLabHost(db, node);
    expect((await runToEnd(db, tokenOnly, hostId)).status).toBe("succeeded");
    const run = await runToEnd(db, capacityOnly, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "RegisterCapacity" });
    expect(run.failureReason).toMatch(/no storage on pve1 accepts disk images.*pvesm set local/);
    expect((await hostRow(db, hostId)).capacityImageStorageGib).toBe(0);
  });
});
