/**
 * A guest's `startup` option: when Proxmox starts it among the others and how long it waits
 * after it. Format `pve-startup-order`, typetext `[[order=]\d+] [,up=\d+] [,down=\d+]`
 * (Proxmox VE API schema, `startup` of /nodes/{node}/qemu/{vmid}/config and of the lxc config;
 * "Order is a non-negative number defining the general startup order. Shutdown is done with
 * reverse ordering. Additionally you can set the 'up' or 'down' delay in seconds, which
 * specifies a delay to wait before the next VM is started or stopped.").
 */
export type StartupOrder = {
  order: number | null;
  upSeconds: number | null;
  downSeconds: number | null;
};

/** What a guest without a `startup` option has: no order (it starts after every ordered one). */
export const NO_STARTUP_ORDER: StartupOrder = { order: null, upSeconds: null, downSeconds: null };

/**
 * Parses the option as Proxmox does: comma-separated parts, blank ones ignored, a bare number
 * is the order. Null for a value Proxmox itself would reject — the caller says so rather than
 * guessing an order.
 */
export function parseStartupOrder(value: string | undefined | null): StartupOrder | null {
  if (value === undefined || value === null || value.trim() === "") return NO_STARTUP_ORDER;
  const result: StartupOrder = { ...NO_STARTUP_ORDER };
  for (const part of value.split(",")) {
    if (/^\s*$/.test(part)) continue;
    const order = /^(?:order=)?(\d+)$/.exec(part);
    const up = /^up=(\d+)$/.exec(part);
    const down = /^down=(\d+)$/.exec(part);
    if (order) result.order = Number(order[1]);
    else if (up) result.upSeconds = Number(up[1]);
    else if (down) result.downSeconds = Number(down[1]);
    else return null;
  }
  return result;
}

/**
 * The order Proxmox starts guests in on `startall` (pve-manager, PVE/API2/Nodes.pm: a guest
 * without an order gets LONG_MAX, orders sorted numerically, each order's guests by VMID; after
 * each start it waits the guest's `up` seconds).
 */
export function compareStartupOrder(
  a: { vmid: number; startup: StartupOrder },
  b: { vmid: number; startup: StartupOrder },
): number {
  const rank = (s: StartupOrder) => s.order ?? Number.MAX_SAFE_INTEGER;
  return rank(a.startup) - rank(b.startup) || a.vmid - b.vmid;
}
