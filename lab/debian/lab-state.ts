import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { NODE_LAB_DIR } from "../namespace/layout";

/**
 * Lab-private control state of one host, under `<root>/.lab/` (never read by product
 * commands): fault switches (`faults.json`) and timing (`timing.json`). The simulated tools
 * read it on every run; the lab process writes it through the node's handles, so a switch
 * flipped from a test or the control page takes effect on the next command.
 */

export type DebianFaults = {
  /** apt cannot reach any mirror: `update` warns and keeps old lists (exit 0, like real apt), installs fail. */
  aptNetworkDown: boolean;
  /**
   * enterprise.proxmox.com answers 401 even to an active subscription (the shop and the
   * repository disagree, e.g. a key just moved to another server): what a switch to the
   * enterprise repository must survive.
   */
  enterpriseRepositoryRefuses: boolean;
  /** Another apt/dpkg holds the lock: every apt-get/dpkg write fails at once (exit 100). */
  aptLocked: boolean;
  /** `virt-customize --install` prints its usual progress and exits 0, but installs nothing. */
  virtCustomizeSkipsInstall: boolean;
  /** Real milliseconds a reboot keeps SSH down (overrides the scaled default). */
  rebootTakesMs: number | null;
  /** After `reboot` the host never answers SSH again (until `reboot.powerOn()`). */
  rebootNeverReturns: boolean;
  /**
   * The disk is this small: `df` (lab/tools/bin/df, the real df otherwise) reports at most this
   * many free 1 KiB blocks on every filesystem. null = the machine's real free space.
   */
  diskAvailableKb: number | null;
  /**
   * The kernel cannot make Linux bridges (no `bridge` module, as on some VPS kernels): `ifreload -a`
   * fails on any configuration with `bridge-ports`, after its checks pass, as ifupdown2 does
   * when `ip link add … type bridge` fails. A configuration without a bridge still applies.
   */
  ifreloadRejectsBridges: boolean;
  /**
   * A broken bridge: `ifreload -a` applies a configuration with a bridge and exits 0, but the
   * address never comes up on the bridge (the uplink's traffic does not reach it), so the host
   * is cut off — its SSH server refuses new connections (lab/debian/network.ts, hostReachable)
   * until a configuration that carries an address again is applied.
   */
  bridgeDropsAddress: boolean;
  /**
   * The clock is not synchronised: `timedatectl` reports `NTPSynchronized=no` even with chrony
   * installed (no NTP server reachable). corosync needs the members' clocks in step.
   */
  clockUnsynchronised: boolean;
  /**
   * The host's BMC, as its in-band `ipmitool` reaches it through /dev/ipmi0: the lab's BMC of
   * this node (Debian's `ipmi_sim`, lab/power-controllers), which lab/debian/tools/ipmitool.ts
   * asks with the real ipmitool over lanplus. null = no IPMI device (no BMC).
   */
  bmc: { port: number; username: string; password: string } | null;
};

export const DEFAULT_DEBIAN_FAULTS: DebianFaults = {
  aptNetworkDown: false,
  enterpriseRepositoryRefuses: false,
  aptLocked: false,
  virtCustomizeSkipsInstall: false,
  rebootTakesMs: null,
  rebootNeverReturns: false,
  diskAvailableKb: null,
  ifreloadRejectsBridges: false,
  bridgeDropsAddress: false,
  clockUnsynchronised: false,
  bmc: null,
};

export type LabTiming = {
  /**
   * Multiplier on every simulated duration: 1 = realistic (a `proxmox-ve` install takes
   * minutes), 0.01 = a hundred times faster (tests). 0 = instant.
   */
  timeScale: number;
  /** Nominal (unscaled) time a reboot keeps SSH down. */
  rebootMs: number;
};

export const DEFAULT_TIMING: LabTiming = { timeScale: 1, rebootMs: 40_000 };

