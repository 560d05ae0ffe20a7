import { describe, expect, it } from "vitest";
import type { LabNode, LabPve, PveApi } from "@/lab";
import { registerSshSwitches, SwitchRegistry } from "@/lab/control/switches";
import { registerPveSwitches } from "@/lab/pve/node";
import { SWITCH_DEFAULTS, Switchboard } from "./switchboard";

/** A node's real switch registry over plain fault objects (what the SSH server and API read). */
function nodeSwitches() {
  const ssh = {
    refuseConnections: false,
    dropAfterMs: null,
    refusePasswords: false,
    refusePublicKeys: [],
  };
  const api = {
    faults: {
      vmList502: false,
      vmListHang: false,
      config500Vmids: [],
      delayMs: 0,
      statusPostHang: false,
    },
  };
  const switches = registerSshSwitches(new SwitchRegistry(), {
    faults: ssh,
    rotateHostKey: async () => {},
    restart: async () => {},
  });
  registerPveSwitches(
    switches,
    api as unknown as PveApi,
    {
      toolFaults: {},
      setToolFaults: () => ({}),
    } as unknown as LabPve,
  );
  return { node: { name: "pve1", switches } as unknown as LabNode, switches };
}

describe("a node's switchboard under overlapping faults", () => {
  it("keeps a switch on while any fault that set it is on, with the newest value", async () => {
    const { node, switches } = nodeSwitches();
    const board = new Switchboard(node);
    const first = await board.on({ "ssh.dropAfterMs": 50 });
    const second = await board.on({ "ssh.dropAfterMs": 3000, "ssh.refuseConnections": true });
    expect(switches.get("ssh.dropAfterMs")).toBe(3000);
    await board.off(first);
    expect(switches.get("ssh.dropAfterMs")).toBe(3000);
    expect(switches.get("ssh.refuseConnections")).toBe(true);
    await board.off(second);
    expect(switches.get("ssh.dropAfterMs")).toBeNull();
    expect(switches.get("ssh.refuseConnections")).toBe(false);
  });

  it("the end of one fault falls back to an older fault's value, not the default", async () => {
    const { node, switches } = nodeSwitches();
    const board = new Switchboard(node);
    await board.on({ "api.delayMs": 2000 });
    const later = await board.on({ "api.delayMs": 9000 });
    await board.off(later);
    expect(switches.get("api.delayMs")).toBe(2000);
  });

  it("clear() puts every switch the soak flips back as the node was started", async () => {
    const { node, switches } = nodeSwitches();
    const board = new Switchboard(node);
    await board.on({ "api.vmList502": true, "api.config500Vmids": [9000], "api.vmListHang": true });
    await board.clear();
    for (const [name, value] of Object.entries(SWITCH_DEFAULTS)) {
      expect(switches.get(name)).toEqual(value);
    }
  });
});
