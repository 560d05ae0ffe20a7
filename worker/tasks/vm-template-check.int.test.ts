import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { sql } from "drizzle-orm";
import { createDb, type Database } from "@/lib/db/client";
import { listHosts } from "@/lib/hosts/list-hosts";
import { LIVE_CHANNEL } from "@/lib/pipeline/schedule";
import { connectHost } from "@/lib/steps/host/connect-host";
import { createApiToken } from "@/lib/steps/host/create-api-token";
import { verifyVmTemplate } from "@/lib/steps/host/verify-vm-template";
import { startLab, type LabNode } from "@/lab";
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
  cleanup = async () => {
    await worker.stop();
    await Promise.all(nodes.map((node) => node.stop()));
    await handle.pool.end();
    await database.drop();
  };
  await publishTemplates(db, [9000]);
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
