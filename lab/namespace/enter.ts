import fs from "node:fs";
import path from "node:path";

/** Paths that name a node's namespaces while the lab holds them open (`/proc/<pid>/fd/<n>`). */
export type NamespaceEntry = { mount: string; user: string | null };

/** A program of util-linux, looked up where Debian installs it. */
export function program(name: string): string {
  for (const dir of ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]) {
    const file = path.join(dir, name);
    if (fs.existsSync(file)) return file;
  }
  return name;
}

export const NSENTER = program("nsenter");

/**
 * nsenter's arguments before a program that is to run inside the node, in `cwd` — looked up
 * inside the namespace (`--wdns`; `--wd` would open it in the lab's own view, and a working
 * directory from outside is a way out of the node's mounts).
 */
export function enterArgs(entry: NamespaceEntry, cwd: string): string[] {
  return [
    // The user namespace maps the lab's user to root: keep the credentials, which are that user
    // (nsenter's own setgroups would be refused there).
    ...(entry.user === null ? [] : [`--user=${entry.user}`, "--preserve-credentials"]),
    `--mount=${entry.mount}`,
    `--wdns=${cwd}`,
    "--",
  ];
}
