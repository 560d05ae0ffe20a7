/**
 * A real Debian machine for tests (issue 34): a QEMU VM booted from a disk image built from
 * Debian's packages only (test/debian-vm/build-image.sh: mmdebstrap, mkfs.ext4 -d, no mounts),
 * reached over SSH on a loopback port. Test infrastructure only: the product never learns it
 * talks to a VM, and nothing here is imported by lib/.
 *
 * - The image is cached per content hash (the build script, this file's machine recipe, the suite,
 *   the mirror, the QEMU version) in node_modules/.cache/clupilot-debian-vm/: the disk after its
 *   first boot, and the VM's running state saved right then (QEMU's migration to a file). A run
 *   restores that state over a throw-away overlay of the disk, so a second run "boots" in seconds;
 *   the first run of a checkout builds it (mmdebstrap) and boots it once for real.
 * - Debian 13 (trixie) when the machine's mirror serves it, else the machine's own release (the
 *   image says which: `image.suite`).
 * - TCG, unless KVM runs a machine faster here (the same probe as the image-tools test:
 *   deploy/bootstrap/image-tools-test.sh); one virtual CPU, 1 GiB.
 * - Network: QEMU's user networking, restricted (the guest reaches nothing outside the VM: no
 *   mirror, no name server), its NIC `ens3` at 10.0.2.15/24 with gateway 10.0.2.2 in
 *   /etc/network/interfaces (ifupdown2), as an installer leaves a server with a static address;
 *   SSH forwarded from 127.0.0.1:<port>. root logs in with the image's own key.
 * - The serial console goes to a log file the test can print.
 * - Whatever way the test ends, QEMU ends with it and its files go: stop() (afterAll); the
 *   process's exit and SIGINT/SIGTERM/SIGHUP handlers; and, when the test process dies without
 *   running any of them (SIGKILL), the kernel: QEMU runs under a small shell that gets SIGTERM
 *   when this process dies (PR_SET_PDEATHSIG, `setpriv --pdeathsig`) and then kills QEMU (which
 *   itself gets SIGKILL if that shell dies) and removes the run's folder.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { mkdir, readFile, readdir, rename, rm, writeFile, chmod } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { connectSsh, type ExecResult, type SshSession } from "@/lib/ssh/client";
import { shQuote } from "@/lib/ssh";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "..");
const BUILD_SCRIPT = path.join(root, "test/debian-vm/build-image.sh");
export const CACHE_DIR = path.join(root, "node_modules/.cache/clupilot-debian-vm");

/** The guest's side of the network, as build-image.sh writes it into /etc/network/interfaces. */
export const GUEST = { nic: "ens3", address: "10.0.2.15", prefix: 24, gateway: "10.0.2.2" };
const ROOT_UUID = "2b1f6c55-9d39-4c0e-8f0e-6a8c0d5e7a11";
const MEMORY_MIB = 1024;

export type Log = (line: string) => void;

export type Accelerator = { accel: "tcg" | "kvm"; cpu: string; why: string };

export type DebianVmImage = {
  dir: string;
  /** The disk as it was when the state was saved (read-only; each run writes an overlay). */
  disk: string;
  kernel: string;
  initrd: string;
  /** The VM's running state after its first boot (QEMU migration stream). */
  state: string;
  privateKey: string;
  suite: string;
  mirror: string;
  accelerator: Accelerator;
  /** Set when this call built the image: how long each part took (s). */
  built: { buildSeconds: number; firstBootSeconds: number; saveSeconds: number } | null;
};

