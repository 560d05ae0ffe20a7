import { z } from "zod";

import { SwitchRegistry, booleanSwitch, optionalNumberSwitch } from "../../control/switches";
import type { LabCluster } from "./start";

/**
 * A lab cluster's switches and actions for the control API and page (`cluster.*`): the
 * hanging guests, the bulk Ceph flag call that does not take, the guests' shutdown time, and
 * one power-off / power-on action per node (a power cut, not an orderly shutdown).
 */
export function registerClusterSwitches(
  registry: SwitchRegistry,
  cluster: LabCluster,
): SwitchRegistry {
  registry
    .register({
      name: "cluster.hangOnShutdown",
      description:
        "These VMIDs never finish a clean shutdown; only stop (or shutdown with forceStop after its timeout) ends them.",
      input: { type: "json" },
      schema: z.array(z.number().int().min(100)),
      get: () => cluster.faults.hangOnShutdown,
      set: (value) => {
        cluster.faults.hangOnShutdown = value;
        cluster.model.changed();
      },
    })
    .register({
      name: "cluster.migrationFails",
      description:
        "The migration task of these VMIDs fails: the target cannot be reached over SSH (the guest stays where it is).",
      input: { type: "json" },
      schema: z.array(z.number().int().min(100)),
      get: () => cluster.faults.migrationFails,
      set: (value) => {
        cluster.faults.migrationFails = value;
      },
    })
    .register({
      name: "cluster.joinInfoFails",
      description:
        "On these nodes GET /cluster/config/join fails (pmxcfs gives no corosync.conf back): their cluster's node list and certificate fingerprints cannot be read.",
      input: { type: "json" },
      schema: z.array(z.string().regex(/^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/)),
      get: () => cluster.faults.joinInfoFails,
      set: (value) => {
        cluster.faults.joinInfoFails = value;
      },
    })
    .register(
      booleanSwitch({
        name: "cluster.bulkFlagsIgnored",
        description: "PUT /cluster/ceph/flags answers with a task that sets nothing.",
        get: () => cluster.faults.bulkFlagsIgnored,
        set: (value) => {
          cluster.faults.bulkFlagsIgnored = value;
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "cluster.singleFlagIgnored",
        description: "PUT /cluster/ceph/flags/{flag} answers 200 and sets nothing either.",
        get: () => cluster.faults.singleFlagIgnored,
        set: (value) => {
          cluster.faults.singleFlagIgnored = value;
        },
      }),
    )
    .register(
      optionalNumberSwitch({
        name: "cluster.guestShutdownMs",
        description: "Time every guest's clean shutdown takes from now on (each guest's own).",
        min: 0,
        max: 600_000,
        unit: "ms",
        get: () => cluster.model.timing.guestShutdownMs,
        set: (value) => {
          cluster.model.timing.guestShutdownMs = value ?? 0;
          for (const guest of cluster.model.guests.values()) guest.shutdownMs = value ?? 0;
        },
      }),
    );
  for (const node of cluster.nodes) {
    registry
      .registerAction({
        name: `cluster.${node.name}.powerOff`,
        description: `${node.name} loses power at once: its guests die, HA may recover them elsewhere.`,
        run: () => cluster.powerOff(node.name),
      })
      .registerAction({
        name: `cluster.${node.name}.powerOn`,
        description: `${node.name} boots: its API answers again, its OSDs are back.`,
        run: () => cluster.powerOn(node.name),
      });
  }
  return registry;
}
