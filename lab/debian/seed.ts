import fs from "node:fs";
import path from "node:path";

import { DEBIAN_KEYRING_PATH, LAB_PROXMOX_KEYRING, PROXMOX_KEYRING_PATH } from "./apt-sources";
import { CATALOG, DEBIAN13_BASE, PVE_KERNEL, type CatalogPackage } from "./catalog";
import { dpkgStatusPath, markInstalled, markRemoved, writeInstalled } from "./dpkg-status";
import { hostPath, labDir, writeBootId, writeTiming, type LabTiming } from "./lab-state";
import { checkInterfaces, writeApplied } from "./network";

/**
 * Lays out the Debian side of a lab host: package database, apt sources and keys, package
 * lists, network configuration. Keeps what a previous run left (state survives restarts).
 *
 * - `fresh`: Debian 13.1 as a hoster's installer leaves it (deb822 `debian.sources`, Debian
 *   kernel, ifupdown with a static address on `eno1`, no Proxmox anything).
 * - `proxmox`: additionally Proxmox VE installed the way the PVE 9 "Install on Debian 13"
 *   guide does it (pve-install-repo.sources + keyring, proxmox-ve, Proxmox kernel running,
 *   Debian kernel and os-prober removed, `vmbr0` bridging `eno1`).
 */

export type DebianSeedState = "fresh" | "proxmox";

export type SeedDebianOptions = {
  state?: DebianSeedState;
  /** The host's address on its uplink (what `hostname -I` reports). Default 192.0.2.10/24. */
  address?: string;
  gateway?: string;
  timing?: Partial<LabTiming>;
};

export const DEBIAN_SOURCES = `Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie trixie-updates
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.debian.org/debian-security
Suites: trixie-security
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`;

/** What the Proxmox guide writes to /etc/apt/sources.list.d/pve-install-repo.sources. */
export const PVE_INSTALL_REPO_SOURCES = `Types: deb
URIs: http://download.proxmox.com/debian/pve
Suites: trixie
Components: pve-no-subscription
Signed-By: ${PROXMOX_KEYRING_PATH}
`;

function writeIfMissing(file: string, content: string | Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, content, { flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

function writeList(root: string, uriPath: string, suite: string, repo: string): void {
  writeIfMissing(
    hostPath(root, `/var/lib/apt/lists/${uriPath}_dists_${suite}_InRelease`),
    `Origin: lab\nSuite: ${suite}\nLab-Repo: ${repo}\n`,
  );
}

function interfaces(address: string, gateway: string, bridge: boolean): string {
  const head =
    "# This file describes the network interfaces available on your system\n" +
    "# and how to activate them. For more information, see interfaces(5).\n\n" +
    "source /etc/network/interfaces.d/*\n\n" +
    "# The loopback network interface\nauto lo\niface lo inet loopback\n\n";
  if (!bridge)
    return `${head}# The primary network interface\nauto eno1\niface eno1 inet static\n\taddress ${address}\n\tgateway ${gateway}\n`;
  return (
    `${head}iface eno1 inet manual\n\n` +
    `auto vmbr0\niface vmbr0 inet static\n\taddress ${address}\n\tgateway ${gateway}\n` +
    "\tbridge-ports eno1\n\tbridge-stp off\n\tbridge-fd 0\n"
  );
}

function closure(names: string[]): CatalogPackage[] {
  const out: CatalogPackage[] = [];
  const visit = (name: string) => {
    const p = CATALOG.find((c) => c.name === name);
    if (!p || out.includes(p)) return;
    for (const d of p.depends ?? []) visit(d);
    out.push(p);
  };
  names.forEach(visit);
  return out;
}

export function seedDebianHost(root: string, options: SeedDebianOptions = {}): void {
  const state = options.state ?? "fresh";
  const address = options.address ?? "192.0.2.10/24";
  const gateway = options.gateway ?? "192.0.2.1";
  fs.mkdirSync(labDir(root), { recursive: true });
  writeBootId(root, true);
  if (options.timing) writeTiming(root, options.timing);
  else if (!fs.existsSync(path.join(labDir(root), "timing.json"))) writeTiming(root, {});

  const fresh = !fs.existsSync(dpkgStatusPath(root));
  if (fresh) writeInstalled(root, DEBIAN13_BASE);
  writeIfMissing(hostPath(root, "/etc/apt/sources.list.d/debian.sources"), DEBIAN_SOURCES);
  writeIfMissing(
    hostPath(root, DEBIAN_KEYRING_PATH),
    Buffer.concat([
      Buffer.from([0x99, 0x02, 0x0d]),
      Buffer.from("Debian Archive Automatic Signing Key (13/trixie) (lab)\n"),
    ]),
  );
  writeList(root, "deb.debian.org_debian", "trixie", "debian");
  writeList(root, "deb.debian.org_debian", "trixie-updates", "debian");
  writeList(root, "security.debian.org_debian-security", "trixie-security", "debian-security");
  fs.mkdirSync(hostPath(root, "/etc/network/interfaces.d"), { recursive: true });
  writeIfMissing(
    hostPath(root, "/etc/network/interfaces"),
    interfaces(address, gateway, state === "proxmox" && fresh),
  );

  if (state === "proxmox" && fresh) {
    writeIfMissing(hostPath(root, PROXMOX_KEYRING_PATH), LAB_PROXMOX_KEYRING);
    writeIfMissing(
      hostPath(root, "/etc/apt/sources.list.d/pve-install-repo.sources"),
      PVE_INSTALL_REPO_SOURCES,
    );
    writeList(root, "download.proxmox.com_debian_pve", "trixie", "pve");
    markInstalled(
      root,
      closure(["proxmox-ve", "postfix", "open-iscsi", "chrony"]).map((p) => ({
        name: p.name,
        version: p.version,
        architecture: p.architecture ?? "amd64",
      })),
    );
    markRemoved(root, [
      "ifupdown",
      "linux-image-amd64",
      "linux-image-6.12.57+deb13-amd64",
      "os-prober",
    ]);
    fs.writeFileSync(path.join(labDir(root), "kernel"), `${PVE_KERNEL.release}\n`);
    fs.writeFileSync(path.join(labDir(root), "kernel-version"), `${PVE_KERNEL.version}\n`);
  }
  if (!fs.existsSync(path.join(labDir(root), "network-applied.json"))) {
    const { errors, applied } = checkInterfaces(root);
    if (errors.length === 0) writeApplied(root, applied);
  }
}
