import { and, eq, or } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerControllers, powerTargets } from "@/lib/db/schema";
import { controllerView, describe } from "@/lib/power-controllers/store";
import type { ControllerKind } from "./power-back-preview";

/** How the way back powers a protected target on: its stored controller, or none. */
export type TargetController = { kind: ControllerKind; where: string } | null;

/**
 * Each protected target's power controller as stored — never read from its BMC here (the targets
 * page lists every host on every look; reading the power state stays on the host's page or the
 * backup server's form). A host's controller hangs on its host, a backup server's on its target.
 */
export async function targetControllers(
  db: Pick<Database, "select">,
): Promise<Map<string, { hostId: string | null; controller: TargetController }>> {
  const rows = await db
    .select({
      targetId: powerTargets.id,
      hostId: powerTargets.hostId,
      controller: powerControllers,
    })
    .from(powerTargets)
    .leftJoin(
      powerControllers,
      or(
        eq(powerControllers.hostId, powerTargets.hostId),
        and(eq(powerTargets.kind, "pbs"), eq(powerControllers.targetId, powerTargets.id)),
      ),
    );
  return new Map(
    rows.map(({ targetId, hostId, controller }) => [
      targetId,
      {
        hostId,
        controller: controller
          ? { kind: controller.kind, where: describe(controllerView(controller)) }
          : null,
      },
    ]),
  );
}
