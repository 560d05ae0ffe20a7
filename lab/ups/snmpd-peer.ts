import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { UPS_MIB, type UpsMibObject } from "@/lib/power/ups/snmp/ups-mib";

import { waitUntil } from "../processes";
import { terminate } from "./peer-process";
import { freeUdpPort, type LabSnmpV3User } from "./snmp-agent";

/**
 * A real SNMP agent as a test peer: Debian's `snmpd` (net-snmp 5.9) on a free loopback port,
 * serving the UPS-MIB subtree through a `pass` script that reads the values the test writes.
 * The same SNMP source scenarios run against it and against the lab's agent, so the lab's
 * agent cannot be kinder than a real one (SNMPv1's noSuchName, v3 keys, silence on a wrong
 * community are snmpd's own here).
 */

export const SNMPD = "/usr/sbin/snmpd";

export type SnmpdPeer = {
  host: "127.0.0.1";
  port: number;
  community: string;
  v3: LabSnmpV3User;
  /** The objects served from now on; objects left out answer as missing. */
  setValues(values: Partial<Record<UpsMibObject, number>>): Promise<void>;
  log(): string;
  stop(): Promise<void>;
};

export function snmpdAvailable(): boolean {
  return existsSync(SNMPD);
}

// snmpd runs this for every GET in the subtree (`PROG -g OID`); printing nothing answers
// "no such object" (noSuchName in SNMPv1). The values file sits next to the script.
const PASS_SCRIPT = `#!/bin/sh
[ "$1" = "-g" ] || exit 0
values="$(dirname "$0")/ups-mib.values"
while read -r oid type value; do
  if [ "$oid" = "$2" ]; then
    printf '%s\\n%s\\n%s\\n' "$oid" "$type" "$value"
    exit 0
  fi
done < "$values"
`;

export async function startSnmpdPeer(
  initial: Partial<Record<UpsMibObject, number>>,
): Promise<SnmpdPeer> {
  if (!snmpdAvailable()) {
    throw new Error(`lab: ${SNMPD} not found; install Debian's snmpd to run the SNMP parity tests`);
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "clupilot-snmpd-"));
  const community = "lab-community";
  const v3: LabSnmpV3User = {
    user: "clupilot",
    authProtocol: "sha",
    authKey: "lab-auth-key",
    privProtocol: "aes",
    privKey: "lab-priv-key",
  };
  const logLines: string[] = [];
  let child: ChildProcess | null = null;
  const setValues = async (values: Partial<Record<UpsMibObject, number>>) => {
    const lines = Object.entries(values).map(
      ([name, value]) => `.${UPS_MIB[name as UpsMibObject]} integer ${Math.trunc(value)}\n`,
    );
    const file = path.join(dir, "ups-mib.values");
    await writeFile(`${file}.tmp`, lines.join(""));
    await rename(`${file}.tmp`, file);
  };
  try {
    await chmod(dir, 0o700);
    await mkdir(path.join(dir, "persist"), { mode: 0o700 });
    await writeFile(path.join(dir, "ups-mib.sh"), PASS_SCRIPT, { mode: 0o700 });
    await setValues(initial);
    const port = await freeUdpPort();
    await writeFile(
      path.join(dir, "snmpd.conf"),
      [
        `agentAddress udp:127.0.0.1:${port}`,
        `rocommunity ${community} 127.0.0.1`,
        `createUser ${v3.user} SHA "${v3.authKey}" AES "${v3.privKey}"`,
        `rouser ${v3.user} priv`,
        `pass .1.3.6.1.2.1.33 /bin/sh ${path.join(dir, "ups-mib.sh")}`,
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
    const started = spawn(SNMPD, ["-f", "-Lo", "-C", "-c", path.join(dir, "snmpd.conf")], {
      env: snmpdEnv(dir) as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = started;
    started.stdout?.on("data", (chunk: Buffer) => logLines.push(chunk.toString("utf8")));
    started.stderr?.on("data", (chunk: Buffer) => logLines.push(chunk.toString("utf8")));
    await waitUntil(
      () => logLines.join("").includes("NET-SNMP version") || started.exitCode !== null,
      { timeoutMs: 10_000, what: "snmpd to start" },
    );
    if (started.exitCode !== null) throw new Error(`lab: snmpd exited:\n${logLines.join("")}`);
    let stopped: Promise<void> | null = null;
    return {
      host: "127.0.0.1",
      port,
      community,
      v3,
      setValues,
      log: () => logLines.join(""),
      stop() {
        stopped ??= (async () => {
          await terminate(started);
          await rm(dir, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  } catch (error) {
    if (child !== null) await terminate(child);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

function snmpdEnv(dir: string): Record<string, string> {
  return {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    SNMP_PERSISTENT_DIR: path.join(dir, "persist"),
    // No MIB files to load: every OID here is numeric.
    MIBS: "",
    MIBDIRS: path.join(dir, "persist"),
  };
}
