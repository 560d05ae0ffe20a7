import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { labCommandEnv } from "./command-env";
import { SwitchRegistry, registerSshSwitches } from "./control/switches";
import {
  readDebianFaults,
  writeDebianFaults,
  writeTiming,
  type DebianFaults,
  type LabTiming,
} from "./debian/lab-state";
import { RebootController, type RebootControl } from "./debian/reboot-controller";
import { seedDebianHost, type DebianSeedState } from "./debian/seed";
import { registerDebianSwitches } from "./debian/switches";
import { generateEd25519KeyPair } from "./keys";
import { hostRootPaths, prepareHostRoot, writeOs, type LabOs } from "./host-root";
import type { PveApi } from "./pve/api";
import {
  acquireClusterArea,
  announceLabHost,
  registerClusterMemberSwitches,
  releaseClusterArea,
} from "./pve/cluster/area";
import { setCorosyncDown, sharedFolderOf } from "./pve/cluster/membership";
import { registerPveSwitches, startPveNode, type LabPve, type LabPveOptions } from "./pve/node";
import {
  LabSshServer,
  NO_SSH_FAULTS,
  type LabSshAuthAttempt,
  type LabSshCommand,
  type LabSshFaults,
} from "./ssh-server";

export type { LabOs } from "./host-root";
export type { LabSshAuthAttempt, LabSshCommand, LabSshFaults } from "./ssh-server";
export type { LabPve, LabPveOptions } from "./pve/node";
export type { PveApi, PveApiFaults } from "./pve/api";
export type { PveState, PveStorageLayout } from "./pve/seed";
export type { DebianFaults, LabTiming } from "./debian/lab-state";
export type { PowerState, RebootControl, RebootRecord } from "./debian/reboot-controller";
export { startImageServer, type ImageServer, type ImageServerOptions } from "./image/server";
export {
  controlUps,
  labUpsSources,
  startLabUps,
  type LabUps,
  type LabUpsController,
  type StartLabUpsOptions,
} from "./ups/lab-ups";
export type { PowerPatch, PowerSnapshot } from "./ups/timeline";
export {
  startLabCluster,
  type LabCluster,
  type LabClusterNode,
  type StartLabClusterOptions,
} from "./pve/cluster/start";
export { registerClusterSwitches } from "./pve/cluster/switches";
export type {
  LabClusterFaults,
  LabClusterTiming,
  LabGuestSpec,
  PveRelease,
} from "./pve/cluster/model";

export { LAB_TOOLS_BIN } from "./command-env";

export type StartLabOptions = {
  /** Lab host root folder; a fresh temp folder (removed on stop) when not given. */
  root?: string;
  /** Release the host reports; default Debian 13, or what an existing root already holds. */
  os?: LabOs;
  /** Host name (`/etc/hostname`, `uname -n`). Default `pve1`. */
  name?: string;
  username?: string;
  password?: string;
  /** Lines written into the user's `~/.ssh/authorized_keys` at start. */
  authorizedKeys?: string[];
  /** false = `PasswordAuthentication no`: only a key in authorized_keys gets in. Default true. */
  passwordAuthentication?: boolean;
  /** Default: a random free port on 127.0.0.1. */
  port?: number;
  /** Proxmox side at first start: `fresh` (default), `proxmox` or `onboarded` (lab/pve). */
  state?: LabPveOptions["state"];
  /** Storage layout of `proxmox`/`onboarded`: `dir-no-images` (default), `dir`, `lvm-thin`, `zfs`. */
  storage?: LabPveOptions["storage"];
  /** More Proxmox-side options: seeded templates, API port, 401 delay. */
  pve?: Omit<LabPveOptions, "state" | "storage">;
  /** Multiplier on simulated durations (apt installs, reboots): 1 realistic, 0.01 fast. Default 1. */
  timeScale?: number;
  /** Nominal time a reboot keeps SSH down (scaled by timeScale). Default 40 s. */
  rebootMs?: number;
  /** Debian side at first start: `fresh` (default) or `proxmox` (apt, kernel, vmbr0 as after install). */
  debianState?: DebianSeedState;
  /**
   * The host's address on its uplink, with prefix (default 192.0.2.10/24). Nodes that are to
   * form a cluster need addresses of their own: a join names the member by its address.
   */
  address?: string;
};

