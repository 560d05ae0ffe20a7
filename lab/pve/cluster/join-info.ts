import crypto, { X509Certificate } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { ApiError } from "../routes";
import { pveDir } from "../state";
import type { LabClusterModel } from "./model";

/**
 * `GET /cluster/config/join` as pve-manager's `join_info` answers it (PVE/API2/ClusterConfig.pm):
 * corosync.conf as pmxcfs gives it back (no file: "node is not in a cluster"), its nodelist with
 * each node's `pve_fp` — the SHA-256 fingerprint of `/etc/pve/nodes/<node>/pveproxy-ssl.pem`
 * where an operator installed one, else of its `pve-ssl.pem` (`PVE::Cluster::get_node_fingerprint`)
 * — and `pve_addr` (the node's address as the cluster knows it), the totem section, the local
 * node as `preferred_node` and the SHA-1 of the file's bytes as `config_digest`.
 */

type Section = { values: Map<string, string>; children: { name: string; section: Section }[] };

/** corosync.conf's `name { key: value … }` blocks (PVE::Corosync::parse_conf, enough of it). */
export function parseCorosyncConf(text: string): Section {
  const root: Section = { values: new Map(), children: [] };
  const stack = [root];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") continue;
    const open = /^(\S+)\s*\{$/.exec(line);
    if (open) {
      const section: Section = { values: new Map(), children: [] };
      stack[stack.length - 1]!.children.push({ name: open[1]!, section });
      stack.push(section);
    } else if (line === "}") {
      if (stack.length > 1) stack.pop();
    } else {
      const pair = /^([^:\s]+)\s*:\s*(.*)$/.exec(line);
      if (pair) stack[stack.length - 1]!.values.set(pair[1]!, pair[2]!);
    }
  }
  return root;
}

const NOT_IN_CLUSTER = "node is not in a cluster, no join info available!";

function fingerprintOf(root: string, node: string): string {
  const dir = path.join(pveDir(root), "nodes", node);
  const custom = path.join(dir, "pveproxy-ssl.pem");
  const file = fs.existsSync(custom) ? custom : path.join(dir, "pve-ssl.pem");
  let pem: string;
  try {
    pem = fs.readFileSync(file, "utf8");
  } catch {
    throw new ApiError(500, `unable to read '${file}' - No such file or directory`);
  }
  return new X509Certificate(pem).fingerprint256;
}

export function joinInfo(
  model: LabClusterModel | null,
  root: string,
  localNode: string,
  node: string | undefined,
): unknown {
  if (model?.faults.joinInfoFails.includes(localNode)) throw new ApiError(500, NOT_IN_CLUSTER);
  let text: string;
  try {
    text = fs.readFileSync(path.join(pveDir(root), "corosync.conf"), "utf8");
  } catch {
    throw new ApiError(500, NOT_IN_CLUSTER);
  }
  const conf = parseCorosyncConf(text);
  const nodelist = conf.children.find((c) => c.name === "nodelist")?.section;
  const totem = conf.children.find((c) => c.name === "totem")?.section;
  if (!nodelist) throw new ApiError(500, NOT_IN_CLUSTER);
  const nodes = nodelist.children
    .filter((c) => c.name === "node")
    .map((c) => Object.fromEntries(c.section.values));
  const preferred = node ?? localNode;
  if (!nodes.some((n) => n.name === preferred)) {
    throw new ApiError(500, `unknown node '${preferred}'`);
  }
  return {
    nodelist: nodes.map((n) => ({
      name: n.name,
      nodeid: Number(n.nodeid),
      quorum_votes: Number(n.quorum_votes ?? 1),
      ...(n.ring0_addr === undefined ? {} : { ring0_addr: n.ring0_addr }),
      pve_addr: model?.node(n.name!)?.ip ?? n.ring0_addr,
      pve_fp: fingerprintOf(root, n.name!),
    })),
    preferred_node: preferred,
    totem: Object.fromEntries(totem?.values ?? []),
    config_digest: crypto.createHash("sha1").update(text).digest("hex"),
  };
}
