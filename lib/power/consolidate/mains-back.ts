import type { Transaction } from "@/lib/db/client";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import type { PowerEventInput } from "@/lib/power/records/power-events";
import { callsInOutages } from "@/lib/power/shutdown/call-attempts";
import type { StageLatch } from "@/lib/power/triggers/state";

type Tx = Transaction;

/**
 * Mains back while first stages hold: for each consolidating cluster whose first stage shut
 * nodes down in this outage, the event that says so — they stay down (nothing here powers a
 * node on, and restore re-arms HA only), the guests moved stay where they are. A first stage
 * that shut nothing down (cancelled, fell back, still checking) has nothing to say.
 */
export async function mainsBackAfterFirstStage(
  tx: Tx,
  ups: { id: string; name: string },
  stages: Readonly<Record<string, StageLatch>>,
): Promise<PowerEventInput[]> {
  const held = Object.entries(stages);
  if (held.length === 0) return [];
  const groups = (await loadClusterGroups(tx)).filter((g) => stages[g.id]);
  const targetIds = groups.flatMap((g) => g.nodes.flatMap((n) => (n.targetId ? [n.targetId] : [])));
  if (targetIds.length === 0) return [];
  const calls = await callsInOutages(
    tx,
    targetIds,
    held.map(([, latch]) => latch.at),
  );
  return groups.flatMap((group): PowerEventInput[] => {
    const at = stages[group.id]!.at.getTime();
    const down = group.nodes.filter((n) =>
      calls.some(
        (c) => c.targetId === n.targetId && c.dueSince.getTime() === at && c.state !== "failed",
      ),
    );
    if (down.length === 0) return [];
    const rehearsed = down.every((n) =>
      calls.some((c) => c.targetId === n.targetId && c.state === "would_send"),
    );
    const up = group.nodes.filter((n) => !down.includes(n)).map((n) => n.name);
    const names = down.map((n) => n.name).join(", ");
    return [
      {
        severity: rehearsed ? "info" : "warning",
        kind: "consolidate.mains_back",
        upsId: ups.id,
        message: rehearsed
          ? `${ups.name}: mains back after the first stage of cluster ${group.name} (dry-run: ${names} would have been shut down at the first threshold)`
          : `${ups.name}: mains back after the first stage of cluster ${group.name}: ${names} ${down.length === 1 ? "was" : "were"} shut down at the first threshold and stay${down.length === 1 ? "s" : ""} down — nothing powers ${down.length === 1 ? "it" : "them"} on again (restore re-arms HA only): start ${down.length === 1 ? "it" : "them"} by hand, then move the guests back as you like${up.length > 0 ? `; ${up.join(", ")} kept running with the guests moved there` : ""}`,
        data: { clusterId: group.id, down: down.map((n) => n.name) },
      },
    ];
  });
}
