import { and, asc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, hosts, runLogChunks, runs } from "@/lib/db/schema";
import { unseal } from "@/lib/secrets/seal";
import { startRun } from "@/lib/runs/start-run";
import type { AnyPipeline } from "@/lib/pipeline/step";
import { waitFor } from "./worker-process";

/** Run and host rows, starting a run, and waiting for it to end: what every run test needs. */

export async function runRow(db: Database, runId: string) {
  const [run] = await db.select().from(runs).where(eq(runs.id, runId));
  return run!;
}

export async function hostRow(db: Database, hostId: string) {
  const [host] = await db.select().from(hosts).where(eq(hosts.id, hostId));
  return host!;
}

export function startTestRun(db: Database, pipeline: AnyPipeline, hostId: string): Promise<string> {
  return db.transaction((tx) => startRun(tx, { pipeline, hostId, actor: "test" }));
}

/** The run's row once it has stopped running. */
export async function settled(db: Database, runId: string, timeoutMs = 60_000) {
  return waitFor(
    `run ${runId} to stop running`,
    async () => {
      const run = await runRow(db, runId);
      return run.status !== "running" && run;
    },
    timeoutMs,
    50,
  );
}

/** The run's row once it has stopped; unless it succeeded, throws its reason and whole log. */
export async function succeededRun(db: Database, runId: string, timeoutMs = 300_000) {
  const run = await settled(db, runId, timeoutMs);
  if (run.status !== "succeeded")
    throw new Error(`${run.failureReason}\n${await runLogText(db, runId)}`);
  return run;
}

/** The console's API token secret stored for the host, unsealed. */
export async function hostTokenSecret(db: Database, hostId: string): Promise<string> {
  const host = await hostRow(db, hostId);
  const [credential] = await db
    .select()
    .from(credentials)
    .where(eq(credentials.id, host.apiTokenCredentialId!));
  return unseal(credential!.sealed);
}

/** A run's whole log as the operator sees it, in order. */
export async function runLogText(db: Database, runId: string): Promise<string> {
  const rows = await db
    .select({ text: runLogChunks.text })
    .from(runLogChunks)
    .where(eq(runLogChunks.runId, runId))
    .orderBy(asc(runLogChunks.seq));
  return rows.map((r) => r.text).join("");
}

/**
 * The lines a run log holds of host files (tailed or streamed: kind `file`), in order; with
 * `markers`, the "file was recreated" markers among them; with `step`, that step's only.
 */
export async function runLogFileLines(
  db: Database,
  runId: string,
  options: { step?: string; markers?: boolean } = {},
): Promise<string[]> {
  const rows = await db
    .select({ kind: runLogChunks.kind, text: runLogChunks.text })
    .from(runLogChunks)
    .where(
      and(
        eq(runLogChunks.runId, runId),
        options.step === undefined ? undefined : eq(runLogChunks.step, options.step),
      ),
    )
    .orderBy(asc(runLogChunks.seq));
  return rows.flatMap((row) =>
    row.kind === "file" || (options.markers === true && row.kind === "marker")
      ? row.text.slice(0, -1).split("\n")
      : [],
  );
}
