import fs from "node:fs";

import { setSelections } from "../debconf";
import { isInstalled } from "../dpkg-status";
import { hostPath, labDir, readKernel } from "../lab-state";
import { cancelPower, requestPower } from "../power";
import {
  stopUnit,
  timerOf,
  transientState,
  waitingTimers,
  type TransientTimer,
} from "../transient-units";

/** Simulated systemd/util-linux bits: reboot, shutdown, systemctl, hostname, hostnamectl. */

const out = (s: string) => process.stdout.write(s);
const err = (s: string) => process.stderr.write(s);

export function reboot(tool: "reboot" | "poweroff" | "halt", root: string, argv: string[]): number {
  if (argv.includes("--help")) {
    out(`${tool} [OPTIONS...]\n`);
    return 0;
  }
  requestPower(root, tool === "reboot" ? "reboot" : "poweroff");
  return 0;
}

export function shutdown(root: string, argv: string[]): number {
  let action: "reboot" | "poweroff" = "poweroff";
  let when = "+1";
  for (const arg of argv) {
    if (arg === "-r" || arg === "--reboot") action = "reboot";
    else if (arg === "-h" || arg === "-P" || arg === "--poweroff" || arg === "--halt")
      action = "poweroff";
    else if (arg === "-c") {
      if (!cancelPower(root)) return 0;
      return 0;
    } else if (!arg.startsWith("-") && when === "+1" && /^(now|\+\d+|\d{1,2}:\d{2})$/.test(arg))
      when = arg;
  }
  if (when === "now" || when === "+0") {
    requestPower(root, action);
    return 0;
  }
  const minutes = when.startsWith("+") ? Number(when.slice(1)) : 1;
  const at = new Date(Date.now() + minutes * 60_000);
  requestPower(root, action, minutes * 60_000);
  out(
    `${action === "reboot" ? "Reboot" : "Shutdown"} scheduled for ${at.toUTCString()}, use 'shutdown -c' to cancel.\n`,
  );
  return 0;
}

/** Units the lab knows, and the package that provides each (null = always present). */
const UNITS: Record<string, string | null> = {
  ssh: "openssh-server",
  sshd: "openssh-server",
  networking: null,
  "systemd-networkd": null,
  "systemd-journald": null,
  "systemd-timesyncd": null,
  cron: null,
  chrony: "chrony",
  postfix: "postfix",
  iscsid: "open-iscsi",
  "open-iscsi": "open-iscsi",
  "qemu-guest-agent": "qemu-guest-agent",
  pveproxy: "pve-manager",
  pvedaemon: "pve-manager",
  pvestatd: "pve-manager",
  "pve-cluster": "pve-cluster",
  "pve-firewall": "pve-firewall",
  "pve-ha-lrm": "pve-ha-manager",
  "pve-ha-crm": "pve-ha-manager",
  "pve-guests": "pve-manager",
  spiceproxy: "pve-manager",
};

function unitName(arg: string): string {
  return arg.replace(/\.service$/, "");
}

function unitExists(root: string, unit: string): boolean {
  if (!(unit in UNITS)) return false;
  const pkg = UNITS[unit];
  return pkg === null || pkg === undefined || isInstalled(root, pkg);
}

/** A transient unit (`name.timer` / `name.service` made by systemd-run): its name and kind. */
function transient(root: string, arg: string): { unit: string; kind: "timer" | "service" } | null {
  const match = /^(.+)\.(timer|service)$/.exec(arg);
  if (match === null) return null;
  const unit = match[1]!;
  const kind = match[2] as "timer" | "service";
  // A unit the lab knows by package is never transient, loaded or not.
  if (kind === "service" && unit in UNITS) return null;
  return { unit, kind };
}

