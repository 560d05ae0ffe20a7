import { describe, expect, it } from "vitest";
import { runs } from "@/lib/db/schema";
import { registerTestDatabase } from "@/test/db";
import { seedHost } from "@/test/power-seed";
import { refusal } from "@/test/refusal";
import { runRow } from "@/test/runs";
import { retryRun } from "./retry-run";

const testDatabase = registerTestDatabase(2);

/** A run of the host as the engine leaves it, created `ageMs` ago. */
async function seedRun(hostId: string, status: "failed" | "running", ageMs: number) {
  const [run] = await testDatabase.db
    .insert(runs)
    .values({
      pipeline: "onboard-host",
      hostId,
      currentStep: "InstallProxmoxKernel",
      status,
      ...(status === "failed"
        ? { failedStep: "InstallProxmoxKernel", failureReason: "apt-get failed" }
        : {}),
      createdAt: new Date(Date.now() - ageMs),
    })
    .returning({ id: runs.id });
  return run!.id;
}

describe("retrying a failed run", () => {
  // Found by the soak (seed 134): a re-onboard started a new run, and a retry of the host's
  // older failed run — listed a moment before — went through as well: two runs built the
  // same template on one host at once.
  it("is refused while a newer run of the same host is running, and changes nothing", async () => {
    const host = await seedHost(testDatabase.db);
    const failed = await seedRun(host.id, "failed", 60_000);
    await seedRun(host.id, "running", 1_000);

    const error = await refusal(retryRun(testDatabase.db, { runId: failed, actor: "alice" }));
    expect(error.code).toBe("conflict");
    expect(error.message).toMatch(/has a newer run working on it .*wait for it to end/);
    expect(await runRow(testDatabase.db, failed)).toMatchObject({
      status: "failed",
      failedStep: "InstallProxmoxKernel",
    });
  });

  it("goes ahead once the newer run has ended", async () => {
    const host = await seedHost(testDatabase.db);
    const failed = await seedRun(host.id, "failed", 60_000);
    await seedRun(host.id, "failed", 1_000);

    await retryRun(testDatabase.db, { runId: failed, actor: "alice" });
    expect((await runRow(testDatabase.db, failed)).status).toBe("running");
  });
});
