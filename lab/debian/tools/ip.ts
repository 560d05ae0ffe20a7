import { physicalNics, readApplied, type AppliedNetwork } from "../network";

/**
 * Simulated iproute2 `ip` for what a console asks about the running network: `ip [-4] [-j]
 * addr|link|route show …`, answered from what `ifreload -a` (or the last boot) applied
 * (`.lab/network-applied.json`), never from the machine running the lab. JSON (`-j`) follows
 * iproute2's field names; the plain output is the usual one-line-per-object shape.
 */

type Link = {
  ifindex: number;
  ifname: string;
  flags: string[];
  mtu: number;
  operstate: string;
  master?: string;
  link_type: string;
};

function links(root: string, applied: AppliedNetwork | null): Link[] {
  const ifaces = applied?.ifaces ?? [];
  const masters = new Map<string, string>();
  for (const iface of ifaces)
    for (const port of iface.bridgePorts ?? []) masters.set(port, iface.name);
  const names = ["lo", ...physicalNics(root)];
  for (const iface of ifaces)
    if (iface.bridgePorts !== null && !names.includes(iface.name)) names.push(iface.name);
  return names.map((name, index) => ({
    ifindex: index + 1,
    ifname: name,
    flags:
      name === "lo" ? ["LOOPBACK", "UP", "LOWER_UP"] : ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
    mtu: name === "lo" ? 65536 : 1500,
    operstate: name === "lo" ? "UNKNOWN" : "UP",
    ...(masters.has(name) ? { master: masters.get(name)! } : {}),
    link_type: name === "lo" ? "loopback" : "ether",
  }));
}

function addrInfo(applied: AppliedNetwork | null, name: string) {
  if (name === "lo")
    return [{ family: "inet", local: "127.0.0.1", prefixlen: 8, scope: "host", label: "lo" }];
  return (applied?.ifaces ?? [])
    .filter((i) => i.name === name && i.address !== null)
    .map((i) => {
      const [local, prefix] = i.address!.split("/");
      return {
        family: "inet",
        local: local!,
        prefixlen: Number(prefix ?? 32),
        scope: "global",
        label: name,
      };
    });
}

function routes(applied: AppliedNetwork | null) {
  return (applied?.ifaces ?? [])
    .filter((i) => i.gateway !== null)
    .map((i) => ({
      dst: "default",
      gateway: i.gateway!,
      dev: i.name,
      protocol: "static",
      flags: [] as string[],
    }));
}

export function ip(root: string, argv: string[]): number {
  let json = false;
  let inetOnly = false;
  const words: string[] = [];
  for (const arg of argv) {
    if (arg === "-j" || arg === "-json" || arg === "--json") json = true;
    else if (arg === "-4") inetOnly = true;
    else if (arg === "-p" || arg === "-pretty" || arg === "-d" || arg === "-details") continue;
    else if (arg === "-6") {
      // The lab's hosts have no IPv6 addresses or routes.
      process.stdout.write(json ? "[]\n" : "");
      return 0;
    } else words.push(arg);
  }
  const [object = "", verb = "show", ...rest] = words;
  if (!["show", "list", "ls", "lst"].includes(verb)) {
    process.stderr.write(`lab ip: only "show" is simulated (got "${verb}")\n`);
    return 2;
  }
  const applied = readApplied(root);
  const all = links(root, applied);
  const devIndex = rest.indexOf("dev");
  const dev =
    devIndex >= 0
      ? rest[devIndex + 1]
      : rest.find((w) => w !== "dev" && w !== "master" && w !== "default");
  const masterIndex = rest.indexOf("master");
  const master = masterIndex >= 0 ? rest[masterIndex + 1] : undefined;
  const print = (value: unknown, text: string[]) => {
    process.stdout.write(json ? `${JSON.stringify(value)}\n` : text.map((l) => `${l}\n`).join(""));
    return 0;
  };
  const selected = (): Link[] | null => {
    let list = all;
    if (master !== undefined) list = list.filter((l) => l.master === master);
    if (dev !== undefined && object !== "route" && object !== "r") {
      list = list.filter((l) => l.ifname === dev);
      if (list.length === 0) {
        process.stderr.write(`Device "${dev}" does not exist.\n`);
        return null;
      }
    }
    return list;
  };
  switch (object) {
    case "a":
    case "addr":
    case "address": {
      const list = selected();
      if (list === null) return 1;
      // As iproute2: with -4, a link without an IPv4 address is left out of the list.
      const value = list
        .map((l) => ({ ...l, addr_info: addrInfo(applied, l.ifname) }))
        .filter((l) => !inetOnly || l.addr_info.length > 0);
      return print(
        value,
        value.flatMap((l) => [
          `${l.ifindex}: ${l.ifname}: <${l.flags.join(",")}> mtu ${l.mtu}${l.master ? ` master ${l.master}` : ""} state ${l.operstate}`,
          ...l.addr_info.map(
            (a) => `    inet ${a.local}/${a.prefixlen} scope ${a.scope} ${a.label}`,
          ),
        ]),
      );
    }
    case "l":
    case "link": {
      const list = selected();
      if (list === null) return 1;
      return print(
        list,
        list.map(
          (l) =>
            `${l.ifindex}: ${l.ifname}: <${l.flags.join(",")}> mtu ${l.mtu}${l.master ? ` master ${l.master}` : ""} state ${l.operstate}`,
        ),
      );
    }
    case "r":
    case "route": {
      const list = routes(applied).filter((r) => dev === undefined || r.dev === dev);
      return print(
        list,
        list.map((r) => `default via ${r.gateway} dev ${r.dev} proto ${r.protocol}`),
      );
    }
    default:
      process.stderr.write(`Object "${object}" is unknown, try "ip help".\n`);
      return 255;
  }
}
