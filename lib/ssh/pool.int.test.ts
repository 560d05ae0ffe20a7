import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLab, waitUntil, type LabNode } from "@/lab";
import { connectSsh, type SshSession } from "./client";
import { SshChannelError, SshCommandTimeoutError } from "./errors";
import { createSshConnectionPool, type PoolKey } from "./pool";

let lab: LabNode;

beforeAll(async () => {
  lab = await startLab();
});
afterAll(async () => {
  await lab?.stop();
});

const logins = () => lab.authAttempts.filter((attempt) => attempt.accepted).length;

/** Opens real connections to the lab node and keeps each one it opened, to look at later. */
function opener() {
  const opened: SshSession[] = [];
  return {
    opened,
    open: async () => {
      const session = await connectSsh({
        host: lab.ssh.host,
        port: lab.ssh.port,
        username: lab.ssh.username,
        auth: { kind: "password", password: lab.ssh.password },
        pinnedHostKey: lab.ssh.hostKeySha256,
        readyTimeoutMs: 5000,
      });
      opened.push(session);
      return session;
    },
  };
}

const host: PoolKey = { scope: "host-1", identity: "login-a" };

describe("SSH connection pool", () => {
  it("leases of one host and login share one authenticated connection, also after one was handed back", async () => {
    const pool = createSshConnectionPool();
    const { open, opened } = opener();
    const before = logins();
    const [a, b] = await Promise.all([pool.lease(host, open), pool.lease(host, open)]);
    const [x, y] = await Promise.all([a.exec("echo a"), b.exec("echo b")]);
    expect([x.stdout, y.stdout]).toEqual(["a\n", "b\n"]);
    a.close();
    b.close();
    const c = await pool.lease(host, open);
    expect((await c.exec("echo c")).stdout).toBe("c\n");
    c.close();
    expect(opened).toHaveLength(1);
    expect(logins() - before).toBe(1);
    expect(pool.stats).toEqual({ opened: 1, reused: 2 });
    // A handed-back lease runs nothing: its holder must lease again.
    await expect(c.exec("echo late")).rejects.toThrow(/handed back/);
    pool.close();
    await waitUntil(() => !opened[0]!.alive, { timeoutMs: 5000 });
  });

  it("another login for the host (a changed pin or credential) gets its own connection; the old one closes once handed back", async () => {
    const pool = createSshConnectionPool();
    const { open, opened } = opener();
    const old = await pool.lease(host, open);
    const changed = await pool.lease({ scope: host.scope, identity: "login-b" }, open);
    expect(opened).toHaveLength(2);
    // Still held: it finishes what it runs, and closes when handed back.
    expect((await old.exec("echo still")).stdout).toBe("still\n");
    old.close();
    await waitUntil(() => !opened[0]!.alive, { timeoutMs: 5000 });
    expect(opened[1]!.alive).toBe(true);
    changed.close();
    // And the old login is not kept any more: asking for it connects anew.
    (await pool.lease(host, open)).close();
    expect(opened).toHaveLength(3);
    pool.close();
  });

  it("a connection lost under a command is never leased again", async () => {
    const pool = createSshConnectionPool();
    const { open, opened } = opener();
    const lease = await pool.lease(host, open);
    lab.faults.dropAfterMs = 100;
    try {
      await expect(lease.exec("sleep 2", { timeoutMs: 10_000 })).rejects.toBeInstanceOf(
        SshChannelError,
      );
    } finally {
      lab.faults.dropAfterMs = null;
    }
    lease.close();
    const next = await pool.lease(host, open);
    expect((await next.exec("echo fresh")).stdout).toBe("fresh\n");
    next.close();
    expect(opened).toHaveLength(2);
    pool.close();
  });

  it("a command its caller aborted keeps the connection; one that timed out puts it in doubt", async () => {
    const pool = createSshConnectionPool();
    const { open, opened } = opener();
    const lease = await pool.lease(host, open);
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    await expect(lease.exec("sleep 5", { signal: stop.signal })).rejects.toMatchObject({
      aborted: true,
    });
    lease.close();
    const again = await pool.lease(host, open);
    expect(opened).toHaveLength(1);
    await expect(again.exec("sleep 5", { timeoutMs: 100 })).rejects.toBeInstanceOf(
      SshCommandTimeoutError,
    );
    again.close();
    (await pool.lease(host, open)).close();
    expect(opened).toHaveLength(2);
    pool.close();
  });

  it("retire(scope) makes the next lease a fresh connection; idle ones close by themselves; close() ends them all", async () => {
    const pool = createSshConnectionPool({ idleMs: 200 });
    const { open, opened } = opener();
    (await pool.lease(host, open)).close();
    pool.retire(host.scope);
    await waitUntil(() => !opened[0]!.alive, { timeoutMs: 5000 });
    (await pool.lease(host, open)).close();
    expect(opened).toHaveLength(2);
    await waitUntil(() => !opened[1]!.alive, { timeoutMs: 5000 });
    const held = await pool.lease({ scope: "host-2", identity: "x" }, open);
    pool.close();
    await waitUntil(() => !opened[2]!.alive, { timeoutMs: 5000 });
    expect(held.alive).toBe(false);
  });
});
