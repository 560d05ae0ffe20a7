import { readFileSync } from "node:fs";
import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { listenKeepingPort } from "./listen-port";

const servers: net.Server[] = [];
const server = () => {
  const created = net.createServer();
  servers.push(created);
  return created;
};
const close = (s: net.Server) =>
  new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()));

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map(close));
});

describe("listenKeepingPort", () => {
  it("a first listen takes a port below the kernel's ephemeral range, which no outgoing connection is given", async () => {
    const low = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
    );
    const port = await listenKeepingPort(server(), 0, "127.0.0.1");
    expect(port).toBeGreaterThanOrEqual(20_000);
    expect(port).toBeLessThan(low);
  });

  it("a first listen whose pick is taken picks again", async () => {
    const taken = await listenKeepingPort(server(), 0, "127.0.0.1");
    const high =
      Number(
        readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
      ) - 1;
    // The first pick is the taken port, the next any other.
    const picks = [(taken - 20_000 + 0.5) / (high - 20_000 + 1), 0.5];
    vi.spyOn(Math, "random").mockImplementation(() => picks.shift() ?? 0.25);
    const port = await listenKeepingPort(server(), 0, "127.0.0.1");
    expect(picks).toEqual([]);
    expect(port).not.toBe(taken);
  });

  it("a service returning to its port waits out whoever holds it meanwhile", async () => {
    const first = server();
    const port = await listenKeepingPort(first, 0, "127.0.0.1");
    await close(first);
    const holder = server();
    await listenKeepingPort(holder, port, "127.0.0.1");
    const back = listenKeepingPort(first, port, "127.0.0.1", { returns: true });
    let settled = false;
    void back.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(settled).toBe(false);
    await close(holder);
    await expect(back).resolves.toBe(port);
  });

  it("a first listen on a taken port fails at once, as listen does", async () => {
    const holder = server();
    const port = await listenKeepingPort(holder, 0, "127.0.0.1");
    await expect(listenKeepingPort(server(), port, "127.0.0.1")).rejects.toMatchObject({
      code: "EADDRINUSE",
    });
  });
});
