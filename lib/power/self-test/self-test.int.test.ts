import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hosts, powerEvents } from "@/lib/db/schema";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import type { LabNode } from "@/lab";
import { startLabPbs, type LabPbs } from "@/lab/pbs/server";
import { startUpsdPeer, upsdAvailable, type UpsdPeer } from "@/lab/ups/upsd-peer";
import { registerTestDatabase } from "@/test/db";
import { onNode } from "@/test/fixtures/api-steps";
import {
  addUps,
  ADMIN,
  onboardedLabNode,
  persistReading,
  powerTestPipelines,
  protectHost,
  protectPbs,
} from "@/test/fixtures/power";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { readSelfTestOverview } from "./latest-self-test";
import { runSelfTest } from "./run-self-test";
import type { SelfTestCheck } from "./verdict";

const database = registerTestDatabase(6);
const TOKEN = "clupilot@pve!console";
let worker: WorkerHandle;
let upsd: UpsdPeer;
let pbs: LabPbs;
const nodes = {} as Record<"a" | "b", LabNode>;
const hostIds = {} as Record<"a" | "b", string>;
/** The hosts' names in the console (what each check is about), not their node names. */
const names = {} as Record<"a" | "b", string>;
let upsId: string;

const ONLINE = { "ups.status": "OL", "battery.charge": "100", "battery.runtime": "1800" };

beforeAll(async () => {
  const { db, url } = database;
  worker = await startWorker({
    connectionString: url,
    pipelines: powerTestPipelines,
    concurrency: 2,
    pollIntervalMs: 200,
    periodicChecks: false,
    log: () => {},
  });
  if (!upsdAvailable())
    throw new Error("install Debian's nut-server: the self-test asks a real upsd");
  upsd = await startUpsdPeer({ ups: [{ name: "selftest", vars: ONLINE }] });
  upsId = await addUps(db, "ups-selftest", {
    type: "nut",
    host: "127.0.0.1",
    port: upsd.port,
    upsName: "selftest",
  });
  for (const key of ["a", "b"] as const) {
    const { node, hostId } = await onboardedLabNode(db, `pve-${key}`);
    nodes[key] = node;
    hostIds[key] = hostId;
    names[key] = (
      await db.select({ name: hosts.name }).from(hosts).where(eq(hosts.id, hostId))
    )[0]!.name;
    await protectHost(db, hostId, { feeds: [upsId] });
  }
  // The monitor's last reading on mains: what the budget is compared with (1200 s runtime).
  await persistReading(db, upsId, false);
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([nodes.a?.stop(), nodes.b?.stop(), upsd?.stop(), pbs?.stop()]);
});

const checkOf = (checks: SelfTestCheck[], key: string, subject: string) => {
  const found = checks.find((c) => c.key.startsWith(`${key}:`) && c.subject === subject);
  if (!found)
    throw new Error(`no ${key} check of ${subject} in ${JSON.stringify(checks, null, 1)}`);
  return found;
};

async function selfTest() {
  return runSelfTest(database.db, { occasion: "button", requestedBy: "test", timeoutMs: 3000 });
}

