import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { and, eq, inArray, sql } from "drizzle-orm";
import { createDb, type Database } from "@/lib/db/client";
import { events, notificationDeliveries } from "@/lib/db/schema";
import { createTarget } from "@/lib/notify/targets";
import { TEMPLATE_CHECK_KINDS } from "@/lib/notify/template-check-events";
import { listHosts } from "@/lib/hosts/list-hosts";
import { LIVE_CHANNEL } from "@/lib/live/notify";
import { connectHost } from "@/lib/steps/onboarding/connect-host";
import { createApiToken } from "@/lib/steps/onboarding/create-api-token";
import { verifyVmTemplate } from "@/lib/steps/onboarding/verify-vm-template";
import { startLab, type LabNode } from "@/lab";
import { createTemplate } from "@/lab/pve/seed";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { labSession } from "@/lab/test-helpers";
import { createTestDatabase } from "@/test/db";
import {
  apiTestPipeline,
  hostRow,
  insertLabHost,
  publishTemplates,
  runToEnd,
} from "@/test/fixtures/api-steps";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { runVmTemplateCheck, VM_TEMPLATE_CHECK_TASK } from "./vm-template-check";

const onboard = apiTestPipeline("test-onboard-for-check", [
  connectHost,
  createApiToken,
  verifyVmTemplate,
]);

let db: Database;
let databaseUrl: string;
let worker: WorkerHandle;
let receiver: WebhookReceiver;
let cleanup: () => Promise<void>;
const nodes: LabNode[] = [];
const hostIds: string[] = [];

beforeAll(async () => {
  const database = await createTestDatabase();
  databaseUrl = database.url;
  const handle = createDb(database.url, 4);
  db = handle.db;
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [onboard.name]: onboard },
    concurrency: 2,
    pollIntervalMs: 200,
    engine: { backoffSeconds: () => 0.3, maxTransientErrors: 2 },
    log: () => {},
  });
  receiver = await startWebhookReceiver();
  cleanup = async () => {
    await worker.stop();
    await receiver.close();
    await Promise.all(nodes.map((node) => node.stop()));
    await handle.pool.end();
    await database.drop();
  };
  await publishTemplates(db, [9000]);
  // Every finding is delivered here by the worker's notify-deliver jobs.
  await createTarget(
    db,
    { name: "templates", format: "text", url: receiver.url("/templates"), minSeverity: "info" },
    { userId: null, name: "admin-test" },
  );
  for (const name of ["pve-a", "pve-b"]) {
    const node = await startLab({
      name,
      state: "onboarded",
      storage: "dir",
      timeScale: 0.01,
      pve: { templates: [9000], apiAuthFailureDelayMs: 50 },
    });
    nodes.push(node);
    const hostId = await insertLabHost(db, node);
    hostIds.push(hostId);
    // The run succeeding makes the host active: the check covers active hosts only.
    expect((await runToEnd(db, onboard, hostId)).status).toBe("succeeded");
  }
});
afterAll(() => cleanup());

