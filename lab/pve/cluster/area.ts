import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { booleanSwitch, type SwitchRegistry } from "../../control/switches";
import { readToolFaults, writeToolFaults } from "../state";
import {
  clusterAreaPointer,
  passwordHash,
  removeHostRecord,
  setCorosyncDown,
  sharedFolderOf,
  writeFileAtomic,
  writeHostRecord,
} from "./membership";

/**
 * The lab process's side of clusters made at run time (`pvecm create` / `pvecm add` on
 * standalone lab nodes, lab/pve/cluster/pvecm-ops.ts): one cluster area per lab process, bound
 * into every standalone node's namespace at its real path, holding each cluster's shared pmxcfs
 * folder and the host records a join "connects" to. The area exists while a node uses it and
 * is removed with the last one.
 */

let area: string | null = null;
let users = 0;

/** Takes the process's cluster area (made on first use); give it back with `releaseClusterArea`. */
export function acquireClusterArea(): string {
  if (area === null) {
    area = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-lab-clusters-"));
    fs.mkdirSync(path.join(area, "hosts"), { recursive: true });
    fs.mkdirSync(path.join(area, "clusters"), { recursive: true });
  }
  users++;
  return area;
}

export function releaseClusterArea(): void {
  users--;
  if (users <= 0 && area !== null) {
    fs.rmSync(area, { recursive: true, force: true });
    area = null;
    users = 0;
  }
}

/**
 * Announces a started node on its address: the API certificate a join pins and its root
 * password (salted hash). Returns what undoes it at stop: the record goes, and a member's
 * corosync goes down with it (the other members see it offline).
 */
export function announceLabHost(
  root: string,
  clusterArea: string,
  host: { address: string; node: string; apiCertSha256: string; password: string },
): () => void {
  writeFileAtomic(clusterAreaPointer(root), `${clusterArea}\n`);
  const salt = randomBytes(8).toString("hex");
  const shared = sharedFolderOf(root);
  writeHostRecord(clusterArea, {
    address: host.address,
    node: host.node,
    apiCertSha256: host.apiCertSha256,
    passwordSalt: salt,
    passwordSha256: passwordHash(salt, host.password),
    ...(shared === null || !shared.startsWith(clusterArea) ? {} : { cluster: shared }),
  });
  return () => {
    removeHostRecord(clusterArea, host.address);
    const member = sharedFolderOf(root);
    if (member !== null && fs.existsSync(member)) setCorosyncDown(member, host.node, true);
  };
}

/** `pve.corosyncDown` and `pve.clusterJoinDiesHalfWay` on a node's switch registry. */
export function registerClusterMemberSwitches(
  switches: SwitchRegistry,
  root: string,
  node: string,
): SwitchRegistry {
  const downFile = (): string | null => sharedFolderOf(root);
  return switches
    .register(
      booleanSwitch({
        name: "pve.corosyncDown",
        description:
          "corosync on this member is gone: it sees only itself (no quorum), the others see it offline.",
        get: () => {
          const shared = downFile();
          if (shared === null) return false;
          try {
            return (
              JSON.parse(fs.readFileSync(path.join(shared, ".lab-down.json"), "utf8")) as string[]
            ).includes(node);
          } catch {
            return false;
          }
        },
        set: (value) => {
          const shared = downFile();
          if (shared === null) throw new Error(`${node} is in no cluster`);
          setCorosyncDown(shared, node, value);
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "pve.clusterJoinDiesHalfWay",
        description:
          "pvecm add dies after the member added this node to its nodelist, before the node took the cluster's configuration.",
        get: () => readToolFaults(root).clusterJoinDiesHalfWay === true,
        set: (value) => {
          writeToolFaults(root, { ...readToolFaults(root), clusterJoinDiesHalfWay: value });
        },
      }),
    );
}
