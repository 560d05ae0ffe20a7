import { createHash } from "node:crypto";

import { NutConnection, type NutConnectionOptions } from "./connection";

export type NutConnectionLease = {
  connection: NutConnection;
  /** Gives the connection back; the last lease of a server closes it. */
  release(): Promise<void>;
};

/**
 * The open NUT connections, one per server and credentials: several UPS on one upsd share one
 * connection instead of opening one each (upsd serves every client from one process, and a
 * NUT server on a NAS is often small). Different credentials need their own connection, since
 * upsd accepts USERNAME and PASSWORD once per connection.
 */
export class NutConnectionPool {
  private readonly entries = new Map<string, { connection: NutConnection; leases: number }>();

  constructor(private readonly defaults: Pick<NutConnectionOptions, "reconnectBackoff"> = {}) {}

  acquire(server: Omit<NutConnectionOptions, "reconnectBackoff">): NutConnectionLease {
    const key = poolKey(server);
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { connection: new NutConnection({ ...this.defaults, ...server }), leases: 0 };
      this.entries.set(key, entry);
    }
    entry.leases += 1;
    const held = entry;
    let released = false;
    return {
      connection: held.connection,
      release: async () => {
        if (released) return;
        released = true;
        held.leases -= 1;
        if (held.leases > 0) return;
        if (this.entries.get(key) === held) this.entries.delete(key);
        await held.connection.close();
      },
    };
  }

  /** Number of open entries (servers × credentials), for tests and diagnostics. */
  get size(): number {
    return this.entries.size;
  }
}

/** The pool every NUT source uses unless given its own. */
export const sharedNutConnections = new NutConnectionPool();

function poolKey(server: Omit<NutConnectionOptions, "reconnectBackoff">): string {
  // The password only as a hash: the key may show up in a debugger or a heap dump label.
  const secret =
    server.credentials === undefined
      ? null
      : [
          server.credentials.username,
          createHash("sha256").update(server.credentials.password).digest("hex"),
        ];
  return JSON.stringify([server.host.toLowerCase(), server.port, secret]);
}
