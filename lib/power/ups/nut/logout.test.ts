import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { NutConnectionPool } from "./pool";
import { NutUpsSource } from "./source";

/*
 * Logging out of a UPS the console no longer needs, against a scripted server that records each
 * connection's lines — for what real upsd does not do (leave a LOGOUT unanswered) and for what
 * goes over the wire. What real upsd and the lab count (NUMLOGINS) is in source.int.test.ts.
 */

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
});

type Connection = { lines: string[]; closed: boolean };

/** A upsd-like server: OK to everything, a UPS `ups1`/`ups2` on line; LOGOUT as `logout` says. */
async function scripted(logout: "answers" | "silent"): Promise<{
  port: number;
  connections: Connection[];
}> {
  const connections: Connection[] = [];
  const server = net.createServer((socket) => {
    const connection: Connection = { lines: [], closed: false };
    connections.push(connection);
    socket.on("close", () => (connection.closed = true));
    socket.on("error", () => {});
    let buffer = "";
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        connection.lines.push(line);
        const list = /^LIST VAR (\S+)$/.exec(line);
        if (list) {
          socket.write(
            `BEGIN LIST VAR ${list[1]}\nVAR ${list[1]} ups.status "OL"\nEND LIST VAR ${list[1]}\n`,
          );
        } else if (line === "LOGOUT") {
          if (logout === "answers") socket.end("OK Goodbye\n");
        } else {
          socket.write("OK\n");
        }
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as net.AddressInfo).port, connections };
}

const sourceOf = (port: number, pool: NutConnectionPool, upsName = "ups1") =>
  new NutUpsSource(
    { type: "nut", host: "127.0.0.1", port, upsName, username: "mon", password: "pw" },
    { pool },
  );

const commands = (connection: Connection | undefined) =>
  (connection?.lines ?? []).map((line) => line.split(" ")[0]);

describe("logging out of a UPS the console no longer needs", () => {
  it("says LOGOUT, and reads on over a new connection that does not LOGIN for it", async () => {
    const { port, connections } = await scripted("answers");
    const source = sourceOf(port, new NutConnectionPool());
    try {
      expect(await source.read()).toMatchObject({ kind: "reading" });
      await source.setNeeded(false);
      expect(connections[0]!.lines).toEqual([
        'USERNAME "mon"',
        'PASSWORD "pw"',
        "LOGIN ups1",
        "LIST VAR ups1",
        "LOGOUT",
      ]);
      expect(await source.read()).toMatchObject({ kind: "reading" });
      expect(await source.read()).toMatchObject({ kind: "reading" });
      expect(connections).toHaveLength(2);
      expect(commands(connections[1])).toEqual(["USERNAME", "PASSWORD", "LIST", "LIST"]);
      // Needed again: the next read logs in on the connection it has.
      await source.setNeeded(true);
      await source.read();
      expect(commands(connections[1]).slice(4)).toEqual(["LOGIN", "LIST"]);
    } finally {
      await source.close();
    }
  });

  it("a server that does not answer LOGOUT: the connection is cut, which ends the login too", async () => {
    const { port, connections } = await scripted("silent");
    const source = sourceOf(port, new NutConnectionPool());
    try {
      await source.read();
      await source.setNeeded(false);
      expect(connections[0]!.lines.at(-1)).toBe("LOGOUT");
      // Cut by the console, not left open for the server to count.
      await new Promise<void>((resolve) => {
        const check = () => (connections[0]!.closed ? resolve() : setTimeout(check, 10));
        check();
      });
      expect(await source.read()).toMatchObject({ kind: "reading" });
      expect(commands(connections[1])).not.toContain("LOGIN");
    } finally {
      await source.close();
    }
  });

  it("logged out before its first read: that read does not LOGIN", async () => {
    const { port, connections } = await scripted("answers");
    const source = sourceOf(port, new NutConnectionPool());
    try {
      await source.setNeeded(false);
      await source.read();
      expect(commands(connections[0])).toEqual(["USERNAME", "PASSWORD", "LIST"]);
    } finally {
      await source.close();
    }
  });

  it("two UPSes on one connection: after logging out of the one it was logged in for, the other logs in", async () => {
    const { port, connections } = await scripted("answers");
    const pool = new NutConnectionPool();
    const first = sourceOf(port, pool, "ups1");
    const second = sourceOf(port, pool, "ups2");
    try {
      await first.read();
      await second.read();
      // upsd allows one LOGIN per connection: the first UPS read has it.
      expect(connections[0]!.lines.filter((l) => l.startsWith("LOGIN"))).toEqual(["LOGIN ups1"]);
      await first.setNeeded(false);
      await first.read();
      await second.read();
      expect(connections[1]!.lines.filter((l) => l.startsWith("LOGIN"))).toEqual(["LOGIN ups2"]);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
