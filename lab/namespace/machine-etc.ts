import fs from "node:fs";
import path from "node:path";

/**
 * The machine's own files a node's `/etc` carries so that the real programs it runs (bash,
 * coreutils, awk, curl, gpg, sshd) work inside the node: users and groups, the dynamic linker's
 * cache, Debian's alternatives (`awk` is `/etc/alternatives/awk`), CA certificates, time zone and
 * the resolver's tables. They belong to the programs, which are the machine's (`/usr` is not
 * the node's), not to the simulated host: they are brought up to date from the machine at
 * every start of the node's namespace, and nothing else of the machine's `/etc` (its apt
 * sources, network, hostname) reaches the node.
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

/**
 * Brings MACHINE_ETC from `/etc` into `<root>/etc`; what the machine lacks or hides is skipped.
 * Only what differs is written (a file by size and mtime, a link by its target), so a start
 * after the first costs a walk of a few hundred entries, not a copy.
 */
export function copyMachineEtc(root: string, from = "/etc"): void {
  const etc = path.join(root, "etc");
  fs.mkdirSync(etc, { recursive: true });
  for (const name of MACHINE_ETC) mirror(path.join(from, name), path.join(etc, name));
}

function mirror(source: string, target: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(source);
  } catch {
    // Not on this machine: nothing to bring (an older copy stays as it is).
    return;
  }
  const current = fs.lstatSync(target, { throwIfNoEntry: false });
  if (stat.isSymbolicLink()) {
    const link = fs.readlinkSync(source);
    if (current?.isSymbolicLink() && fs.readlinkSync(target) === link) return;
    if (current) fs.rmSync(target, { recursive: true, force: true });
    fs.symlinkSync(link, target);
    return;
  }
  if (stat.isDirectory()) {
    let names: string[];
    try {
      names = fs.readdirSync(source);
    } catch {
      // An unprivileged user cannot list /etc/ssl/private: left out.
      return;
    }
    if (current && !current.isDirectory()) fs.rmSync(target, { force: true });
    if (!current?.isDirectory()) fs.mkdirSync(target, { mode: stat.mode & 0o7777 });
    for (const name of names) mirror(path.join(source, name), path.join(target, name));
    for (const name of fs.readdirSync(target)) {
      if (!names.includes(name))
        fs.rmSync(path.join(target, name), { recursive: true, force: true });
    }
    return;
  }
  if (!stat.isFile()) return;
  // Whole milliseconds: utimes() keeps no more than that.
  const sameTime = Math.floor(current?.mtimeMs ?? -1) === Math.floor(stat.mtimeMs);
  if (current?.isFile() && current.size === stat.size && sameTime) return;
  try {
    fs.accessSync(source, fs.constants.R_OK);
  } catch {
    // An unprivileged user cannot read /etc/shadow: left out.
    return;
  }
  if (current) fs.rmSync(target, { recursive: true, force: true });
  fs.copyFileSync(source, target);
  fs.chmodSync(target, stat.mode & 0o7777);
  fs.utimesSync(target, stat.atimeMs / 1000, stat.mtimeMs / 1000);
}
