import fs from "node:fs";
import path from "node:path";

/**
 * The lab host's installed-package list, kept in the real format of `/var/lib/dpkg/status`
 * (RFC-822-style stanzas), so `dpkg-query`, the simulated `apt-get`, the Proxmox tools and the
 * tests all read one truth.
 */

export type InstalledPackage = { name: string; version: string; architecture?: string };

export function dpkgStatusPath(root: string): string {
  return path.join(root, "var/lib/dpkg/status");
}

export function readInstalled(root: string): Map<string, InstalledPackage> {
  const file = dpkgStatusPath(root);
  const installed = new Map<string, InstalledPackage>();
  if (!fs.existsSync(file)) return installed;
  for (const stanza of fs.readFileSync(file, "utf8").split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    for (const line of stanza.split("\n")) {
      const match = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
      if (match) fields.set(match[1]!, match[2]!);
    }
    const name = fields.get("Package");
    if (name && fields.get("Status") === "install ok installed") {
      installed.set(name, {
        name,
        version: fields.get("Version") ?? "0",
        architecture: fields.get("Architecture"),
      });
    }
  }
  return installed;
}

export function writeInstalled(root: string, packages: Iterable<InstalledPackage>): void {
  const file = dpkgStatusPath(root);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const sorted = [...packages].sort((a, b) => a.name.localeCompare(b.name));
  const text = sorted
    .map(
      (p) =>
        `Package: ${p.name}\nStatus: install ok installed\nArchitecture: ${p.architecture ?? "amd64"}\nVersion: ${p.version}\n`,
    )
    .join("\n");
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}

export function markInstalled(root: string, packages: InstalledPackage[]): void {
  const installed = readInstalled(root);
  for (const p of packages) installed.set(p.name, p);
  writeInstalled(root, installed.values());
}

export function markRemoved(root: string, names: string[]): void {
  const installed = readInstalled(root);
  for (const name of names) installed.delete(name);
  writeInstalled(root, installed.values());
}

export function isInstalled(root: string, name: string): boolean {
  return readInstalled(root).has(name);
}
