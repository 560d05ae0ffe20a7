import { advance, fail, type Step } from "@/lib/pipeline/step";
import { sh, shQuote } from "@/lib/ssh";
import type { OnboardingConfig } from "./config";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { visitShell } from "./visit-shell";
import { alreadyInPlace } from "./already-in-place";

/** Where the PVE 9 "Install on Debian 13" guide puts the repository and its key. */
export const SOURCES_NAME = "pve-install-repo.sources";
export const KEYRING_PATH = "/usr/share/keyrings/proxmox-archive-keyring.gpg";
const KEYRING = `"\${CLUPILOT_HOST_ROOT:-}${KEYRING_PATH}"`;
const SOURCES_DIR = '"${CLUPILOT_HOST_ROOT:-}/etc/apt/sources.list.d"';
const MAIN_LIST = '"${CLUPILOT_HOST_ROOT:-}/etc/apt/sources.list"';
const LISTS_DIR = '"${CLUPILOT_HOST_ROOT:-}/var/lib/apt/lists"';
const FILE_MARK = "--clupilot-file--";
const SEPARATOR = "--clupilot--";

/** apt reads only these names in sources.list.d (others are ignored with a notice). */
const SOURCE_FILE_NAME = /^[A-Za-z0-9_.-]+\.(list|sources)$/;

export function desiredSources(repositoryUrl: string): string {
  if (!/^https?:\/\/[^\s]+$/.test(repositoryUrl))
    throw new Error(`the Proxmox repository URL "${repositoryUrl}" is not an http(s) URL`);
  return [
    "Types: deb",
    `URIs: ${repositoryUrl}`,
    "Suites: trixie",
    "Components: pve-no-subscription",
    `Signed-By: ${KEYRING_PATH}`,
    "",
  ].join("\n");
}

