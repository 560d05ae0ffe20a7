import { readInstalled, type InstalledPackage } from "../dpkg-status";
import { catalogPackage } from "../catalog";

/** Simulated `dpkg` / `dpkg-query` read paths: `-l`, `-s`, `-W [-f=FORMAT]`, `--print-architecture`. */

const out = (s: string) => process.stdout.write(s);
const err = (s: string) => process.stderr.write(s);

function matcher(pattern: string): (name: string) => boolean {
  if (!/[*?[]/.test(pattern)) return (name) => name === pattern;
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
  );
  return (name) => re.test(name);
}

function select(
  root: string,
  patterns: string[],
  tool: string,
): { found: InstalledPackage[]; missing: boolean } {
  const installed = [...readInstalled(root).values()].sort((a, b) => a.name.localeCompare(b.name));
  if (patterns.length === 0) return { found: installed, missing: false };
  const found: InstalledPackage[] = [];
  let missing = false;
  for (const pattern of patterns) {
    const hits = installed.filter((p) => matcher(pattern)(p.name));
    if (hits.length === 0) {
      err(`${tool}: no packages found matching ${pattern}\n`);
      missing = true;
    }
    for (const hit of hits) if (!found.includes(hit)) found.push(hit);
  }
  return { found, missing };
}

function description(name: string): string {
  if (name.startsWith("linux-image")) return "Linux kernel image";
  if (name.startsWith("proxmox-kernel")) return "Proxmox Kernel Image";
  if (catalogPackage(name)?.repos.includes("pve")) return "Proxmox Virtual Environment component";
  return `${name} (Debian package)`;
}

function field(p: InstalledPackage, name: string): string {
  switch (name) {
    case "Package":
    case "binary:Package":
      return p.name;
    case "Version":
      return p.version;
    case "Architecture":
      return p.architecture ?? "amd64";
    case "Status":
      return "install ok installed";
    case "db:Status-Abbrev":
      return "ii ";
    case "db:Status-Status":
      return "installed";
    case "binary:Summary":
    case "Description":
      return description(p.name);
    default:
      return "";
  }
}

function format(p: InstalledPackage, fmt: string): string {
  return fmt
    .replace(/\\n/g, "\n")
    .replace(/\\t/g, "\t")
    .replace(/\$\{([^}:]+(?::[^}]+)?)(?:;-?\d+)?\}/g, (_m, name: string) => field(p, name));
}

function list(root: string, patterns: string[], tool: string): number {
  const { found, missing } = select(root, patterns, tool);
  if (found.length > 0) {
    out("Desired=Unknown/Install/Remove/Purge/Hold\n");
    out("| Status=Not/Inst/Conf-files/Unpacked/halF-conf/Half-inst/trig-aWait/Trig-pend\n");
    out("|/ Err?=(none)/Reinst-required (Status,Err: uppercase=bad)\n");
    const w = Math.max(14, ...found.map((p) => p.name.length));
    const v = Math.max(12, ...found.map((p) => p.version.length));
    out(`||/ ${"Name".padEnd(w)} ${"Version".padEnd(v)} Architecture Description\n`);
    out(`+++-${"=".repeat(w)}-${"=".repeat(v)}-============-${"=".repeat(40)}\n`);
    for (const p of found)
      out(
        `ii  ${p.name.padEnd(w)} ${p.version.padEnd(v)} ${(p.architecture ?? "amd64").padEnd(12)} ${description(p.name)}\n`,
      );
  }
  return missing ? 1 : 0;
}

function status(root: string, names: string[], tool: string): number {
  if (names.length === 0) {
    err(`${tool}: error: --status needs at least one package name argument\n`);
    return 2;
  }
  const installed = readInstalled(root);
  let code = 0;
  const blocks: string[] = [];
  for (const name of names) {
    const p = installed.get(name);
    if (!p) {
      err(
        `dpkg-query: package '${name}' is not installed and no information is available\nUse dpkg --info (= dpkg-deb --info) to examine archive files.\n`,
      );
      code = 1;
      continue;
    }
    blocks.push(
      `Package: ${p.name}\nStatus: install ok installed\nPriority: optional\nArchitecture: ${p.architecture ?? "amd64"}\nVersion: ${p.version}\nDescription: ${description(p.name)}\n`,
    );
  }
  out(blocks.join("\n"));
  return code;
}

export function dpkgQuery(tool: "dpkg" | "dpkg-query", root: string, argv: string[]): number {
  let mode: "list" | "show" | "status" | null = null;
  let fmt = "${binary:Package}\t${Version}\n";
  const names: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-l" || arg === "--list") mode = "list";
    else if (arg === "-W" || arg === "--show") mode = "show";
    else if (arg === "-s" || arg === "--status") mode = "status";
    else if (arg === "-f" || arg === "--showformat") fmt = argv[++i] ?? "";
    else if (arg.startsWith("-f=") || arg.startsWith("--showformat="))
      fmt = arg.slice(arg.indexOf("=") + 1);
    else if (arg.startsWith("-f") && arg.length > 2) fmt = arg.slice(2);
    else if (arg === "--print-architecture" && tool === "dpkg") {
      out("amd64\n");
      return 0;
    } else if (arg === "--version") {
      out(`Debian '${tool}' package management program query tool version 1.22.21 (amd64).\n`);
      return 0;
    } else if (/^-W[a-z]/.test(arg)) {
      mode = "show";
    } else if (
      arg === "-i" ||
      arg === "--install" ||
      arg === "-r" ||
      arg === "--remove" ||
      arg === "-P" ||
      arg === "--purge" ||
      arg === "--configure"
    ) {
      err(`${tool}: error: the lab's dpkg only reads the package database; use apt-get\n`);
      return 2;
    } else if (arg.startsWith("-")) {
      continue;
    } else names.push(arg);
  }
  switch (mode) {
    case "list":
      return list(root, names, "dpkg-query");
    case "status":
      return status(root, names, tool);
    case "show": {
      const { found, missing } = select(root, names, "dpkg-query");
      for (const p of found) out(format(p, fmt));
      return missing ? 1 : 0;
    }
    default:
      err(
        `${tool}: error: need an action option\n\nType ${tool} --help for help about installing and deinstalling packages [*];\n`,
      );
      return 2;
  }
}
