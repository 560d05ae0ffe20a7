import { advance, fail, poll, type Step } from "@/lib/pipeline/step";
import { sh, shQuote } from "@/lib/ssh";
import type { OnboardingConfig } from "./config";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { visitShell } from "./visit-shell";
import { alreadyInPlace } from "./already-in-place";
import {
  aptLockOption,
  classifyAptFailure,
  describeHolder,
  explainAptFailure,
} from "./apt-failure";

/** Where the PVE 9 "Install on Debian 13" guide puts the repository and its key. */
export const SOURCES_NAME = "pve-install-repo.sources";
export const KEYRING_PATH = "/usr/share/keyrings/proxmox-archive-keyring.gpg";
const SOURCES_DIR = "/etc/apt/sources.list.d";
const MAIN_LIST = "/etc/apt/sources.list";
const LISTS_DIR = "/var/lib/apt/lists";
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
 * The fingerprints of every key in an OpenPGP keyring file (`$1`), space-separated, read with
 * `gpg --show-keys` in a throw-away GNUPGHOME (root's own keyring is never touched).
 * Prints nothing when the file is not an OpenPGP keyring.
 */
const SHOW_FINGERPRINTS = [
  "fingerprints() {",
  "  g=$(mktemp -d) || return 1",
  '  GNUPGHOME="$g" gpg --batch --no-tty --with-colons --show-keys "$1" 2>/dev/null | awk -F: \'$1 == "fpr" { printf "%s ", $10 }\'',
  '  rm -rf "$g"',
  "}",
].join("\n");

/**
 * One round trip: the fingerprints of the keys in the keyring (the file is Proxmox's when it
 * holds the pinned key — its checksum is not compared here: once the proxmox-archive-keyring
 * package is installed it manages the file and its content changes, as Proxmox's guide
 * warns), every apt source file, and whether apt has fetched the repository's index.
 */
export function repositoryProbe(repositoryUrl: string): string {
  return [
    SHOW_FINGERPRINTS,
    `if ! command -v gpg > /dev/null 2>&1; then echo "keyring=no-gpg"; elif [ -s ${KEYRING_PATH} ]; then echo "keyring=$(fingerprints ${KEYRING_PATH})"; else echo "keyring=missing"; fi`,
    `for f in ${MAIN_LIST} ${SOURCES_DIR}/*.list ${SOURCES_DIR}/*.sources; do`,
    `  if [ -f "$f" ]; then printf '%s %s\\n' ${FILE_MARK} "\${f##*/}"; cat "$f"; echo; fi`,
    "done",
    `echo ${SEPARATOR}`,
    `if [ -s ${LISTS_DIR}/${shQuote(listFileName(repositoryUrl))} ]; then echo lists=present; else echo lists=missing; fi`,
  ].join("\n");
}

export type RepositoryFacts = {
  /** Fingerprints of the keys the keyring holds; null when it is missing or gpg is not installed. */
  keyringFingerprints: string[] | null;
  /** File name (`sources.list` for the main file) → content. */
  files: Map<string, string>;
  listsPresent: boolean;
};

export function parseRepositoryProbe(stdout: string): RepositoryFacts {
  const cut = stdout.lastIndexOf(`${SEPARATOR}\n`);
  const head = cut >= 0 ? stdout.slice(0, cut) : stdout;
  const tail = cut >= 0 ? stdout.slice(cut) : "";
  const keyring = /^keyring=(.*)$/m.exec(head)?.[1]?.trim() ?? "missing";
  const files = new Map<string, string>();
  const parts = head.split(new RegExp(`^${FILE_MARK} `, "m")).slice(1);
  for (const part of parts) {
    const newline = part.indexOf("\n");
    const name = part.slice(0, newline);
    // The probe adds one newline after each file so the next mark starts a line.
    files.set(name, part.slice(newline + 1).replace(/\n$/, ""));
  }
  return {
    keyringFingerprints:
      keyring === "missing" || keyring === "no-gpg"
        ? null
        : keyring
            .split(/\s+/)
            .filter(Boolean)
            .map((f) => f.toUpperCase()),
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
export function planRepository(
  facts: RepositoryFacts,
  repositoryUrl: string,
  keyFingerprint: string,
): RepositoryPlan {
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
  const fetchKeyring = !(facts.keyringFingerprints ?? []).includes(keyFingerprint.toUpperCase());
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

export type KeyringPin = { url: string; sha256: string; fingerprint: string };

/**
 * Downloads the keyring with curl on the host to a temp file and installs it only when it is
 * Proxmox's: its SHA-256 is the pinned one (exit 5, `sha256=<actual>` on stdout) and
 * `gpg --show-keys` finds the pinned key in it (exit 6, `fingerprints=<found>`). Debian's `gpg`
 * is installed first when missing (exit 7 when that fails; apt prints why). An interrupted or
 * wrong download never becomes the keyring.
 */
export function fetchKeyringCommand(pin: KeyringPin, aptLockSeconds: number): string {
  return [
    SHOW_FINGERPRINTS,
    `k=${KEYRING_PATH}`,
    "if ! command -v gpg > /dev/null 2>&1; then",
    `  DEBIAN_FRONTEND=noninteractive apt-get ${aptLockOption(aptLockSeconds)} install -y --no-install-recommends gpg || exit 7`,
    "fi",
    'mkdir -p "$(dirname "$k")" || exit 1',
    sh`curl -fsSL --retry 2 --connect-timeout 20 --max-time 120 -o "$k.clupilot-tmp" ${pin.url} || { rm -f "$k.clupilot-tmp"; exit 4; }`,
    `sum=$(sha256sum "$k.clupilot-tmp" | cut -d' ' -f1)`,
    `if [ "$sum" != ${shQuote(pin.sha256.toLowerCase())} ]; then rm -f "$k.clupilot-tmp"; echo "sha256=$sum"; exit 5; fi`,
    'found=$(fingerprints "$k.clupilot-tmp")',
    `case " $found" in *" "${shQuote(pin.fingerprint.toUpperCase())}" "*) ;; *) rm -f "$k.clupilot-tmp"; echo "fingerprints=$found"; exit 6 ;; esac`,
    'chmod 644 "$k.clupilot-tmp" && mv -f "$k.clupilot-tmp" "$k"',
  ].join("\n");
}

/** Why a keyring download was refused, with both values and what to do. */
export function keyringRefusal(
  pin: KeyringPin,
  result: { code: number | null; stdout: string; stderr: string },
  aptLockSeconds: number,
): string {
  const said = (key: string) => new RegExp(`^${key}=(.*)$`, "m").exec(result.stdout)?.[1]?.trim();
  const pinNote =
    "nothing was installed. Check the URL (a proxy or mirror serving another file?); if Proxmox " +
    "published a new keyring, set CLUPILOT_PROXMOX_KEYRING_SHA256 and CLUPILOT_PROXMOX_KEYRING_FINGERPRINT " +
    "to the values Proxmox publishes, then Retry";
  switch (result.code) {
    case 4:
      return `downloading the Proxmox archive keyring from ${pin.url} failed: ${result.stderr.trim() || "exit 4"}; check the host's internet access and Retry`;
    case 5:
      return (
        `the keyring downloaded from ${pin.url} has SHA-256 ${said("sha256") || "(none)"}, ` +
        `but Proxmox's trixie keyring has ${pin.sha256.toLowerCase()} (the pinned value): ${pinNote}`
      );
    case 6:
      return (
        `the keyring downloaded from ${pin.url} holds key(s) ${said("fingerprints") || "(none: not an OpenPGP keyring)"}, ` +
        `not the pinned Proxmox key ${pin.fingerprint.toUpperCase()}: ${pinNote}`
      );
    case 7:
      return explainAptFailure(
        "installing gpg (to read the keyring's fingerprint)",
        result,
        aptLockSeconds,
      );
    default:
      return `installing the Proxmox archive keyring failed (exit ${result.code}): ${result.stderr.trim() || "no error output"}`;
  }
}

/** `--error-on=any`: without it apt-get update exits 0 when a mirror cannot be reached. */
export function aptUpdateCommand(lockSeconds: number): string {
  return `apt-get ${aptLockOption(lockSeconds)} update --error-on=any`;
}

/**
 * One apt-get update waits at most this long (and at most half the bound) for the lock; the
 * rest of the wait is polled visits, so the phase line can name the holder meanwhile.
 */
const LOCK_WAIT_PER_COMMAND_SECONDS = 10;
const LOCK_WAIT_KEY = "aptLockWaitSince";

/**
 * Goal: the Proxmox no-subscription repository for trixie configured (deb822, signed by the
 * Proxmox archive keyring), the enterprise repository disabled, and `apt-get update` succeeded
 * (the repository's index is present). When all of that holds, nothing is touched.
 */
export function installProxmoxRepository(
  config: Pick<
    OnboardingConfig,
    | "proxmoxKeyringUrl"
    | "proxmoxKeyringSha256"
    | "proxmoxKeyringFingerprint"
    | "proxmoxRepositoryUrl"
    | "aptLockTimeoutSeconds"
  >,
): Step<HostServices> {
  const pin: KeyringPin = {
    url: config.proxmoxKeyringUrl,
    sha256: config.proxmoxKeyringSha256,
    fingerprint: config.proxmoxKeyringFingerprint,
  };
  const lockBound = config.aptLockTimeoutSeconds;
  return {
    name: "InstallProxmoxRepository",
    // Key download (180 s), apt-get update (600 s), and the wait for the dpkg lock.
    maxDuration: () => 780 + lockBound,
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
          pin.fingerprint,
        );
        if (!plan.update)
          return alreadyInPlace(ctx, "Proxmox no-subscription repository and its key configured");

        if (plan.fetchKeyring) {
          const key = await exec(
            fetchKeyringCommand(pin, lockBound),
            undefined,
            (180 + lockBound) * 1000,
          );
          if (key.code !== 0) return fail(keyringRefusal(pin, key, lockBound));
          ctx.log(
            `installed the Proxmox archive keyring from ${pin.url} (SHA-256 ${pin.sha256.toLowerCase()}, key ${pin.fingerprint.toUpperCase()})`,
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

        // The dpkg lock: wait in short apt waits and polled visits, so the phase line names
        // the holder meanwhile, until the bound counted from the first refusal.
        const startedAt = Date.now();
        const since = ctx.context.get<number>(LOCK_WAIT_KEY) ?? null;
        const remaining = since === null ? lockBound : lockBound - (startedAt - since) / 1000;
        const wait = Math.max(0, Math.min(LOCK_WAIT_PER_COMMAND_SECONDS, lockBound / 2, remaining));
        const update = await exec(aptUpdateCommand(wait), undefined, (600 + wait) * 1000);
        if (update.code !== 0) {
          const cause = classifyAptFailure(`${update.stdout}\n${update.stderr}`);
          if (cause.kind === "lock" && remaining > wait) {
            const first = since ?? startedAt;
            ctx.context.set(LOCK_WAIT_KEY, first);
            const waited = Math.round((Date.now() - first) / 1000);
            return poll(
              ctx.services.config.pollSeconds,
              `waiting for the dpkg lock, held by ${describeHolder(cause.holder)} (${waited} s of ${lockBound} s)`,
            );
          }
          ctx.context.delete(LOCK_WAIT_KEY);
          return fail(explainAptFailure("apt-get update", update, lockBound));
        }
        ctx.context.delete(LOCK_WAIT_KEY);
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
