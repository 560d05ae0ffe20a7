import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import { generateEd25519KeyPair } from "../keys";

/**
 * A real OpenSSH server (Debian's `openssh-server`) as a test peer: the same process-semantics
 * tests run against it and against the lab's own SSH server, so the lab cannot drift into a
 * private dialect. It runs `sshd -D -e` as our child on a free loopback port inside a lab
 * node's mount namespace (so its sessions see the node's files, as the lab's own SSH server's
 * do), with its own config, host key and authorized client key in a folder of the node's
 * `/run`; commands run as the user running the tests (root in CI) with the lab's environment
 * (set via `SetEnv`, which sshd applies last, so it also overrides `PATH` and `HOME`).
 *
 * Differences from the lab that are not semantics: sshd adds `SSH_CONNECTION` & co., and the
 * user is the real one.
 */

const execFileAsync = promisify(execFile);

export const SSHD_PATH = "/usr/sbin/sshd";

/** The lab node sshd runs on: its root folder, its commands' environment, its namespace. */
export type OpenSshPeerNode = {
  root: string;
  /** Environment of every command (the lab's: `PATH` with the lab's tools first, `HOME`, …). */
  env: Readonly<Record<string, string>>;
  command(argv: readonly string[], cwd?: string): { file: string; args: string[] };
};

export type OpenSshPeerOptions = {
  node: OpenSshPeerNode;
  /** Default `/usr/sbin/sshd`. */
  sshdPath?: string;
};

export type OpenSshPeer = {
  host: "127.0.0.1";
  port: number;
  /** The user sshd logs in (the one running the tests). */
  username: string;
  /** OpenSSH private key of the only authorized client key (key auth only). */
  privateKey: string;
  hostKeySha256: string;
  /** PID of the listening sshd (our child). */
  pid: number;
  /** Everything sshd wrote to stderr (`-e`), for diagnosing a failing test. */
  log(): string;
  stop(): Promise<void>;
};

/** True when Debian's sshd is installed where the peer expects it. */
export function openSshAvailable(sshdPath = SSHD_PATH): boolean {
  return existsSync(sshdPath);
}

