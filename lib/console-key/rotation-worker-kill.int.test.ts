import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";

import { startLab, type LabNode } from "@/lab";
import { createDb, type Database } from "@/lib/db/client";
import { consoleKeyRotationHosts, hosts } from "@/lib/db/schema";
import { connectSsh } from "@/lib/ssh";
import { loadAuth } from "@/lib/steps/onboarding/services";
import { createTestDatabase } from "@/test/db";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";

import { createHostCredential } from "@/lib/host-access/host-credential";
import { startRotation } from "./rotation/start-rotation";
import { consoleKeyPrivate, ensureConsoleKey } from "@/lib/host-access/console-key-store";
import { labNodeAccepts } from "@/test/lab-login";
import { insertPinnedLabHost } from "@/test/pinned-lab-host";

// kill -9 of the worker in the middle of a rotation: at that moment every host must still let
// the console in with the key the database records for it, and a new worker must finish the
// rotation correctly.
let db: Database;
let url: string;
let cleanup: () => Promise<void>;
const nodes: LabNode[] = [];
const workers: Array<{ pid: number; output: () => string; stop(): Promise<void> }> = [];
const hostIds: string[] = [];

beforeAll(async () => {
  const database = await createTestDatabase();
  url = database.url;
  const handle = createDb(url, 4);
  db = handle.db;
  cleanup = async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(nodes.map((n) => n.stop()));
    await handle.pool.end();
    await database.drop();
  };
  const key = await ensureConsoleKey(db);
  for (let i = 0; i < 5; i += 1) {
    const node = await startLab({
      name: `kill${i}`,
      authorizedKeys: [key.publicKey],
      passwordAuthentication: false,
    });
    nodes.push(node);
    const credentialId = await db.transaction((tx) =>
      createHostCredential(tx, { authMethod: "console_key" }),
    );
    hostIds.push(await insertPinnedLabHost(db, node, { name: `kill${i}`, credentialId }));
  }
}, 120_000);
afterAll(() => cleanup());

function spawnRotationWorker() {
  const root = path.resolve(import.meta.dirname, "../..");
  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/rotation-worker.ts"], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const worker = {
    child,
    pid: child.pid!,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
      }),
  };
  workers.push(worker);
  return worker;
}

/** Logs in to every host with the key the database records for it (host key pinned). */
async function everyHostReachable(): Promise<boolean[]> {
  return Promise.all(
    nodes.map(async (node, i) => {
      const [host] = await db.select().from(hosts).where(eq(hosts.id, hostIds[i]!));
      return labNodeAccepts(node, await loadAuth(db, host!.credentialId), host!.hostKeySha256!);
    }),
  );
}

it("kill -9 of the worker mid-rotation leaves every host reachable; a new worker finishes it", async () => {
  const first = spawnRotationWorker();
  await waitFor("the first worker to start", async () => /ready \d+/.test(first.output()));
  const oldKey = await ensureConsoleKey(db);
  const oldPrivate = await consoleKeyPrivate(db, oldKey.id);
  const started = await startRotation(db, { name: "test" });
  const outcomes = () =>
    db
      .select()
      .from(consoleKeyRotationHosts)
      .where(eq(consoleKeyRotationHosts.rotationId, started.rotationId));
  // Kill inside a host's switch: its authorized_keys holds the old and the new key (appended,
  // not yet proven or not yet cleaned up), after at least one host was fully switched.
  const consoleLines = async (node: LabNode) =>
    (await readFile(node.authorizedKeysPath, "utf8"))
      .split("\n")
      .filter((line) => line.includes("clupilot-console@")).length;
  const midSwitch = await waitFor(
    "a host in the middle of its switch",
    async () => {
      if (!(await outcomes()).some((o) => o.outcome === "switched")) return null;
      for (const node of nodes) if ((await consoleLines(node)) === 2) return node;
      return null;
    },
    60_000,
    2,
  );
  process.kill(first.pid, "SIGKILL");
  await new Promise((resolve) => first.child.once("exit", resolve));
  const atKill = await outcomes();
  expect(atKill.filter((o) => o.outcome === "pending").length).toBeGreaterThan(0);
  expect(await consoleLines(midSwitch)).toBeGreaterThanOrEqual(1);
  expect(await everyHostReachable()).toEqual(Array(5).fill(true));

  spawnRotationWorker();
  const run = await settled(db, started.runId, 90_000);
  expect(run.status).toBe("succeeded");
  expect((await outcomes()).map((o) => o.outcome)).toEqual(Array(5).fill("switched"));
  expect(await everyHostReachable()).toEqual(Array(5).fill(true));
  const newPrivate = await consoleKeyPrivate(db, started.toKeyId);
  for (const node of nodes) {
    const lines = (await readFile(node.authorizedKeysPath, "utf8")).split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("clupilot-console@");
    const login = (privateKey: string) =>
      connectSsh({
        host: node.ssh.host,
        port: node.ssh.port,
        username: node.ssh.username,
        auth: { kind: "private_key", privateKey },
        pinnedHostKey: node.ssh.hostKeySha256,
        readyTimeoutMs: 5000,
      }).then(
        (session) => (session.close(), true),
        () => false,
      );
    expect(await login(newPrivate)).toBe(true);
    expect(await login(oldPrivate)).toBe(false);
  }
}, 180_000);