/** systemd's own timestamp shape: `Tue 2026-12-01 15:50:00 UTC`. */
function systemdTime(ms: number): string {
  const d = new Date(ms);
  const day = d.toUTCString().slice(0, 3);
  return `${day} ${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

function left(ms: number): string {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  return seconds >= 60 ? `${Math.floor(seconds / 60)}min ${seconds % 60}s` : `${seconds}s`;
}

function listTimers(root: string, patterns: string[], legend: boolean): number {
  const glob = (p: string) =>
    new RegExp(
      `^${p
        .replace(/[.+^${}()|\\[\]]/g, "\\$&")
        .replace(/\*/g, ".*")
        .replace(/\?/g, ".")}$`,
    );
  const now = Date.now();
  const timers = waitingTimers(root).filter(
    (t) => patterns.length === 0 || patterns.some((p) => glob(p).test(`${t.unit}.timer`)),
  );
  const rows = timers.map((t: TransientTimer) => [
    systemdTime(t.firesAt),
    left(t.firesAt - now),
    "-",
    "-",
    `${t.unit}.timer`,
    `${t.unit}.service`,
  ]);
  const header = ["NEXT", "LEFT", "LAST", "PASSED", "UNIT", "ACTIVATES"];
  const table = legend ? [header, ...rows] : rows;
  const widths = header.map((_, c) => Math.max(...table.map((r) => r[c]!.length)));
  for (const row of table)
    out(
      `${row
        .map((v, c) => v.padEnd(widths[c]!))
        .join(" ")
        .trimEnd()}\n`,
    );
  if (legend)
    out(`\n${rows.length} timers listed.\nPass --all to see loaded but inactive timers, too.\n`);
  return 0;
}

/** start/stop/enable/… of the units the lab knows by package: they exist or the verb fails. */
function manageUnits(root: string, verb: string, units: string[]): number {
  for (const u of units) {
    const unit = unitName(u);
    if (!unitExists(root, unit)) {
      const what = verb === "enable" || verb === "disable" ? "enable" : verb;
      err(`Failed to ${what} ${unit}.service: Unit ${unit}.service not found.\n`);
      return verb === "enable" || verb === "disable" ? 1 : 5;
    }
  }
  return 0;
}

export function systemctl(root: string, argv: string[]): number {
  const args = argv.filter((a) => !a.startsWith("-"));
  const quiet = argv.includes("-q") || argv.includes("--quiet");
  const [verb, ...units] = args;
  switch (verb) {
    case "list-timers":
      return listTimers(root, units, !argv.includes("--no-legend"));
    case "reboot":
      requestPower(root, "reboot");
      return 0;
    case "poweroff":
    case "halt":
      requestPower(root, "poweroff");
      return 0;
    case "daemon-reload":
      return 0;
    case "is-active": {
      let code = 0;
      for (const u of units) {
        const t = transient(root, u);
        const state = t === null ? null : transientState(root, t.unit);
        const active =
          t === null
            ? unitExists(root, unitName(u))
            : t.kind === "timer"
              ? state !== null
              : state === "running";
        if (!quiet) out(active ? "active\n" : "inactive\n");
        if (!active) code = 3;
      }
      return units.length === 0 ? 1 : code;
    }
    case "is-enabled": {
      let code = 0;
      for (const u of units) {
        const ok = unitExists(root, unitName(u));
        if (!quiet) out(ok ? "enabled\n" : "not-found\n");
        if (!ok) code = 1;
      }
      return code;
    }
    case "stop": {
      for (const u of units) {
        const t = transient(root, u);
        if (
          t !== null &&
          !stopUnit(root, t.unit, t.kind) &&
          transientState(root, t.unit) === null
        ) {
          err(`Failed to stop ${u}: Unit ${u} not loaded.\n`);
          return 5;
        }
      }
      return manageUnits(
        root,
        verb,
        units.filter((u) => transient(root, u) === null),
      );
    }
    case "start":
    case "restart":
    case "reload":
    case "try-restart":
    case "reload-or-restart":
    case "enable":
    case "disable":
    case "mask":
    case "unmask":
      return manageUnits(root, verb, units);
    case "status": {
      const t = transient(root, units[0] ?? "");
      if (t !== null) return transientStatus(root, t.unit, t.kind);
      const unit = unitName(units[0] ?? "");
      if (!unitExists(root, unit)) {
        err(`Unit ${unit}.service could not be found.\n`);
        return 4;
      }
      out(
        `● ${unit}.service\n     Loaded: loaded (/usr/lib/systemd/system/${unit}.service; enabled; preset: enabled)\n     Active: active (running)\n`,
      );
      return 0;
    }
    default:
      err(`Unknown command verb '${verb ?? ""}'.\n`);
      return 1;
  }
}

function transientStatus(root: string, unit: string, kind: "timer" | "service"): number {
  const state = transientState(root, unit);
  const timer = timerOf(root, unit);
  if (state === null || (kind === "service" && state !== "running")) {
    err(`Unit ${unit}.${kind} could not be found.\n`);
    return 4;
  }
  const loaded = `     Loaded: loaded (/run/systemd/transient/${unit}.${kind}; transient)\n  Transient: yes\n`;
  if (kind === "timer" && timer !== null) {
    out(
      `● ${unit}.timer - ${timer.description}\n${loaded}` +
        `     Active: active (waiting) since ${systemdTime(timer.setAt)}\n` +
        `    Trigger: ${systemdTime(timer.firesAt)}; ${left(timer.firesAt - Date.now())} left\n` +
        `   Triggers: ● ${unit}.service\n`,
    );
    return 0;
  }
  out(
    `● ${unit}.${kind}\n${loaded}     Active: ${kind === "timer" ? "active (elapsed)" : "active (running)"}\n`,
  );
  return 0;
}

function readHostname(root: string): string {
  try {
    const transient = fs.readFileSync(`${labDir(root)}/hostname-transient`, "utf8").trim();
    if (transient) return transient;
  } catch {
    // none
  }
  try {
    return (
      fs.readFileSync(hostPath(root, "/etc/hostname"), "utf8").split("\n")[0]!.trim() || "localhost"
    );
  } catch {
    return "localhost";
  }
}

/** The /etc/hosts line naming `name`: [address, names…], first match, as the resolver reads it. */
function hostsEntries(root: string): string[][] {
  try {
    return fs
      .readFileSync(hostPath(root, "/etc/hosts"), "utf8")
      .split("\n")
      .map((l) => l.replace(/#.*$/, "").trim().split(/\s+/))
      .filter((f) => f.length >= 2);
  } catch {
    return [];
  }
}

function ownAddresses(root: string): string[] {
  try {
    const applied = JSON.parse(fs.readFileSync(`${labDir(root)}/network-applied.json`, "utf8")) as {
      addresses?: string[];
    };
    return (applied.addresses ?? []).map((a) => a.split("/")[0]!);
  } catch {
    return [];
  }
}

const VALID_HOSTNAME =
  /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

export function hostname(root: string, argv: string[]): number {
  const name = readHostname(root);
  const short = name.split(".")[0]!;
  const flags = argv.filter((a) => a.startsWith("-"));
  const operands = argv.filter((a) => !a.startsWith("-"));
  if (operands.length > 0 && flags.length === 0) {
    const next = operands[0]!;
    if (!VALID_HOSTNAME.test(next)) {
      err("hostname: the specified hostname is invalid\n");
      return 1;
    }
    fs.writeFileSync(`${labDir(root)}/hostname-transient`, `${next}\n`);
    return 0;
  }
  const flag = flags[0];
  const entry = hostsEntries(root).find(
    (f) => f.slice(1).includes(name) || f.slice(1).includes(short),
  );
  switch (flag) {
    case undefined:
      out(`${name}\n`);
      return 0;
    case "-s":
    case "--short":
      out(`${short}\n`);
      return 0;
    case "-f":
    case "--fqdn":
    case "--long":
      // getaddrinfo's canonical name: the first name of the matching /etc/hosts line.
      out(`${entry?.[1] ?? name}\n`);
      return 0;
    case "-d":
    case "--domain": {
      const fqdn = entry?.[1] ?? name;
      out(`${fqdn.includes(".") ? fqdn.slice(fqdn.indexOf(".") + 1) : ""}\n`);
      return 0;
    }
    case "-i":
    case "--ip-address": {
      const addrs = hostsEntries(root)
        .filter((f) => f.slice(1).includes(name) || f.slice(1).includes(short))
        .map((f) => f[0]!);
      if (addrs.length === 0) {
        err("hostname: Name or service not known\n");
        return 1;
      }
      out(`${addrs.join(" ")} \n`);
      return 0;
    }
    case "-I":
    case "--all-ip-addresses":
      out(`${ownAddresses(root).join(" ")} \n`);
      return 0;
    default:
      err(`hostname: invalid option -- '${flag.replace(/^-+/, "")}'\n`);
      return 1;
  }
}

export function hostnamectl(root: string, argv: string[]): number {
  const args = argv.filter((a) => !a.startsWith("-"));
  const [verb, value] = args;
  if (verb === "set-hostname" || (verb === "hostname" && value !== undefined)) {
    if (!value || !VALID_HOSTNAME.test(value)) {
      err(`Invalid hostname '${value ?? ""}'\n`);
      return 1;
    }
    // The static hostname is the first label's sanitised form only for "pretty" names;
    // a valid name is stored as is.
    fs.writeFileSync(hostPath(root, "/etc/hostname"), `${value}\n`);
    fs.rmSync(`${labDir(root)}/hostname-transient`, { force: true });
    return 0;
  }
  if (verb === "hostname") {
    out(`${readHostname(root)}\n`);
    return 0;
  }
  if (verb === undefined || verb === "status") {
    const kernel = readKernel(root, "running");
    let osName = "Debian GNU/Linux";
    try {
      osName =
        /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(
          fs.readFileSync(hostPath(root, "/etc/os-release"), "utf8"),
        )?.[1] ?? osName;
    } catch {
      // keep
    }
    out(
      ` Static hostname: ${readHostname(root)}\n       Icon name: computer-server\n         Chassis: server\n` +
        `Operating System: ${osName}\n          Kernel: Linux ${kernel?.release ?? "unknown"}\n    Architecture: x86-64\n`,
    );
    return 0;
  }
  err(`Unknown command verb '${verb}'.\n`);
  return 1;
}

export function debconfSetSelections(root: string, argv: string[]): Promise<number> {
  const files = argv.filter((a) => !a.startsWith("-"));
  if (files.length > 0) {
    let code = 0;
    for (const f of files) code |= setSelections(root, fs.readFileSync(f, "utf8"));
    return Promise.resolve(code);
  }
  return new Promise((resolve) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (c: string) => (text += c));
    process.stdin.on("end", () => resolve(setSelections(root, text)));
  });
}
