import type { Database } from "@/lib/db/client";
import type { HostState } from "@/lib/hosts/host-state";
import { listHosts } from "@/lib/hosts/list-hosts";
import { powerTargets } from "@/lib/db/schema";
import { isNotNull } from "drizzle-orm";

export type TargetCandidate = {
  id: string;
  name: string;
  address: string;
  state: HostState;
  /** Null when the console can call its API (token, certificate pin, node name); else why not. */
  notReady: string | null;
};

/**
 * The onboarded hosts an admin can protect as Proxmox VE node targets: every host in service
 * that is not protected yet. One whose onboarding has not created its API token is listed with
 * the reason, so the admin knows what to finish first.
 */
export async function targetCandidates(db: Database): Promise<TargetCandidate[]> {
  const [hosts, protectedRows] = await Promise.all([
    listHosts(db),
    db
      .select({ hostId: powerTargets.hostId })
      .from(powerTargets)
      .where(isNotNull(powerTargets.hostId)),
  ]);
  const taken = new Set(protectedRows.map((row) => row.hostId));
  return hosts
    .filter((host) => !host.retiredAt && !taken.has(host.id))
    .map((host) => ({
      id: host.id,
      name: host.name,
      address: host.address,
      state: host.state,
      notReady:
        host.proxmox.apiTokenId && host.proxmox.apiCertSha256 && host.proxmox.nodeName
          ? null
          : "no API token or certificate pin yet: finish its onboarding",
    }));
}
