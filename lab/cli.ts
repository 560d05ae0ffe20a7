import { realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { describeCluster, describeControllers, labClusterGuests } from "./cli-cluster";
import { controlCluster, controlPbs } from "./control/cluster";
import { labProxmoxKeyringEnv } from "./debian/apt-sources";
import { startControlServer, type ControlServer } from "./control/server";
import { MAX_FLEET_NODES, startFleet, type LabFleet, type StartFleetOptions } from "./fleet";
import { startImageServer, type ImageServer } from "./image/server";
import type { LabNode } from "./index";
import { startLabPbs, type LabPbs } from "./pbs/server";
import { startLabCluster, type LabCluster } from "./pve/cluster/start";
import {
  clusterNodePower,
  labPbsPower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "./power-controllers";
import { setNodeConfig } from "./pve/cluster/node-config";
import { controlUps, labUpsSources, startLabUps, type LabUps } from "./ups/lab-ups";
import type { PveState, PveStorageLayout } from "./pve/seed";

/**
 * `npm run lab -- [flags]`: starts lab nodes and the control server, prints ONE JSON object on
 * stdout with everything needed to add the nodes to the console, logs to stderr, and runs
 * until SIGINT/SIGTERM (then stops everything and exits 0).
 */

export const MAX_CLUSTER_NODES = 9;

export const USAGE = `Usage: npm run lab -- [options]

  --nodes N                 number of nodes, 1..${MAX_FLEET_NODES} (default 1)
  --state S                 fresh | proxmox | onboarded
  --storage S               dir-no-images | dir | lvm-thin | zfs
  --time-scale N            multiply simulated durations by N (e.g. 0.01 in tests, 1 for a demo)
  --root DIR                keep node state in DIR/<node> (kept after exit; default: temp folders)
  --register URL            also add every node (standalone or of --cluster) to the console at
                            URL (POST URL/api/hosts), with the operator API token in
                            CLUPILOT_API_TOKEN
  --control-port N          port of the control page and API (default: a free port)
  --ups                     also start a lab UPS: a NUT server and an SNMP agent (v1/v2c/v3)
                            on one power timeline; pull its plug on the control page
  --ups-nut-port N          port of the lab UPS's NUT server (implies --ups; default: free)
  --ups-snmp-port N         UDP port of the lab UPS's SNMP agent (implies --ups; default: free)
  --cluster N               instead of standalone nodes: a Proxmox VE cluster of N nodes,
                            2..${MAX_CLUSTER_NODES} (pve1…pveN) sharing one etc/pve, with VMs and containers,
                            HA resources and one VM that hangs on shutdown unless forced
  --ceph                    the cluster is hyper-converged Ceph (OSDs on every node, monitors
                            on the first three, pool vm-pool size 3 min_size 2)
  --cluster-name NAME       the cluster's name (default lab); two labs started with one name
                            are two sites that named theirs alike (same nodes and addresses)
  --pbs                     also start a lab Proxmox Backup Server to protect
  -h, --help                show this help

Prints {"nodes":[{"name","ssh":{…},"api":{…}}],"control":"http://127.0.0.1:PORT","consoleEnv":{…}}
on stdout; consoleEnv is what the console needs to onboard a fresh node from the lab's image server.
With --ups, "ups":{"name","nut":{…},"snmpV2c":{…},"snmpV3":{…}} holds the UPS settings to enter
in the console (--time-scale also compresses its battery: 30 minutes last 90 s at 0.05).
With --cluster, "nodes" is empty and "cluster":{"name","ceph","token","nodes":[{"name","ip","ssh","api","bmc"}]}
holds each node's SSH side (add it to the console like any host that runs Proxmox) and API, and
a token the lab seeded (for tests that skip onboarding). With --pbs,
"pbs":{"name","url","certSha256","token"} is what to enter as a protected backup server.
`;

export const STATES = ["fresh", "proxmox", "onboarded"] as const satisfies readonly PveState[];
export const STORAGES = [
  "dir-no-images",
  "dir",
  "lvm-thin",
  "zfs",
] as const satisfies readonly PveStorageLayout[];

export type CliOptions = {
  nodes: number;
  state?: PveState;
  storage?: PveStorageLayout;
  timeScale?: number;
  root?: string;
  register?: string;
  controlPort?: number;
  /** Start a lab UPS; its face ports (default: free ports). */
  ups: false | { nutPort?: number; snmpPort?: number };
  /** A lab cluster instead of standalone nodes. */
  cluster?: { nodes: number; ceph: boolean; name?: string };
  pbs: boolean;
  help: boolean;
};

export class UsageError extends Error {
  override readonly name = "UsageError";
}

export function parseCliArgs(argv: readonly string[]): CliOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        nodes: { type: "string" },
        state: { type: "string" },
        storage: { type: "string" },
        "time-scale": { type: "string" },
        root: { type: "string" },
        register: { type: "string" },
        "control-port": { type: "string" },
        ups: { type: "boolean" },
        "ups-nut-port": { type: "string" },
        "ups-snmp-port": { type: "string" },
        cluster: { type: "string" },
        ceph: { type: "boolean" },
        "cluster-name": { type: "string" },
        pbs: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const options: CliOptions = {
    nodes: 1,
    ups: false,
    pbs: values.pbs === true,
    help: values.help === true,
  };
  if (values.nodes !== undefined) {
    const nodes = Number(values.nodes);
    if (!/^\d+$/.test(values.nodes) || nodes < 1 || nodes > MAX_FLEET_NODES) {
      throw new UsageError(`--nodes must be a whole number from 1 to ${MAX_FLEET_NODES}`);
    }
    options.nodes = nodes;
  }
  if (values.state !== undefined) options.state = oneOf("--state", values.state, STATES);
  if (values.storage !== undefined) options.storage = oneOf("--storage", values.storage, STORAGES);
  if (values["time-scale"] !== undefined) {
    const scale = Number(values["time-scale"]);
    if (!Number.isFinite(scale) || scale <= 0 || values["time-scale"].trim() === "") {
      throw new UsageError("--time-scale must be a positive number");
    }
    options.timeScale = scale;
  }
  if (values.root !== undefined) {
    if (values.root === "") throw new UsageError("--root needs a folder");
    options.root = values.root;
  }
  if (values.register !== undefined) {
    let url: URL;
    try {
      url = new URL(values.register);
    } catch {
      throw new UsageError(`--register needs the console's URL, got ${values.register}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new UsageError("--register needs an http:// or https:// URL");
    }
    options.register = url.href.replace(/\/+$/, "");
  }
  if (values["control-port"] !== undefined) {
    options.controlPort = portNumber("--control-port", values["control-port"]);
  }
  if (
    values.ups === true ||
    values["ups-nut-port"] !== undefined ||
    values["ups-snmp-port"] !== undefined
  ) {
    options.ups = {
      ...(values["ups-nut-port"] === undefined
        ? {}
        : { nutPort: portNumber("--ups-nut-port", values["ups-nut-port"]) }),
      ...(values["ups-snmp-port"] === undefined
        ? {}
        : { snmpPort: portNumber("--ups-snmp-port", values["ups-snmp-port"]) }),
    };
  }
  if (values.cluster !== undefined) {
    const nodes = Number(values.cluster);
    if (!/^\d+$/.test(values.cluster) || nodes < 2 || nodes > MAX_CLUSTER_NODES) {
      throw new UsageError(`--cluster must be a whole number from 2 to ${MAX_CLUSTER_NODES}`);
    }
    // The cluster's nodes are Proxmox nodes already: the standalone nodes' flags do not apply.
    const standalone = (["nodes", "state", "storage", "root"] as const).filter(
      (flag) => values[flag] !== undefined,
    );
    if (standalone.length > 0) {
      throw new UsageError(
        `--cluster starts the cluster's nodes instead of standalone ones; drop --${standalone.join(", --")}`,
      );
    }
    const name = values["cluster-name"];
    if (name !== undefined && !/^[A-Za-z0-9][A-Za-z0-9-]{0,14}$/.test(name)) {
      // corosync's cluster_name as pvecm create accepts it.
      throw new UsageError("--cluster-name must be 1 to 15 letters, digits or dashes");
    }
    options.cluster = { nodes, ceph: values.ceph === true, ...(name ? { name } : {}) };
  } else if (values.ceph === true) {
    throw new UsageError("--ceph needs --cluster N");
  } else if (values["cluster-name"] !== undefined) {
    throw new UsageError("--cluster-name needs --cluster N");
  }
  return options;
}

function portNumber(flag: string, value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) {
    throw new UsageError(`${flag} must be a port number (1..65535)`);
  }
  return port;
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${flag} must be one of ${allowed.join(", ")}; got ${value}`);
  }
  return value as T;
}

/** The startFleet options for the parsed flags (`--state proxmox` also seeds Debian's side). */
export function fleetOptions(options: CliOptions): StartFleetOptions {
  return {
    nodes: options.nodes,
    ...(options.root === undefined ? {} : { root: options.root }),
    ...(options.state === undefined ? {} : { state: options.state }),
    ...(options.storage === undefined ? {} : { storage: options.storage }),
    ...(options.timeScale === undefined ? {} : { timeScale: options.timeScale }),
  };
}

/** The stdout object: what a person pastes into the console. */
export function describeLab(
  nodes: readonly LabNode[],
  controlUrl: string,
  ups?: LabUps | null,
  extra: {
    cluster?: LabCluster | null;
    pbs?: LabPbs | null;
    controllers?: LabPowerControllers | null;
    /** The lab PBS's own BMC (Redfish, ipmi_sim, Wake-on-LAN), switching its power. */
    pbsControllers?: LabPowerControllers | null;
  } = {},
) {
  return {
    nodes: nodes.map((node) => {
      const api = node.api as { url: string; certSha256: string } | undefined;
      return {
        name: node.name,
        ssh: {
          host: node.ssh.host,
          port: node.ssh.port,
          username: node.ssh.username,
          password: node.ssh.password,
          hostKeySha256: node.ssh.hostKeySha256,
        },
        ...(api === undefined ? {} : { api: { url: api.url, certSha256: api.certSha256 } }),
      };
    }),
    control: controlUrl,
    ...(ups == null ? {} : { ups: { name: ups.name, ...labUpsSources(ups) } }),
    ...(extra.cluster == null
      ? {}
      : { cluster: describeCluster(extra.cluster, extra.controllers ?? null) }),
    ...(extra.pbs == null
      ? {}
      : {
          pbs: {
            name: extra.pbs.name,
            url: extra.pbs.url,
            certSha256: extra.pbs.certSha256,
            token: extra.pbs.token,
            ...(extra.pbsControllers == null
              ? {}
              : { bmc: describeControllers(extra.pbsControllers, extra.pbs.name) }),
          },
        }),
  };
}

/** What registering a node takes: its SSH side and the port its API answers on. */
export type RegistrableNode = Pick<LabNode, "name"> & {
  ssh: Pick<LabNode["ssh"], "host" | "port" | "username" | "password">;
  api: { url: string };
};

/** Adds each node to a running console (POST /api/hosts); one line per node on stderr. */
export async function registerNodes(
  consoleUrl: string,
  nodes: readonly RegistrableNode[],
  log: (line: string) => void,
): Promise<boolean> {
  let allOk = true;
  for (const node of nodes) {
    const body = {
      name: node.name,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      // The lab's API listens on a free port, not Proxmox's 8006.
      apiPort: Number(new URL(node.api.url).port),
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
    };
    try {
      const response = await fetch(`${consoleUrl}/api/hosts`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          // The console's API needs an operator's token (npm run admin -- create-token …).
          ...(process.env.CLUPILOT_API_TOKEN
            ? { authorization: `Bearer ${process.env.CLUPILOT_API_TOKEN}` }
            : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      const text = await response.text();
      let answer: Record<string, unknown> = {};
      try {
        answer = JSON.parse(text) as Record<string, unknown>;
      } catch {
        answer = { error: text.slice(0, 200) };
      }
      if (response.status === 201) {
        log(
          `registered ${node.name} with ${consoleUrl}: host ${String(answer.hostId)}, run ${String(answer.runId)}`,
        );
        continue;
      }
      allOk = false;
      const fieldErrors =
        answer.fieldErrors !== undefined && Object.keys(answer.fieldErrors as object).length > 0
          ? ` ${JSON.stringify(answer.fieldErrors)}`
          : "";
      const hint =
        response.status === 401
          ? " — set CLUPILOT_API_TOKEN to an operator's token (npm run -s admin -- create-token --user NAME)"
          : "";
      log(
        `could not register ${node.name} with ${consoleUrl}: HTTP ${response.status} ${String(answer.error ?? "")}${fieldErrors}${hint}`,
      );
    } catch (error) {
      allOk = false;
      const reason = error instanceof Error ? (error.cause ?? error).toString() : String(error);
      log(`could not register ${node.name} with ${consoleUrl}: ${reason}`);
    }
  }
  return allOk;
}

export async function main(argv: readonly string[]): Promise<void> {
  // A closed stdout (`npm run lab | head -1`) or stderr must not take the lab down.
  process.stdout.on("error", () => {});
  process.stderr.on("error", () => {});
  const log = (line: string) => process.stderr.write(`lab: ${line}\n`);
  let options: CliOptions;
  let startOptions: StartFleetOptions;
  try {
    options = parseCliArgs(argv);
    if (options.help) {
      process.stdout.write(USAGE);
      return;
    }
    startOptions = fleetOptions(options);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`lab: ${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }

  let fleet: LabFleet | null = null;
  let control: ControlServer | null = null;
  let images: ImageServer | null = null;
  let ups: LabUps | null = null;
  let cluster: LabCluster | null = null;
  let controllers: LabPowerControllers | null = null;
  let pbsControllers: LabPowerControllers | null = null;
  let pbs: LabPbs | null = null;
  let stoppingSince: number | null = null;
  const stop = async (signal: string) => {
    if (stoppingSince !== null) {
      // Ctrl-C under `npm run` arrives twice (from the terminal and forwarded by npm): only a
      // later, deliberate second signal gives up on cleaning up.
      if (Date.now() - stoppingSince < 1000) return;
      log(`${signal} again: exiting without cleaning up`);
      process.exit(1);
    }
    stoppingSince = Date.now();
    log(`${signal}: stopping`);
    try {
      await control?.stop();
      await fleet?.stop();
      await images?.stop();
      await ups?.stop();
      await controllers?.stop();
      await pbsControllers?.stop();
      await cluster?.stop();
      await pbs?.stop();
      log("stopped");
      process.exit(0);
    } catch (error) {
      log(`stopping failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    }
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));

  try {
    if (options.cluster === undefined) fleet = await startFleet(startOptions);
    else {
      const names = Array.from({ length: options.cluster.nodes }, (_, i) => `pve${i + 1}`);
      const scale = options.timeScale ?? 1;
      const { guests, hanging } = labClusterGuests(names, {
        ceph: options.cluster.ceph,
        timeScale: scale,
      });
      cluster = await startLabCluster({
        nodes: names,
        ...(options.cluster.name ? { name: options.cluster.name } : {}),
        guests,
        ceph: options.cluster.ceph,
        timeScale: scale,
        timing: {
          haDisarmMs: Math.round(3000 * scale),
          haRecoveryMs: Math.round(30_000 * scale),
          nodeShutdownDelayMs: Math.round(2000 * scale),
          // A 2 GiB guest over a 10 GbE migration network: a few seconds each.
          migrateMs: Math.round(5000 * scale),
        },
      });
      cluster.faults.hangOnShutdown = hanging;
      // Every node's BMC (Redfish, ipmi_sim) and the Wake-on-LAN listener, on the node's power.
      const started = cluster;
      controllers = await startLabPowerControllers({
        nodes: started.nodes.map((n) => clusterNodePower(started, n.name)),
      });
      // Wake-on-LAN via a cluster member: each node's MAC in its Proxmox config (as
      // `pvenode config set --wakeonlan` leaves it), the members' packets to the lab's listener.
      started.model.wakeOnLanPort = controllers.nodes[0]!.wol.port;
      for (const n of controllers.nodes)
        setNodeConfig(
          started.nodes[0]!.root,
          n.name,
          "wakeonlan",
          `mac=${n.wol.mac},broadcast-address=127.0.0.1`,
        );
    }
    if (options.pbs) {
      pbs = await startLabPbs();
      // Its BMC: powered off it answers nothing on its port, powered on it answers again.
      pbsControllers = await startLabPowerControllers({ nodes: [labPbsPower(pbs)] });
    }
    // The lab's stand-in for cloud.debian.org and Proxmox's keyring: the console must be
    // pointed at it (printed below) to onboard a fresh node without internet.
    images = await startImageServer();
    if (options.ups !== false) {
      ups = await startLabUps({
        ...(options.timeScale === undefined ? {} : { timeScale: options.timeScale }),
        nut: options.ups.nutPort === undefined ? {} : { port: options.ups.nutPort },
        snmp: options.ups.snmpPort === undefined ? {} : { port: options.ups.snmpPort },
      });
    }
    const nodes = fleet?.nodes ?? [];
    const upsDevices = ups === null ? [] : [controlUps(ups)];
    control = await startControlServer({
      nodes: () => nodes,
      ups: () => upsDevices,
      cluster: cluster === null ? null : controlCluster(cluster, controllers),
      pbs: pbs === null ? null : controlPbs(pbs),
      ...(options.controlPort === undefined ? {} : { port: options.controlPort }),
    });
  } catch (error) {
    log(`could not start: ${error instanceof Error ? error.message : String(error)}`);
    await control?.stop();
    await fleet?.stop();
    await images?.stop();
    await ups?.stop();
    await controllers?.stop();
    await pbsControllers?.stop();
    await cluster?.stop();
    await pbs?.stop();
    process.exitCode = 1;
    return;
  }
  if (stoppingSince !== null) return;

  const consoleEnv = {
    CLUPILOT_CLOUD_IMAGE_URL: images!.imageUrl,
    CLUPILOT_CLOUD_IMAGE_SUMS_URL: images!.sumsUrl,
    ...labProxmoxKeyringEnv(images!.keyringUrl),
    CLUPILOT_POLL_SECONDS: "2",
  };
  process.stdout.write(
    `${JSON.stringify({ ...describeLab(fleet?.nodes ?? [], control.url, ups, { cluster, pbs, controllers, pbsControllers }), consoleEnv })}\n`,
  );
  for (const node of fleet?.nodes ?? []) {
    log(
      `${node.name}: ssh ${node.ssh.username}@${node.ssh.host} -p ${node.ssh.port} ` +
        `(password ${node.ssh.password}, host key ${node.ssh.hostKeySha256}), root ${node.root}`,
    );
  }
  if (ups !== null) {
    const { nut, snmp } = ups;
    if (nut !== null) {
      log(
        `UPS ${ups.name}: NUT ${nut.upsName}@${nut.host}:${nut.port} (user ${nut.username}, password ${nut.password})`,
      );
    }
    if (snmp !== null) {
      log(
        `UPS ${ups.name}: SNMP ${snmp.host}:${snmp.port} (v1/v2c community ${snmp.community}` +
          (snmp.v3 === null
            ? ")"
            : `; v3 user ${snmp.v3.user}, ${snmp.v3.authProtocol} key ${snmp.v3.authKey}, ${snmp.v3.privProtocol} key ${snmp.v3.privKey})`),
      );
    }
  }
  if (cluster !== null) {
    for (const node of cluster.nodes) {
      log(
        `cluster ${cluster.name}: ${node.name} (${node.ip}) ssh ${node.ssh.username}@${node.ssh.host} -p ${node.ssh.port} ` +
          `(password ${node.ssh.password}, host key ${node.ssh.hostKeySha256}), API ${node.api.url} certificate ${node.api.certSha256}`,
      );
    }
    log(
      `cluster ${cluster.name}: the console's token ${cluster.token.id} secret ${cluster.token.secret}` +
        (cluster.model.ceph === null ? "" : "; hyper-converged Ceph"),
    );
  }
  if (pbs !== null) {
    log(
      `PBS ${pbs.name}: API ${pbs.url} certificate ${pbs.certSha256}, token ${pbs.token.id} secret ${pbs.token.secret}`,
    );
  }
  log(`control page: ${control.url}`);
  log(
    `start the console with: ${Object.entries(consoleEnv)
      .map(([key, value]) => `${key}=${value}`)
      .join(" ")} npm start`,
  );
  if (options.register !== undefined) {
    await registerNodes(options.register, fleet?.nodes ?? cluster?.nodes ?? [], log);
  }
  log("running; Ctrl-C stops");
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(path.resolve(entry)) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(
      `lab: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}
