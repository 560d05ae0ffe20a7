import { EventEmitter } from "node:events";
import net from "node:net";
import type { WorkerEvents } from "graphile-worker";
import { afterAll, beforeAll, expect, it } from "vitest";
import { outagePipelines } from "@/test/fixtures/outage-pipelines";
import { registerTestDatabase } from "@/test/db";
import { startRun } from "@/lib/runs/start-run";
import { settled } from "@/test/runs";
import { startWorkerThroughDatabaseRestarts, type WorkerHandle } from "./runner";

/**
 * Found by the 30-minute soak with power (seed 134): a worker restarted during a database outage
 * waited for PostgreSQL, then PostgreSQL went away again while graphile-worker was still starting
 * ("could not start: terminating connection due to unexpected postmaster exit") and the worker
 * exited — three times in one run. Losing the database half-way through the start is the same
 * outage the worker rides out once running: it takes down what it had started and starts again.
 */

const database = registerTestDatabase();

/** A TCP path to the test database that the test cuts (every socket gone, new ones refused). */
function cuttableProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) return client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {});
    }
    client.pipe(upstream).pipe(client);
  });
  return {
    server,
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      cut = false;
    },
  };
}

let proxy: ReturnType<typeof cuttableProxy>;
let proxiedUrl: string;
let worker: WorkerHandle | null = null;

beforeAll(async () => {
  const target = new URL(database.url);
  proxy = cuttableProxy(target);
  await new Promise<void>((resolve) => proxy.server.listen(0, "127.0.0.1", resolve));
  const proxied = new URL(database.url);
  proxied.port = String((proxy.server.address() as net.AddressInfo).port);
  proxiedUrl = proxied.toString();
});
afterAll(async () => {
  await worker?.stop();
  proxy?.cut();
  await new Promise((resolve) => proxy?.server.close(resolve));
});

it("loses the database half-way through its start, starts again once it is back, and runs ticks", async () => {
  const events: WorkerEvents = new EventEmitter();
  const lines: string[] = [];
  let restored: Promise<void> | null = null;
  // The first worker pool exists: the database answered and graphile-worker is mid-start. Cut
  // it there (synchronously, so nothing of the start can slip through), bring it back later.
  events.once("pool:create", () => {
    proxy.cut();
    restored = new Promise((resolve) =>
      setTimeout(() => {
        proxy.restore();
        resolve();
      }, 3_000),
    );
  });

  worker = await startWorkerThroughDatabaseRestarts(
    {
      connectionString: proxiedUrl,
      pipelines: outagePipelines(),
      concurrency: 2,
      pollIntervalMs: 100,
      periodicChecks: false,
      events,
      log: (line) => lines.push(line),
      onUnexpectedStop: (reason) => lines.push(`UNEXPECTED STOP: ${reason}`),
    },
    200,
  );
  expect(restored).not.toBeNull();
  await restored;

  expect(lines.join("\n")).toMatch(/the database went away while starting \(.+\); starting again/);
  // What the first attempt had started was taken down as a deliberate stop, not reported as a
  // runner that ended by itself (which exits the worker process).
  expect(lines.filter((l) => l.startsWith("UNEXPECTED STOP"))).toEqual([]);

  const pipeline = outagePipelines()["test-quiet"]!;
  const runId = await database.db.transaction((tx) =>
    startRun(tx, { pipeline, hostId: null, actor: "test" }),
  );
  expect((await settled(database.db, runId)).status).toBe("succeeded");
}, 90_000);