export type DebianVm = {
  host: "127.0.0.1";
  sshPort: number;
  username: "root";
  privateKey: string;
  image: DebianVmImage;
  /** Seconds from starting QEMU to the first command answered over SSH. */
  bootSeconds: number;
  /** A command as root over a connection of its own; whatever the exit code. */
  exec(
    command: string,
    options?: { stdin?: string | Buffer; timeoutMs?: number },
  ): Promise<ExecResult>;
  /** Like exec(), but throws unless it exits 0; returns stdout. */
  execOk(
    command: string,
    options?: { stdin?: string | Buffer; timeoutMs?: number },
  ): Promise<string>;
  /** Waits (up to `timeoutMs`) until SSH answers a command again; for after a reboot. */
  waitForSsh(timeoutMs: number): Promise<void>;
  /** The serial console so far. */
  consoleLog(): string;
  /** QEMU's process is running. */
  alive(): boolean;
  qemuPid(): number | null;
  /** Ends QEMU and removes the run's files; safe to call twice. */
  stop(): Promise<void>;
};

// ---------------------------------------------------------------------------------------------
// Which Debian, from where, on which accelerator.

/** The machine's Debian release (VERSION_CODENAME) and the mirror its apt uses for it. */
async function machineMirror(): Promise<{ codename: string; mirror: string }> {
  const osRelease = await readFile("/etc/os-release", "utf8").catch(() => "");
  const codename = /^VERSION_CODENAME=(.*)$/m.exec(osRelease)?.[1]?.replace(/"/g, "").trim();
  if (!codename)
    throw new Error("/etc/os-release names no VERSION_CODENAME: the Debian VM test runs on Debian");
  const files: string[] = [];
  for (const dir of ["/etc/apt/sources.list.d"]) {
    for (const name of (await readdir(dir).catch(() => [])).sort())
      if (name.endsWith(".sources") || name.endsWith(".list")) files.push(path.join(dir, name));
  }
  files.unshift("/etc/apt/sources.list");
  for (const file of files) {
    const text = await readFile(file, "utf8").catch(() => "");
    if (file.endsWith(".sources")) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name: string) =>
          new RegExp(`^${name}:[ \\t]*(.*)$`, "mi").exec(stanza)?.[1]?.trim() ?? "";
        if (/^(no|false)$/i.test(field("Enabled"))) continue;
        if (!field("Types").split(/\s+/).includes("deb")) continue;
        if (!field("Suites").split(/\s+/).includes(codename)) continue;
        if (!field("Components").split(/\s+/).includes("main")) continue;
        const uri = field("URIs").split(/\s+/)[0];
        if (uri) return { codename, mirror: uri };
      }
    } else {
      for (const line of text.split("\n")) {
        const words = line.replace(/#.*$/, "").trim().split(/\s+/);
        if (words[0] !== "deb") continue;
        let i = 1;
        // Options in brackets: `deb [signed-by=… arch=amd64] URI suite components`.
        if (words[i]?.startsWith("[")) {
          while (i < words.length && !words[i]!.endsWith("]")) i++;
          i++;
        }
        if (words[i + 1] === codename && words.slice(i + 2).includes("main"))
          return { codename, mirror: words[i]! };
      }
    }
  }
  throw new Error(
    `no apt source on this machine serves Debian ${codename} main (looked in /etc/apt/sources.list and /etc/apt/sources.list.d/): the Debian VM is built from the machine's mirror`,
  );
}

/** trixie when the mirror serves it (its Release file answers), else the machine's release. */
async function chooseSuite(log: Log): Promise<{ suite: string; mirror: string }> {
  const { codename, mirror } = await machineMirror();
  if (codename === "trixie") return { suite: "trixie", mirror };
  const url = `${mirror.replace(/\/+$/, "")}/dists/trixie/Release`;
  const served = await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(20_000) })
    .then((response) => response.ok)
    .catch(() => false);
  if (served) return { suite: "trixie", mirror };
  log(
    `debian-vm: ${url} does not answer; building the machine's own release, ${codename}, instead of Debian 13`,
  );
  return { suite: codename, mirror };
}

