import fs from "node:fs";
import path from "node:path";

import { hostPath, labDir } from "./lab-state";

/**
 * `/etc/network/interfaces` as ifupdown2 reads it, and what `ifreload -a` checks before it
 * touches anything: an invalid file fails with ifupdown2-style `error:` lines and the running
 * configuration (`.lab/network-applied`, `.lab/network-applied.json`) stays as it was.
 */

export type Iface = {
  name: string;
  family: string;
  method: string;
  line: number;
  options: { key: string; value: string; line: number }[];
};

export type NetworkConfig = { auto: string[]; ifaces: Iface[] };

export type AppliedNetwork = {
  ifaces: {
    name: string;
    method: string;
    address: string | null;
    gateway: string | null;
    bridgePorts: string[] | null;
  }[];
  addresses: string[];
};

/** Physical NICs the lab host has (`.lab/nics`, one per line; default `eno1`). */
export function physicalNics(root: string): string[] {
  try {
    const nics = fs
      .readFileSync(path.join(labDir(root), "nics"), "utf8")
      .split(/\s+/)
      .filter(Boolean);
    if (nics.length > 0) return nics;
  } catch {
    // default
  }
  return ["eno1"];
}

const IFACE_OPTION_KEYS = new Set([
  "address",
  "netmask",
  "gateway",
  "broadcast",
  "network",
  "mtu",
  "hwaddress",
  "metric",
  "bridge-ports",
  "bridge-stp",
  "bridge-fd",
  "bridge-vlan-aware",
  "bridge-vids",
  "bridge-pvid",
  "bridge_ports",
  "bridge_stp",
  "bridge_fd",
  "dns-nameservers",
  "dns-search",
  "dns-domain",
  "pre-up",
  "up",
  "post-up",
  "pre-down",
  "down",
  "post-down",
  "bond-slaves",
  "bond-mode",
  "bond-miimon",
  "bond-primary",
  "vlan-raw-device",
  "ovs_type",
  "ovs_ports",
  "accept_ra",
  "autoconf",
  "hostname",
  "pointopoint",
  "scope",
  "description",
  "alias",
]);

