import fs from "node:fs";
import path from "node:path";

/**
 * The machine's own files a node's `/etc` carries so that the real programs it runs (bash,
 * coreutils, awk, curl, gpg, sshd) work inside the node: users and groups, the dynamic linker's
 * cache, Debian's alternatives (`awk` is `/etc/alternatives/awk`), CA certificates, time zone and
 * the resolver's tables. They belong to the programs, which are the machine's (`/usr` is not
 * the node's), not to the simulated host: they are copied from the machine at every start of
 * the node's namespace, over whatever an earlier start left, and nothing else of the machine's
 * `/etc` (its apt sources, network, hostname) reaches the node.
 */

export const MACHINE_ETC = [
  "passwd",
  "group",
  "shadow",
  "gshadow",
  "nsswitch.conf",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "alternatives",
  "ssl",
  "localtime",
  "timezone",
  "host.conf",
  "gai.conf",
  "services",
  "protocols",
  "xattr.conf",
] as const;

/** Copies MACHINE_ETC from `/etc` into `<root>/etc`; what the machine lacks or hides is skipped. */
export function copyMachineEtc(root: string, from = "/etc"): void {
  const etc = path.join(root, "etc");
  fs.mkdirSync(etc, { recursive: true });
  for (const name of MACHINE_ETC) {
    const source = path.join(from, name);
    if (fs.lstatSync(source, { throwIfNoEntry: false }) === undefined) continue;
    const target = path.join(etc, name);
    fs.rmSync(target, { recursive: true, force: true });
    try {
      fs.cpSync(source, target, {
        recursive: true,
        verbatimSymlinks: true,
        preserveTimestamps: true,
        // An unprivileged user cannot read /etc/shadow or /etc/ssl/private: left out.
        filter: (file) => readable(file),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EACCES") throw error;
    }
  }
}

function readable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return true;
  } catch {
    // A symlink to nowhere is copied as the link it is.
    return fs.lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
  }
}
