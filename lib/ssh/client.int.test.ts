import { randomBytes } from "node:crypto";
import { readFile, readdir, stat } from "node:fs/promises";
import net from "node:net";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { generateClientKey, isProcessAlive, startLab, waitUntil, type LabNode } from "@/lab";

import { connectSsh, type SshSession, type SshTarget } from "./client";
import {
  SshAuthError,
  SshChannelError,
  SshCommandTimeoutError,
  SshConnectError,
  SshUploadError,
} from "./errors";
import { HostKeyMismatchError } from "./host-key";

let lab: LabNode;

function target(overrides: Partial<SshTarget> = {}): SshTarget {
  return {
    host: lab.ssh.host,
    port: lab.ssh.port,
    username: lab.ssh.username,
    auth: { kind: "password", password: lab.ssh.password },
    pinnedHostKey: null,
    readyTimeoutMs: 5000,
    ...overrides,
  };
}

async function withSession<T>(
  fn: (session: SshSession) => Promise<T>,
  overrides?: Partial<SshTarget>,
): Promise<T> {
  const session = await connectSsh(target(overrides));
  try {
    return await fn(session);
  } finally {
    session.close();
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

beforeAll(async () => {
  lab = await startLab();
});

afterAll(async () => {
  await lab?.stop();
});

describe("connectSsh: authentication", () => {
  it("logs in with a password and reports the host key fingerprint on first contact", async () => {
    await withSession(async (session) => {
      expect(session.hostKeySha256).toBe(lab.ssh.hostKeySha256);
      expect(session.hostKeySha256).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
      const result = await session.exec("whoami >/dev/null 2>&1; echo ok");
      expect(result.stdout).toBe("ok\n");
    });
  });

  it("authenticates with the one method it holds: no 'none' probe first (one attempt for a password, one query and one signature for a key)", async () => {
    const since = lab.authAttempts.length;
    await withSession(async () => {});
    expect(lab.authAttempts.slice(since).map((a) => [a.method, a.accepted])).toEqual([
      ["password", true],
    ]);
    const key = generateClientKey("one-method");
    lab.authorizeKey(key.publicKey);
    const keySince = lab.authAttempts.length;
    await withSession(async () => {}, {
      auth: { kind: "private_key", privateKey: key.privateKey },
    });
    expect(lab.authAttempts.slice(keySince).map((a) => a.method)).not.toContain("none");
    expect(lab.authAttempts.at(-1)).toMatchObject({ method: "publickey", accepted: true });
  });

  it("logs in with an authorized private key", async () => {
    const key = generateClientKey("client-test");
    lab.authorizeKey(key.publicKey);
    await withSession(
      async (session) => {
        expect((await session.exec("echo key")).stdout).toBe("key\n");
      },
      { auth: { kind: "private_key", privateKey: key.privateKey } },
    );
    const attempt = lab.authAttempts.at(-1);
    expect(attempt).toMatchObject({ method: "publickey", accepted: true, signed: true });
  });

  it("refuses a key that is not authorized with SshAuthError", async () => {
    const key = generateClientKey("stranger");
    const error = await rejection(
      connectSsh(target({ auth: { kind: "private_key", privateKey: key.privateKey } })),
    );
    expect(error).toBeInstanceOf(SshAuthError);
  });

  it("reports an unreadable private key without echoing it", async () => {
    const error = await rejection(
      connectSsh(target({ auth: { kind: "private_key", privateKey: "not a key SECRET123" } })),
    );
    expect(error).toBeInstanceOf(SshAuthError);
    expect((error as SshAuthError).reason).toBe("key_unreadable");
    expect((error as Error).message).not.toContain("SECRET123");
  });

  it("refuses a wrong password with SshAuthError naming user and host, never the password", async () => {
    const wrong = "wrong-Pa55word!";
    const error = await rejection(
      connectSsh(target({ auth: { kind: "password", password: wrong } })),
    );
    expect(error).toBeInstanceOf(SshAuthError);
    const message = (error as Error).message;
    expect(message).toContain(`root@127.0.0.1:${lab.ssh.port}`);
    expect(message).not.toContain(wrong);
    expect(message).not.toContain(lab.ssh.password);
  });
});

describe("connectSsh: host key pinning", () => {
  it("connects when the pinned fingerprint matches", async () => {
    await withSession(
      async (session) => expect(session.hostKeySha256).toBe(lab.ssh.hostKeySha256),
      {
        pinnedHostKey: lab.ssh.hostKeySha256,
      },
    );
  });

  it("refuses a changed host key before authenticating: names both keys, sends no password", async () => {
    const separateLab = await startLab();
    try {
      const pinned = separateLab.ssh.hostKeySha256;
      await separateLab.rotateHostKey();
      const offered = separateLab.ssh.hostKeySha256;
      expect(offered).not.toBe(pinned);
      const error = await rejection(
        connectSsh({
          host: separateLab.ssh.host,
          port: separateLab.ssh.port,
          username: "root",
          auth: { kind: "password", password: separateLab.ssh.password },
          pinnedHostKey: pinned,
        }),
      );
      expect(error).toBeInstanceOf(HostKeyMismatchError);
      const mismatch = error as HostKeyMismatchError;
      expect(mismatch).toMatchObject({
        host: "127.0.0.1",
        port: separateLab.ssh.port,
        pinned,
        offered,
      });
      expect(mismatch.message).toContain(
        `SSH host key for 127.0.0.1:${separateLab.ssh.port} changed: pinned ${pinned}, offered ${offered}.`,
      );
      expect(mismatch.message).toContain("clear the pin on the host page");
      // The lab saw no authentication attempt at all: the password never left the console.
      expect(separateLab.authAttempts).toEqual([]);
    } finally {
      await separateLab.stop();
    }
  });
});

describe("connectSsh: unreachable hosts", () => {
  it("reports a refused port with SshConnectError naming address and port", async () => {
    const free = await freePort();
    const error = await rejection(connectSsh(target({ port: free })));
    expect(error).toBeInstanceOf(SshConnectError);
    expect((error as SshConnectError).reason).toBe("refused");
    expect((error as Error).message).toContain(`127.0.0.1:${free}`);
  });

  it("reports a connection reset before the handshake (lab fault: refuse connections)", async () => {
    lab.faults.refuseConnections = true;
    try {
      const error = await rejection(connectSsh(target()));
      expect(error).toBeInstanceOf(SshConnectError);
      expect((error as SshConnectError).reason).toBe("closed");
    } finally {
      lab.faults.refuseConnections = false;
    }
  });

  it("times out on a port that never speaks SSH", async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const error = await rejection(connectSsh(target({ port, readyTimeoutMs: 300 })));
      expect(error).toBeInstanceOf(SshConnectError);
      expect((error as SshConnectError).reason).toBe("timeout");
    } finally {
      silent.close();
    }
  });

  it("reports an unknown host name as a DNS failure", async () => {
    const error = await rejection(connectSsh(target({ host: "no-such-host.invalid" })));
    expect(error).toBeInstanceOf(SshConnectError);
    expect((error as SshConnectError).reason).toBe("dns");
  });
});

