import type { LabNode } from "../index";
import { requestPower } from "../debian/power";
import type { LabPbs } from "../pbs/server";
import type { LabCluster } from "../pve/cluster/start";

/**
 * A lab node's power as its controllers (BMC and Wake-on-LAN) see it. The node's own power is
 * what the lab models (a cluster node's `online`, its API and SSH up or refusing); the chassis
 * adds what a BMC knows besides: a power-on in progress (a slow boot) and a machine whose
 * power is on but which never boots (stuck in POST).
 */
export type LabNodePower = {
  name: string;
  isOn(): boolean;
  powerOn(): Promise<void>;
  powerOff(): Promise<void>;
};

export type ChassisFaults = {
  /** Nothing answers: the BMC's ports refuse or stay silent, Wake-on-LAN packets are lost. */
  unreachable: boolean;
  /** A power-on is accepted and the chassis reads on, but the node never boots. */
  neverBoots: boolean;
  /** A power-on boots the node this much later (null: at once). */
  bootMs: number | null;
};

export class LabChassis {
  readonly faults: ChassisFaults = { unreachable: false, neverBoots: false, bootMs: null };
  /** Power-on requests the chassis took (Redfish On, IPMI power on, a magic packet). */
  readonly powerOnRequests: string[] = [];
  /**
   * Tests: run once a Redfish power-on was taken, before the BMC answers it (a new outage at
   * exactly that moment, say). Null: the BMC answers at once.
   */
  afterPowerOnTaken: (() => Promise<void>) | null = null;
  private booting: NodeJS.Timeout | null = null;
  private stuck = false;

  constructor(readonly node: LabNodePower) {}

  /** What the BMC reports: on while the node runs, boots, or hangs before booting. */
  isOn(): boolean {
    return this.node.isOn() || this.booting !== null || this.stuck;
  }

  requestPowerOn(via: string): void {
    this.powerOnRequests.push(via);
    if (this.isOn()) return;
    if (this.faults.neverBoots) {
      this.stuck = true;
      return;
    }
    // Powered from the request on, as a real BMC reads it: `booting` holds until the node's own
    // power-on has finished, so there is no instant between the two that reads Off.
    const booting = setTimeout(() => {
      void this.node.powerOn().finally(() => {
        if (this.booting === booting) this.booting = null;
      });
    }, this.faults.bootMs ?? 0);
    this.booting = booting;
  }

  async forceOff(): Promise<void> {
    this.cancel();
    this.stuck = false;
    if (this.node.isOn()) await this.node.powerOff();
  }

  cancel(): void {
    if (this.booting) clearTimeout(this.booting);
    this.booting = null;
  }
}

/** The power of a lab cluster's node: the cluster model's `online`, cut and restored as one. */
export function clusterNodePower(cluster: LabCluster, name: string): LabNodePower {
  if (!cluster.model.node(name)) throw new Error(`no node '${name}' in the lab cluster`);
  return {
    name,
    isOn: () => cluster.model.node(name)?.online === true,
    powerOn: () => cluster.powerOn(name),
    powerOff: () => cluster.powerOff(name),
  };
}

/**
 * The power of a standalone lab node (`startLab`): on unless powered off (a reboot's or a
 * boot's moments count as on, as the BMC sees them). Powered off as `poweroff` on the host would;
 * powered on as its power button does.
 */
export function labNodePower(node: LabNode): LabNodePower {
  return {
    name: node.name,
    isOn: () => node.power.state !== "down",
    powerOn: () => node.power.powerOn(),
    powerOff: async () => {
      requestPower(node.root, "poweroff", 0);
      const deadline = Date.now() + 30_000;
      while (node.power.state !== "down") {
        if (Date.now() > deadline) throw new Error(`${node.name} did not power off`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/**
 * The power of a lab Proxmox Backup Server: on unless down (its own shutdown through its API, or
 * a power cut). Powered off it answers nothing on 8007; powered on its API answers again.
 */
export function labPbsPower(pbs: LabPbs): LabNodePower {
  return {
    name: pbs.name,
    isOn: () => pbs.state !== "down",
    powerOn: () => pbs.powerOn(),
    powerOff: () => pbs.powerOff(),
  };
}
