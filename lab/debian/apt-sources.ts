import fs from "node:fs";
import path from "node:path";

import type { RepoId } from "./catalog";
import { hostPath } from "./lab-state";

/**
 * APT source configuration as apt reads it: one-line `deb [opts] URI SUITE COMPONENT…` entries
 * in `/etc/apt/sources.list` and `/etc/apt/sources.list.d/*.list`, and deb822 stanzas in
 * `/etc/apt/sources.list.d/*.sources` (`Enabled: no` / `false` disables one).
 *
 * Key placement follows the Proxmox VE 9 "Install on Debian 13 Trixie" guide:
 * `Signed-By: /usr/share/keyrings/proxmox-archive-keyring.gpg` in
 * `/etc/apt/sources.list.d/pve-install-repo.sources`, the keyring downloaded from
 * `https://enterprise.proxmox.com/debian/proxmox-archive-keyring-trixie.gpg`. A source without
 * Signed-By is verified against `/etc/apt/trusted.gpg.d/*.gpg` (the pre-deb822 way,
 * `proxmox-release-trixie.gpg`), as apt does.
 */

export type AptSource = {
  file: string;
  uri: string;
  suite: string;
  components: string[];
  signedBy: string | null;
  /** Inline `Signed-By:` key block (deb822 allows an armored key in place of a path). */
  signedByInline: boolean;
};

export type KnownRepo = {
  id: RepoId | "pve-enterprise" | "ceph-enterprise";
  /** Needs a subscription key: answers 401 without one. */
  enterprise: boolean;
  /** Who signs it. */
  keyring: "debian" | "proxmox";
};

export function readSources(root: string): AptSource[] {
  const sources: AptSource[] = [];
  const main = hostPath(root, "/etc/apt/sources.list");
  if (fs.existsSync(main)) sources.push(...parseOneLine(main, fs.readFileSync(main, "utf8")));
  const dir = hostPath(root, "/etc/apt/sources.list.d");
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir).sort();
  } catch {
    // none
  }
  for (const name of names) {
    const file = path.join(dir, name);
    if (name.endsWith(".list")) sources.push(...parseOneLine(file, fs.readFileSync(file, "utf8")));
    else if (name.endsWith(".sources"))
      sources.push(...parseDeb822(file, fs.readFileSync(file, "utf8")));
  }
  return sources;
}

function parseOneLine(file: string, text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line) continue;
    const match = /^(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (!match || match[1] !== "deb") continue;
    const options = new Map<string, string>();
    for (const opt of (match[2] ?? "").trim().split(/\s+/)) {
      const eq = opt.indexOf("=");
      if (eq > 0) options.set(opt.slice(0, eq).toLowerCase(), opt.slice(eq + 1));
    }
    out.push({
      file,
      uri: match[3]!,
      suite: match[4]!,
      components: (match[5] ?? "").split(/\s+/).filter(Boolean),
      signedBy: options.get("signed-by") ?? null,
      signedByInline: false,
    });
  }
  return out;
}

function parseDeb822(file: string, text: string): AptSource[] {
  const out: AptSource[] = [];
  const lines = text.split("\n").filter((l) => !l.startsWith("#"));
  const stanzas: string[][] = [[]];
  for (const line of lines) {
    if (line.trim() === "") stanzas.push([]);
    else stanzas[stanzas.length - 1]!.push(line);
  }
  for (const stanza of stanzas) {
    if (stanza.length === 0) continue;
    const fields = new Map<string, string>();
    let last: string | null = null;
    for (const line of stanza) {
      if (/^\s/.test(line) && last !== null) {
        fields.set(last, `${fields.get(last) ?? ""}\n${line.trim()}`);
        continue;
      }
      const m = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
      if (!m) continue;
      last = m[1]!.toLowerCase();
      fields.set(last, m[2]!);
    }
    const enabled = (fields.get("enabled") ?? "yes").trim().toLowerCase();
    if (enabled === "no" || enabled === "false") continue;
    const types = (fields.get("types") ?? "").split(/\s+/);
    if (!types.includes("deb")) continue;
    const signed = fields.get("signed-by")?.trim() ?? null;
    const inline = signed !== null && signed.includes("BEGIN PGP");
    for (const uri of (fields.get("uris") ?? "").split(/\s+/).filter(Boolean)) {
      for (const suite of (fields.get("suites") ?? "").split(/\s+/).filter(Boolean)) {
        out.push({
          file,
          uri,
          suite,
          components: (fields.get("components") ?? "").split(/\s+/).filter(Boolean),
          signedBy: inline ? null : signed,
          signedByInline: inline,
        });
      }
    }
  }
  return out;
}

