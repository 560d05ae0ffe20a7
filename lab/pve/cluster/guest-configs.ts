import fs from "node:fs";
import path from "node:path";

import { pveDir, storageCfgPath, writeAtomic, writeVmConfig } from "../state";
import { renderCorosync } from "./membership";
import { LAB_NFS_STORAGE, type ClusterGuest, type LabClusterModel } from "./model";

/**
 * The guests' config files in the shared `etc/pve`, where pmxcfs keeps them: a node's guests
 * under `nodes/<node>/qemu-server` or `nodes/<node>/lxc`; HA's recovery moves the file to the
 * node that now runs the guest (so does a migration). Ceph's pools become RBD storages in
 * `storage.cfg`, and guests on NFS get the cluster's shared NFS storage there.
 */

function configPath(root: string, guest: Pick<ClusterGuest, "vmid" | "type">, node: string) {
  const dir = guest.type === "qemu" ? "qemu-server" : "lxc";
  return path.join(pveDir(root), "nodes", node, dir, `${guest.vmid}.conf`);
}

export function guestConfig(guest: ClusterGuest, storage: string): Map<string, string> {
  const disk =
    guest.storage === "ceph"
      ? `${storage}:vm-${guest.vmid}-disk-0,size=32G`
      : guest.storage === "nfs"
        ? `${LAB_NFS_STORAGE}:${guest.vmid}/vm-${guest.vmid}-disk-0.qcow2,size=32G`
        : `local:${guest.vmid}/vm-${guest.vmid}-disk-0.raw,size=32G`;
  const memory = String(Math.round(guest.memoryBytes / 1024 ** 2));
  const config = new Map<string, string>();
  if (guest.type === "qemu") {
    config.set("name", guest.name);
    config.set("memory", memory);
    config.set("cores", "2");
    config.set("scsi0", disk);
  } else {
    config.set("hostname", guest.name);
    config.set("memory", memory);
    config.set("cores", "2");
    config.set("rootfs", disk);
  }
  if (guest.template) config.set("template", "1");
  if (guest.startup) config.set("startup", guest.startup);
  if (guest.tags) config.set("tags", guest.tags);
  return config;
}

/**
 * `corosync.conf` as `pvecm create` / `pvecm add` leave it in pmxcfs: the file whose presence
 * tells a member from a standalone node (the console's onboarding reads it that way).
 */
export function corosyncConf(model: LabClusterModel): string {
  return renderCorosync({
    clusterName: model.name,
    configVersion: model.nodes.length,
    nodes: model.nodes.map((n, i) => ({
      name: n.name,
      nodeid: i + 1,
      votes: 1,
      ring0_addr: n.ip,
    })),
  });
}

export function writeClusterConfigs(root: string, model: LabClusterModel): void {
  writeAtomic(path.join(pveDir(root), "corosync.conf"), corosyncConf(model));
  const pool = model.ceph?.pools[0]?.name ?? "vm-pool";
  const extra: string[] = [];
  if (model.ceph) {
    extra.push(
      ...model.ceph.pools.map(
        (p) => `\nrbd: ${p.name}\n\tcontent images,rootdir\n\tkrbd 0\n\tpool ${p.name}\n`,
      ),
    );
  }
  if ([...model.guests.values()].some((g) => g.storage === "nfs")) {
    extra.push(
      `\nnfs: ${LAB_NFS_STORAGE}\n\texport /export/vm\n\tpath /mnt/pve/${LAB_NFS_STORAGE}\n\tserver 10.10.10.2\n\tcontent images,rootdir\n`,
    );
  }
  if (extra.length > 0) {
    const existing = fs.readFileSync(storageCfgPath(root), "utf8");
    writeAtomic(storageCfgPath(root), existing + extra.join(""));
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
