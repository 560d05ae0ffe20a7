import { fail, type Outcome, type Step, type StepContext } from "@/lib/pipeline/step";
import { sh, shQuote } from "@/lib/ssh";
import type { OnboardingConfig } from "./config";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { visitShell } from "../remote-job/visit-shell";
import { aptLockOption, explainAptFailure, withAptAdvice } from "./apt-failure";
import { jobLockSeconds } from "./install-proxmox-kernel";
import {
  abortRemoteJob,
  visitRemoteJob,
  type GoalCheck,
  type RemoteJob,
} from "../remote-job/remote-job";

/** Where the PVE 9 "Install on Debian 13" guide puts the repository and its key. */

export const INSTALL_PROXMOX_REPOSITORY = "InstallProxmoxRepository";
export const SOURCES_NAME = "pve-install-repo.sources";
export const KEYRING_PATH = "/usr/share/keyrings/proxmox-archive-keyring.gpg";
const SOURCES_DIR = "/etc/apt/sources.list.d";
const MAIN_LIST = "/etc/apt/sources.list";
const LISTS_DIR = "/var/lib/apt/lists";
const FILE_MARK = "--clupilot-file--";
const SEPARATOR = "--clupilot--";

/**
 * Proxmox VE 9's enterprise repository, as its installer writes it (deb822
 * `pve-enterprise.sources`); it answers only a host with an active subscription (apt's
 * credentials in `/etc/apt/auth.conf.d/pve.conf`, written by pve-manager when a key is set).
 */
export const ENTERPRISE_URL = "https://enterprise.proxmox.com/debian/pve";
export const ENTERPRISE_SOURCES_NAME = "pve-enterprise.sources";

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

export function desiredEnterpriseSources(): string {
  return [
    "Types: deb",
    `URIs: ${ENTERPRISE_URL}`,
    "Suites: trixie",
    "Components: pve-enterprise",
    `Signed-By: ${KEYRING_PATH}`,
    "",
  ].join("\n");
}

/**
 * Which Proxmox repository the host must use, decided on what is true on the host: its
 * subscription as Proxmox reads it (`pvesh get /nodes/<node>/subscription`). Active → the
 * enterprise repository, no-subscription disabled; anything else, or no Proxmox VE yet (no
 * pvesh: a fresh host) → no-subscription, enterprise disabled. So InstallProxmoxRepository and
 * ApplySubscription aim at the same goal on a re-onboarding and never undo each other.
 */
export type RepositoryChoice = "no-subscription" | "enterprise";
export function chooseRepository(subscriptionStatus: string | null): RepositoryChoice {
  return subscriptionStatus === "active" ? "enterprise" : "no-subscription";
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
    `if [ -s ${LISTS_DIR}/${shQuote(listFileName(ENTERPRISE_URL))} ]; then echo enterprise-lists=present; else echo enterprise-lists=missing; fi`,
    // Only the status is kept (grep -o): the answer also holds the key, which must not be logged.
    `if [ -d /etc/pve ] && command -v pvesh > /dev/null 2>&1; then echo "subscription=$(pvesh get /nodes/"$(uname -n)"/subscription --output-format json 2>/dev/null | grep -o '"status" *: *"[a-z]*"' | head -n 1 | sed 's/.*"\\([a-z]*\\)"$/\\1/')"; else echo subscription=; fi`,
  ].join("\n");
}

export type RepositoryFacts = {
  /** Fingerprints of the keys the keyring holds; null when it is missing or gpg is not installed. */
  keyringFingerprints: string[] | null;
  /** File name (`sources.list` for the main file) → content. */
  files: Map<string, string>;
  listsPresent: boolean;
  enterpriseListsPresent: boolean;
  /** The host's subscription status as Proxmox reads it; null without Proxmox VE or an answer. */
  subscriptionStatus: string | null;
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
    enterpriseListsPresent: /^enterprise-lists=present$/m.test(tail),
    subscriptionStatus: /^subscription=([a-z]+)$/m.exec(tail)?.[1] ?? null,
  };
}

const ENTERPRISE = /enterprise\.proxmox\.com/;

