import { BlockList, isIP } from "node:net";
import type { IncomingHttpHeaders } from "node:http";

/**
 * Which `X-Forwarded-*` headers the console believes. Next.js keeps an `X-Forwarded-For` the
 * client sent and only fills it in when absent, so a client talking to the console directly
 * could name any address it liked and get a fresh sign-in limit per guess. The web server
 * (scripts/web-server.ts) therefore rewrites the headers of every request before Next.js sees
 * them: the address is the TCP peer's, unless the peer is a proxy the operator listed in
 * `CLUPILOT_TRUSTED_PROXIES`; then the entry that proxy appended counts (and so on, through a
 * chain of listed proxies).
 */
export type TrustedProxies = { list: BlockList; described: string };

/**
 * Parses `CLUPILOT_TRUSTED_PROXIES`: addresses or CIDR ranges, comma-separated
 * (`10.0.0.5, 192.168.10.0/24, ::1`). Empty or unset: no proxy is trusted.
 */
export function parseTrustedProxies(value: string | undefined): TrustedProxies {
  const list = new BlockList();
  const entries = (value ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address, prefix, ...rest] = entry.split("/");
    const family = isIP(address ?? "");
    const bits = prefix === undefined ? undefined : Number(prefix);
    const maxBits = family === 6 ? 128 : 32;
    if (
      !family ||
      rest.length > 0 ||
      (bits !== undefined && !(Number.isInteger(bits) && bits >= 0 && bits <= maxBits))
    ) {
      throw new Error(
        `CLUPILOT_TRUSTED_PROXIES: "${entry}" is not an IP address or CIDR range. List your reverse proxies' addresses, comma-separated (e.g. 10.0.0.5, 192.168.10.0/24), or leave it unset when browsers reach the console directly.`,
      );
    }
    const type = family === 6 ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(address!, type);
    else list.addSubnet(address!, bits, type);
  }
  return { list, described: entries.length ? entries.join(", ") : "none" };
}

/** `::ffff:127.0.0.1` (an IPv4 peer on a dual-stack socket) is 127.0.0.1. */
function normalize(address: string): string {
  const trimmed = address.trim().replace(/^\[(.*)\]$/, "$1");
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed);
  return mapped ? mapped[1]! : trimmed.toLowerCase();
}

function isTrusted(address: string, trusted: TrustedProxies): boolean {
  const family = isIP(address);
  return family !== 0 && trusted.list.check(address, family === 6 ? "ipv6" : "ipv4");
}

/**
 * The client's address: the peer, or — while the address at hand is a trusted proxy — the entry
 * that proxy appended to `X-Forwarded-For` (the last one not yet consumed).
 */
export function resolveClientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies,
): string {
  const chain = [forwardedFor ?? []]
    .flat()
    .flatMap((value) => value.split(","))
    .map((entry) => entry.trim())
    .filter(Boolean);
  let address = normalize(peer ?? "unknown");
  while (isTrusted(address, trusted) && chain.length > 0) address = normalize(chain.pop()!);
  return address;
}

/**
 * Rewrites the forwarding headers in place: `X-Forwarded-For` becomes the one resolved client
 * address; `X-Real-IP` and `Forwarded` go (nothing reads them, nobody should start to); and the
 * proto/host/port a client sent directly are dropped, so Next.js fills them in from the
 * connection. A trusted proxy's proto/host/port stay (it terminates TLS).
 */
export function rewriteForwardedHeaders(
  headers: IncomingHttpHeaders,
  peer: string | undefined,
  trusted: TrustedProxies,
): void {
  headers["x-forwarded-for"] = resolveClientAddress(peer, headers["x-forwarded-for"], trusted);
  delete headers["x-real-ip"];
  delete headers["forwarded"];
  if (!isTrusted(normalize(peer ?? ""), trusted)) {
    delete headers["x-forwarded-proto"];
    delete headers["x-forwarded-host"];
    delete headers["x-forwarded-port"];
  }
}