/** Seconds QEMU takes with `accel` to run its BIOS to "Boot failed", or null when it cannot. */
async function biosSeconds(
  accel: string,
  cpu: string,
  limitSeconds: number,
): Promise<number | null> {
  const started = performance.now();
  try {
    const { stdout } = await run(
      "timeout",
      [
        String(limitSeconds),
        "qemu-system-x86_64",
        ...["-no-user-config", "-nodefaults", "-display", "none"],
        ...["-machine", `accel=${accel},graphics=off`, "-cpu", cpu, "-m", "64"],
        ...["-no-reboot", "-boot", "reboot-timeout=0", "-serial", "stdio"],
      ],
      { encoding: "latin1", maxBuffer: 1 << 20 },
    );
    return stdout.includes("Boot failed") ? (performance.now() - started) / 1000 : null;
  } catch {
    return null;
  }
}

/**
 * The image-tools test's rule (deploy/bootstrap/image-tools-test.sh): TCG, unless KVM runs a
 * machine's BIOS faster than TCG does (on the 2-core machines /dev/kvm opens, but QEMU aborts on
 * it or is slower).
 */
export async function chooseAccelerator(): Promise<Accelerator> {
  const tcg = await biosSeconds("tcg", "max", 30);
  if (tcg === null) throw new Error("QEMU cannot run a machine with TCG here");
  const tcgBecause = (why: string): Accelerator => ({ accel: "tcg", cpu: "qemu64", why });
  try {
    const fd = await import("node:fs/promises").then((fs) => fs.open("/dev/kvm", "r+"));
    await fd.close();
  } catch {
    return tcgBecause("no /dev/kvm this user may use");
  }
  const limit = 2 * tcg + 0.5;
  const kvm = await biosSeconds("kvm", "host", limit);
  if (kvm === null)
    return tcgBecause(
      `KVM does not run a machine here within ${limit.toFixed(1)} s (TCG: ${tcg.toFixed(2)} s)`,
    );
  if (kvm >= tcg)
    return tcgBecause(`KVM is slower than TCG here (${kvm.toFixed(2)} s, TCG ${tcg.toFixed(2)} s)`);
  return {
    accel: "kvm",
    cpu: "host",
    why: `a machine's BIOS runs in ${kvm.toFixed(2)} s with KVM, ${tcg.toFixed(2)} s with TCG`,
  };
}

// ---------------------------------------------------------------------------------------------
// The machine: one command line for the first boot and every restore (a saved state loads only
// into the same machine).

type MachinePaths = {
  disk: string;
  kernel: string;
  initrd: string;
  consoleLog: string;
  qmp: string;
  sshPort: number;
  incoming?: string;
};

function qemuArguments(accelerator: Accelerator, p: MachinePaths): string[] {
  return [
    ...["-no-user-config", "-nodefaults", "-display", "none"],
    ...["-machine", `pc,accel=${accelerator.accel}`, "-cpu", accelerator.cpu],
    ...["-smp", "1", "-m", String(MEMORY_MIB)],
    ...["-kernel", p.kernel, "-initrd", p.initrd],
    ...["-append", `root=UUID=${ROOT_UUID} rw console=ttyS0`],
    ...["-drive", `file=${p.disk},if=virtio,format=qcow2,cache=unsafe`],
    // restrict=on: nothing leaves the VM but the forwarded SSH connections.
    ...["-netdev", `user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:${p.sshPort}-${GUEST.address}:22`],
    ...["-device", "virtio-net-pci,netdev=n0,addr=0x3"],
    ...["-chardev", `file,id=serial0,path=${p.consoleLog}`, "-serial", "chardev:serial0"],
    ...["-qmp", `unix:${p.qmp},server=on,wait=off`],
    ...(p.incoming === undefined ? [] : ["-incoming", `exec:cat ${shQuote(p.incoming)}`]),
  ];
}

