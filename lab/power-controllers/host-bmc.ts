import { execFile } from "node:child_process";
import { promisify } from "node:util";

import type { LabNode } from "../index";
import type { LabPowerControllers } from "./index";

const run = promisify(execFile);

/**
 * Puts a lab node's BMC (its ipmi_sim) where the host's own `ipmitool` finds it, as a real
 * host's board has its BMC on /dev/ipmi0, and gives the BMC a LAN configuration as an admin
 * would in its setup — with the real ipmitool (`lan set`), which ipmi_sim keeps. The host's
 * `ipmitool lan print` then reports this address and MAC.
 */
export async function wireHostBmc(
  host: Pick<LabNode, "name" | "setDebianFaults">,
  controllers: LabPowerControllers,
  lan: { address: string; mac: string } | null,
): Promise<void> {
  const { ipmi } = controllers.node(host.name);
  const base = ["-I", "lanplus", "-H", ipmi.address, "-p", String(ipmi.port)];
  const login = ["-U", controllers.username, "-E"];
  const env = { ...process.env, IPMI_PASSWORD: controllers.password };
  if (lan !== null) {
    for (const set of [
      ["ipsrc", "static"],
      ["ipaddr", lan.address],
      ["macaddr", lan.mac],
    ]) {
      await run("ipmitool", [...base, ...login, "lan", "set", "1", ...set], {
        env,
        timeout: 30_000,
      });
    }
  }
  host.setDebianFaults({
    bmc: { port: ipmi.port, username: controllers.username, password: controllers.password },
  });
}
