import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { connectSsh, type SshSession } from "@/lib/ssh/client";
import { uploadCommand } from "@/lib/ssh/commands";

import { LAB_TOOLS_BIN, isProcessAlive, startLab, waitUntil, type LabNode } from "../index";
import { labSession } from "../test-helpers";
import { startOpenSshPeer, type OpenSshPeer } from "./sshd";

/**
 * The same process-semantics tests against the lab's SSH server and against Debian's real
 * OpenSSH server, so the lab cannot be kinder or harsher than a real host where the product
 * depends on it (docs/lab.md, "Tests against a real OpenSSH server"). Both run commands as root
 * in bash with the lab's environment, inside the same kind of lab node (its mount namespace):
 * paths in commands are the node's (`/tmp/…`), the test reads them in the node's root folder.
 *
 * What real OpenSSH does (measured here, OpenSSH 9.2 / Debian, no pty, root login):
 * - the client going away sends the command NO signal; sshd closes the command's pipes, so a
 *   job still writing to the channel dies of SIGPIPE and a silent job lives on, even without
 *   `nohup setsid`;
 * - a signal request on a root session is refused, and closing a channel signals nothing: so
 *   lib/ssh stops a command it gives up on (timeout, abort) by killing the command's process
 *   group over a second channel (every session's shell leads its own group).
 */

type Peer = {
  name: string;
  lab: LabNode;
  connect(): Promise<SshSession>;
  stop(): Promise<void>;
};

async function labPeer(): Promise<Peer> {
  const lab = await startLab();
  return {
    name: "lab",
    lab,
    connect: () => labSession(lab, { pinnedHostKey: lab.ssh.hostKeySha256, readyTimeoutMs: 5000 }),
    stop: () => lab.stop(),
  };
}

async function openSshPeer(): Promise<Peer> {
  // The lab node provides the root folder and the environment; its own SSH server is unused.
  const lab = await startLab();
  let sshd: OpenSshPeer;
  try {
    sshd = await startOpenSshPeer({ node: lab });
  } catch (error) {
    await lab.stop();
    throw error;
  }
  return {
    name: "openssh",
    lab,
    connect: () =>
      connectSsh({
        host: sshd.host,
        port: sshd.port,
        username: sshd.username,
        auth: { kind: "private_key", privateKey: sshd.privateKey },
        pinnedHostKey: sshd.hostKeySha256,
        readyTimeoutMs: 5000,
      }),
    async stop() {
      await sshd.stop();
      await lab.stop(); // also kills what the commands left running (all in its namespace)
    },
  };
}