/** The list file apt writes for the repository's trixie suite (`<uri with _>_dists_trixie_InRelease`). */
export function listFileName(repositoryUrl: string): string {
  const base = repositoryUrl
    .replace(/^[a-z+]+:\/\/+/, "")
    .replace(/\/+$/, "")
    .replace(/\//g, "_");
  return `${base}_dists_trixie_InRelease`;
}

/**
 * One round trip: the keyring's first byte (a binary OpenPGP key starts with a public-key
 * packet; an HTML error page saved by a careless download does not), every apt source file,
 * and whether apt has fetched the repository's index.
 */
export function repositoryProbe(repositoryUrl: string): string {
  return [
    `echo "keyring=$(head -c 1 ${KEYRING} 2>/dev/null | od -An -tx1 | tr -d ' \\n')"`,
    `for f in ${MAIN_LIST} ${SOURCES_DIR}/*.list ${SOURCES_DIR}/*.sources; do`,
    `  if [ -f "$f" ]; then printf '%s %s\\n' ${FILE_MARK} "\${f##*/}"; cat "$f"; echo; fi`,
    "done",
    `echo ${SEPARATOR}`,
    `if [ -s ${LISTS_DIR}/${shQuote(listFileName(repositoryUrl))} ]; then echo lists=present; else echo lists=missing; fi`,
  ].join("\n");
}

export type RepositoryFacts = {
  keyringValid: boolean;
  /** File name (`sources.list` for the main file) → content. */
  files: Map<string, string>;
  listsPresent: boolean;
};

export function parseRepositoryProbe(stdout: string): RepositoryFacts {
  const cut = stdout.lastIndexOf(`${SEPARATOR}\n`);
  const head = cut >= 0 ? stdout.slice(0, cut) : stdout;
  const tail = cut >= 0 ? stdout.slice(cut) : "";
  const keyByte = /^keyring=(\S*)$/m.exec(head)?.[1] ?? "";
  const files = new Map<string, string>();
  const parts = head.split(new RegExp(`^${FILE_MARK} `, "m")).slice(1);
  for (const part of parts) {
    const newline = part.indexOf("\n");
    const name = part.slice(0, newline);
    // The probe adds one newline after each file so the next mark starts a line.
    files.set(name, part.slice(newline + 1).replace(/\n$/, ""));
  }
  return {
    keyringValid: ["99", "98", "c6"].includes(keyByte),
    files,
    listsPresent: /^lists=present$/m.test(tail),
  };
}

const ENTERPRISE = /enterprise\.proxmox\.com/;

/** A deb822 file with every stanza naming enterprise.proxmox.com set to `Enabled: no`. */
export function disableDeb822(text: string): string {
  const stanzas = text.split(/(\n[ \t]*\n)/);
  return stanzas
    .map((stanza) => {
      if (/^\s*$/.test(stanza) || !/^URIs:.*enterprise\.proxmox\.com/im.test(stanza)) return stanza;
      if (/^Enabled:\s*(no|false)\s*$/im.test(stanza)) return stanza;
      if (/^Enabled:/im.test(stanza)) return stanza.replace(/^Enabled:.*$/im, "Enabled: no");
      return stanza.endsWith("\n") ? `${stanza}Enabled: no\n` : `${stanza}\nEnabled: no`;
    })
    .join("");
}

/** One-line entries naming enterprise.proxmox.com commented out; null = nothing else left (remove the file). */
export function disableOneLine(text: string): string | null {
  let others = 0;
  const out = text.split("\n").map((line) => {
    const active = line.replace(/#.*$/, "").trim();
    if (!active) return line;
    if (ENTERPRISE.test(active)) return `# disabled by CluPilot (needs a subscription): ${line}`;
    others += 1;
    return line;
  });
  return others === 0 ? null : out.join("\n");
}

export type FileChange =
  | { kind: "write"; name: string; content: string }
  | { kind: "remove"; name: string; reason: string };

export type RepositoryPlan = {
  fetchKeyring: boolean;
  changes: FileChange[];
  update: boolean;
};

/** The goal and what it takes to reach it; an empty plan = the goal holds, touch nothing. */
export function planRepository(facts: RepositoryFacts, repositoryUrl: string): RepositoryPlan {
  const changes: FileChange[] = [];
  const desired = desiredSources(repositoryUrl);
  if (facts.files.get(SOURCES_NAME) !== desired)
    changes.push({ kind: "write", name: SOURCES_NAME, content: desired });
  for (const [name, content] of facts.files) {
    if (name === SOURCES_NAME || !ENTERPRISE.test(content)) continue;
    if (name !== "sources.list" && !SOURCE_FILE_NAME.test(name)) continue;
    if (name.endsWith(".sources")) {
      const next = disableDeb822(content);
      if (next !== content) changes.push({ kind: "write", name, content: next });
      continue;
    }
    const next = disableOneLine(content);
    if (next === null && name !== "sources.list")
      changes.push({ kind: "remove", name, reason: "only the enterprise repository" });
    else if (next !== null && next !== content)
      changes.push({ kind: "write", name, content: next });
  }
  const fetchKeyring = !facts.keyringValid;
  return {
    fetchKeyring,
    changes,
    update: fetchKeyring || changes.length > 0 || !facts.listsPresent,
  };
}

function pathOf(name: string): string {
  if (name === "sources.list") return MAIN_LIST;
  if (!SOURCE_FILE_NAME.test(name)) throw new Error(`refusing to touch apt source file "${name}"`);
  return `${SOURCES_DIR}/${name}`;
}

/** Content on stdin → temp file → rename: apt never reads a half-written source. */
export function writeSourceCommand(name: string): string {
  return [
    `f=${pathOf(name)}`,
    'cat > "$f.clupilot-tmp" && chmod 644 "$f.clupilot-tmp" && mv -f "$f.clupilot-tmp" "$f"',
  ].join("\n");
}

export function removeSourceCommand(name: string): string {
  return `rm -f -- ${pathOf(name)}`;
}

/**
 * Downloads the key with curl on the host to a temp file, checks it is a binary OpenPGP key,
 * then renames it into place — an interrupted or wrong download never becomes the keyring.
 */
export function fetchKeyringCommand(url: string): string {
  return [
    `k=${KEYRING}`,
    'mkdir -p "$(dirname "$k")" || exit 1',
    sh`curl -fsSL --retry 2 --connect-timeout 20 --max-time 120 -o "$k.clupilot-tmp" ${url} || { rm -f "$k.clupilot-tmp"; exit 4; }`,
    'case "$(head -c 1 "$k.clupilot-tmp" | od -An -tx1 | tr -d \' \\n\')" in 99|98|c6) ;; *) rm -f "$k.clupilot-tmp"; echo "not a binary OpenPGP keyring" >&2; exit 5 ;; esac',
    'chmod 644 "$k.clupilot-tmp" && mv -f "$k.clupilot-tmp" "$k"',
  ].join("\n");
}

/** `--error-on=any`: without it apt-get update exits 0 when a mirror cannot be reached. */
export const APT_UPDATE = "apt-get update --error-on=any";

/** The lines of apt's output that say what went wrong (`E:`, then `W:`), joined for a reason. */
export function aptErrors(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim());
  const errors = lines.filter((l) => l.startsWith("E: ")).map((l) => l.slice(3));
  const warnings = lines.filter((l) => l.startsWith("W: ")).map((l) => l.slice(3));
  const picked = errors.length > 0 ? errors : warnings;
  return (
    [...new Set(picked)].slice(0, 3).join("; ") ||
    stderr.trim().split("\n").pop() ||
    "no error output"
  );
}

/**
 * Goal: the Proxmox no-subscription repository for trixie configured (deb822, signed by the
 * Proxmox archive keyring), the enterprise repository disabled, and `apt-get update` succeeded
 * (the repository's index is present). When all of that holds, nothing is touched.
 */
export function installProxmoxRepository(
  config: Pick<OnboardingConfig, "proxmoxKeyringUrl" | "proxmoxRepositoryUrl">,
): Step<HostServices> {
  return {
    name: "InstallProxmoxRepository",
    maxDuration: () => 900,
    visit: (ctx) =>
      withPermanentSshFailures(async () => {
        const exec = visitShell(ctx);
        const probe = await exec(repositoryProbe(config.proxmoxRepositoryUrl));
        if (probe.code !== 0)
          throw new Error(
            `reading the apt configuration failed (exit ${probe.code}): ${probe.stderr.trim()}`,
          );
        const plan = planRepository(
          parseRepositoryProbe(probe.stdout),
          config.proxmoxRepositoryUrl,
        );
        if (!plan.update)
          return alreadyInPlace(ctx, "Proxmox no-subscription repository and its key configured");

        if (plan.fetchKeyring) {
          const key = await exec(fetchKeyringCommand(config.proxmoxKeyringUrl), undefined, 180_000);
          if (key.code !== 0)
            return fail(
              `downloading the Proxmox archive key from ${config.proxmoxKeyringUrl} failed: ${key.stderr.trim() || `exit ${key.code}`}; check the host's internet access and Retry`,
            );
        }
        for (const change of plan.changes) {
          const result =
            change.kind === "write"
              ? await exec(writeSourceCommand(change.name), change.content)
              : await exec(removeSourceCommand(change.name));
          if (result.code !== 0)
            throw new Error(
              `updating apt source ${change.name} failed (exit ${result.code}): ${result.stderr.trim()}`,
            );
          ctx.log(
            change.kind === "write"
              ? `wrote /etc/apt/${change.name === "sources.list" ? "" : "sources.list.d/"}${change.name}`
              : `removed /etc/apt/sources.list.d/${change.name} (${change.reason})`,
          );
        }
        const update = await exec(APT_UPDATE, undefined, 600_000);
        if (update.code !== 0)
          return fail(
            `apt-get update failed: ${aptErrors(update.stderr)} — check the host's DNS and internet access (or the mirror), then Retry`,
          );
        const after = parseRepositoryProbe(
          (await exec(repositoryProbe(config.proxmoxRepositoryUrl))).stdout,
        );
        if (!after.listsPresent)
          return fail(
            `apt-get update succeeded but fetched no index for ${config.proxmoxRepositoryUrl} trixie; check the repository URL`,
          );
        return advance("Proxmox no-subscription repository configured; apt-get update succeeded");
      }),
  };
}
