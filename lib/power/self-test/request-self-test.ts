import { z } from "zod";
import type { AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { outageInProgress } from "./outage";
import { queueSelfTest } from "./queue-self-test";

/** A request to run the self-test now carries nothing: anything in it is a mistake. */
export const ZRequestSelfTest = z.object({}).strict();

export const SELF_TEST_QUEUED =
  "Self-test queued: the worker runs it within seconds and its result replaces the one shown.";

/**
 * A person asks for a self-test now (the dashboard's button, `POST /api/power/self-test`). It
 * runs in the worker, where the UPS clients live; refused during an outage, saying why.
 */
export async function requestSelfTest(db: Database, actor: AuditActor): Promise<string> {
  const outage = await outageInProgress(db);
  if (outage !== null) throw new AppError("conflict", `Not started: ${outage}`);
  await queueSelfTest(db, "button", actor.name);
  return SELF_TEST_QUEUED;
}