export function parseInterfaces(
  root: string,
  file = "/etc/network/interfaces",
  errors: string[] = [],
): NetworkConfig {
  const config: NetworkConfig = { auto: [], ifaces: [] };
  let text: string;
  try {
    text = fs.readFileSync(hostPath(root, file), "utf8");
  } catch {
    errors.push(`error: ${file}: No such file or directory`);
    return config;
  }
  let current: Iface | null = null;
  text.split("\n").forEach((raw, index) => {
    const lineNo = index + 1;
    const line = raw.replace(/#.*$/, "").trimEnd();
    if (line.trim() === "") return;
    const words = line.trim().split(/\s+/);
    const keyword = words[0]!;
    const indented = /^\s/.test(line);
    if (keyword === "auto" || keyword.startsWith("allow-")) {
      config.auto.push(...words.slice(1));
      current = null;
      return;
    }
    if (keyword === "iface") {
      const [, name, family, method] = words;
      if (!name || !family || !method) {
        errors.push(`error: ${file}: line${lineNo}: iface: invalid syntax '${line.trim()}'`);
        current = null;
        return;
      }
      if (family !== "inet" && family !== "inet6") {
        errors.push(
          `error: ${file}: line${lineNo}: iface ${name}: unsupported address family '${family}'`,
        );
      }
      if (!["static", "manual", "dhcp", "loopback", "auto"].includes(method)) {
        errors.push(
          `error: ${file}: line${lineNo}: iface ${name}: unsupported address method '${method}'`,
        );
      }
      current = { name, family, method, line: lineNo, options: [] };
      config.ifaces.push(current);
      return;
    }
    if (keyword === "source" || keyword === "source-directory") {
      const pattern = words[1] ?? "";
      const dir = keyword === "source" ? path.posix.dirname(pattern) : pattern;
      const glob = keyword === "source" ? path.posix.basename(pattern) : "*";
      const re = new RegExp(`^${glob.replace(/[.+^${}()|\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
      let names: string[] = [];
      try {
        names = fs
          .readdirSync(hostPath(root, dir))
          .filter((n) => re.test(n))
          .sort();
      } catch {
        // nothing to source
      }
      for (const name of names) {
        const sub = parseInterfaces(root, path.posix.join(dir, name), errors);
        config.auto.push(...sub.auto);
        config.ifaces.push(...sub.ifaces);
      }
      current = null;
      return;
    }
    if (current !== null && (indented || IFACE_OPTION_KEYS.has(keyword))) {
      const iface: Iface = current;
      if (!IFACE_OPTION_KEYS.has(keyword)) {
        errors.push(
          `error: ${file}: line${lineNo}: iface ${iface.name}: unsupported keyword (${keyword})`,
        );
        return;
      }
      if (words.length < 2) {
        errors.push(
          `error: ${file}: line${lineNo}: iface ${iface.name}: invalid syntax '${line.trim()}'`,
        );
        return;
      }
      iface.options.push({
        key: keyword.replace(/_/g, "-"),
        value: words.slice(1).join(" "),
        line: lineNo,
      });
      return;
    }
    errors.push(`error: ${file}: line${lineNo}: invalid keyword '${keyword}'`);
  });
  return config;
}

function parseIpv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const nums = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : NaN));
  return nums.every((n) => n >= 0 && n <= 255) ? nums : null;
}

function toInt(ip: number[]): number {
  return ((ip[0]! << 24) >>> 0) + (ip[1]! << 16) + (ip[2]! << 8) + ip[3]!;
}

function netmaskBits(mask: string): number | null {
  if (/^\d+$/.test(mask)) return Number(mask) <= 32 ? Number(mask) : null;
  const ip = parseIpv4(mask);
  if (!ip) return null;
  const bits = toInt(ip).toString(2).padStart(32, "0");
  return /^1*0*$/.test(bits) ? (bits.indexOf("0") === -1 ? 32 : bits.indexOf("0")) : null;
}

/** Validates the file and returns what would be applied, or the errors ifreload prints. */
export function checkInterfaces(root: string): { errors: string[]; applied: AppliedNetwork } {
  const errors: string[] = [];
  const config = parseInterfaces(root, "/etc/network/interfaces", errors);
  const applied: AppliedNetwork = { ifaces: [], addresses: [] };
  const known = new Set([...physicalNics(root), "lo", ...config.ifaces.map((i) => i.name)]);
  const seen = new Map<string, number>();
  for (const iface of config.ifaces) {
    if (iface.family !== "inet") continue;
    if (seen.has(iface.name)) {
      errors.push(
        `error: ${iface.name}: duplicate iface stanza for family inet (lines ${seen.get(iface.name)} and ${iface.line})`,
      );
    }
    seen.set(iface.name, iface.line);
    const opt = (k: string) => iface.options.find((o) => o.key === k)?.value ?? null;
    let address = opt("address");
    const netmask = opt("netmask");
    const gateway = opt("gateway");
    let bits: number | null = null;
    if (address !== null) {
      const [ip, prefix] = address.split("/");
      const parsed = parseIpv4(ip!);
      bits =
        prefix !== undefined ? netmaskBits(prefix) : netmask !== null ? netmaskBits(netmask) : 32;
      if (!parsed || bits === null) {
        errors.push(`error: ${iface.name}: invalid address '${address}'`);
      } else {
        address = `${ip}/${bits}`;
        applied.addresses.push(address);
      }
    } else if (iface.method === "static") {
      errors.push(`error: ${iface.name}: iface ${iface.name} inet static: missing address`);
    }
    if (gateway !== null) {
      const gw = parseIpv4(gateway);
      if (!gw) errors.push(`error: ${iface.name}: invalid gateway '${gateway}'`);
      else if (address !== null && bits !== null && bits > 0) {
        const ip = parseIpv4(address.split("/")[0]!);
        const mask = bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
        if (ip && (toInt(ip) & mask) >>> 0 !== (toInt(gw) & mask) >>> 0) {
          errors.push(
            `error: ${iface.name}: cmd '/bin/ip route replace default via ${gateway} proto kernel dev ${iface.name}' failed: returned 2 (Error: Nexthop has invalid gateway.\n)`,
          );
        }
      }
    }
    let bridgePorts: string[] | null = null;
    const ports = opt("bridge-ports");
    if (ports !== null) {
      bridgePorts = ports === "none" ? [] : ports.split(/\s+/);
      for (const port of bridgePorts) {
        if (!known.has(port)) {
          errors.push(`error: ${iface.name}: bridge port ${port} does not exist`);
        }
      }
      for (const key of ["bridge-stp", "bridge-vlan-aware"]) {
        const v = opt(key);
        if (v !== null && !["on", "off", "yes", "no", "0", "1"].includes(v))
          errors.push(`error: ${iface.name}: ${key}: invalid value '${v}'`);
      }
      const fd = opt("bridge-fd");
      if (fd !== null && !/^\d+$/.test(fd))
        errors.push(`error: ${iface.name}: bridge-fd: invalid value '${fd}'`);
    } else if (/^vmbr\d+$/.test(iface.name)) {
      errors.push(
        `error: ${iface.name}: bridge-ports missing (a vmbr bridge needs "bridge-ports <nic>" or "bridge-ports none")`,
      );
    }
    applied.ifaces.push({ name: iface.name, method: iface.method, address, gateway, bridgePorts });
  }
  return { errors, applied };
}

export function writeApplied(root: string, applied: AppliedNetwork): void {
  fs.copyFileSync(
    hostPath(root, "/etc/network/interfaces"),
    path.join(labDir(root), "network-applied"),
  );
  fs.writeFileSync(
    path.join(labDir(root), "network-applied.json"),
    `${JSON.stringify(applied, null, 2)}\n`,
  );
}

export function readApplied(root: string): AppliedNetwork | null {
  try {
    return JSON.parse(
      fs.readFileSync(path.join(labDir(root), "network-applied.json"), "utf8"),
    ) as AppliedNetwork;
  } catch {
    return null;
  }
}

/**
 * What a broken bridge leaves running: every bridge is up with its ports, but its address (and
 * so its default route) never came up. ifupdown2 still exits 0.
 */
export function withoutBridgeAddresses(applied: AppliedNetwork): AppliedNetwork {
  const lost = applied.ifaces
    .filter((iface) => iface.bridgePorts !== null && iface.address !== null)
    .map((iface) => iface.address!);
  return {
    ifaces: applied.ifaces.map((iface) =>
      iface.bridgePorts === null ? iface : { ...iface, address: null, gateway: null },
    ),
    addresses: applied.addresses.filter((address) => !lost.includes(address)),
  };
}

/**
 * Whether the console can reach the host: the running network carries at least one global
 * address. A host with no recorded network (nothing applied yet) is reachable, as before any
 * ifreload. The lab's SSH server asks this for every new connection.
 */
export function hostReachable(root: string): boolean {
  const applied = readApplied(root);
  return applied === null || applied.addresses.length > 0;
}
