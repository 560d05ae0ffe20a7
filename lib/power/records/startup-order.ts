/**
 * A guest's `startup` property as Proxmox writes it in the guest's config:
 * `[[order=]\d+] [,up=\d+] [,down=\d+]` (pve-common's `pve-startup-order` format). The way back
 * starts guests by it as pve-manager's `startall` does, so it is recorded before the shutdown.
 */
export type StartupOrder = {
  /** Lower starts first; null: no order (started after every ordered guest). */
  order: number | null;
  /** Seconds to wait after this guest started before the next one. */
  up: number | null;
  down: number | null;
};

const NONE: StartupOrder = { order: null, up: null, down: null };

/**
 * Parses `startup`; a value that does not follow the format counts as none (Proxmox refuses
 * to write one, so it can only come from a hand-edited config, and a guest must still start).
 */
export function parseStartup(value: unknown): StartupOrder {
  if (typeof value !== "string" || value.trim() === "") return NONE;
  const out: StartupOrder = { ...NONE };
  for (const [i, part] of value.split(",").entries()) {
    const item = part.trim();
    const bare = /^\d+$/.test(item);
    // A bare number is the order, and only as the first item (`1,up=30`).
    if (bare && i === 0) {
      out.order = Number(item);
      continue;
    }
    const match = /^(order|up|down)=(\d+)$/.exec(item);
    if (!match) return NONE;
    out[match[1] as keyof StartupOrder] = Number(match[2]);
  }
  return out;
}