export type LabNode = {
  name: string;
  root: string;
  ssh: {
    host: "127.0.0.1";
    port: number;
    username: string;
    password: string;
    hostKeySha256: string;
  };
  setOs(os: LabOs): Promise<void>;
  /** The user's authorized_keys file, read by the SSH server on every public-key attempt. */
  authorizedKeysPath: string;
  /** Appends the line to authorized_keys (unless there), as an operator pasting it would. */
  authorizeKey(publicKeyOpenSsh: string): void;
  /** A new SSH host key (as a reinstall would make); returns its `SHA256:…` fingerprint. */
  rotateHostKey(): Promise<string>;
  /** Switches read live by the SSH server. */
  faults: LabSshFaults;
  /** Every fault switch and action of the node's parts, for the control API (`ssh.*`, …). */
  switches: SwitchRegistry;
  /** Every authentication attempt the SSH server saw, in order. */
  readonly authAttempts: readonly LabSshAuthAttempt[];
  /** Every command run over SSH, in order. */
  readonly commands: readonly LabSshCommand[];
  /** The environment every command runs with. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * `argv` as a program on the node, for `spawn(file, args, { env })`: run inside the node's
   * mount namespace (its `/etc`, `/tmp`, … are the root folder's), in `cwd` (default the user's
   * home). Only while the node is up.
   */
  command(argv: readonly string[], cwd?: string): { file: string; args: string[] };
  /** The live processes of the node (everything in its namespace). */
  processes(): number[];
  /**
   * `mnt:[…]`, what `/proc/<pid>/ns/mnt` reads for every process of the node (until it reboots);
   * null while the node is down (rebooting, powered off, stopped): nothing of it runs then.
   */
  readonly mountNamespace: string | null;
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** The Proxmox API (HTTPS, self-signed): `url`, `certSha256`, `faults`, `requests`. */
  api: PveApi;
  /** Proxmox side: the console's token after `onboarded`, the tools' fault switches. */
  pve: LabPve;
  /** Reboot/poweroff state of the host, and reboot/powerOn from code. */
  power: RebootControl;
  /** Debian-side fault switches (`.lab/faults.json`, read by the simulated tools on every run). */
  readonly debianFaults: DebianFaults;
  setDebianFaults(patch: Partial<DebianFaults>): DebianFaults;
  setTiming(patch: Partial<LabTiming>): LabTiming;
};

