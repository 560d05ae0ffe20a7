import fs from "node:fs";
import path from "node:path";

import { pveDir, storageCfgPath, writeAtomic, writeVmConfig } from "../state";
import type { ClusterGuest, LabClusterModel } from "./model";

/**
 * The guests' config files in the shared `etc/pve`, where pmxcfs keeps them: a node's guests
 * under `nodes/<node>/qemu-server` or `nodes/<node>/lxc`; HA's recovery moves the file to the
 * node that now runs the guest. Ceph's pools become RBD storages in `storage.cfg`.
 */

function configPath(root: string, guest: Pick<ClusterGuest, "vmid" | "type">, node: string) {
  const dir = guest.type === "qemu" ? "qemu-server" : "lxc";
  return path.join(pveDir(root), "nodes", node, dir, `${guest.vmid}.conf`);
}

function guestConfig(guest: ClusterGuest, storage: string): Map<string, string> {
  const disk =
    guest.storage === "ceph"
      ? `${storage}:vm-${guest.vmid}-disk-0,size=32G`
      : `local:${guest.vmid}/vm-${guest.vmid}-disk-0.raw,size=32G`;
  const config = new Map<string, string>();
  if (guest.type === "qemu") {
    config.set("name", guest.name);
    config.set("memory", "2048");
    config.set("cores", "2");
    config.set("scsi0", disk);
  } else {
    config.set("hostname", guest.name);
    config.set("memory", "2048");
    config.set("cores", "2");
    config.set("rootfs", disk);
  }
  if (guest.template) config.set("template", "1");
  return config;
}

export function writeClusterConfigs(root: string, model: LabClusterModel): void {
  const pool = model.ceph?.pools[0]?.name ?? "vm-pool";
  if (model.ceph) {
    const existing = fs.readFileSync(storageCfgPath(root), "utf8");
    const rbd = model.ceph.pools
      .map((p) => `\nrbd: ${p.name}\n\tcontent images,rootdir\n\tkrbd 0\n\tpool ${p.name}\n`)
      .join("");
    writeAtomic(storageCfgPath(root), existing + rbd);
  }
  for (const guest of model.guests.values()) {
    if (guest.type === "qemu")
      writeVmConfig(root, guest.node, guest.vmid, guestConfig(guest, pool));
    else {
      const file = configPath(root, guest, guest.node);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const config = guestConfig(guest, pool);
      writeAtomic(file, [...config].map(([k, v]) => `${k}: ${v}\n`).join(""));
    }
  }
}

/** HA recovered the guest on another node: its config moves there (a rename inside pmxcfs). */
export function moveGuestConfig(root: string, guest: ClusterGuest, from: string): void {
  const target = configPath(root, guest, guest.node);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.renameSync(configPath(root, guest, from), target);
}
