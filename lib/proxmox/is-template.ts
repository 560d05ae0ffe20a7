import type { TVmConfig } from "./schemas";

const DISK_KEY = /^(scsi|virtio|sata|ide)\d+$/;

/** The boot disk's volume: the first disk of `boot: order=…`, else the first disk key. */
export function bootDiskVolume(config: TVmConfig): string | null {
  const order = /order=([^,\s]+)/.exec(String(config.boot ?? ""))?.[1];
  const candidates = order
    ? order.split(";").filter((key) => DISK_KEY.test(key))
    : Object.keys(config)
        .filter((key) => DISK_KEY.test(key))
        .sort();
  for (const key of candidates) {
    const value = config[key];
    if (
      typeof value !== "string" ||
      /(^|,)media=cdrom(,|$)/.test(value) ||
      value.includes("cloudinit")
    )
      continue;
    return value.split(",")[0] ?? null;
  }
  return null;
}

/**
 * A usable template carries the flag AND a boot disk converted to `base-…`: Proxmox writes
 * `template: 1` before converting the disks, so a failed conversion leaves the flag on a VM
 * whose disk is still `vm-…`.
 */
export function configIsTemplate(config: TVmConfig): boolean {
  if (Number(config.template) !== 1) return false;
  const volume = bootDiskVolume(config);
  if (!volume) return false;
  const name =
    volume
      .slice(volume.indexOf(":") + 1)
      .split("/")
      .pop() ?? "";
  return name.startsWith("base-");
}