describe("SshSession.exec", () => {
  let session: SshSession;
  beforeAll(async () => {
    session = await connectSsh(target());
  });
  afterAll(() => session?.close());

  it("reports exit codes, stdout and stderr separately", async () => {
    const result = await session.exec("echo out; echo err >&2; exit 3");
    expect(result).toMatchObject({
      code: 3,
      signal: null,
      stdout: "out\n",
      stderr: "err\n",
      truncated: false,
    });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect((await session.exec("true")).code).toBe(0);
  });

  it("reports a command killed by a signal", async () => {
    const result = await session.exec("kill -KILL $$");
    expect(result).toMatchObject({ code: null, signal: "SIGKILL" });
  });

  it("feeds stdin and sends EOF", async () => {
    expect((await session.exec("cat")).stdout).toBe("");
    expect((await session.exec("wc -c", { stdin: Buffer.alloc(100_000, 1) })).stdout.trim()).toBe(
      "100000",
    );
  });

  it("streams output chunks while the command runs", async () => {
    const chunks: string[] = [];
    await session.exec("echo a; echo b >&2", {
      onOutput: (stream, chunk) => chunks.push(`${stream}:${chunk.toString()}`),
    });
    expect(chunks.sort()).toEqual(["stderr:b\n", "stdout:a\n"]);
  });

  it("keeps the first maxOutputBytes, marks the result truncated and still reports the exit", async () => {
    const result = await session.exec(
      "head -c 3000000 /dev/zero | tr '\\0' a; echo tail >&2; exit 4",
      {
        maxOutputBytes: 1000,
      },
    );
    expect(result.code).toBe(4);
    expect(result.truncated).toBe(true);
    expect(result.stdout).toBe("a".repeat(1000));
    expect(result.stderr).toBe("tail\n");
  });

  it("times out, closes the channel, and the remote command is hung up", async () => {
    // Not waited out: the command would end by itself, without an error, after 30 s.
    const error = await rejection(
      session.exec("echo $$ > timeout.pid; sleep 30", { timeoutMs: 300 }),
    );
    expect(error).toBeInstanceOf(SshCommandTimeoutError);
    expect((error as SshCommandTimeoutError).message).toContain("did not finish within 300 ms");
    // The command ran in root's home, /root: the lab root folder's root/.
    const pid = Number(await readFile(path.join(lab.root, "root/timeout.pid"), "utf8"));
    await waitUntil(() => !isProcessAlive(pid), { what: "the timed-out shell to die" });
    // The session stays usable after a timeout.
    expect((await session.exec("echo still")).stdout).toBe("still\n");
  });

  it("stops a command when its abort signal fires", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const error = await rejection(session.exec("sleep 30", { signal: controller.signal }));
    expect(error).toBeInstanceOf(SshCommandTimeoutError);
    expect((error as SshCommandTimeoutError).aborted).toBe(true);
  });

  it("stops a command given up on before its process group was known (aborted at once)", async () => {
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController();
      const file = `early-${i}.pid`;
      const pending = session.exec(`echo $$ > ${file}; sleep 30`, { signal: controller.signal });
      setImmediate(() => controller.abort());
      expect(await rejection(pending)).toBeInstanceOf(SshCommandTimeoutError);
      let pid = 0;
      await waitUntil(
        async () =>
          (pid = Number(
            await readFile(path.join(lab.root, "root", file), "utf8").catch(() => ""),
          )) > 0,
        { what: "the command to have started" },
      );
      await waitUntil(() => !isProcessAlive(pid), { what: `the shell ${pid} to die` });
    }
  });

  it("runs many commands concurrently on one session", async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => session.exec(`sleep 0.05; echo ${i}`)),
    );
    expect(results.map((r) => r.stdout.trim())).toEqual(
      Array.from({ length: 20 }, (_, i) => String(i)),
    );
  });

  it("fails with SshChannelError when the connection drops mid-command (lab fault)", async () => {
    const dropping = await connectSsh(target());
    lab.faults.dropAfterMs = 150;
    try {
      const error = await rejection(dropping.exec("sleep 5"));
      expect(error).toBeInstanceOf(SshChannelError);
      expect((error as Error).message).toContain("connection was lost");
      const again = await rejection(dropping.exec("true"));
      expect(again).toBeInstanceOf(SshChannelError);
    } finally {
      lab.faults.dropAfterMs = null;
      dropping.close();
    }
  });
});

