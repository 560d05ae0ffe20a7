import { readFileSync } from "node:fs";
import type net from "node:net";

/**
 * Listening for a lab service that goes away and comes back on the same port (a host's sshd
 * across a reboot, pveproxy powered off and on, a UPS's upsd): the port must still be free when
 * it comes back. A port the kernel picked (`listen(0)`) is one of its ephemeral ports, which it
 * also hands to outgoing connections: while the service was down, any client on the machine (a
 * parallel test's) could be given it, and the service's return failed with EADDRINUSE. So the
 * first listen takes a free port BELOW the kernel's ephemeral range, which no outgoing
 * connection is ever given; a return waits out a holder for a while instead of failing at once.
 */

/** Below the ephemeral range, above the ports services commonly fix (3000, 5432, 8006, 8080…). */
const LOWEST_PORT = 20_000;
const FIRST_LISTEN_TRIES = 50;
const RETURN_WAIT_MS = 15_000;
const RETURN_RETRY_MS = 100;

/** The kernel's range for outgoing connections' local ports (Linux's default if unreadable). */
function ephemeralRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return { low: low!, high: high! };
  } catch {
    // not Linux, or /proc is not mounted: Linux's default
  }
  return { low: 32_768, high: 60_999 };
}

function listenOnce(server: net.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
}

function inUse(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === "EADDRINUSE";
}

/**
 * Listens on `port`, or — with 0 — on a free port below the ephemeral range; returns the port.
 * When the service `returns` to its port and finds it taken, it tries again for up to 15 s (a
 * client's connection that holds it ends), then the error says who to look for.
 */
export async function listenKeepingPort(
  server: net.Server,
  port: number,
  host: string,
  options: { returns?: boolean } = {},
): Promise<number> {
  if (port === 0) {
    const highest = ephemeralRange().low - 1;
    if (highest > LOWEST_PORT) {
      for (let tries = 0; tries < FIRST_LISTEN_TRIES; tries++) {
        const candidate = LOWEST_PORT + Math.floor(Math.random() * (highest - LOWEST_PORT + 1));
        try {
          await listenOnce(server, candidate, host);
          return candidate;
        } catch (error) {
          if (!inUse(error)) throw error;
        }
      }
    }
    // No room below the range (an unusual ip_local_port_range), or all tries taken.
    await listenOnce(server, 0, host);
    return (server.address() as net.AddressInfo).port;
  }
  const deadline = Date.now() + RETURN_WAIT_MS;
  for (;;) {
    try {
      await listenOnce(server, port, host);
      return port;
    } catch (error) {
      if (!inUse(error) || !options.returns) throw error;
      if (Date.now() >= deadline)
        throw new Error(
          `lab: cannot listen on ${host}:${port} again (${(error as Error).message}); another process holds the port — see \`ss -tanp 'sport = :${port}'\``,
        );
      await new Promise((resolve) => setTimeout(resolve, RETURN_RETRY_MS));
    }
  }
}
