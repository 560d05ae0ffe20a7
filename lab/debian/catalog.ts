import type { InstalledPackage } from "./dpkg-status";

/**
 * What the lab's apt can install, and from where. Versions follow Debian 13.1 and Proxmox VE
 * 9.1 (no-subscription, late 2025). A package whose `repos` lists only `pve` is installable
 * only after the Proxmox repository is configured, its key present and `apt-get update` ran.
 */

export type RepoId = "debian" | "debian-security" | "pve" | "ceph";

export type CatalogPackage = {
  name: string;
  version: string;
  /** Repositories that carry it; the first one whose lists are present wins. */
  repos: RepoId[];
  depends?: string[];
  /** Installed packages removed when this one is installed (`Conflicts:`). */
  conflicts?: string[];
  /** Download size in kB (apt's progress lines). */
  sizeKb: number;
  /** Nominal seconds to unpack and set up (scaled by the host's time scale). */
  setupSeconds: number;
  architecture?: "amd64" | "all";
  /** A kernel image: installing it makes it the next-boot kernel. */
  kernel?: { release: string; version: string };
};

/** The kernel proxmox-default-kernel pulls in on PVE 9.1. */
export const PVE_KERNEL = {
  release: "6.17.2-1-pve",
  version: "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-10-21T11:55Z)",
} as const;

export const PVE_MANAGER_VERSION = "9.1.1";

const pkg = (
  name: string,
  version: string,
  repos: RepoId[],
  sizeKb: number,
  setupSeconds: number,
  extra: Partial<CatalogPackage> = {},
): CatalogPackage => ({ name, version, repos, sizeKb, setupSeconds, ...extra });

const D: RepoId[] = ["debian"];
const P: RepoId[] = ["pve"];

export const CATALOG: readonly CatalogPackage[] = [
  // Debian trixie main
  pkg("postfix", "3.10.5-1~deb13u1", D, 1520, 6, { depends: ["ssl-cert"] }),
  pkg("ssl-cert", "1.1.3", D, 18, 1, { architecture: "all" }),
  pkg("open-iscsi", "2.1.11-1", D, 420, 3),
  pkg("chrony", "4.6.1-3", D, 330, 2),
  pkg("libguestfs-tools", "1:1.56.1-1", D, 5800, 20, {
    depends: ["libguestfs0", "supermin", "qemu-system-x86"],
  }),
  pkg("libguestfs0", "1:1.56.1-1", D, 2100, 4),
  pkg("supermin", "5.3.5-1", D, 600, 2),
  pkg("qemu-system-x86", "1:10.0.6+ds-0+deb13u2", D, 12800, 10, { depends: ["qemu-utils"] }),
  pkg("qemu-utils", "1:10.0.6+ds-0+deb13u2", D, 2300, 3),
  pkg("qemu-guest-agent", "1:10.0.6+ds-0+deb13u2", D, 320, 2),
  pkg("cloud-guest-utils", "0.33-1", D, 30, 1, { architecture: "all" }),
  pkg("iputils-ping", "3:20240905-3", D, 48, 1),
  pkg("curl", "8.14.1-2+deb13u2", D, 270, 1),
  pkg("wget", "1.25.0-2", D, 980, 1),
  pkg("gnupg", "2.4.7-21", D, 400, 2, { architecture: "all" }),
  pkg("debconf-utils", "1.5.91", D, 16, 1, { architecture: "all" }),
  pkg("bridge-utils", "1.7.1-4", D, 35, 1),
  pkg("ifupdown2", "3.2.0-1+deb13u1", ["pve", "debian"], 260, 2, {
    architecture: "all",
    conflicts: ["ifupdown"],
  }),
  pkg("sudo", "1.9.16p2-3", D, 1900, 1),
  pkg("jq", "1.7.1-6", D, 70, 1),
  pkg("nfs-common", "1:2.8.3-1", D, 260, 2),
  pkg("os-prober", "1.83", D, 30, 1),
  // Proxmox VE trixie pve-no-subscription
  pkg("proxmox-default-kernel", "2.0.0", P, 8, 1, {
    architecture: "all",
    depends: ["proxmox-kernel-6.17"],
  }),
  pkg("proxmox-kernel-6.17", "6.17.2-1", P, 8, 1, {
    architecture: "all",
    depends: [`proxmox-kernel-${PVE_KERNEL.release}-signed`],
  }),
  pkg(`proxmox-kernel-${PVE_KERNEL.release}-signed`, "6.17.2-1", P, 105_000, 25, {
    kernel: PVE_KERNEL,
  }),
  pkg("proxmox-ve", "9.1.0", P, 8, 1, {
    architecture: "all",
    depends: [
      "proxmox-default-kernel",
      "pve-manager",
      "qemu-server",
      "pve-qemu-kvm",
      "pve-cluster",
      "pve-container",
      "pve-firewall",
      "pve-ha-manager",
      "libpve-storage-perl",
      "libpve-access-control",
      "proxmox-backup-client",
      "proxmox-widget-toolkit",
      "ifupdown2",
      "lxc-pve",
      "zfsutils-linux",
      "spiceterm",
      "novnc-pve",
    ],
  }),
  pkg("pve-manager", PVE_MANAGER_VERSION, P, 640, 20, { depends: ["pve-cluster"] }),
  pkg("qemu-server", "9.1.0", P, 360, 4),
  pkg("pve-qemu-kvm", "10.1.2-1", P, 33_000, 12),
  pkg("pve-cluster", "9.0.7", P, 140, 6),
  pkg("pve-container", "6.0.18", P, 160, 3, { architecture: "all" }),
  pkg("pve-firewall", "6.0.4", P, 80, 2),
  pkg("pve-ha-manager", "5.0.8", P, 110, 3),
  pkg("libpve-storage-perl", "9.1.0", P, 180, 2, { architecture: "all" }),
  pkg("libpve-access-control", "9.0.4", P, 90, 2, { architecture: "all" }),
  pkg("proxmox-backup-client", "4.0.20-1", P, 4100, 2),
  pkg("proxmox-widget-toolkit", "5.1.2", P, 760, 1, { architecture: "all" }),
  pkg("lxc-pve", "6.0.5-3", P, 1300, 3),
  pkg("zfsutils-linux", "2.3.4-pve1", P, 2400, 5),
  pkg("spiceterm", "3.4.1", P, 40, 1),
  pkg("novnc-pve", "1.6.0-3", P, 700, 1, { architecture: "all" }),
];