function normalizeUri(uri: string): string {
  return uri.replace(/\/+$/, "").replace(/^https?:\/\//, "");
}

const DEBIAN_SUITES = new Set(["trixie", "trixie-updates", "trixie-backports"]);

/** Which repository the lab knows this source to be, or null (apt would find no Release file). */
export function identifyRepo(source: AptSource): KnownRepo | null {
  const uri = normalizeUri(source.uri);
  const comps = source.components;
  if (
    (uri === "deb.debian.org/debian" ||
      uri === "ftp.debian.org/debian" ||
      uri === "mirror+file:///etc/apt/mirrors/debian.list") &&
    DEBIAN_SUITES.has(source.suite)
  )
    return { id: "debian", enterprise: false, keyring: "debian" };
  if (
    (uri === "security.debian.org/debian-security" ||
      uri === "deb.debian.org/debian-security" ||
      uri === "mirror+file:///etc/apt/mirrors/debian-security.list") &&
    source.suite === "trixie-security"
  )
    return { id: "debian-security", enterprise: false, keyring: "debian" };
  if (uri === "download.proxmox.com/debian/pve" && source.suite === "trixie") {
    if (comps.length > 0 && comps.every((c) => c === "pve-no-subscription" || c === "pve-test"))
      return { id: "pve", enterprise: false, keyring: "proxmox" };
    return null;
  }
  if (uri === "download.proxmox.com/debian/ceph-squid" && source.suite === "trixie") {
    if (comps.length > 0 && comps.every((c) => c === "no-subscription" || c === "test"))
      return { id: "ceph", enterprise: false, keyring: "proxmox" };
    return null;
  }
  if (uri === "enterprise.proxmox.com/debian/pve" && source.suite === "trixie")
    return { id: "pve-enterprise", enterprise: true, keyring: "proxmox" };
  if (uri === "enterprise.proxmox.com/debian/ceph-squid" && source.suite === "trixie")
    return { id: "ceph-enterprise", enterprise: true, keyring: "proxmox" };
  return null;
}

/**
 * The lab's stand-in for Proxmox's archive keyring (binary OpenPGP: starts with a public-key
 * packet tag, as the real `proxmox-archive-keyring-trixie.gpg` does). Any binary OpenPGP
 * keyring is accepted where the Proxmox key is expected; text (an HTML error page saved by
 * wget, an armored key in a `.gpg` file) is not — as with apt's sqv.
 */
export const LAB_PROXMOX_KEYRING: Buffer = Buffer.concat([
  Buffer.from([0x99, 0x02, 0x0d, 0x04]),
  Buffer.from("CluPilot lab stand-in for the Proxmox Archive Keyring (trixie)\n".repeat(8)),
]);

export const PROXMOX_KEY_FINGERPRINT = "24B30F06ECC1836A4E5EFECBA7BCD1420BFE778E";

export const PROXMOX_KEYRING_PATH = "/usr/share/keyrings/proxmox-archive-keyring.gpg";
export const DEBIAN_KEYRING_PATH = "/usr/share/keyrings/debian-archive-keyring.gpg";

function isBinaryKeyring(file: string): boolean {
  try {
    const head = fs.readFileSync(file).subarray(0, 1);
    return head.length === 1 && (head[0] === 0x99 || head[0] === 0x98 || head[0] === 0xc6);
  } catch {
    return false;
  }
}

function isDebianKeyring(file: string): boolean {
  return path.basename(file).startsWith("debian-archive") && fs.existsSync(file);
}

/** Whether apt could verify this source's Release file with the keys present on the host. */
export function keyPresent(root: string, source: AptSource, repo: KnownRepo): boolean {
  if (source.signedByInline) return true;
  const candidates: string[] = [];
  if (source.signedBy !== null) {
    for (const p of source.signedBy.split(/[\s,]+/).filter(Boolean)) {
      candidates.push(hostPath(root, p));
    }
  } else {
    const dir = hostPath(root, "/etc/apt/trusted.gpg.d");
    try {
      for (const name of fs.readdirSync(dir)) {
        if (name.endsWith(".gpg") || name.endsWith(".asc")) candidates.push(path.join(dir, name));
      }
    } catch {
      // none
    }
  }
  if (repo.keyring === "debian") return candidates.some((f) => isDebianKeyring(f));
  return candidates.some((f) => !isDebianKeyring(f) && isBinaryKeyring(f));
}

/** `var/lib/apt/lists/<uri with _>_dists_<suite>_InRelease`, as apt names it. */
export function listFile(root: string, source: AptSource): string {
  const base = source.uri
    .replace(/^[a-z+]+:\/\/+/, "")
    .replace(/\/+$/, "")
    .replace(/\//g, "_");
  return hostPath(root, `/var/lib/apt/lists/${base}_dists_${source.suite}_InRelease`);
}

export function listsDir(root: string): string {
  return hostPath(root, "/var/lib/apt/lists");
}