/**
 * `<root>/.lab`; for a simulated tool (root `/`, the node's own view) where the node's namespace
 * shows it.
 */
export function labDir(root: string): string {
  return root === TOOL_ROOT ? NODE_LAB_DIR : path.join(root, ".lab");
}

function readJson<T>(file: string, fallback: T): T {
  try {
    return { ...fallback, ...(JSON.parse(fs.readFileSync(file, "utf8")) as Partial<T>) };
  } catch {
    return { ...fallback };
  }
}

function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

export function readDebianFaults(root: string): DebianFaults {
  return readJson(path.join(labDir(root), "faults.json"), DEFAULT_DEBIAN_FAULTS);
}

/** Merges `patch` into `.lab/faults.json` (other keys, e.g. other engineers' faults, are kept). */
export function writeDebianFaults(root: string, patch: Partial<DebianFaults>): DebianFaults {
  const file = path.join(labDir(root), "faults.json");
  let current: Record<string, unknown> = {};
  try {
    current = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    // first write
  }
  const next = { ...DEFAULT_DEBIAN_FAULTS, ...current, ...patch };
  writeJson(file, next);
  return readDebianFaults(root);
}

export function readTiming(root: string): LabTiming {
  return readJson(path.join(labDir(root), "timing.json"), DEFAULT_TIMING);
}

export function writeTiming(root: string, patch: Partial<LabTiming>): LabTiming {
  const next = { ...readTiming(root), ...patch };
  writeJson(path.join(labDir(root), "timing.json"), next);
  return next;
}

/** The nominal duration scaled by the host's time scale, in real milliseconds. */
export function scaled(root: string, nominalMs: number): number {
  return Math.max(0, Math.round(nominalMs * readTiming(root).timeScale));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The host root of a simulated tool: `/`. A tool runs for one node and sees that node's files
 * where the node's own processes see them (the tool server resolves its paths through the node's
 * mount namespace, lab/namespace/node-paths.ts).
 */
export const TOOL_ROOT = "/";

/** A host path ("/etc/hostname") inside the root. */
export function hostPath(root: string, absolute: string): string {
  return path.join(root, absolute.replace(/^\/+/, ""));
}

/** Kernel reported now (`.lab/kernel`) and after the next boot (`.lab/next-kernel`). */
export type KernelInfo = { release: string; version: string };

export function readKernel(root: string, which: "running" | "next"): KernelInfo | null {
  const base = which === "running" ? "kernel" : "next-kernel";
  try {
    const release = fs.readFileSync(path.join(labDir(root), base), "utf8").trim();
    const version = fs.readFileSync(path.join(labDir(root), `${base}-version`), "utf8").trim();
    return release ? { release, version } : null;
  } catch {
    return null;
  }
}

export function writeNextKernel(root: string, kernel: KernelInfo | null): void {
  const dir = labDir(root);
  if (kernel === null) {
    fs.rmSync(path.join(dir, "next-kernel"), { force: true });
    fs.rmSync(path.join(dir, "next-kernel-version"), { force: true });
    return;
  }
  fs.writeFileSync(path.join(dir, "next-kernel"), `${kernel.release}\n`);
  fs.writeFileSync(path.join(dir, "next-kernel-version"), `${kernel.version}\n`);
}

/**
 * The kernel's boot id (`/proc/sys/kernel/random/boot_id`, a fresh UUID on every boot), kept
 * under the host root; the node's namespace binds it over the real one. It is what tells "the
 * host rebooted" from "still the old boot". Written in place: a bind holds on to the file.
 */
export function bootIdPath(root: string): string {
  return hostPath(root, "/proc/sys/kernel/random/boot_id");
}

/** A new boot: a new boot id. `onlyIfMissing` for seeding a host that never booted in the lab. */
export function writeBootId(root: string, onlyIfMissing = false): void {
  const file = bootIdPath(root);
  if (onlyIfMissing && fs.existsSync(file)) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${randomUUID()}\n`);
}
