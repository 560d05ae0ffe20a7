import { errorMessage } from "@/lib/pipeline/engine";
import type { GuestBefore } from "@/lib/power/records/guests-before";
import { parseStartup } from "@/lib/power/records/startup-order";
import type { ClusterApi, GuestResource, GuestType } from "./sequence-api";

/** Config reads at once: small GETs, but a cluster may hold hundreds of guests. */
const CONFIG_READS_AT_ONCE = 8;

/**
 * What the way back needs of each running guest, read before it is stopped: its `startup`
 * order and up-delay from its config and whether HA manages it. A config or the HA list that
 * cannot be read leaves those fields empty with the reason — the guest is still recorded as
 * running (it did run; only its order is unknown, and it then starts with the unordered ones).
 */
export async function readGuestsBefore(
  api: ClusterApi,
  running: readonly (GuestResource & { type: GuestType })[],
): Promise<GuestBefore[]> {
  let ha: Set<string> | string;
  try {
    ha = await api.haResourceIds();
  } catch (error) {
    ha = `HA resources could not be read: ${errorMessage(error)}`;
  }
  const out: GuestBefore[] = [];
  const queue = [...running];
  const worker = async () => {
    for (let guest = queue.shift(); guest; guest = queue.shift()) {
      const problems: string[] = typeof ha === "string" ? [ha] : [];
      let startup = parseStartup(undefined);
      try {
        startup = parseStartup((await api.guestConfig(guest)).startup);
      } catch (error) {
        problems.push(`config could not be read: ${errorMessage(error)}`);
      }
      out.push({
        node: guest.node,
        vmid: guest.vmid,
        type: guest.type,
        name: guest.name ?? null,
        startupOrder: startup.order,
        upSeconds: startup.up,
        haManaged:
          typeof ha === "string"
            ? null
            : ha.has(`${guest.type === "qemu" ? "vm" : "ct"}:${guest.vmid}`),
        problem: problems.length > 0 ? problems.join("; ") : null,
      });
    }
  };
  await Promise.all(Array.from({ length: CONFIG_READS_AT_ONCE }, worker));
  return out.sort((a, b) => a.vmid - b.vmid);
}
