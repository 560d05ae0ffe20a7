import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { booleanSwitch, optionalNumberSwitch, type SwitchRegistry } from "../control/switches";
import { loadOrCreateNodeCert } from "../pve/cert";
import { LabChassis, type LabNodePower } from "./chassis";
import { startLabIpmi, type LabIpmi } from "./ipmi-sim";
import { startLabRedfish, type LabRedfish } from "./redfish";
import { startLabWol, type LabWol } from "./wol";

export {
  clusterNodePower,
  labNodePower,
  labPbsPower,
  LabChassis,
  type LabNodePower,
} from "./chassis";

/**
 * Every lab node's out-of-band power controllers, all driving the node's real lab power: a
 * Redfish service (TLS), an IPMI BMC (Debian's `ipmi_sim`) and one Wake-on-LAN listener for all
 * of them. What the console enters for each is in `redfish`, `ipmi` and `wol`.
 */
export type LabNodeControllers = {
  name: string;
  chassis: LabChassis;
  redfish: {
    address: string;
    port: number;
    systemId: string;
    certSha256: string;
    /** The BMC's Redfish sessions open now (tests: every session the console opened is deleted). */
    openSessions(): string[];
    readonly sessionLog: readonly string[];
  };
  ipmi: { address: string; port: number; pid(): number | null };
  wol: { mac: string; broadcastAddress: string; port: number };
  /** The controller cannot be reached: Redfish cuts connections, ipmi_sim stops, packets are lost. */
  setUnreachable(value: boolean): Promise<void>;
};

export type LabPowerControllers = {
  username: string;
  password: string;
  nodes: LabNodeControllers[];
  node(name: string): LabNodeControllers;
  stop(): Promise<void>;
};

export async function startLabPowerControllers(options: {
  nodes: LabNodePower[];
  username?: string;
  password?: string;
}): Promise<LabPowerControllers> {
  const username = options.username ?? "admin";
  const password = options.password ?? "lab-bmc-password";
  const base = await mkdtemp(path.join(os.tmpdir(), "clupilot-lab-bmc-"));
  const byMac = new Map<string, LabChassis>();
  const services: Array<LabRedfish | LabIpmi | LabWol> = [];
  const nodes: LabNodeControllers[] = [];
  const stopAll = async () => {
    for (const node of nodes) node.chassis.cancel();
    for (const service of services.reverse()) await service.stop();
    await rm(base, { recursive: true, force: true });
  };
  try {
    const wol = await startLabWol(byMac);
    services.push(wol);
    for (const [i, power] of options.nodes.entries()) {
      const chassis = new LabChassis(power);
      const dir = path.join(base, power.name);
      const cert = loadOrCreateNodeCert(dir, `${power.name}-bmc`);
      const redfish = await startLabRedfish({ chassis, tls: cert, username, password });
      services.push(redfish);
      const ipmi = await startLabIpmi({ chassis, dir: path.join(dir, "ipmi"), username, password });
      services.push(ipmi);
      const mac = `52:54:00:c1:00:${(i + 1).toString(16).padStart(2, "0")}`;
      byMac.set(mac, chassis);
      nodes.push({
        name: power.name,
        chassis,
        redfish: {
          address: "127.0.0.1",
          port: redfish.port,
          systemId: redfish.systemId,
          certSha256: cert.sha256,
          openSessions: () => redfish.openSessions(),
          sessionLog: redfish.sessionLog,
        },
        ipmi: { address: "127.0.0.1", port: ipmi.port, pid: () => ipmi.pid() },
        wol: { mac, broadcastAddress: "127.0.0.1", port: wol.port },
        setUnreachable: (value) => ipmi.setUnreachable(value),
      });
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  let stopped = false;
  return {
    username,
    password,
    nodes,
    node(name) {
      const found = nodes.find((n) => n.name === name);
      if (!found) throw new Error(`lab: no power controllers for '${name}'`);
      return found;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
    },
  };
}

/** `bmc.<node>.unreachable`, `bmc.<node>.neverBoots`, `bmc.<node>.bootMs` on the control API and page. */
export function registerPowerControllerSwitches(
  registry: SwitchRegistry,
  controllers: LabPowerControllers,
): SwitchRegistry {
  for (const node of controllers.nodes) {
    registry
      .register(
        booleanSwitch({
          name: `bmc.${node.name}.unreachable`,
          description: `${node.name}'s controllers cannot be reached: Redfish cuts every connection, ipmi_sim is stopped, Wake-on-LAN packets are lost.`,
          get: () => node.chassis.faults.unreachable,
          set: (value) => node.setUnreachable(value),
        }),
      )
      .register(
        booleanSwitch({
          name: `bmc.${node.name}.neverBoots`,
          description: `${node.name}'s BMC accepts a power-on and reads On, but the node never boots.`,
          get: () => node.chassis.faults.neverBoots,
          set: (value) => {
            node.chassis.faults.neverBoots = value;
          },
        }),
      )
      .register(
        optionalNumberSwitch({
          name: `bmc.${node.name}.bootMs`,
          description: `${node.name} boots this long after a power-on (its API answers only then).`,
          min: 0,
          max: 600_000,
          unit: "ms",
          get: () => node.chassis.faults.bootMs,
          set: (value) => {
            node.chassis.faults.bootMs = value;
          },
        }),
      );
  }
  return registry;
}