async function readPid(file: string): Promise<number> {
  let text = "";
  await waitUntil(
    async () => existsSync(file) && (text = await readFile(file, "utf8")).endsWith("\n"),
    { what: `${file} to hold a PID` },
  );
  return Number(text.trim());
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([
  { peer: "lab", start: labPeer },
  { peer: "openssh", start: openSshPeer },
])("SSH process semantics: $peer", ({ start }) => {
  let peer: Peer;
  let session: SshSession;
  /** A file of the node's /tmp: its path inside the node, and where that is here. */
  const tmp = (name: string) => ({
    inside: `/tmp/${name}`,
    outside: path.join(peer.lab.root, "tmp", name),
  });
  beforeAll(async () => {
    peer = await start();
    session = await peer.connect();
  });
  afterAll(async () => {
    session?.close();
    await peer?.stop();
  });

  it("reports exit status, stdout and stderr separately, and death by signal", async () => {
    expect(await session.exec("echo out; echo err >&2; exit 3")).toMatchObject({
      code: 3,
      signal: null,
      stdout: "out\n",
      stderr: "err\n",
    });
    expect(await session.exec("kill -TERM $$")).toMatchObject({ code: null, signal: "SIGTERM" });
    const missing = await session.exec("clupilot-no-such-command");
    expect(missing.code).toBe(127);
    expect(missing.stderr).toContain("clupilot-no-such-command: command not found");
    expect((await session.exec("tr a-z A-Z", { stdin: "hello" })).stdout).toBe("HELLO");
  });

  it("runs bash in the user's home with the lab's environment first on PATH", async () => {
    const out = await session.exec(
      'printf "%s\\n" "${BASH_VERSION:+bash}" "$PWD" "${PATH%%:*}" "$HOME"; uname -r',
    );
    expect(out.stdout).toBe(`bash\n/root\n${LAB_TOOLS_BIN}\n/root\n6.12.57+deb13-amd64\n`);
  });

  it("parses like sh -n: clean commands pass, a syntax error is status 2 before anything runs", async () => {
    const upload = uploadCommand({
      remotePath: "/tmp/x y/file",
      tmpPath: "/tmp/x y/file.tmp",
      mode: 0o600,
      sha256: "0".repeat(64),
    });
    expect((await session.exec("sh -n", { stdin: upload })).code).toBe(0);
    const ran = tmp("ran");
    const broken = await session.exec(`echo ran > ${ran.inside}; if then fi`);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain("syntax error");
    expect(existsSync(ran.outside)).toBe(false);
  });

  it("a background job holding stdout keeps the command open until it ends", async () => {
    const result = await session.exec("sleep 0.6 & echo started");
    expect(result.stdout).toBe("started\n");
    expect(result.durationMs).toBeGreaterThanOrEqual(500);
    // The detached start pattern returns while its job still runs: nothing holds the channel.
    const detached = await session.exec(
      "nohup setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $!",
    );
    const job = Number(detached.stdout.trim());
    try {
      expect(job).toBeGreaterThan(1);
      expect(isProcessAlive(job)).toBe(true);
    } finally {
      if (job > 1) process.kill(job, "SIGKILL");
    }
  });

  it("channel close: no signal — a silent plain job lives on, a writing one dies of SIGPIPE", async () => {
    const client = await peer.connect();
    const silentFile = tmp("silent.pid");
    const writerFile = tmp("writer.pid");
    const silent = client
      .exec(`sleep 300 & echo $! > ${silentFile.inside}; wait`)
      .catch(() => null);
    const writer = client
      .exec(`(while :; do echo tick; sleep 0.05; done) & echo $! > ${writerFile.inside}; wait`)
      .catch(() => null);
    const silentPid = await readPid(silentFile.outside);
    const writerPid = await readPid(writerFile.outside);
    try {
      expect(isProcessAlive(silentPid)).toBe(true);
      expect(isProcessAlive(writerPid)).toBe(true);
      client.close(); // the console goes away while both run
      await Promise.all([silent, writer]);
      await waitUntil(() => !isProcessAlive(writerPid), { what: "the writing job to die" });
      await sleep(500);
      expect(isProcessAlive(silentPid)).toBe(true);
    } finally {
      killQuietly(silentPid);
      killQuietly(writerPid);
    }
  });

  it("channel close: the nohup setsid start survives, in its own group; kill -TERM -PGID ends the group", async () => {
    const client = await peer.connect();
    const pidFile = tmp("driver.pid");
    const childFile = tmp("driver-child.pid");
    // The start pattern of a long build: the driver writes its own PID ($$), which is its group.
    const driver = `echo $$ > ${pidFile.inside}; (while :; do echo tick; sleep 0.05; done) & echo $! > ${childFile.inside}; wait`;
    const started = await client.exec(
      `nohup setsid bash -c '${driver}' > /dev/null 2>&1 < /dev/null &`,
    );
    expect(started.code).toBe(0);
    const pid = await readPid(pidFile.outside);
    const childPid = await readPid(childFile.outside);
    try {
      client.close();
      await sleep(500);
      expect(isProcessAlive(pid)).toBe(true);
      expect(isProcessAlive(childPid)).toBe(true);

      const check = await session.exec(
        `ps -o pgid= -p ${childPid}; tr '\\0' ' ' < /proc/${pid}/cmdline`,
      );
      const [pgid, cmdline] = check.stdout.split("\n");
      expect(Number(pgid?.trim())).toBe(pid);
      expect(cmdline).toBe(`bash -c ${driver} `);

      expect((await session.exec(`kill -TERM -${pid}`)).code).toBe(0);
      await waitUntil(() => !isProcessAlive(pid) && !isProcessAlive(childPid), {
        what: "the whole group to die",
      });
    } finally {
      killQuietly(pid);
      killQuietly(childPid);
    }
  });

  it("giving up on a command (lib/ssh timeout) stops its whole process group", async () => {
    const client = await peer.connect();
    const file = tmp("timeout.pid");
    const child = tmp("timeout-child.pid");
    const error = await client
      .exec(`echo $$ > ${file.inside}; sleep 300 & echo $! > ${child.inside}; wait`, {
        timeoutMs: 500,
      })
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe("SshCommandTimeoutError");
    const pid = await readPid(file.outside);
    const childPid = await readPid(child.outside);
    try {
      client.close(); // must not swallow the pending kill
      await waitUntil(() => !isProcessAlive(pid) && !isProcessAlive(childPid), {
        what: "the given-up command and its child to be stopped",
      });
    } finally {
      killQuietly(pid);
      killQuietly(childPid);
    }
  });

  it("uploads byte for byte with lib/ssh", async () => {
    const dir = tmp("up load");
    await rm(dir.outside, { recursive: true, force: true });
    await mkdir(dir.outside);
    const bytes = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      randomBytes(300 * 1024),
    ]);
    const target = `${dir.inside}/payload.bin`;
    await session.upload(target, bytes, { mode: 0o600 });
    expect((await readFile(path.join(dir.outside, "payload.bin"))).equals(bytes)).toBe(true);
    expect((await session.exec(`stat -c %a '${target}'`)).stdout).toBe("600\n");
  });
});
