import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import type { OnboardingConfig } from "@/lib/steps/onboarding/config";
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
 * The lab's stand-in for Proxmox's archive keyring: a real OpenPGP public key (ed25519, made
 * for the lab with `gpg --quick-gen-key`; its secret half was never kept), so the product's
 * `sha256sum` and `gpg --show-keys` checks run unchanged against it. The lab's repository
 * "is signed" by this key: apt accepts a Proxmox source only when its keyring holds it, as
 * apt's sqv accepts only the key that made the signature.
 */
export const LAB_PROXMOX_KEYRING: Buffer = Buffer.from(
  "mDMEaw7rIBYJKwYBBAHaRw8BAQdAwTN5Wgg/ZzS0h1C6VghMXgV3Fn+ZZtBhi2kaYLlNOUy0SkNsdVBpbG90IExhYiBQ" +
    "cm94bW94IEFyY2hpdmUgS2V5ICh0cml4aWUsIGxhYiBvbmx5KSA8bGFiQGNsdXBpbG90LmludmFsaWQ+iJAEExYIADgW" +
    "IQSVMLrI2IUmb/FSSWzhiZ4H58r8GAUCaw7rIAIbAwULCQgHAgYVCgkICwIEFgIDAQIeAQIXgAAKCRDhiZ4H58r8GPQV" +
    "AP9SgTguWvPeXf6pNjDBN3rC/7x6LTJH+viIKO1QAvXngAEAsu+1sT7jnroJGc1lLFWEk6HZyApLZicj5TeSIDaRDQc=",
  "base64",
);

/** `gpg --show-keys` of {@link LAB_PROXMOX_KEYRING}. */
export const LAB_PROXMOX_KEY_FINGERPRINT = "9530BAC8D885266FF152496CE1899E07E7CAFC18";
export const LAB_PROXMOX_KEYRING_SHA256 = createHash("sha256")
  .update(LAB_PROXMOX_KEYRING)
  .digest("hex");

/**
 * The onboarding configuration that points the product at the lab's keyring, through the
 * same settings an operator would use for a mirror of Proxmox's (URL, checksum, fingerprint).
 */
export function labProxmoxKeyring(
  url: string,
): Pick<
  OnboardingConfig,
  "proxmoxKeyringUrl" | "proxmoxKeyringSha256" | "proxmoxKeyringFingerprint"
> {
  return {
    proxmoxKeyringUrl: url,
    proxmoxKeyringSha256: LAB_PROXMOX_KEYRING_SHA256,
    proxmoxKeyringFingerprint: LAB_PROXMOX_KEY_FINGERPRINT,
  };
}

/** {@link labProxmoxKeyring} as the console's environment variables. */
export function labProxmoxKeyringEnv(url: string): Record<string, string> {
  return {
    CLUPILOT_PROXMOX_KEYRING_URL: url,
    CLUPILOT_PROXMOX_KEYRING_SHA256: LAB_PROXMOX_KEYRING_SHA256,
    CLUPILOT_PROXMOX_KEYRING_FINGERPRINT: LAB_PROXMOX_KEY_FINGERPRINT,
  };
}

export const PROXMOX_KEYRING_PATH = "/usr/share/keyrings/proxmox-archive-keyring.gpg";
export const DEBIAN_KEYRING_PATH = "/usr/share/keyrings/debian-archive-keyring.gpg";

/** The keyring holds the key the lab's Proxmox repository is signed with. */
function holdsLabProxmoxKey(file: string): boolean {
  try {
    return fs.readFileSync(file).includes(LAB_PROXMOX_KEYRING);
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
  return candidates.some((f) => !isDebianKeyring(f) && holdsLabProxmoxKey(f));
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