/** Everything the image's content and the saved state depend on. */
async function recipeHash(
  suite: string,
  mirror: string,
  accelerator: Accelerator,
): Promise<string> {
  const { stdout: qemuVersion } = await run("qemu-system-x86_64", ["--version"]);
  const hash = createHash("sha256");
  hash.update(await readFile(BUILD_SCRIPT));
  // The machine as QEMU is told it (paths and the port are the same placeholders every time).
  const machine = qemuArguments(accelerator, {
    disk: "DISK",
    kernel: "KERNEL",
    initrd: "INITRD",
    consoleLog: "CONSOLE",
    qmp: "QMP",
    sshPort: 0,
  });
  hash.update(JSON.stringify({ suite, mirror, machine, qemuVersion }));
  return hash.digest("hex").slice(0, 16);
}

// ---------------------------------------------------------------------------------------------
// QEMU under a guard, and its QMP socket.

const SUPERVISOR = [
  'dir="$1"; shift',
  // This process's parent (the test) died, or stop() asked: QEMU goes, and so do its files.
  'trap \'kill -KILL "$q" 2>/dev/null; wait "$q" 2>/dev/null; rm -rf -- "$dir"; exit 143\' TERM INT HUP',
  'setpriv --pdeathsig KILL -- "$@" & q=$!',
  'wait "$q"',
].join("\n");

type Qemu = {
  child: ChildProcess;
  output: () => string;
  exited: () => boolean;
  /** TERM to the guard: QEMU killed, `dir` removed (when `removeDir`), then resolves. */
  kill(): Promise<void>;
};

const live = new Set<{ pid: number; dir: string | null }>();
let handlersInstalled = false;

function installExitHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const killAll = () => {
    for (const entry of live) {
      try {
        process.kill(entry.pid, "SIGTERM");
      } catch {
        // already gone
      }
      if (entry.dir) rmSync(entry.dir, { recursive: true, force: true });
    }
    live.clear();
  };
  process.on("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      killAll();
      process.kill(process.pid, signal);
    });
  }
}

function startQemu(args: string[], dir: string, removeDirOnKill: boolean): Qemu {
  installExitHandlers();
  // The guard removes `dir` when killed; for the build's first boot that is a scratch folder.
  const child = spawn(
    "setpriv",
    [
      "--pdeathsig",
      "TERM",
      "--",
      "bash",
      "-c",
      SUPERVISOR,
      "qemu-guard",
      dir,
      "qemu-system-x86_64",
      ...args,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk));
  const entry = { pid: child.pid!, dir: removeDirOnKill ? dir : null };
  live.add(entry);
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once("exit", () => {
      exited = true;
      live.delete(entry);
      resolve();
    }),
  );
  return {
    child,
    output: () => output,
    exited: () => exited,
    async kill() {
      if (!exited) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** The guard's child: QEMU's own PID. */
function qemuPidOf(guard: ChildProcess): number | null {
  try {
    const children = readFileSync(`/proc/${guard.pid}/task/${guard.pid}/children`, "utf8").trim();
    const pid = Number(children.split(/\s+/)[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Connects to QEMU's QMP socket. The socket file appears a moment before QEMU listens on it:
 * a refused connection is tried again, for up to 30 s.
 */
async function connectQmp(socketPath: string): Promise<net.Socket> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const socket = net.connect(socketPath);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once("connect", resolve);
        socket.once("error", reject);
      });
      return socket;
    } catch (error) {
      socket.destroy();
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== "ECONNREFUSED" && code !== "ENOENT") || Date.now() > deadline) throw error;
      await delay(100);
    }
  }
}

async function qmp(socketPath: string, commands: { execute: string; arguments?: object }[]) {
  const socket = await connectQmp(socketPath);
  socket.setEncoding("utf8");
  const replies: unknown[] = [];
  let buffer = "";
  const waiting: ((value: unknown) => void)[] = [];
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (!line) continue;
      const message = JSON.parse(line) as Record<string, unknown>;
      if ("event" in message) continue;
      const resolve = waiting.shift();
      if (resolve) resolve(message);
      else replies.push(message);
    }
  });
  const next = () =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const queued = replies.shift();
      if (queued) return resolve(queued as Record<string, unknown>);
      const timer = setTimeout(
        () => reject(new Error(`QMP on ${socketPath} did not answer`)),
        60_000,
      );
      waiting.push((value) => {
        clearTimeout(timer);
        resolve(value as Record<string, unknown>);
      });
    });
  socket.on("error", () => {});
  try {
    await next(); // the greeting
    const results: unknown[] = [];
    for (const command of [{ execute: "qmp_capabilities" }, ...commands]) {
      socket.write(`${JSON.stringify(command)}\n`);
      const reply = await next();
      if ("error" in reply)
        throw new Error(`QMP ${command.execute}: ${JSON.stringify(reply.error)}`);
      results.push(reply.return);
    }
    return results.slice(1);
  } finally {
    socket.destroy();
  }
}

