import dgram from "node:dgram";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * A node's own configuration, /etc/pve/nodes/<node>/config (pve-manager PVE/NodeConfig.pm):
 * `key: value` lines, shared by pmxcfs with every member. The lab reads and writes it as
 * Proxmox does, for its `wakeonlan` setting and `GET /nodes/{node}/config`.
 */

export function nodeConfigPath(root: string, node: string): string {
  return path.join(root, "etc/pve/nodes", node, "config");
}

/** Parsed as NodeConfig.pm parses it: `key: value` per line, `#` lines are the description. */
export function readNodeConfig(
  root: string,
  node: string,
): { conf: Record<string, string>; raw: string } {
  let raw = "";
  try {
    raw = fs.readFileSync(nodeConfigPath(root, node), "utf8");
  } catch {
    // load_config: a missing file is an empty config.
  }
  const conf: Record<string, string> = {};
  for (const line of raw.split("\n")) {
    const match = /^([a-z][a-z0-9_-]*):\s*(\S.*?)\s*$/.exec(line);
    if (match) conf[match[1]!] = match[2]!;
  }
  return { conf, raw };
}

/** Sets (or with null removes) one property, as `pvenode config set --<key> <value>` does. */
export function setNodeConfig(root: string, node: string, key: string, value: string | null): void {
  const { conf } = readNodeConfig(root, node);
  if (value === null) delete conf[key];
  else conf[key] = value;
  const file = nodeConfigPath(root, node);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const text = Object.entries(conf)
    .map(([k, v]) => `${k}: ${v}\n`)
    .join("");
  const temp = `${file}.tmp.${process.pid}`;
  fs.writeFileSync(temp, text);
  fs.renameSync(temp, file);
}

export function configDigest(raw: string): string {
  return crypto.createHash("sha1").update(raw).digest("hex");
}

/** NodeConfig.pm's `wakeonlan` format: `mac` (the default key), `bind-interface`, `broadcast-address`. */
export function parseWakeOnLan(value: string): {
  mac?: string;
  "bind-interface"?: string;
  "broadcast-address"?: string;
} {
  const out: Record<string, string> = {};
  for (const part of value.split(",")) {
    if (!part) continue;
    const at = part.indexOf("=");
    const [key, val] = at < 0 ? ["mac", part] : [part.slice(0, at), part.slice(at + 1)];
    if (!["mac", "bind-interface", "broadcast-address"].includes(key))
      throw new Error(`value without key, but schema does not define a default key`);
    out[key] = val;
  }
  return out;
}

/**
 * What `POST /nodes/{node}/wakeonlan` sends: six 0xFF bytes and the MAC sixteen times, over
 * UDP with SO_BROADCAST to the sending node's broadcast address. Proxmox sends to the "discard"
 * port (9); the lab's listener cannot hold port 9 for every lab at once, so the port is the
 * lab's (LabClusterModel.wakeOnLanPort) — the one place the lab differs.
 */
export function sendMagicPacket(mac: string, address: string, port: number): Promise<void> {
  const bytes = Buffer.from(mac.replace(/:/g, ""), "hex");
  const packet = Buffer.concat([Buffer.alloc(6, 0xff), ...Array.from({ length: 16 }, () => bytes)]);
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket("udp4");
    socket.once("error", (error) => {
      socket.close();
      reject(error);
    });
    socket.bind(0, () => {
      socket.setBroadcast(true);
      socket.send(packet, port, address, (error) => {
        socket.close();
        if (error) reject(error);
        else resolve();
      });
    });
  });
}