/** A deb822 file with every stanza naming enterprise.proxmox.com (or `names`) set to `Enabled: no`. */
export function disableDeb822(
  text: string,
  names: (stanza: string) => boolean = (stanza) =>
    /^URIs:.*enterprise\.proxmox\.com/im.test(stanza),
): string {
  const stanzas = text.split(/(\n[ \t]*\n)/);
  return stanzas
    .map((stanza) => {
      if (/^\s*$/.test(stanza) || !names(stanza)) return stanza;
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

/** A deb822 stanza of the Proxmox VE no-subscription repository. */
function namesNoSubscription(stanza: string): boolean {
  return (
    /^URIs:.*download\.proxmox\.com\/debian\/pve/im.test(stanza) &&
    /^Components:.*\bpve-no-subscription\b/im.test(stanza)
  );
}

/** One-line entries of the no-subscription repository commented out; null = nothing else left. */
function disableNoSubscriptionOneLine(text: string): string | null {
  let others = 0;
  const out = text.split("\n").map((line) => {
    const active = line.replace(/#.*$/, "").trim();
    if (!active) return line;
    if (/download\.proxmox\.com\/debian\/pve\s.*\bpve-no-subscription\b/.test(active))
      return `# disabled by CluPilot (the host has a subscription): ${line}`;
    others += 1;
    return line;
  });
  return others === 0 ? null : out.join("\n");
}

/**
 * The enterprise goal (an active subscription): `pve-enterprise.sources` exactly as Proxmox VE 9
 * writes it, every no-subscription entry disabled (the console's own file keeps its content
 * with `Enabled: no`, so switching back is one line), other enterprise entries (Ceph's) disabled
 * as before, and apt's index of the enterprise repository present.
 */
function planEnterprise(facts: RepositoryFacts, keyFingerprint: string): RepositoryPlan {
  const changes: FileChange[] = [];
  const desired = desiredEnterpriseSources();
  if (facts.files.get(ENTERPRISE_SOURCES_NAME) !== desired)
    changes.push({ kind: "write", name: ENTERPRISE_SOURCES_NAME, content: desired });
  for (const [name, content] of facts.files) {
    if (name === ENTERPRISE_SOURCES_NAME) continue;
    if (name !== "sources.list" && !SOURCE_FILE_NAME.test(name)) continue;
    if (name.endsWith(".sources")) {
      const next = disableDeb822(
        content,
        (stanza) =>
          namesNoSubscription(stanza) || /^URIs:.*enterprise\.proxmox\.com/im.test(stanza),
      );
      if (next !== content) changes.push({ kind: "write", name, content: next });
      continue;
    }
    const withoutEnterprise = disableOneLine(content);
    const next =
      withoutEnterprise === null ? null : disableNoSubscriptionOneLine(withoutEnterprise);
    if (next === null && name !== "sources.list")
      changes.push({
        kind: "remove",
        name,
        reason: "only Proxmox repositories the host does not use",
      });
    else if (next !== null && next !== content)
      changes.push({ kind: "write", name, content: next });
  }
  const fetchKeyring = !(facts.keyringFingerprints ?? []).includes(keyFingerprint.toUpperCase());
  return {
    fetchKeyring,
    changes,
    update: fetchKeyring || changes.length > 0 || !facts.enterpriseListsPresent,
  };
}

/** The goal and what it takes to reach it; an empty plan = the goal holds, touch nothing. */
export function planRepository(
  facts: RepositoryFacts,
  repositoryUrl: string,
  keyFingerprint: string,
  choice: RepositoryChoice = chooseRepository(facts.subscriptionStatus),
): RepositoryPlan {
  if (choice === "enterprise") return planEnterprise(facts, keyFingerprint);
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

/** One apt-get update waits at most this long for a lock; the job tries again until the bound. */
const LOCK_WAIT_PER_ATTEMPT_SECONDS = 10;
const LOCK_RETRY_SECONDS = 5;

/**
 * The update job's body. apt waits for the dpkg lock itself (`DPkg::Lock::Timeout`), but some
 * apt versions take the lists lock (`/var/lib/apt/lists/lock`) without waiting; so an update
 * refused by a lock is tried again, naming the holder on its own line (the phase line), until
 * `lockSeconds` have passed. Anything else ends the job with apt's exit status.
 */
export function aptUpdateJobBody(lockSeconds: number): string {
  const bound = Math.max(0, Math.floor(lockSeconds));
  const perAttempt = Math.min(LOCK_WAIT_PER_ATTEMPT_SECONDS, Math.floor(bound / 2));
  return [
    "t=$(mktemp) || exit 1",
    "trap 'rm -f \"$t\"' EXIT",
    "start=$SECONDS",
    "while :; do",
    `  ${aptUpdateCommand(perAttempt)} 2>&1 | tee "$t"`,
    "  rc=${PIPESTATUS[0]}",
    '  if [ "$rc" -eq 0 ]; then exit 0; fi',
    `  held=$(sed -n 's/.*Could not get lock \\([^ ]*\\)\\. It is held by \\(process [0-9]* ([^)]*)\\).*/\\1 is held by \\2/p' "$t" | tail -n 1)`,
    `  if [ -z "$held" ] && grep -q 'Could not get lock' "$t"; then held="another process holds it"; fi`,
    `  if [ -z "$held" ] || [ $((SECONDS - start)) -ge ${bound} ]; then exit "$rc"; fi`,
    `  echo "waiting for apt's lock: $held ($((SECONDS - start)) s of ${bound} s)"`,
    `  sleep ${LOCK_RETRY_SECONDS}`,
    "done",
    "",
  ].join("\n");
}

const UPDATE_JOB_NAME = "apt-update";
/** apt-get update on a slow mirror; the dpkg lock's wait comes out of it (jobLockSeconds). */
const UPDATE_DEADLINE_SECONDS = 600;
const CONFIGURED = "Proxmox no-subscription repository configured; apt-get update succeeded";
const CONFIGURED_ENTERPRISE =
  "the host has an active subscription: Proxmox enterprise repository configured, no-subscription disabled; apt-get update succeeded";

/** The goal as the facts show it: nothing left to fetch, write or update. */
export function judgeRepository(
  facts: RepositoryFacts,
  repositoryUrl: string,
  keyFingerprint: string,
  choice: RepositoryChoice = chooseRepository(facts.subscriptionStatus),
): GoalCheck {
  const plan = planRepository(facts, repositoryUrl, keyFingerprint, choice);
  if (!plan.update)
    return { holds: true, detail: choice === "enterprise" ? CONFIGURED_ENTERPRISE : CONFIGURED };
  const indexed = choice === "enterprise" ? facts.enterpriseListsPresent : facts.listsPresent;
  const missing = [
    ...(plan.fetchKeyring ? ["the Proxmox archive keyring is not installed"] : []),
    ...plan.changes.map((c) => `apt source ${c.name} still needs changing`),
    ...(indexed
      ? []
      : [
          choice === "enterprise"
            ? `apt fetched no index for ${ENTERPRISE_URL} trixie`
            : `apt fetched no index for ${repositoryUrl} trixie (check the repository URL)`,
        ]),
  ];
  return { holds: false, missing: missing.join("; ") };
}

/**
 * `apt-get update` as a detached remote job (remote-job.ts): it takes seconds on a good mirror
 * and minutes on a bad one, and waits for the dpkg lock on a fresh machine — none of it in a
 * worker slot. Its `prepare` writes the key and the source files first (seconds, and their
 * refusals have their own reasons), from the same probe the goal was judged on.
 */
export function updateJob(
  pin: KeyringPin,
  repositoryUrl: string,
  keyLockSeconds: number,
  updateLockSeconds: number,
): RemoteJob<RepositoryFacts, HostServices> {
  return {
    name: UPDATE_JOB_NAME,
    step: INSTALL_PROXMOX_REPOSITORY,
    what: "apt-get update",
    deadlineSeconds: UPDATE_DEADLINE_SECONDS,
    probe: repositoryProbe(repositoryUrl),
    parse: parseRepositoryProbe,
    goal: (facts) => judgeRepository(facts, repositoryUrl, pin.fingerprint),
    prepare: (ctx, facts) =>
      writeKeyAndSources(
        ctx,
        planRepository(facts, repositoryUrl, pin.fingerprint),
        pin,
        keyLockSeconds,
      ),
    body: () => ({ body: aptUpdateJobBody(updateLockSeconds) }),
  };
}

export async function writeKeyAndSources(
  ctx: StepContext<HostServices>,
  plan: RepositoryPlan,
  pin: KeyringPin,
  lockBound: number,
): Promise<Outcome | null> {
  const exec = visitShell(ctx);
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
  return null;
}

/**
 * Goal: the Proxmox no-subscription repository for trixie configured (deb822, signed by the
 * Proxmox archive keyring), the enterprise repository disabled, and `apt-get update` succeeded
 * (the repository's index is present). When all of that holds, nothing is touched.
 *
 * The key and the source files are written in the visit (the job's `prepare`); `apt-get
 * update` then runs as a detached job the later visits watch.
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
  const url = config.proxmoxRepositoryUrl;
  const lockBound = config.aptLockTimeoutSeconds;
  const updateLock = jobLockSeconds(lockBound, UPDATE_DEADLINE_SECONDS);
  return {
    name: INSTALL_PROXMOX_REPOSITORY,
    // Key download (180 s, with its own wait for the lock), then the update job and its wait.
    maxDuration: () => 180 + lockBound + UPDATE_DEADLINE_SECONDS + 60,
    visit: (ctx) =>
      withPermanentSshFailures(async () =>
        withAptAdvice(
          await visitRemoteJob(ctx, updateJob(pin, url, lockBound, updateLock)),
          updateLock,
        ),
      ),
    abort: async (ctx) => {
      ctx.log(`abort: the apt-get update job was ${await abortRemoteJob(ctx, UPDATE_JOB_NAME)}`);
    },
  };
}
