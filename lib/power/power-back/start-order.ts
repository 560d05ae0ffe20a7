/**
 * The order the way back starts the recorded guests in, as pve-manager's `startall` does
 * (PVE::API2::Nodes): by `startup` order ascending, guests without an order after every ordered
 * one (Proxmox gives them LONG_MAX), ties by VMID; after a guest started, its `up` seconds pass
 * before the next. The console starts guests of one order side by side (at most its guest
 * parallelism), each holding its slot until its own `up` has passed, and the next order begins
 * only when every guest of the one before has started and waited: an order is a promise that
 * what comes before is up, parallelism is only ever within one.
 */
export type GuestToStart = {
  vmid: number;
  order: number | null;
  up: number | null;
};

/** The guests in batches of one startup order each, in the order the batches start. */
export function startBatches<G extends GuestToStart>(guests: readonly G[]): G[][] {
  const sorted = [...guests].sort(
    (a, b) =>
      (a.order ?? Number.MAX_SAFE_INTEGER) - (b.order ?? Number.MAX_SAFE_INTEGER) ||
      a.vmid - b.vmid,
  );
  const batches: G[][] = [];
  for (const guest of sorted) {
    const last = batches.at(-1);
    if (last && last[0]!.order === guest.order) last.push(guest);
    else batches.push([guest]);
  }
  return batches;
}
