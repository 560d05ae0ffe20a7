import fs from "node:fs";

import { DEBIAN13_BASE } from "../debian/catalog";
import { OS_RELEASE } from "../host-root";

/**
 * The lab disk image: what the lab serves as `debian-13-genericcloud-amd64.qcow2` and what the
 * simulated libguestfs tools and `qemu-img` read and write. Layout:
 *
 *     LABIMG1 <headerBytes>\n
 *     <JSON LabImage>\n
 *     NUL padding up to headerBytes, then filler bytes up to `fileSize`
 *
 * The JSON describes the disk like the real Debian 13 genericcloud image: GPT, partition 1
 * ext4 root, 14 BIOS boot, 15 EFI (vfat), 3 GiB virtual size, and the root filesystem's files
 * that matter (`/var/lib/dpkg/status` with cloud-init, cloud-guest-utils, iputils-ping,
 * openssh-server, curl and without qemu-guest-agent; empty `/etc/machine-id`; no SSH host
 * keys; default user `debian`). The filler makes the file as large as configured, so downloads
 * take time and `df` checks mean something. A file shorter than `fileSize` (a cut-off download)
 * or without the magic is corrupt, and every tool refuses it.
 */

export const LAB_IMAGE_MAGIC = "LABIMG1";
export const DEFAULT_HEADER_BYTES = 256 * 1024;

export type LabPartition = {
  number: number;
  /** Bytes. */
  start: number;
  size: number;
  /** GPT partition type name. */
  type: "linux" | "bios_grub" | "efi";
  filesystem: "ext4" | "vfat" | null;
  label: string | null;
  /** Size the filesystem reports (a little less than the partition). */
  filesystemSize: number | null;
};

export type LabImage = {
  format: "qcow2" | "raw";
  virtualSize: number;
  fileSize: number;
  headerBytes: number;
  partitionTable: "gpt";
  partitions: LabPartition[];
  /** Files of the root filesystem (partition 1), path → content. Directories are implied. */
  files: Record<string, string>;
  /** Empty directories. */
  dirs: string[];
  /** virt-customize operations applied, in order (for tests and `--run-command`). */
  customizations: string[];
};

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export function dpkgStatusText(
  packages: { name: string; version: string; architecture?: string }[],
): string {
  return [...packages]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map(
      (p) =>
        `Package: ${p.name}\nStatus: install ok installed\nPriority: optional\nArchitecture: ${p.architecture ?? "amd64"}\nVersion: ${p.version}\n`,
    )
    .join("\n");
}

export function parseDpkgStatus(
  text: string,
): { name: string; version: string; architecture: string }[] {
  const out: { name: string; version: string; architecture: string }[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const name = /^Package: (.*)$/m.exec(stanza)?.[1];
    const status = /^Status: (.*)$/m.exec(stanza)?.[1];
    if (name && status === "install ok installed")
      out.push({
        name,
        version: /^Version: (.*)$/m.exec(stanza)?.[1] ?? "0",
        architecture: /^Architecture: (.*)$/m.exec(stanza)?.[1] ?? "amd64",
      });
  }
  return out;
}

const CLOUD_IMAGE_PACKAGES = [
  ...DEBIAN13_BASE.filter(
    (p) =>
      ![
        "os-prober",
        "grub-pc",
        "ifupdown",
        "linux-image-6.12.57+deb13-amd64",
        "linux-image-amd64",
      ].includes(p.name),
  ),
  { name: "linux-image-cloud-amd64", version: "6.12.57-1", architecture: "amd64" },
  { name: "linux-image-6.12.57+deb13-cloud-amd64", version: "6.12.57-1", architecture: "amd64" },
  { name: "grub-efi-amd64", version: "2.12-9", architecture: "amd64" },
  { name: "cloud-init", version: "25.1.4-1", architecture: "all" },
  { name: "cloud-guest-utils", version: "0.33-1", architecture: "all" },
  { name: "netplan.io", version: "1.1.2-4", architecture: "amd64" },
];

/** The Debian 13 genericcloud image's layout and contents, as a lab image description. */
export function debianCloudImage(fileSize = 8 * MiB): LabImage {
  return {
    format: "qcow2",
    virtualSize: 3 * GiB,
    fileSize,
    headerBytes: DEFAULT_HEADER_BYTES,
    partitionTable: "gpt",
    partitions: [
      {
        number: 14,
        start: 1 * MiB,
        size: 3 * MiB,
        type: "bios_grub",
        filesystem: null,
        label: null,
        filesystemSize: null,
      },
      {
        number: 15,
        start: 4 * MiB,
        size: 124 * MiB,
        type: "efi",
        filesystem: "vfat",
        label: null,
        filesystemSize: 129_718_272,
      },
      {
        number: 1,
        start: 128 * MiB,
        size: 3 * GiB - 128 * MiB - MiB,
        type: "linux",
        filesystem: "ext4",
        label: null,
        filesystemSize: 3_080_822_784,
      },
    ],
    files: {
      "/etc/os-release": OS_RELEASE.debian13,
      "/etc/debian_version": "13.1\n",
      "/etc/hostname": "localhost\n",
      "/etc/machine-id": "",
      "/etc/passwd":
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
        "_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n" +
        "debian:x:1000:1000:Debian:/home/debian:/bin/bash\n",
      "/etc/cloud/cloud.cfg.d/01_debian_cloud.cfg":
        "apt:\n  generate_mirrorlists: true\nsystem_info:\n  default_user:\n    name: debian\n    sudo: ALL=(ALL) NOPASSWD:ALL\n    shell: /bin/bash\n    lock_passwd: True\n",
      "/etc/ssh/sshd_config":
        "Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\nPrintMotd no\nAcceptEnv LANG LC_*\nSubsystem\tsftp\t/usr/lib/openssh/sftp-server\n",
      "/etc/apt/sources.list.d/debian.sources":
        "Types: deb\nURIs: mirror+file:///etc/apt/mirrors/debian.list\nSuites: trixie trixie-updates trixie-backports\nComponents: main\n\nTypes: deb\nURIs: mirror+file:///etc/apt/mirrors/debian-security.list\nSuites: trixie-security\nComponents: main\n",
      "/usr/bin/growpart": "#!/bin/sh\n# growpart (cloud-guest-utils)\n",
      "/usr/bin/ping": "ELF (iputils-ping)\n",
      "/usr/bin/curl": "ELF (curl)\n",
      "/var/lib/dpkg/status": dpkgStatusText(CLOUD_IMAGE_PACKAGES),
    },
    dirs: ["/home/debian", "/root", "/tmp", "/var/tmp", "/boot/efi", "/etc/ssh/sshd_config.d"],
    customizations: [],
  };
}