describe("the power self-test", () => {
  it("passes a healthy path: tokens answer, names and addresses match, privileges held, UPS plausible, budget within the reserve", async () => {
    const result = await selfTest();
    expect(result.checks.filter((c) => c.verdict !== "ok")).toEqual([]);
    expect(result.verdict).toBe("ok");
    expect(checkOf(result.checks, "token", names.a).reason).toContain(
      "answers at https://127.0.0.1:",
    );
    expect(checkOf(result.checks, "privileges", names.a).reason).toContain(
      "Sys.PowerMgmt on /nodes/pve-a",
    );
    expect(checkOf(result.checks, "ups", "ups-selftest").reason).toContain("status OL");
    expect(checkOf(result.checks, "budget", "ups-selftest").reason).toContain("OK");
    // The dashboard reads it back.
    expect((await readSelfTestOverview(database.db)).latest?.id).toBe(result.id);
  });

  it("a token without Sys.PowerMgmt fails, naming the privilege and what it is for; a failed self-test is an event once", async () => {
    const role = onNode(nodes.a, "pveum", ["role", "list", "--output-format", "json"]);
    const privs = (JSON.parse(role) as { roleid: string; privs: string }[])
      .find((r) => r.roleid === "CluPilot")!
      .privs.split(",");
    onNode(nodes.a, "pveum", [
      "role",
      "modify",
      "CluPilot",
      "--privs",
      privs.filter((p) => p !== "Sys.PowerMgmt").join(","),
    ]);
    const eventsBefore = await database.db
      .select()
      .from(powerEvents)
      .where(eq(powerEvents.kind, "self-test.failed"));
    try {
      const result = await selfTest();
      const check = checkOf(result.checks, "privileges", names.a);
      expect(check.verdict).toBe("failed");
      expect(check.reason).toContain(
        `Token ${TOKEN} lacks Sys.PowerMgmt on /nodes/pve-a (power: shut the node down`,
      );
      expect(check.reason).toContain("Its user clupilot@pve lacks them too");
      expect(check.next).toContain("pveum acl modify /");
      expect(checkOf(result.checks, "privileges", names.b).verdict).toBe("ok");
      expect(result.verdict).toBe("failed");

      const again = await selfTest();
      expect(again.verdict).toBe("failed");
      const events = await database.db
        .select()
        .from(powerEvents)
        .where(eq(powerEvents.kind, "self-test.failed"))
        .orderBy(asc(powerEvents.id));
      // Recorded for the new failure, not again for the same one an hour later.
      expect(events).toHaveLength(eventsBefore.length + 1);
      expect(events.at(-1)!.message).toContain(
        `${names.a}: the token holds the privileges power needs`,
      );
      expect(events.at(-1)!.data).toMatchObject({ selfTestId: result.id });
    } finally {
      onNode(nodes.a, "pveum", ["role", "modify", "CluPilot", "--privs", privs.join(",")]);
    }
  });

  it("a separated token whose user holds the privilege names the privilege-separation trap", async () => {
    onNode(nodes.a, "pveum", ["acl", "delete", "/", "--tokens", TOKEN, "--roles", "CluPilot"]);
    try {
      const result = await selfTest();
      const check = checkOf(result.checks, "privileges", names.a);
      expect(check.verdict).toBe("failed");
      expect(check.reason).toContain(
        "Its user clupilot@pve holds Sys.PowerMgmt, the token does not",
      );
      expect(check.reason).toContain("privilege-separation trap");
    } finally {
      onNode(nodes.a, "pveum", ["acl", "modify", "/", "--tokens", TOKEN, "--roles", "CluPilot"]);
    }
  });

  it("a node name with a domain suffix fails the name check; the address still answers as that node", async () => {
    await database.db
      .update(hosts)
      .set({ nodeName: "pve-a.lab.example" })
      .where(eq(hosts.id, hostIds.a));
    try {
      const result = await selfTest();
      const name = checkOf(result.checks, "node-name", names.a);
      expect(name.verdict).toBe("failed");
      expect(name.reason).toContain('carries a domain suffix; Proxmox calls the node "pve-a"');
      expect(checkOf(result.checks, "node-identity", names.a).verdict).toBe("ok");
    } finally {
      await database.db.update(hosts).set({ nodeName: "pve-a" }).where(eq(hosts.id, hostIds.a));
    }
  });

  it("an address answering as another node is flagged (two lab nodes' API access swapped)", async () => {
    const access = async (id: string) =>
      (
        await database.db
          .select({
            apiPort: hosts.apiPort,
            apiCertSha256: hosts.apiCertSha256,
            apiTokenCredentialId: hosts.apiTokenCredentialId,
          })
          .from(hosts)
          .where(eq(hosts.id, id))
      )[0]!;
    const [a, b] = [await access(hostIds.a), await access(hostIds.b)];
    await database.db.update(hosts).set(b).where(eq(hosts.id, hostIds.a));
    await database.db.update(hosts).set(a).where(eq(hosts.id, hostIds.b));
    try {
      const result = await selfTest();
      const identity = checkOf(result.checks, "node-identity", names.a);
      expect(identity.verdict).toBe("failed");
      expect(identity.reason).toContain("answers as node pve-b, not pve-a");
      expect(checkOf(result.checks, "node-identity", names.b).reason).toContain(
        "answers as node pve-a, not pve-b",
      );
    } finally {
      await database.db.update(hosts).set(a).where(eq(hosts.id, hostIds.a));
      await database.db.update(hosts).set(b).where(eq(hosts.id, hostIds.b));
    }
  });

  it("a shutdown budget longer than the battery's runtime reserve fails", async () => {
    await updatePowerSettings(database.db, { shutdown: { targetDownSeconds: 3600 } }, ADMIN);
    try {
      const check = checkOf((await selfTest()).checks, "budget", "ups-selftest");
      expect(check.verdict).toBe("failed");
      expect(check.reason).toMatch(/TOO SHORT by \d+ min/);
      expect(check.reason).toMatch(/the battery runs out \d+ min before every target is down/);
    } finally {
      await updatePowerSettings(database.db, { shutdown: { targetDownSeconds: 180 } }, ADMIN);
    }
  });

  it("a UPS answering nonsense fails: an unknown status, or no runtime on mains", async () => {
    try {
      await upsd.setVars("selftest", { ...ONLINE, "ups.status": "BOGUS" });
      await expect
        .poll(async () => checkOf((await selfTest()).checks, "ups", "ups-selftest").reason, {
          timeout: 15_000,
        })
        .toContain("neither OL nor OB");

      await upsd.setVars("selftest", { ...ONLINE, "battery.runtime": "0" });
      await expect
        .poll(async () => checkOf((await selfTest()).checks, "ups", "ups-selftest"), {
          timeout: 15_000,
        })
        .toMatchObject({
          verdict: "failed",
          reason: expect.stringContaining("no runtime left while on mains"),
        });
    } finally {
      await upsd.setVars("selftest", ONLINE);
    }
  });

  it("a check that could not ask is 'could not check', never ok (a backup server without a permissions answer)", async () => {
    pbs = await startLabPbs({ name: "pbs-selftest" });
    await protectPbs(database.db, pbs, { feeds: [upsId] });
    const result = await selfTest();
    expect(checkOf(result.checks, "token", "pbs-selftest").verdict).toBe("ok");
    const privileges = checkOf(result.checks, "privileges", "pbs-selftest");
    expect(privileges.verdict).toBe("could-not-check");
    expect(privileges.reason).toContain(
      "GET /access/permissions?path=/system/status was not answered",
    );
    expect(result.verdict).not.toBe("ok");
  });

  it("does not run during an outage: it is stored as skipped with the reason", async () => {
    await persistReading(database.db, upsId, true);
    try {
      const requestsBefore = nodes.a.api.requests.length;
      const result = await selfTest();
      expect(result.verdict).toBeNull();
      expect(result.skippedReason).toContain("UPS ups-selftest is on battery");
      expect(nodes.a.api.requests.length).toBe(requestsBefore);
      const overview = await readSelfTestOverview(database.db);
      expect(overview.skippedSince?.reason).toContain("does not run during an outage");
      expect(overview.latest?.verdict).not.toBeNull();
    } finally {
      await persistReading(database.db, upsId, false);
    }
  });
});
