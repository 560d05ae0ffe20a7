import { isInstalled } from "../dpkg-status";
import { readDebianFaults } from "../lab-state";

/**
 * Simulated `timedatectl` (systemd 257): `status` (the default) and `show [-p NAME…] [--value]`.
 * The clock counts as synchronised once an NTP client runs — chrony (Proxmox VE's) or
 * systemd-timesyncd — unless the `debian.clockUnsynchronised` switch is on.
 */
export function timedatectl(root: string, argv: string[]): number {
  const ntpClient = isInstalled(root, "chrony") || isInstalled(root, "systemd-timesyncd");
  const synced = ntpClient && !readDebianFaults(root).clockUnsynchronised;
  const props: Record<string, string> = {
    Timezone: "Etc/UTC",
    LocalRTC: "no",
    CanNTP: ntpClient ? "yes" : "no",
    NTP: ntpClient ? "yes" : "no",
    NTPSynchronized: synced ? "yes" : "no",
    TimeUSec: new Date().toUTCString(),
    RTCTimeUSec: new Date().toUTCString(),
  };
  const [command = "status", ...rest] = argv;
  if (command === "show") {
    const wanted: string[] = [];
    let valueOnly = false;
    for (let i = 0; i < rest.length; i++) {
      const arg = rest[i]!;
      if (arg === "--value") valueOnly = true;
      else if (arg === "-p" || arg === "--property") wanted.push(...(rest[++i] ?? "").split(","));
      else if (arg.startsWith("--property=")) wanted.push(...arg.slice(11).split(","));
      else if (arg.startsWith("-p")) wanted.push(...arg.slice(2).split(","));
    }
    const names = wanted.length > 0 ? wanted : Object.keys(props);
    for (const name of names) {
      const value = props[name];
      if (value === undefined) continue;
      process.stdout.write(valueOnly ? `${value}\n` : `${name}=${value}\n`);
    }
    return 0;
  }
  if (command === "status") {
    process.stdout.write(
      `               Local time: ${props.TimeUSec}\n` +
        `           Universal time: ${props.TimeUSec}\n` +
        "                Time zone: Etc/UTC (UTC, +0000)\n" +
        `System clock synchronized: ${props.NTPSynchronized}\n` +
        `              NTP service: ${ntpClient ? "active" : "n/a"}\n` +
        "          RTC in local TZ: no\n",
    );
    return 0;
  }
  process.stderr.write(`Unknown command verb '${command}'.\n`);
  return 1;
}