async function waitForQmpSocket(socketPath: string, qemu: Qemu, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(socketPath)) {
    if (qemu.exited()) throw new Error(`QEMU ended at once:\n${qemu.output()}`);
    if (Date.now() > deadline) throw new Error(`QEMU opened no QMP socket within ${timeoutMs} ms`);
    await delay(100);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// ---------------------------------------------------------------------------------------------
// SSH as root with the image's key.

function rootSession(
  port: number,
  privateKey: string,
  readyTimeoutMs = 15_000,
): Promise<SshSession> {
  return connectSsh({
    host: "127.0.0.1",
    port,
    username: "root",
    auth: { kind: "private_key", privateKey },
    pinnedHostKey: null,
    readyTimeoutMs,
  });
}

/** Until a command answers over a new connection, QEMU ends, or the deadline passes. */
async function awaitSsh(
  port: number,
  privateKey: string,
  qemu: Qemu,
  timeoutMs: number,
  consoleLog: () => string,
) {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    if (qemu.exited())
      throw new Error(
        `QEMU ended while the VM was starting:\n${qemu.output()}\nconsole:\n${tail(consoleLog())}`,
      );
    try {
      const session = await rootSession(
        port,
        privateKey,
        Math.max(5_000, Math.min(30_000, deadline - Date.now())),
      );
      try {
        const answer = await session.exec("true", { timeoutMs: 60_000 });
        if (answer.code === 0) return;
        last = `exit ${answer.code}`;
      } finally {
        session.close();
      }
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(
        `the VM answered no SSH command within ${timeoutMs / 1000} s (last: ${last}); console:\n${tail(consoleLog())}`,
      );
    await delay(1000);
  }
}

function tail(text: string, lines = 40): string {
  return text.split("\n").slice(-lines).join("\n");
}

const readText = (file: string) => {
  try {
    return readFileSync(file, "latin1");
  } catch {
    return "";
  }
};

// ---------------------------------------------------------------------------------------------
// The image: built once per recipe, then restored.

/**
 * The cached image for this machine (building it, and booting it once to save its state, when
 * there is none). Old images of other recipes are removed when a new one is built.
 */
export async function debianVmImage(log: Log = console.log): Promise<DebianVmImage> {
  const { suite, mirror } = await chooseSuite(log);
  const accelerator = await chooseAccelerator();
  log(`debian-vm: ${accelerator.accel.toUpperCase()} (${accelerator.why})`);
  const hash = await recipeHash(suite, mirror, accelerator);
  const dir = path.join(CACHE_DIR, hash);
  const image = (built: DebianVmImage["built"]): DebianVmImage => ({
    dir,
    disk: path.join(dir, "disk.qcow2"),
    kernel: path.join(dir, "vmlinuz"),
    initrd: path.join(dir, "initrd.img"),
    state: path.join(dir, "state"),
    privateKey: readFileSync(path.join(dir, "id_ed25519"), "utf8"),
    suite,
    mirror,
    accelerator,
    built,
  });
  if (existsSync(path.join(dir, "state"))) {
    log(`debian-vm: cached image ${path.relative(root, dir)} (Debian ${suite})`);
    return image(null);
  }

  await mkdir(CACHE_DIR, { recursive: true });
  // Other recipes' images go, and builds left by dead processes; a build still running stays.
  for (const old of await readdir(CACHE_DIR)) {
    const builder = /\.building-(\d+)$/.exec(old)?.[1];
    if (builder !== undefined && processAlive(Number(builder))) continue;
    await rm(path.join(CACHE_DIR, old), { recursive: true, force: true });
  }
  const work = path.join(CACHE_DIR, `${hash}.building-${process.pid}`);
  try {
    let started = performance.now();
    log(
      `debian-vm: building Debian ${suite} from ${mirror} (mmdebstrap; no cached image for this recipe)`,
    );
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        "setpriv",
        ["--pdeathsig", "KILL", "--", "bash", BUILD_SCRIPT, work, suite, mirror],
        {
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk));
      child.stderr.on("data", (chunk: Buffer) => (output += chunk));
      const timer = setTimeout(() => child.kill("SIGKILL"), 20 * 60_000);
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`build-image.sh ended with ${code ?? signal}:\n${output}`));
      });
    });
    await run("qemu-img", [
      "convert",
      "-f",
      "raw",
      "-O",
      "qcow2",
      path.join(work, "disk.raw"),
      path.join(work, "disk.qcow2"),
    ]);
    await rm(path.join(work, "disk.raw"));
    const buildSeconds = (performance.now() - started) / 1000;
    log(`debian-vm: image built in ${buildSeconds.toFixed(0)} s`);

    // The first boot, for real; then the running machine is saved.
    started = performance.now();
    const scratch = mkdtempSync(path.join(os.tmpdir(), "clupilot-vm-"));
    const sshPort = await freePort();
    const privateKey = readFileSync(path.join(work, "id_ed25519"), "utf8");
    const paths: MachinePaths = {
      disk: path.join(work, "disk.qcow2"),
      kernel: path.join(work, "vmlinuz"),
      initrd: path.join(work, "initrd.img"),
      consoleLog: path.join(work, "first-boot.log"),
      qmp: path.join(scratch, "qmp.sock"),
      sshPort,
    };
    const qemu = startQemu(qemuArguments(accelerator, paths), scratch, true);
    try {
      await waitForQmpSocket(paths.qmp, qemu, 30_000);
      await awaitSsh(sshPort, privateKey, qemu, 15 * 60_000, () => readText(paths.consoleLog));
      const session = await rootSession(sshPort, privateKey);
      try {
        const state = await session.exec(
          "systemctl is-system-running --wait; systemctl --failed --no-legend --plain; sync",
          {
            timeoutMs: 15 * 60_000,
          },
        );
        log(`debian-vm: first boot: ${state.stdout.trim().replace(/\n/g, "; ")}`);
      } finally {
        session.close();
      }
      const firstBootSeconds = (performance.now() - started) / 1000;
      log(`debian-vm: first boot took ${firstBootSeconds.toFixed(0)} s`);
      started = performance.now();
      await delay(1000); // the SSH session's processes end
      const stateTmp = path.join(work, "state.tmp");
      await qmp(paths.qmp, [
        { execute: "stop" },
        { execute: "migrate", arguments: { uri: `exec:cat > ${shQuote(stateTmp)}` } },
      ]);
      const deadline = Date.now() + 10 * 60_000;
      for (;;) {
        const [status] = (await qmp(paths.qmp, [{ execute: "query-migrate" }])) as {
          status?: string;
          "error-desc"?: string;
        }[];
        if (status?.status === "completed") break;
        if (status?.status === "failed" || status?.status === "cancelled")
          throw new Error(`saving the VM's state failed: ${status["error-desc"] ?? status.status}`);
        if (Date.now() > deadline)
          throw new Error("saving the VM's state did not end within 10 minutes");
        await delay(200);
      }
      await qmp(paths.qmp, [{ execute: "quit" }]).catch(() => {});
      await qemu.kill();
      await rename(stateTmp, path.join(work, "state"));
      const saveSeconds = (performance.now() - started) / 1000;
      log(
        `debian-vm: state saved in ${saveSeconds.toFixed(1)} s (${(statSync(path.join(work, "state")).size / 2 ** 20).toFixed(0)} MiB)`,
      );
      // Every run's overlay reads this disk: it must never change again.
      await chmod(path.join(work, "disk.qcow2"), 0o444);
      await rename(work, dir);
      return image({ buildSeconds, firstBootSeconds, saveSeconds });
    } finally {
      await qemu.kill();
      rmSync(scratch, { recursive: true, force: true });
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Restores the image's saved machine over a fresh overlay and waits for SSH. */
export async function startDebianVm(
  image: DebianVmImage,
  log: Log = console.log,
): Promise<DebianVm> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "clupilot-vm-"));
  const started = performance.now();
  let qemu: Qemu | null = null;
  try {
    const overlay = path.join(dir, "disk.qcow2");
    await run("qemu-img", [
      "create",
      "-q",
      "-f",
      "qcow2",
      "-b",
      image.disk,
      "-F",
      "qcow2",
      overlay,
    ]);
    const sshPort = await freePort();
    const paths: MachinePaths = {
      disk: overlay,
      kernel: image.kernel,
      initrd: image.initrd,
      consoleLog: path.join(dir, "console.log"),
      qmp: path.join(dir, "qmp.sock"),
      sshPort,
      incoming: image.state,
    };
    await writeFile(paths.consoleLog, "");
    const machine = startQemu(qemuArguments(image.accelerator, paths), dir, true);
    qemu = machine;
    const consoleLog = () => readText(paths.consoleLog);
    await waitForQmpSocket(paths.qmp, machine, 30_000);
    const deadline = Date.now() + 5 * 60_000;
    for (;;) {
      const [status] = (await qmp(paths.qmp, [{ execute: "query-status" }])) as {
        status?: string;
      }[];
      if (status?.status === "running") break;
      // Saved stopped, so it loads stopped: go on.
      if (status?.status === "paused" || status?.status === "postmigrate") {
        await qmp(paths.qmp, [{ execute: "cont" }]);
        continue;
      }
      if (machine.exited() || Date.now() > deadline)
        throw new Error(
          `the saved VM did not resume (status ${status?.status}):\n${machine.output()}`,
        );
      await delay(100);
    }
    await awaitSsh(sshPort, image.privateKey, machine, 5 * 60_000, consoleLog);
    const bootSeconds = (performance.now() - started) / 1000;

    const exec: DebianVm["exec"] = async (command, options = {}) => {
      const session = await rootSession(sshPort, image.privateKey, 60_000);
      try {
        return await session.exec(command, {
          timeoutMs: options.timeoutMs ?? 120_000,
          ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
        });
      } finally {
        session.close();
      }
    };
    const execOk: DebianVm["execOk"] = async (command, options) => {
      const result = await exec(command, options);
      if (result.code !== 0)
        throw new Error(
          `in the VM: ${command} → exit ${result.code}: ${result.stderr}${result.stdout}`,
        );
      return result.stdout;
    };
    // The saved machine's clock stood still while it was saved: set it as NTP would on a host.
    await execOk(`date -u -s @${Math.round(Date.now() / 1000)} > /dev/null`);
    log(
      `debian-vm: Debian ${image.suite} VM up in ${bootSeconds.toFixed(1)} s (restored), SSH on 127.0.0.1:${sshPort}`,
    );
    let stopped = false;
    return {
      host: "127.0.0.1",
      sshPort,
      username: "root",
      privateKey: image.privateKey,
      image,
      bootSeconds,
      exec,
      execOk,
      waitForSsh: (timeoutMs) =>
        awaitSsh(sshPort, image.privateKey, machine, timeoutMs, consoleLog),
      consoleLog,
      alive: () => !machine.exited(),
      qemuPid: () => qemuPidOf(machine.child),
      async stop() {
        if (stopped) return;
        stopped = true;
        await machine.kill();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await qemu?.kill();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