describe("SshSession.upload", () => {
  let session: SshSession;
  beforeAll(async () => {
    session = await connectSsh(target());
  });
  afterAll(() => session?.close());

  it("writes binary bytes byte for byte to a path with spaces, with the requested mode", async () => {
    const bytes = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      randomBytes(300_000),
    ]);
    const remote = "/var/lib/clupilot/dir with spaces/new dir/payload.bin";
    await session.upload(remote, bytes, { mode: 0o750 });
    // Where that is in the lab node's root folder.
    const local = path.join(lab.root, remote);
    expect((await readFile(local)).equals(bytes)).toBe(true);
    expect((await stat(local)).mode & 0o7777).toBe(0o750);
    expect(await readdir(path.dirname(local))).toEqual(["payload.bin"]);
  });

  it("replaces an existing file and defaults to mode 0644", async () => {
    const remote = "/var/lib/clupilot/it's $(rm -rf) `x`.sh";
    await session.upload(remote, "first\n");
    await session.upload(remote, "second\n");
    const local = path.join(lab.root, remote);
    expect(await readFile(local, "utf8")).toBe("second\n");
    expect((await stat(local)).mode & 0o7777).toBe(0o644);
    const names = await readdir(path.dirname(local));
    expect(names.filter((name) => name.includes("clupilot-tmp"))).toEqual([]);
  });

  it("uploads an empty file", async () => {
    await session.upload("/var/lib/clupilot/empty", Buffer.alloc(0));
    expect((await stat(path.join(lab.root, "var/lib/clupilot/empty"))).size).toBe(0);
  });

  it("fails clearly when the target is a directory, leaving it and no temporary file", async () => {
    await session.exec("mkdir -p 'taken/sub'");
    const error = await rejection(session.upload("taken", "x"));
    expect(error).toBeInstanceOf(SshUploadError);
    expect((error as Error).message).toMatch(
      /^Upload of taken to 127\.0\.0\.1:\d+ failed: exit status 1: mv: /,
    );
    // Relative paths are from root's home, /root: the lab root folder's root/.
    const home = path.join(lab.root, "root");
    expect(await readdir(path.join(home, "taken"))).toEqual(["sub"]);
    expect((await readdir(home)).filter((name) => name.includes("clupilot-tmp"))).toEqual([]);
  });
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