describe("VmTemplateCheck (the periodic pre-sale check)", () => {
  it("active hosts carrying every required template are recorded as checked, unflagged", async () => {
    const results = await runVmTemplateCheck(db);
    expect([...results.keys()].sort()).toEqual([...hostIds].sort());
    for (const hostId of hostIds) {
      const host = await hostRow(db, hostId);
      expect(host.templateCheckFailure).toBeNull();
      expect(host.templateCheckedAt).not.toBeNull();
    }
  });

  it("flags a host whose template was destroyed, not one whose API is flapping ('could not check'); the UI hears of both", async () => {
    const [a, b] = nodes as [LabNode, LabNode];
    const [hostA, hostB] = hostIds as [string, string];
    const session = await labSession(a, { pinnedHostKey: a.ssh.hostKeySha256 });
    try {
      expect((await session.exec("qm destroy 9000 --purge")).code).toBe(0);
    } finally {
      session.close();
    }
    b.api.faults.vmList502 = true;

    const listener = new pg.Client({ connectionString: databaseUrl });
    await listener.connect();
    const heard: unknown[] = [];
    listener.on("notification", (n) => heard.push(JSON.parse(n.payload ?? "null")));
    await listener.query(`listen ${LIVE_CHANNEL}`);
    try {
      await runVmTemplateCheck(db);
      await waitFor("both notifications", async () => heard.length >= 2);
    } finally {
      await listener.end();
      b.api.faults.vmList502 = false;
    }
    expect(heard).toEqual(
      expect.arrayContaining([
        { type: "host", hostId: hostA },
        { type: "host", hostId: hostB },
      ]),
    );

    expect((await hostRow(db, hostA)).templateCheckFailure).toBe(
      "templates missing: VMID 9000 does not exist",
    );
    const flapping = (await hostRow(db, hostB)).templateCheckFailure!;
    expect(flapping).toMatch(/^could not check templates: .*502/);
    expect(flapping).not.toMatch(/missing|does not exist/);

    // The hosts list carries the flag for the UI.
    const summaries = await listHosts(db);
    expect(summaries.find((h) => h.id === hostA)!.templateCheck).toMatchObject({
      state: "missing",
    });
    expect(summaries.find((h) => h.id === hostB)!.templateCheck).toMatchObject({
      state: "unknown",
    });

    // Once the API answers again, B is checked and clean; A stays flagged.
    await runVmTemplateCheck(db);
    expect((await hostRow(db, hostB)).templateCheckFailure).toBeNull();
    expect((await hostRow(db, hostA)).templateCheckFailure).toMatch(/^templates missing/);
  });

  it("the worker runs the task (registered in its task list)", async () => {
    const before = (await hostRow(db, hostIds[1]!)).templateCheckedAt!;
    await db.execute(sql`select graphile_worker.add_job(${VM_TEMPLATE_CHECK_TASK}, '{}'::json)`);
    await waitFor("the queued check to run", async () => {
      const checkedAt = (await hostRow(db, hostIds[1]!)).templateCheckedAt!;
      return checkedAt > before;
    });
  });
});

describe("VmTemplateCheck's events (issue 15: template check found templates missing)", () => {
  /** Host A's template-check events and their deliveries, oldest first. */
  const templateEvents = (hostId: string) =>
    db
      .select({ kind: events.kind, message: events.message, delivery: notificationDeliveries })
      .from(events)
      .leftJoin(notificationDeliveries, eq(notificationDeliveries.runEventId, events.id))
      .where(
        and(
          eq(events.hostId, hostId),
          inArray(events.kind, [TEMPLATE_CHECK_KINDS.missing, TEMPLATE_CHECK_KINDS.back]),
        ),
      )
      .orderBy(events.id);

  it("templates removed: one event and one delivery, however often the check finds them still missing; none for a host it could not ask", async () => {
    // Host A's template was destroyed above and the check has run three times since.
    const [hostA, hostB] = hostIds as [string, string];
    await runVmTemplateCheck(db);
    const found = await templateEvents(hostA);
    expect(found.map((e) => [e.kind, e.delivery?.kind])).toEqual([
      ["template.missing", "template.missing"],
    ]);
    expect(found[0]!.message).toContain("VMID 9000 does not exist");
    expect(await templateEvents(hostB)).toEqual([]);

    const [sent] = await receiver.waitFor(1, { path: "/templates", timeoutMs: 20_000 });
    expect(sent!.body).toContain("[WARNING] Templates missing: ");
    expect(sent!.body).toContain("VMID 9000 does not exist");
    await runVmTemplateCheck(db);
    expect(await templateEvents(hostA)).toHaveLength(1);
    expect(receiver.received("/templates")).toHaveLength(1);
  });

  it("templates back: one recovery event, delivered once", async () => {
    const hostA = hostIds[0]!;
    const a = nodes[0]!;
    createTemplate(a.root, a.name, 9000);
    await runVmTemplateCheck(db);
    await runVmTemplateCheck(db);
    expect((await hostRow(db, hostA)).templateCheckFailure).toBeNull();
    expect((await templateEvents(hostA)).map((e) => [e.kind, e.delivery?.kind])).toEqual([
      ["template.missing", "template.missing"],
      ["template.back", "template.back"],
    ]);
    const received = await receiver.waitFor(2, { path: "/templates", timeoutMs: 20_000 });
    expect(received[1]!.body).toContain("[INFO] Templates back: ");
    expect(received[1]!.body).toContain("missing before: 9000");
  });
});