export async function startOpenSshPeer(options: OpenSshPeerOptions): Promise<OpenSshPeer> {
  const sshdPath = options.sshdPath ?? SSHD_PATH;
  if (!existsSync(sshdPath)) {
    throw new Error(
      `lab: ${sshdPath} not found; install Debian's openssh-server to run the OpenSSH parity tests`,
    );
  }
  const { node } = options;
  // sshd insists on its privilege-separation directory when started as root: the node's /run.
  await mkdir(path.join(node.root, "run/sshd"), { recursive: true, mode: 0o755 });

  // The same folder seen from here (`dir`) and from inside the node (`inside`).
  const inside = `/run/clupilot-openssh-peer-${randomBytes(6).toString("hex")}`;
  const dir = path.join(node.root, inside);
  await mkdir(dir, { mode: 0o700 });
  try {
    const hostKey = path.join(dir, "ssh_host_ed25519_key");
    await execFileAsync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "", "-f", hostKey]);
    const { stdout: fingerprintLine } = await execFileAsync("ssh-keygen", [
      "-lf",
      `${hostKey}.pub`,
    ]);
    const hostKeySha256 = fingerprintLine.split(" ")[1] ?? "";
    if (!hostKeySha256.startsWith("SHA256:")) {
      throw new Error(`lab: unexpected ssh-keygen -lf output: ${fingerprintLine}`);
    }
    const client = generateEd25519KeyPair("clupilot-openssh-peer");
    const authorizedKeys = path.join(dir, "authorized_keys");
    await writeFile(authorizedKeys, `${client.public.trim()}\n`, { mode: 0o600 });
    await chmod(dir, 0o700);

    const username = os.userInfo().username;
    for (let attempt = 1; ; attempt += 1) {
      const port = await freePort();
      await writeFile(
        path.join(dir, "sshd_config"),
        sshdConfig({
          port,
          hostKey: path.posix.join(inside, "ssh_host_ed25519_key"),
          authorizedKeys: path.posix.join(inside, "authorized_keys"),
          env: node.env,
        }),
      );
      try {
        const child = await launch(
          node.command([sshdPath, "-D", "-e", "-f", `${inside}/sshd_config`]),
          port,
        );
        return peer({ child, dir, port, username, privateKey: client.private, hostKeySha256 });
      } catch (error) {
        // Another process may have taken the port between probing and binding: try another.
        if (attempt >= 3 || !String(error).includes("Address already in use")) throw error;
      }
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

function sshdConfig(input: {
  port: number;
  hostKey: string;
  authorizedKeys: string;
  env: Readonly<Record<string, string>>;
}): string {
  // One line: for SetEnv, as for most sshd_config keywords, the first occurrence wins.
  const setEnv = Object.entries(input.env).map(([name, value]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || /["\n\\]/.test(value)) {
      throw new Error(`lab: cannot pass ${name} to sshd via SetEnv`);
    }
    return `"${name}=${value}"`;
  });
  return [
    `Port ${input.port}`,
    "ListenAddress 127.0.0.1",
    `HostKey ${input.hostKey}`,
    "PidFile none",
    "UsePAM no",
    "StrictModes no",
    "PermitRootLogin yes",
    "PubkeyAuthentication yes",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    `AuthorizedKeysFile ${input.authorizedKeys}`,
    "AuthorizedPrincipalsFile none",
    "PrintMotd no",
    "PrintLastLog no",
    "UseDNS no",
    `LogLevel ${process.env.CLUPILOT_SSHD_LOGLEVEL ?? "VERBOSE"}`,
    "Subsystem sftp internal-sftp",
    ...(setEnv.length === 0 ? [] : [`SetEnv ${setEnv.join(" ")}`]),
    "",
  ].join("\n");
}

async function launch(sshd: { file: string; args: string[] }, port: number): Promise<ChildProcess> {
  // nsenter enters the node's namespace and execs sshd: the child's PID is sshd's.
  const child = spawn(sshd.file, sshd.args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: SSHD_ENV as NodeJS.ProcessEnv,
  });
  const log: string[] = [];
  logs.set(child, log);
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => log.push(chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error("sshd did not start listening within 10 s")),
      10_000,
    );
    const onData = () => {
      if (log.join("").includes(`Server listening on 127.0.0.1 port ${port}.`)) done();
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`sshd exited (${code ?? signal ?? "?"}) while starting`));
    const cleanup = () => {
      clearTimeout(timer);
      child.stderr?.removeListener("data", onData);
      child.removeListener("exit", onExit);
    };
    const done = () => {
      cleanup();
      resolve();
    };
    const fail = (error: Error) => {
      cleanup();
      child.kill("SIGKILL");
      reject(new Error(`lab: ${error.message}: ${log.join("").trim()}`));
    };
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
    child.once("error", (error) => fail(error));
  });
  return child;
}

const SSHD_ENV: Record<string, string> = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };

const logs = new WeakMap<ChildProcess, string[]>();

function peer(input: {
  child: ChildProcess;
  dir: string;
  port: number;
  username: string;
  privateKey: string;
  hostKeySha256: string;
}): OpenSshPeer {
  const { child, dir } = input;
  const pid = child.pid;
  if (pid === undefined) throw new Error("lab: sshd has no PID");
  let stopped: Promise<void> | null = null;
  return {
    host: "127.0.0.1",
    port: input.port,
    username: input.username,
    privateKey: input.privateKey,
    hostKeySha256: input.hostKeySha256,
    pid,
    log: () => (logs.get(child) ?? []).join(""),
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
          // The listener only: per-connection sshd processes and the commands they started
          // live on, as on a real host when sshd restarts. Tests kill what they started.
          process.kill(pid, "SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
          await exited;
          clearTimeout(timer);
        }
        await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

/** A port that was free a moment ago (sshd cannot listen on port 0 and report it). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("lab: no TCP address");
  return address.port;
}
