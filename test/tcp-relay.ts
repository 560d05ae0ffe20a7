import net from "node:net";

/**
 * A TCP path to a server (the test database) that a test can break the two ways a network
 * breaks: **cut** (every socket reset, new ones refused) and **freeze** (the open sockets stay
 * open but nothing passes either way — a half-open connection, as after a peer vanished without
 * a FIN or RST; new connections pass).
 */
export async function startTcpRelay(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  const frozen = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) return client.destroy();
    const upstream = net.connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {});
    }
    // Written by hand instead of pipe(): a frozen pair must swallow bytes, not buffer them.
    const relay = (from: net.Socket, to: net.Socket) =>
      from.on("data", (chunk) => {
        if (!frozen.has(from)) to.write(chunk);
      });
    relay(client, upstream);
    relay(upstream, client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    /** The URL of `url` with its host and port replaced by the relay's. */
    via(url: string): string {
      const relayed = new URL(url);
      relayed.hostname = "127.0.0.1";
      relayed.port = String(port);
      return relayed.toString();
    },
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      cut = false;
    },
    /** Every socket open now stops passing bytes (and stays open); later connections pass. */
    freezeOpenConnections() {
      for (const socket of sockets) frozen.add(socket);
    },
    async close() {
      cut = true;
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
