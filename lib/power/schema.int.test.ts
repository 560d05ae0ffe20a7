import { describe, expect, it } from "vitest";
import { credentials, hosts, powerShutdownCalls, powerTargets, runs } from "@/lib/db/schema";
import { seal } from "@/lib/secrets/seal";
import { registerTestDatabase } from "@/test/db";

const database = registerTestDatabase();

let counter = 0;
async function insertHost(): Promise<string> {
  const { db } = database;
  const [credential] = await db
    .insert(credentials)
    .values({ kind: "password", sealed: seal(JSON.stringify({ password: "x" })) })
    .returning({ id: credentials.id });
  const [host] = await db
    .insert(hosts)
    .values({
      name: `schema-${++counter}`,
      address: "127.0.0.1",
      sshUser: "root",
      credentialId: credential!.id,
    })
    .returning({ id: hosts.id });
  return host!.id;
}

async function pveTarget(runsConsole = false): Promise<string> {
  const [target] = await database.db
    .insert(powerTargets)
    .values({ kind: "pve-node", hostId: await insertHost(), feedPolicy: "any", runsConsole })
    .returning({ id: powerTargets.id });
  return target!.id;
}

function rootCause(error: unknown): string {
  let current = error as { cause?: unknown; message?: string };
  while (current.cause) current = current.cause as typeof current;
  return current.message ?? "";
}

describe("the power schema", () => {
  it("refuses a second host marked as the one the console runs on", async () => {
    await pveTarget(true);
    const second = pveTarget(true).catch((error: unknown) => rootCause(error));
    expect(await second).toMatch(/power_targets_one_console_host/);
  });

  it("refuses a PBS target without its address, token and certificate pin", async () => {
    const attempt = database.db
      .insert(powerTargets)
      .values({ kind: "pbs", name: "pbs-incomplete", address: "127.0.0.1", feedPolicy: "all" })
      .catch((error: unknown) => rootCause(error));
    expect(await attempt).toMatch(/power_targets_kind_fields/);
  });

  it("holds one call per target per outage in flight or accepted, however many runs try; failed and dry-run rows do not count", async () => {
    const { db } = database;
    const targetId = await pveTarget();
    const newRun = async () => {
      const [run] = await db
        .insert(runs)
        .values({ pipeline: "power-shutdown", currentStep: "ShutDownTargets" })
        .returning({ id: runs.id });
      return run!.id;
    };
    const dueSince = new Date("2026-12-01T10:00:00Z");
    const call = (
      runId: string,
      state: "would_send" | "sending" | "sent" | "failed" | "unknown",
      attempt = 1,
    ) =>
      db
        .insert(powerShutdownCalls)
        .values({ runId, targetId, dueSince, state, attempt, request: "POST …" })
        .returning({ id: powerShutdownCalls.id });

    await call(await newRun(), "would_send");
    await call(await newRun(), "would_send");
    const retrying = await newRun();
    // A failed and an interrupted call do not stand in the way of the next attempt.
    await call(retrying, "failed", 1);
    await call(retrying, "unknown", 2);
    await call(retrying, "sending", 3);
    const second = call(await newRun(), "sending").catch((error: unknown) => rootCause(error));
    expect(await second).toMatch(/power_shutdown_calls_one_accepted_call/);
    const sameAttempt = call(retrying, "failed", 3).catch((error: unknown) => rootCause(error));
    expect(await sameAttempt).toMatch(/power_shutdown_calls_run_target_attempt/);
  });
});
