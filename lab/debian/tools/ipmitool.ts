import { spawn } from "node:child_process";

import { readDebianFaults } from "../lab-state";

/**
 * The host's `ipmitool`, in-band: on a real host it talks to the BMC through the kernel's
 * /dev/ipmi0. A lab host has no such device, so a host wired to a lab BMC
 * (`DebianFaults.bmc`, the node's ipmi_sim) gets the real ipmitool run against that BMC over
 * lanplus — every line the caller reads is the real tool's. A host without one answers as the
 * real ipmitool does on a machine without an IPMI device.
 */
export function ipmitool(root: string, argv: string[]): Promise<number> {
  const bmc = readDebianFaults(root).bmc;
  if (bmc === null) {
    process.stderr.write(
      "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory\n",
    );
    return Promise.resolve(1);
  }
  return new Promise((resolve) => {
    // The machine's real ipmitool by its path: by name, the host's PATH finds this tool again.
    const child = spawn(
      "/usr/bin/ipmitool",
      [
        "-I",
        "lanplus",
        // ipmi_sim lacks Get Channel Cipher Suites: naming suite 3 spares the ~3 s ipmitool
        // spends finding that out per session (the in-band call has no sessions at all).
        "-C",
        "3",
        "-H",
        "127.0.0.1",
        "-p",
        String(bmc.port),
        "-U",
        bmc.username,
        "-E",
        ...argv,
      ],
      { env: { ...process.env, IPMI_PASSWORD: bmc.password }, stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stdout.on("data", (chunk: Buffer) => process.stdout.write(chunk));
    child.stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    child.once("error", (error) => {
      process.stderr.write(`lab: ipmitool: ${error.message}\n`);
      resolve(70);
    });
    child.once("close", (code) => resolve(code ?? 1));
  });
}
