import "server-only";

import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { hosts } from "@/lib/db/schema";
import { eq } from "drizzle-orm";

import type { PowerReading } from "./controller";
import type { PowerControllerView } from "./schemas";
import { getPowerControllerView, loadPowerController } from "./store";

export type HostPowerController = {
  hostId: string;
  controller: PowerControllerView | null;
  /** Asked now, when asked for; null without a controller or when not asked. */
  state: PowerReading | null;
};

/** A host's controller as the API and the page show it, its power state asked now if `read`. */
export async function hostPowerController(
  db: Database,
  hostId: string,
  options: { read: boolean; timeoutMs?: number },
): Promise<HostPowerController> {
  const [host] = await db.select({ id: hosts.id }).from(hosts).where(eq(hosts.id, hostId));
  if (!host) throw new AppError("not_found", `Host ${hostId} does not exist.`);
  if (!options.read) {
    return { hostId, controller: await getPowerControllerView(db, hostId), state: null };
  }
  const loaded = await loadPowerController(db, hostId, { timeoutMs: options.timeoutMs ?? 5000 });
  if (!loaded) return { hostId, controller: null, state: null };
  const state = await loaded.controller.readPowerState();
  // A first contact may just have pinned the certificate: show the view as it is now.
  return { hostId, controller: await getPowerControllerView(db, hostId), state };
}
