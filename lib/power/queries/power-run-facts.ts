import { asc, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerRunActions, powerShutdownCalls, type runs } from "@/lib/db/schema";
import type { PowerRunFacts } from "./power-run-verdict";

type RunRow = Pick<
  typeof runs.$inferSelect,
  "id" | "status" | "failureReason" | "failedStep" | "currentStep" | "context"
>;

/** What the verdict of each of these power runs is decided from (./power-run-verdict.ts). */
export async function loadPowerRunFacts(
  db: Pick<Database, "select">,
  rows: readonly RunRow[],
): Promise<Map<string, PowerRunFacts>> {
  const ids = rows.map((r) => r.id);
  const [calls, actions] =
    ids.length === 0
      ? [[], []]
      : await Promise.all([
          db
            .select({
              runId: powerShutdownCalls.runId,
              targetId: powerShutdownCalls.targetId,
              state: powerShutdownCalls.state,
              seenDownAt: powerShutdownCalls.seenDownAt,
            })
            .from(powerShutdownCalls)
            .where(inArray(powerShutdownCalls.runId, ids))
            .orderBy(asc(powerShutdownCalls.id)),
          db
            .select({
              runId: powerRunActions.runId,
              lane: powerRunActions.lane,
              outcome: powerRunActions.outcome,
              label: powerRunActions.label,
              detail: powerRunActions.detail,
            })
            .from(powerRunActions)
            .where(inArray(powerRunActions.runId, ids)),
        ]);
  return new Map(
    rows.map((row) => [
      row.id,
      {
        status: row.status,
        failureReason: row.failureReason,
        failedStep: row.failedStep,
        currentStep: row.currentStep,
        context: row.context,
        calls: calls
          .filter((c) => c.runId === row.id)
          .map((c) => ({
            targetId: c.targetId,
            state: c.state,
            seenDownAt: c.seenDownAt?.toISOString() ?? null,
          })),
        actions: actions.filter((a) => a.runId === row.id),
      },
    ]),
  );
}
