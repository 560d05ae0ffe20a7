import { audited } from "@/lib/audit/record-audit";
import type { AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";

import { startRotation, type StartedRotation } from "./rotation/start-rotation";

/** The audited rotation start shared by the server action and `POST /api/console-key/rotate`. */
export function rotateConsoleKey(db: Database, actor: AuditActor): Promise<StartedRotation> {
  return audited(
    db,
    {
      actor,
      action: "console_key.rotate",
      target: (started) => `rotation:${started.rotationId}`,
    },
    () => startRotation(db, actor),
  );
}