export function catalogPackage(name: string): CatalogPackage | undefined {
  return CATALOG.find((p) => p.name === name);
}

/** Packages of a fresh Debian 13.1 install (netinst, standard + SSH server, no desktop). */
export const DEBIAN13_BASE: readonly InstalledPackage[] = [
  ["adduser", "3.152", "all"],
  ["apt", "3.0.3", "amd64"],
  ["base-files", "13.8+deb13u1", "amd64"],
  ["bash", "5.2.37-2+b5", "amd64"],
  ["ca-certificates", "20250419", "all"],
  ["coreutils", "9.7-3", "amd64"],
  ["curl", "8.14.1-2+deb13u2", "amd64"],
  ["debconf", "1.5.91", "all"],
  ["debian-archive-keyring", "2025.1", "all"],
  ["dpkg", "1.22.21", "amd64"],
  ["grub-pc", "2.12-9", "amd64"],
  ["ifupdown", "0.8.44", "amd64"],
  ["iproute2", "6.15.0-1", "amd64"],
  ["iputils-ping", "3:20240905-3", "amd64"],
  ["linux-image-6.12.57+deb13-amd64", "6.12.57-1", "amd64"],
  ["linux-image-amd64", "6.12.57-1", "amd64"],
  ["locales", "2.41-12", "all"],
  ["openssh-server", "1:10.0p1-7", "amd64"],
  ["os-prober", "1.83", "amd64"],
  ["sudo", "1.9.16p2-3", "amd64"],
  ["systemd", "257.9-1~deb13u1", "amd64"],
  ["systemd-sysv", "257.9-1~deb13u1", "amd64"],
  ["wget", "1.25.0-2", "amd64"],
].map(([name, version, architecture]) => ({
  name: name!,
  version: version!,
  architecture: architecture!,
}));
