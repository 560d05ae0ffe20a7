import { createHash } from "node:crypto";
import { advance, fail, type Step } from "@/lib/pipeline/step";
import { sh } from "@/lib/ssh";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { alreadyInPlace } from "../../pipeline/already-in-place";

const SEPARATOR = "--clupilot--";

/** The host's hosts file. */
export const HOSTS_FILE = "/etc/hosts";

/**
 * Everything the decision needs in one round trip: the host name, the hosts file, and the
 * address the host itself uses — the one on the interface carrying its default route. The
 * address the console connects to is no evidence: it can be a NAT, a jump host, a tunnel.
 */
export const HOSTNAME_PROBE = [
  "hostname",
  `echo ${SEPARATOR}`,
  `cat ${HOSTS_FILE}`,
  `echo ${SEPARATOR}`,
  "ip -j -4 route show default",
  `echo ${SEPARATOR}`,
  "ip -j -4 addr show",
].join("\n");

export type HostnameFacts = {
  hostname: string;
  hosts: string;
  /** null when the host has no default route or no global IPv4 address on its interface. */
  address: string | null;
  /** Why no address was found, for the fail reason. */
  addressProblem: string | null;
};

type IpRoute = { dst?: string; dev?: string; gateway?: string };
type IpAddr = {
  ifname?: string;
  addr_info?: { family?: string; local?: string; scope?: string }[];
};

export function parseHostnameProbe(stdout: string): HostnameFacts {
  const [name = "", hosts = "", routeJson = "", addrJson = ""] = stdout.split(`${SEPARATOR}\n`);
  const base = { hostname: name.trim(), hosts };
  let routes: IpRoute[];
  let addrs: IpAddr[];
  try {
    routes = JSON.parse(routeJson || "[]") as IpRoute[];
    addrs = JSON.parse(addrJson || "[]") as IpAddr[];
  } catch {
    return { ...base, address: null, addressProblem: "`ip -j` printed something that is not JSON" };
  }
  const dev = routes.find((r) => r.dst === "default" && r.dev)?.dev;
  if (!dev) return { ...base, address: null, addressProblem: "the host has no IPv4 default route" };
  const local = addrs
    .find((a) => a.ifname === dev)
    ?.addr_info?.find((i) => i.family === "inet" && i.scope === "global" && i.local)?.local;
  if (!local)
    return {
      ...base,
      address: null,
      addressProblem: `${dev}, the interface of the default route, has no global IPv4 address`,
    };
  return { ...base, address: local, addressProblem: null };
}

