import type { GuestType } from "./sequence-api";

/** One attached volume of a guest: the config key and the storage it lives on. */
export type GuestVolume = { key: string; storage: string };

/** Config keys that attach a volume (unusedN are detached: they cannot freeze the guest). */
const VOLUME_KEY: Record<GuestType, RegExp> = {
  qemu: /^((ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0)$/,
  lxc: /^(rootfs|mp\d+)$/,
};

/** `local-lvm:vm-100-disk-0,size=32G` → `local-lvm`; `none`, `cdrom` and `/dev/…` are on none. */
const STORAGE_OF = /^([a-zA-Z][a-zA-Z0-9._-]*):/;

/** The volumes a guest's config attaches, each with its storage id, in config order. */
export function guestVolumes(
  type: GuestType,
  config: Record<string, string | number>,
): GuestVolume[] {
  return Object.entries(config).flatMap(([key, value]) => {
    if (!VOLUME_KEY[type].test(key) || typeof value !== "string") return [];
    // An LXC mount point's volume is its first field too (`mp0: vm-pool:subvol…,mp=/data`).
    const storage = STORAGE_OF.exec(value.split(",")[0] ?? "")?.[1];
    return storage ? [{ key, storage }] : [];
  });
}

/** Storage types whose data lives on Ceph (RBD images, CephFS). */
export const CEPH_STORAGE_TYPES = new Set(["rbd", "cephfs"]);

/**
 * Storage types whose volumes every node reaches (Proxmox's own list, `@SHARED_STORAGE` in
 * PVE::Storage::Plugin: it reports them `shared: 1`). Any other type is shared only where its
 * definition says `shared 1` (a directory on a shared mount, LVM on an iSCSI LUN).
 */
export const SHARED_STORAGE_TYPES = new Set([
  "iscsi",
  "nfs",
  "cifs",
  "rbd",
  "cephfs",
  "iscsidirect",
  "glusterfs",
  "zfs",
  "drbd",
  "pbs",
]);

/**
 * The keys of a guest's config that tie it to its node: a VM's passed-through PCI or USB device
 * (a SPICE USB port does not), a container's bind mount of a host path unless marked `shared=1`.
 * Proxmox refuses to migrate either.
 */
export function guestDevices(type: GuestType, config: Record<string, string | number>): string[] {
  return Object.entries(config).flatMap(([key, raw]) => {
    const value = String(raw);
    const ties =
      type === "qemu"
        ? /^hostpci\d+$/.test(key) || (/^usb\d+$/.test(key) && !value.startsWith("spice"))
        : /^mp\d+$/.test(key) && value.startsWith("/") && !/(^|,)shared=1(,|$)/.test(value);
    return ties ? [key] : [];
  });
}
