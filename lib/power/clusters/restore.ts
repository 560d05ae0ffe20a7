import { errorMessage } from "@/lib/pipeline/engine";
import { isNotImplemented, SHUTDOWN_CEPH_FLAGS, type ClusterApi } from "./sequence-api";
import { CEPH_FLAGS_WAIT_SECONDS } from "./sequence-plan";

/**
 * Restoring a cluster after power is back, shared by the Restore button
 * (lib/power/operations/restore-cluster.ts) and the way back (lib/power/power-back/): re-arm HA
 * and clear the Ceph flags the shutdown set, each read back. An item is "restored" only when
 * its state read back says so — a call that answered is not yet a restored cluster.
 */

export type RestoreItem = {
  what: "HA" | "Ceph flags";
  outcome: "restored" | "not-available" | "failed";
  detail: string;
};

const HA_ARM_WAIT_MS = 15_000;

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

export async function rearmHa(api: ClusterApi): Promise<RestoreItem> {
  try {
    await api.armHa();
  } catch (error) {
    if (isNotImplemented(error)) {
      return {
        what: "HA",
        outcome: "not-available",
        detail:
          "this Proxmox VE has no arm-ha/disarm-ha (before 9.2): HA was never disarmed, nothing to re-arm",
      };
    }
    return { what: "HA", outcome: "failed", detail: `arm-ha failed: ${errorMessage(error)}` };
  }
  try {
    const state = await until(
      () => api.haArmedState(),
      (s) => s === "armed",
      HA_ARM_WAIT_MS,
    );
    return state === "armed"
      ? { what: "HA", outcome: "restored", detail: "re-armed (read back: armed-state armed)" }
      : {
          what: "HA",
          outcome: "failed",
          detail: `arm-ha answered, but armed-state reads ${state ?? "nothing"} after ${HA_ARM_WAIT_MS / 1000} s; check Datacenter → HA`,
        };
  } catch (error) {
    return {
      what: "HA",
      outcome: "failed",
      detail: `arm-ha sent, but the HA status could not be read back: ${errorMessage(error)}`,
    };
  }
}

export async function clearCephFlags(
  api: ClusterApi,
  flags: readonly string[] = SHUTDOWN_CEPH_FLAGS,
): Promise<RestoreItem> {
  const stillSet = async () => {
    const set = await api.cephFlags();
    return flags.filter((f) => set.has(f));
  };
  try {
    await api.putCephFlags(flags, false).catch(() => undefined);
    let left = await until(stillSet, (l) => l.length === 0, CEPH_FLAGS_WAIT_SECONDS * 1000);
    if (left.length > 0) {
      // The bulk call did not take: one flag at a time, as the shutdown does.
      for (const flag of left) await api.putCephFlag(flag, false).catch(() => undefined);
      left = await until(stillSet, (l) => l.length === 0, CEPH_FLAGS_WAIT_SECONDS * 1000);
    }
    return left.length === 0
      ? {
          what: "Ceph flags",
          outcome: "restored",
          detail: `${flags.join(", ")} cleared (read back)`,
        }
      : {
          what: "Ceph flags",
          outcome: "failed",
          detail: `still set after clearing them in bulk and one by one: ${left.join(", ")}; clear them with 'ceph osd unset <flag>' on a node`,
        };
  } catch (error) {
    return {
      what: "Ceph flags",
      outcome: "failed",
      detail: `the flags could not be read back: ${errorMessage(error)}`,
    };
  }
}