/** Starts one simulated host: a lab root laid out like the host, reachable over real SSH. */
export async function startLab(options: StartLabOptions = {}): Promise<LabNode> {
  const createdRoot = options.root === undefined;
  const root = path.resolve(
    options.root ?? (await mkdtemp(path.join(os.tmpdir(), "clupilot-lab-"))),
  );
  const name = options.name ?? "pve1";
  const username = options.username ?? "root";
  const password = options.password ?? randomBytes(12).toString("base64url");
  const paths = hostRootPaths(root, username);
  await prepareHostRoot(paths, { hostname: name, os: options.os });
  // A Proxmox node is a Debian host with Proxmox installed (apt sources, kernel, vmbr0).
  const debianState =
    options.debianState ??
    (options.state === undefined || options.state === "fresh" ? undefined : "proxmox");
  seedDebianHost(root, {
    ...(debianState === undefined ? {} : { state: debianState }),
    ...(options.address === undefined ? {} : { address: options.address }),
    timing: {
      ...(options.timeScale === undefined ? {} : { timeScale: options.timeScale }),
      ...(options.rebootMs === undefined ? {} : { rebootMs: options.rebootMs }),
    },
  });

  const env = labCommandEnv(paths, username);

  const authorizedKeysPath = path.join(paths.homeFolder, ".ssh", "authorized_keys");
  // Clusters made on the node at run time (pvecm) keep their shared /etc/pve in the area.
  const clusterArea = acquireClusterArea();
  const server = await LabSshServer.start({
    root,
    shared: [clusterArea],
    home: paths.home,
    hostKeyPath: paths.hostKeyPath,
    ...(options.port === undefined ? {} : { port: options.port }),
    username,
    password,
    authorizedKeysFile: authorizedKeysPath,
    authorizedKeys: options.authorizedKeys ?? [],
    env,
    faults: { ...NO_SSH_FAULTS, refusePasswords: options.passwordAuthentication === false },
  }).catch((error: unknown) => {
    releaseClusterArea();
    throw error;
  });
  const { api, pve } = await startPveNode(root, name, {
    ...options.pve,
    ...(options.state === undefined ? {} : { state: options.state }),
    ...(options.storage === undefined ? {} : { storage: options.storage }),
  }).catch(async (error: unknown) => {
    await server.stop();
    releaseClusterArea();
    throw error;
  });

  // Powered off (or rebooting), the node answers neither SSH nor its API, as a real one; a
  // member of a cluster made with pvecm is offline to the others until it is back (its corosync
  // goes and comes with it).
  const corosyncUp = (up: boolean) => {
    const shared = sharedFolderOf(root);
    if (shared !== null) setCorosyncDown(shared, name, !up);
  };
  const power = new RebootController(root, {
    stop: async (silent) => {
      await api.powerOff();
      await server.stop(silent);
      corosyncUp(false);
    },
    start: async () => {
      corosyncUp(true);
      await api.powerOn();
      await server.restart();
    },
  });
  const switches = registerSshSwitches(new SwitchRegistry(), server);
  registerPveSwitches(switches, api, pve);
  registerDebianSwitches(switches, root, power);
  registerClusterMemberSwitches(switches, root, name);
  const unannounce = announceLabHost(root, clusterArea, {
    address: (options.address ?? "192.0.2.10/24").split("/")[0]!,
    node: name,
    apiCertSha256: api.certSha256,
    password,
  });

  let stopped = false;
  return {
    name,
    root,
    ssh: {
      host: "127.0.0.1",
      get port() {
        return server.port;
      },
      username,
      password,
      get hostKeySha256() {
        return server.hostKeySha256;
      },
    },
    setOs: (nextOs) => writeOs(root, nextOs),
    authorizedKeysPath,
    authorizeKey: (line) => server.authorizeKey(line),
    rotateHostKey: () => server.rotateHostKey(),
    faults: server.faults,
    switches,
    get authAttempts() {
      return server.authAttempts;
    },
    get commands() {
      return server.commands;
    },
    env,
    command: (argv, cwd = paths.home) => server.namespace.command(argv, cwd),
    processes: () => server.namespace.processes(),
    get mountNamespace() {
      return server.namespaceId;
    },
    api,
    pve,
    async stop() {
      if (stopped) return;
      stopped = true;
      await power.stop();
      unannounce();
      await api.stop();
      await server.stop();
      releaseClusterArea();
      if (createdRoot) await rm(root, { recursive: true, force: true });
    },
    restart: () => server.restart(),
    power,
    get debianFaults() {
      return readDebianFaults(root);
    },
    setDebianFaults: (patch) => writeDebianFaults(root, patch),
    setTiming: (patch) => writeTiming(root, patch),
  };
}

/** A client key pair for key-auth tests: OpenSSH private key and `ssh-ed25519 AAAA… comment`. */
export function generateClientKey(comment = "clupilot-test"): {
  privateKey: string;
  publicKey: string;
} {
  const pair = generateEd25519KeyPair(comment);
  return { privateKey: pair.private, publicKey: pair.public };
}

export { isProcessAlive, liveGroupMembers, waitUntil } from "./processes";
