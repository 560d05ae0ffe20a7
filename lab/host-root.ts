import { mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";

/**
 * The lab host's root folder, laid out like the real host: inside the host's mount namespace
 * (lab/namespace) its `etc`, `var`, `root`, … are `/etc`, `/var`, `/root`, so a product command
 * reading `/etc/os-release` reads this folder's copy. Lab-private state (host key, reported
 * kernel) lives in `.lab/`, which the host sees as /run/clupilot-lab/node.
 */

export type LabOs = "debian13" | "debian12";

/** Verbatim `/usr/lib/os-release` of Debian 13.1 (base-files 13.8+deb13u1) and 12.12. */
export const OS_RELEASE: Record<LabOs, string> = {
  debian13: `PRETTY_NAME="Debian GNU/Linux 13 (trixie)"
NAME="Debian GNU/Linux"
VERSION_ID="13"
VERSION="13 (trixie)"
VERSION_CODENAME=trixie
DEBIAN_VERSION_FULL=13.1
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
`,
  debian12: `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
`,
};

/** `/etc/debian_version` of the same releases. */
const DEBIAN_VERSION: Record<LabOs, string> = { debian13: "13.1\n", debian12: "12.12\n" };

/** The stock Debian kernel each release boots (what `uname -r` / `uname -v` report). */
export const DEBIAN_KERNEL: Record<LabOs, { release: string; version: string }> = {
  debian13: {
    release: "6.12.57+deb13-amd64",
    version: "#1 SMP PREEMPT_DYNAMIC Debian 6.12.57-1 (2025-11-05)",
  },
  debian12: {
    release: "6.1.0-40-amd64",
    version: "#1 SMP PREEMPT_DYNAMIC Debian 6.1.153-1 (2025-09-20)",
  },
};

export type HostRootPaths = {
  root: string;
  /** Lab-private state, never read by product commands. */
  labDir: string;
  hostKeyPath: string;
  /** The user's home as the host sees it (`/root`, `/home/<user>`)… */
  home: string;
  /** …and where that is on this machine. */
  homeFolder: string;
};

export function hostRootPaths(root: string, username: string): HostRootPaths {
  const home = username === "root" ? "/root" : `/home/${username}`;
  return {
    root,
    labDir: path.join(root, ".lab"),
    hostKeyPath: path.join(root, ".lab/ssh_host_ed25519_key"),
    home,
    homeFolder: path.join(root, home),
  };
}

/** Creates the folder layout; keeps what a previous run left (state survives restarts). */
export async function prepareHostRoot(
  paths: HostRootPaths,
  options: { hostname: string; os: LabOs | undefined },
): Promise<void> {
  const { root } = paths;
  for (const dir of [
    "etc",
    "usr/lib",
    "tmp",
    "var/tmp",
    "run/lock",
    paths.labDir,
    paths.homeFolder,
  ]) {
    await mkdir(path.resolve(root, dir), { recursive: true });
  }
  await mkdir(paths.labDir, { recursive: true, mode: 0o700 });
  // As on Debian: /var/run and /var/lock are links into /run.
  await symlinkIfMissing("/run", path.join(root, "var/run"));
  await symlinkIfMissing("/run/lock", path.join(root, "var/lock"));
  await writeIfMissing(path.join(root, "etc/hostname"), `${options.hostname}\n`);
  await writeIfMissing(
    path.join(root, "etc/hosts"),
    `127.0.0.1\tlocalhost\n127.0.1.1\t${options.hostname}.lab.internal\t${options.hostname}\n\n` +
      "# The following lines are desirable for IPv6 capable hosts\n" +
      "::1     localhost ip6-localhost ip6-loopback\nff02::1 ip6-allnodes\nff02::2 ip6-allrouters\n",
  );
  if (options.os !== undefined || (await readCurrentOs(root)) === null) {
    await writeOs(root, options.os ?? "debian13");
  }
}

/** Switches the release the host reports: os-release, debian_version and the booted kernel. */
export async function writeOs(root: string, os: LabOs): Promise<void> {
  // As on Debian, /etc/os-release is a relative symlink to /usr/lib/os-release.
  await writeFile(path.join(root, "usr/lib/os-release"), OS_RELEASE[os]);
  const link = path.join(root, "etc/os-release");
  await rm(link, { force: true });
  await symlink("../usr/lib/os-release", link);
  await writeFile(path.join(root, "etc/debian_version"), DEBIAN_VERSION[os]);
  await writeFile(path.join(root, ".lab/kernel"), `${DEBIAN_KERNEL[os].release}\n`);
  await writeFile(path.join(root, ".lab/kernel-version"), `${DEBIAN_KERNEL[os].version}\n`);
  await writeFile(path.join(root, ".lab/machine"), "x86_64\n");
}

async function readCurrentOs(root: string): Promise<LabOs | null> {
  try {
    const text = await readFile(path.join(root, "etc/os-release"), "utf8");
    if (text.includes("VERSION_CODENAME=trixie")) return "debian13";
    if (text.includes("VERSION_CODENAME=bookworm")) return "debian12";
    return null;
  } catch {
    return null;
  }
}

async function symlinkIfMissing(target: string, link: string): Promise<void> {
  try {
    await symlink(target, link);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

async function writeIfMissing(file: string, content: string): Promise<void> {
  try {
    await writeFile(file, content, { flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}
