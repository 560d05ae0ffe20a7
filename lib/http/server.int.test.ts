import http from "node:http";
import net from "node:net";

import { afterEach, describe, expect, it } from "vitest";

import { createConsoleServer, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } from "./server";

/**
 * The web server keeps an idle kept-alive connection open longer than clients and proxies keep
 * theirs: a client that reuses its socket after Node's default of 5 s (Node's own agent does,
 * at 5 s) gets its answer instead of ECONNRESET. Real time: Node's server timers do not follow
 * a fake clock.
 */

/** Node's own keepAliveTimeout, which closed such sockets before. */
const NODE_DEFAULT_KEEP_ALIVE_MS = new http.Server().keepAliveTimeout;

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

async function listening(): Promise<number> {
  let served = 0;
  server = createConsoleServer((_request, response) => {
    served += 1;
    response.end(`answer ${served}`);
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return (server.address() as net.AddressInfo).port;
}

/** One raw TCP connection: requests written on it, answers read from it in order. */
function rawConnection(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  let received = "";
  let closedAt: number | null = null;
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => (received += chunk));
  socket.on("close", () => (closedAt ??= Date.now()));
  socket.on("error", () => undefined); // a reset shows as `closed` and a missing answer
  return {
    closedAt: () => closedAt,
    async request(body: string): Promise<string> {
      const before = received.length;
      socket.write("GET / HTTP/1.1\r\nHost: console.test\r\nConnection: keep-alive\r\n\r\n");
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (received.slice(before).includes(body)) return resolve();
          if (closedAt !== null)
            return reject(new Error(`the server closed the connection without answering`));
          setTimeout(check, 5);
        };
        check();
      });
      return received.slice(before);
    },
    end: () => socket.destroy(),
  };
}

describe("the console's web server and kept-alive connections", () => {
  it("answers a second request on a socket idle just past Node's default keep-alive timeout", async () => {
    const connection = rawConnection(await listening());
    try {
      const first = await connection.request("answer 1");
      expect(first).toMatch(/^HTTP\/1\.1 200 OK/);
      expect(first).toMatch(/^Keep-Alive: timeout=65\r$/m);
      // Idle a second past the moment Node's default would have closed the socket.
      await new Promise((resolve) => setTimeout(resolve, NODE_DEFAULT_KEEP_ALIVE_MS + 1_000));
      expect(connection.closedAt(), "the server closed the idle socket").toBeNull();
      expect(await connection.request("answer 2")).toMatch(/^HTTP\/1\.1 200 OK/);
    } finally {
      connection.end();
    }
  }, 30_000);

  it("keeps idle sockets longer than common proxies (60 s), and gives headers longer still", async () => {
    await listening();
    expect(server!.keepAliveTimeout).toBe(KEEP_ALIVE_TIMEOUT_MS);
    expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThan(60_000);
    expect(server!.headersTimeout).toBe(HEADERS_TIMEOUT_MS);
    expect(HEADERS_TIMEOUT_MS).toBeGreaterThan(KEEP_ALIVE_TIMEOUT_MS);
  });
});
