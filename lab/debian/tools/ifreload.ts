import { readDebianFaults } from "../lab-state";
import { checkInterfaces, withoutBridgeAddresses, writeApplied } from "../network";

/** Simulated ifupdown2 `ifreload -a`: validate, then apply (record) or fail and keep the old config. */
export function ifreload(root: string, argv: string[]): number {
  if (!argv.includes("-a") && !argv.includes("--all") && !argv.some((a) => /^-[a-z]*a/.test(a))) {
    process.stderr.write("error: Usage: ifreload [-h] (-a | -c) [-v] [-d] [-f] [-n] [-s]\n");
    return 1;
  }
  const { errors, applied } = checkInterfaces(root);
  if (errors.length > 0) {
    process.stderr.write(`${errors.join("\n")}\n`);
    return 1;
  }
  if (argv.includes("-n") || argv.includes("--no-act")) return 0;
  // Fault `ifreloadRejectsBridges`: the file is valid, but creating the bridge fails in the
  // kernel; ifupdown2 reports the failed `ip` command and the running config stays as it was.
  const bridge = applied.ifaces.find((iface) => iface.bridgePorts !== null);
  if (bridge !== undefined && readDebianFaults(root).ifreloadRejectsBridges) {
    process.stderr.write(
      `error: ${bridge.name}: cmd '/bin/ip link add name ${bridge.name} type bridge' failed: returned 2 (Error: Unknown device type.\n)\n`,
    );
    return 1;
  }
  // Fault `bridgeDropsAddress`: the bridge comes up, its address does not, and ifreload says
  // nothing — the host is cut off until a configuration with an address is applied again.
  const broken = bridge !== undefined && readDebianFaults(root).bridgeDropsAddress;
  writeApplied(root, broken ? withoutBridgeAddresses(applied) : applied);
  return 0;
}
