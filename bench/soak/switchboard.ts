import type { LabNode } from "@/lab";

/** The lab switches the chaos driver flips, with the value each has when no fault is on. */
export const SWITCH_DEFAULTS = {
  "ssh.dropAfterMs": null,
  "ssh.refuseConnections": false,
  "api.vmList502": false,
  "api.vmListHang": false,
  "api.config500Vmids": [],
  "api.delayMs": null,
} as const satisfies Record<string, unknown>;
export type SwitchName = keyof typeof SWITCH_DEFAULTS;
export type SwitchChanges = Partial<Record<SwitchName, unknown>>;

/**
 * One node's fault switches under faults that overlap in time: each fault is a layer; a switch
 * takes the value of the newest layer that sets it, or its default once no layer does. So the
 * end of one fault never switches off another's (two SSH faults on one node, say).
 */
export class Switchboard {
  private layers: Array<{ id: number; changes: SwitchChanges }> = [];
  private nextId = 1;

  constructor(private readonly node: LabNode) {}

  /** Puts the changes on; returns the layer's id for `off`. */
  async on(changes: SwitchChanges): Promise<number> {
    const id = this.nextId++;
    this.layers.push({ id, changes });
    await this.apply(Object.keys(changes) as SwitchName[]);
    return id;
  }

  async off(id: number): Promise<void> {
    const layer = this.layers.find((l) => l.id === id);
    if (!layer) return;
    this.layers = this.layers.filter((l) => l.id !== id);
    await this.apply(Object.keys(layer.changes) as SwitchName[]);
  }

  /** Every fault off: the node as it was started. */
  async clear(): Promise<void> {
    this.layers = [];
    await this.apply(Object.keys(SWITCH_DEFAULTS) as SwitchName[]);
  }

  private async apply(names: SwitchName[]): Promise<void> {
    const values: Record<string, unknown> = {};
    for (const name of names) {
      const layer = this.layers.findLast((l) => name in l.changes);
      values[name] = layer ? layer.changes[name] : SWITCH_DEFAULTS[name];
    }
    const result = await this.node.switches.apply(values);
    if (!result.ok) {
      throw new Error(
        `lab ${this.node.name} refused ${JSON.stringify(values)}: ${JSON.stringify(result)}`,
      );
    }
  }
}
