import { errorMessage } from "@/lib/pipeline/engine";
import { readGuestsBefore } from "@/lib/power/clusters/guests-before";
import { clusterApiFor, type GuestType } from "@/lib/power/clusters/sequence-api";
import { recordGuestsBefore } from "@/lib/power/records/guests-before";
import type { StepContext } from "@/lib/pipeline/step";
import type { PlannedTarget } from "./shutdown-plan";
import type { PowerServices } from "./services";

/** A listing that hangs is given up after this: it runs beside the shutdown, never before it. */
const LISTING_TIMEOUT_MS = 5000;

/**
 * What ran on a standalone node before its shutdown, for the way back (issue 30, item 3): the
 * running guests with their startup order, up-delay and HA, recorded under the target's outage.
 * Started just before the node's shutdown call and never awaited — not by the call, not by the
 * next stage: a listing that fails or hangs must not cost the battery a second. It records what
 * it found, or "unknown" with why; its log line is lost when the visit has ended by then (the
 * record is what counts). Never throws.
 */
export async function listGuestsBefore(
  ctx: StepContext<PowerServices>,
  target: PlannedTarget,
  armed: boolean,
): Promise<void> {
  const endpoint = target.endpoint;
  if (endpoint?.kind !== "pve-node") return;
  const key = {
    runId: ctx.runId,
    dueSince: target.dueSince,
    targetId: target.id,
    mode: armed ? ("armed" as const) : ("dry-run" as const),
  };
  const { db } = ctx.services;
  try {
    const api = await clusterApiFor(db, endpoint, {
      timeoutMs: LISTING_TIMEOUT_MS,
      onSecret: ctx.services.maskSecret,
    });
    // The node's own lists: on a standalone node they are what runs there.
    const running = (await api.nodeGuests(endpoint.nodeName)).filter(
      (g): g is typeof g & { type: GuestType } =>
        (g.type === "qemu" || g.type === "lxc") && g.status === "running" && g.template !== 1,
    );
    const guests = await readGuestsBefore(api, running);
    await recordGuestsBefore(db, key, { guests });
    ctx.log(`${target.name}: recorded ${guests.length} running guest(s) for the way back`);
  } catch (error) {
    const why = `the guests could not be listed: ${errorMessage(error)}`;
    ctx.log(`${target.name}: what ran before is unknown (${why}); the shutdown goes on`);
    await recordGuestsBefore(db, key, { unknownNode: endpoint.nodeName, why }).catch(
      (failure: unknown) =>
        ctx.log(`${target.name}: could not record that either: ${errorMessage(failure)}`),
    );
  }
}