/** A hosts line split into address, names and the rest (comment), or null for blanks/comments. */
function parseLine(line: string): { address: string; names: string[] } | null {
  const fields = line.replace(/#.*$/, "").trim().split(/\s+/).filter(Boolean);
  if (fields.length < 2) return null;
  return { address: fields[0]!, names: fields.slice(1) };
}

export function isLoopback(address: string): boolean {
  return address.startsWith("127.") || address === "::1";
}

export type HostsDecision =
  | { kind: "holds" }
  | { kind: "rewrite"; content: string; replaced: string[] }
  | { kind: "refuse"; reason: string };

const VALID_NAME =
  /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/**
 * The goal: every hosts line naming the host carries its own address (a `127.0.1.1` line, as
 * Debian's installer writes, makes Proxmox's cluster filesystem bind to loopback and the
 * install fail). Lines naming the host with another address lose those names (the line goes
 * when nothing is left); the host's own line takes the first such line's place, with the FQDN
 * it had. Every other line stays byte for byte.
 */
export function decideHosts(hosts: string, hostname: string, address: string): HostsDecision {
  if (!VALID_NAME.test(hostname))
    return {
      kind: "refuse",
      reason: `the host's name "${hostname}" is not a valid host name; set one with hostnamectl and Retry`,
    };
  const short = hostname.split(".")[0]!;
  const names = (n: string) => n === hostname || n === short || n.split(".")[0] === short;
  const lines = hosts.split("\n");
  const trailingNewline = hosts.endsWith("\n");
  if (trailingNewline) lines.pop();

  const naming = lines
    .map((line, index) => ({ index, parsed: parseLine(line) }))
    .filter((l) => l.parsed !== null && l.parsed.names.some(names));
  // A global IPv6 address for the name is fine (the host may well have one); loopback and any
  // other IPv4 address are what make Proxmox pick the wrong address.
  const wrong = naming.filter(
    (l) =>
      l.parsed!.address !== address &&
      (isLoopback(l.parsed!.address) || !l.parsed!.address.includes(":")),
  );
  const right = naming.filter((l) => l.parsed!.address === address);
  if (wrong.length === 0 && right.length > 0) return { kind: "holds" };

  // The FQDN the host already had (`127.0.1.1 pve1.example.com pve1`), else the name itself.
  const fqdn =
    naming
      .flatMap((l) => l.parsed!.names)
      .find((n) => n.includes(".") && n.split(".")[0] === short) ??
    (hostname.includes(".") ? hostname : null);
  const ownLine = fqdn ? `${address}\t${fqdn}\t${short}` : `${address}\t${short}`;

  const out: string[] = [];
  let placed = right.length > 0;
  const replaced: string[] = [];
  lines.forEach((line, index) => {
    const hit = wrong.find((w) => w.index === index);
    if (!hit) {
      out.push(line);
      return;
    }
    replaced.push(line.trim());
    const keep = hit.parsed!.names.filter((n) => !names(n));
    if (!placed) {
      out.push(ownLine);
      placed = true;
    }
    if (keep.length > 0) out.push(`${hit.parsed!.address}\t${keep.join("\t")}`);
  });
  if (!placed) {
    // No line named the host: put its line right after localhost, where Debian keeps it.
    const at = out.findIndex((line) => parseLine(line)?.names.includes("localhost"));
    out.splice(at >= 0 ? at + 1 : 0, 0, ownLine);
  }
  return {
    kind: "rewrite",
    content: `${out.join("\n")}${trailingNewline || out.length > 0 ? "\n" : ""}`,
    replaced,
  };
}

/**
 * Replaces the hosts file atomically (temp file + rename, mode kept) — but only if it still
 * has the checksum of the copy the decision was made on; prints `changed` otherwise.
 */
export function writeHostsCommand(expectedSha256: string): string {
  return [
    `f=${HOSTS_FILE}`,
    sh`if [ "$(sha256sum < "$f" | cut -d' ' -f1)" != ${expectedSha256} ]; then echo changed; exit 3; fi`,
    'cat > "$f.clupilot-tmp" || exit 1',
    'chmod --reference="$f" "$f.clupilot-tmp" 2>/dev/null || chmod 644 "$f.clupilot-tmp"',
    'mv -f "$f.clupilot-tmp" "$f"',
    "echo written",
  ].join("\n");
}

/** What the resolver answers for the name after the change (`hostname -i` goes through NSS). */
export const VERIFY_COMMAND = "hostname -i";

/**
 * Goal: the host name resolves to the host's own address via /etc/hosts (Proxmox refuses to
 * install otherwise). An existing correct entry is left alone, byte for byte.
 */
export const prepareHostname: Step<HostServices> = {
  name: "PrepareHostname",
  maxDuration: () => 300,
  visit: (ctx) =>
    withPermanentSshFailures(async () => {
      const probe = await ctx.services.exec(HOSTNAME_PROBE, {
        timeoutMs: 30_000,
        signal: ctx.signal,
      });
      if (probe.code !== 0)
        throw new Error(
          `reading the host name and address failed (exit ${probe.code}): ${probe.stderr.trim()}`,
        );
      const facts = parseHostnameProbe(probe.stdout);
      if (facts.address === null)
        return fail(
          `cannot tell the host's own address: ${facts.addressProblem}; configure the host's network (a default route on its uplink) and Retry`,
        );
      const decision = decideHosts(facts.hosts, facts.hostname, facts.address);
      if (decision.kind === "refuse") return fail(decision.reason);
      if (decision.kind === "holds")
        return alreadyInPlace(ctx, `${facts.hostname} resolves to ${facts.address} in /etc/hosts`);

      const sha = createHash("sha256").update(facts.hosts).digest("hex");
      const write = await ctx.services.exec(writeHostsCommand(sha), {
        stdin: decision.content,
        timeoutMs: 30_000,
        signal: ctx.signal,
      });
      if (write.stdout.includes("changed"))
        throw new Error("/etc/hosts changed while it was being read; reading it again");
      if (write.code !== 0)
        throw new Error(`writing /etc/hosts failed (exit ${write.code}): ${write.stderr.trim()}`);
      ctx.log(
        `/etc/hosts: ${facts.hostname} now resolves to ${facts.address}` +
          (decision.replaced.length > 0 ? ` (replaced: ${decision.replaced.join(" | ")})` : ""),
      );

      const verify = await ctx.services.exec(VERIFY_COMMAND, {
        timeoutMs: 30_000,
        signal: ctx.signal,
      });
      const resolved = verify.stdout.trim().split(/\s+/).filter(Boolean);
      if (
        verify.code !== 0 ||
        resolved.length === 0 ||
        !resolved.includes(facts.address) ||
        resolved.some(isLoopback)
      )
        return fail(
          `after writing /etc/hosts, ${facts.hostname} resolves to "${resolved.join(" ") || verify.stderr.trim()}", not ${facts.address}; ` +
            "check /etc/nsswitch.conf (files first) and Retry",
        );
      return advance(`${facts.hostname} resolves to ${facts.address}`);
    }),
};