/** Files each package puts where tests look (e.g. `/usr/sbin/qemu-ga`). */
export const PACKAGE_FILES: Record<string, string[]> = {
  "qemu-guest-agent": ["/usr/sbin/qemu-ga", "/usr/lib/systemd/system/qemu-guest-agent.service"],
  "cloud-guest-utils": ["/usr/bin/growpart"],
  "iputils-ping": ["/usr/bin/ping"],
  curl: ["/usr/bin/curl"],
};

export function encodeLabImage(image: LabImage): Buffer {
  const json = JSON.stringify(image);
  const head = Buffer.from(`${LAB_IMAGE_MAGIC} ${image.headerBytes}\n${json}\n`);
  if (head.length > image.headerBytes) throw new Error("lab image: header too large");
  const size = Math.max(image.fileSize, image.headerBytes);
  const buffer = Buffer.alloc(size);
  head.copy(buffer, 0);
  // Filler: a cheap deterministic pattern (not zeros, so every byte counts in a checksum).
  for (let i = image.headerBytes; i < size; i += 4096) buffer.writeUInt32BE((i / 4096) >>> 0, i);
  return buffer;
}

export class LabImageError extends Error {
  constructor(
    message: string,
    readonly kind: "missing" | "corrupt",
  ) {
    super(message);
  }
}

/** Reads and validates an image file; throws LabImageError when missing or corrupt. */
export function readLabImage(file: string): LabImage {
  let fd: number;
  try {
    fd = fs.openSync(file, "r");
  } catch {
    throw new LabImageError(`${file}: No such file or directory`, "missing");
  }
  try {
    const size = fs.fstatSync(fd).size;
    const first = Buffer.alloc(Math.min(size, 64));
    fs.readSync(fd, first, 0, first.length, 0);
    const m = /^LABIMG1 (\d+)\n/.exec(first.toString("latin1"));
    if (!m) throw new LabImageError(`${file}: Image is not in qcow2 format`, "corrupt");
    const headerBytes = Number(m[1]);
    const header = Buffer.alloc(Math.min(headerBytes, size));
    fs.readSync(fd, header, 0, header.length, 0);
    const text = header.toString("utf8");
    const start = text.indexOf("\n") + 1;
    const end = text.indexOf("\n", start);
    let image: LabImage;
    try {
      image = JSON.parse(text.slice(start, end)) as LabImage;
    } catch {
      throw new LabImageError(`${file}: Image is corrupt; cannot be opened read/write`, "corrupt");
    }
    if (size < image.fileSize)
      throw new LabImageError(
        `${file}: qcow2: Image is corrupt: L2 table offset beyond end of file (file is ${size} bytes, image needs ${image.fileSize})`,
        "corrupt",
      );
    return image;
  } finally {
    fs.closeSync(fd);
  }
}

/** Rewrites the header in place (the filler is left alone). */
export function writeLabImageHeader(file: string, image: LabImage): void {
  const json = JSON.stringify(image);
  const head = Buffer.from(`${LAB_IMAGE_MAGIC} ${image.headerBytes}\n${json}\n`);
  if (head.length > image.headerBytes) throw new Error("lab image: header too large");
  const padded = Buffer.alloc(image.headerBytes);
  head.copy(padded, 0);
  const fd = fs.openSync(file, "r+");
  try {
    fs.writeSync(fd, padded, 0, padded.length, 0);
  } finally {
    fs.closeSync(fd);
  }
}

export function writeLabImage(file: string, image: LabImage): void {
  fs.writeFileSync(file, encodeLabImage(image));
}

/** Names directly inside `dir` of the image's root filesystem, sorted. */
export function listDir(image: LabImage, dir: string): string[] | null {
  const base = dir === "/" ? "/" : `${dir.replace(/\/+$/, "")}/`;
  const names = new Set<string>();
  let exists = dir === "/";
  for (const p of [...Object.keys(image.files), ...image.dirs]) {
    if (p === dir.replace(/\/+$/, "")) exists = true;
    if (!p.startsWith(base)) continue;
    exists = true;
    const rest = p.slice(base.length);
    if (rest) names.add(rest.split("/")[0]!);
  }
  return exists && !(dir.replace(/\/+$/, "") in image.files) ? [...names].sort() : null;
}
