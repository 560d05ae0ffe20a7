import { fail, type Outcome } from "@/lib/pipeline/step";

/**
 * apt and the dpkg lock. A fresh Debian machine often runs apt-daily / unattended-upgrades in
 * its first minutes; every apt command the console sends waits for the lock (bounded) instead
 * of failing at once, and a failure is explained by its cause, each with its own advice.
 */

/** `-o DPkg::Lock::Timeout=N`: apt waits up to N s for the dpkg lock (apt ≥ 1.9.11). */
export function aptLockOption(seconds: number): string {
  return `-o DPkg::Lock::Timeout=${Math.max(0, Math.floor(seconds))}`;
}

export type LockHolder = { pid: number; name: string };

export type AptFailureCause =
  | { kind: "lock"; holder: LockHolder | null }
  | { kind: "unreachable" }
  | { kind: "signature" }
  | { kind: "broken" }
  | { kind: "unknown" };

/**
 * apt's own wording (apt 3.0, Debian 13): apt-pkg/contrib/fileutl.cc ("Could not get lock %s.
 * It is held by process %d (%s)"), apt-pkg/deb/debsystem.cc ("Unable to acquire the dpkg
 * frontend lock (%s), is another process using it?", "Waiting for cache lock: %s", "dpkg was
 * interrupted, you must manually run '%s' to correct the problem."), apt-pkg/acquire-item.cc
 * and methods/ (fetch, resolve and connect errors), apt-pkg/acquire-item.cc and sqv/gpgv
 * (signatures), apt-private/private-install.cc (broken packages).
 */
const LOCK = [
  /Could not get lock \S+/,
  /Unable to acquire the dpkg frontend lock/,
  /Unable to lock (?:the administration )?directory/,
];
const SIGNATURE = [
  /NO_PUBKEY/,
  /public key is not available/,
  /is not signed\./,
  /GPG error/,
  /Missing key [0-9A-F]+, which is needed to verify signature/,
  /OpenPGP signature verification failed/,
  /(?:BADSIG|EXPKEYSIG|REVKEYSIG)/,
  /The repository '[^']+' is no longer signed/,
];
const UNREACHABLE = [
  /Temporary failure resolving/,
  /Could not resolve '/,
  /Could not connect to/,
  /Unable to connect to/,
  /Connection (?:failed|timed out|refused)/,
  /Failed to fetch \S+\s+\d{3}\s/,
  /Unable to fetch some archives/,
  /Some index files failed to download/,
  /does not have a Release file/,
  /Unable to locate package/,
];
const BROKEN = [
  /you have held broken packages/,
  /have unmet dependencies/,
  /dpkg was interrupted/,
  /Sub-process \/usr\/bin\/dpkg returned an error code/,
  /Errors were encountered while processing/,
  /Unmet dependencies\. Try 'apt --fix-broken install'/,
];

const HOLDER = /It is held by process (\d+) \(([^)]*)\)/;

const WAITING = /Waiting for cache lock: [^\n⏎]*/g;

/**
 * The cause of a failed apt command, from its output (stdout and stderr together). apt's
 * "Waiting for cache lock" progress lines only say it waited: an apt that got the lock and
 * then failed otherwise is judged by that failure; one still waiting when it was stopped
 * failed on the lock.
 */
export function classifyAptFailure(output: string): AptFailureCause {
  const final = output.replace(WAITING, "");
  const has = (patterns: RegExp[]) => patterns.some((re) => re.test(final));
  const lock = (): AptFailureCause => {
    // The last holder named is the one that outlasted the wait.
    const named = [...output.matchAll(new RegExp(HOLDER.source, "g"))].pop();
    return { kind: "lock", holder: named ? { pid: Number(named[1]), name: named[2]! } : null };
  };
  if (has(LOCK)) return lock();
  if (has(SIGNATURE)) return { kind: "signature" };
  if (has(UNREACHABLE)) return { kind: "unreachable" };
  if (has(BROKEN)) return { kind: "broken" };
  if (/Waiting for cache lock/.test(output)) return lock();
  return { kind: "unknown" };
}

export function describeHolder(holder: LockHolder | null): string {
  return holder ? `process ${holder.pid} (${holder.name})` : "another process";
}

/** What to do, per cause. Never "kill it" or "delete the lock": that breaks dpkg's database. */
export function aptAdvice(cause: AptFailureCause, lockTimeoutSeconds: number): string {
  switch (cause.kind) {
    case "lock":
      return (
        `the dpkg lock is held by ${describeHolder(cause.holder)} for longer than the ` +
        `${lockTimeoutSeconds} s apt waited — on a fresh machine usually apt-daily or ` +
        "unattended-upgrades; let it finish (see it with `ps -fp " +
        `${cause.holder?.pid ?? "<pid>"}\`), never delete the lock file, then Retry`
      );
    case "unreachable":
      return "the host cannot reach a package repository: check the host's DNS and internet access (or the mirror and the repository URL), then Retry";
    case "signature":
      return "apt could not verify a repository's signature: check the keyring its Signed-By names and the host's clock, then Retry";
    case "broken":
      return "the host's package system is broken: run `dpkg --configure -a` and `apt-get -f install` on the host, fix what they name, then Retry";
    case "unknown":
      return "fix what apt's output names on the host, then Retry";
  }
}

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

/** `<what> failed: <apt's errors> — <advice for the cause>`. */
export function explainAptFailure(
  what: string,
  output: { stdout: string; stderr: string },
  lockTimeoutSeconds: number,
): string {
  const cause = classifyAptFailure(`${output.stdout}\n${output.stderr}`);
  return `${what} failed: ${aptErrors(output.stderr)} — ${aptAdvice(cause, lockTimeoutSeconds)}`;
}

/**
 * A remote apt job's failure (lib/steps/remote-job/remote-job.ts ends it with generic advice) gets
 * the advice for its cause instead; reasons whose cause is unknown stay as they are.
 */
export function withAptAdvice(outcome: Outcome, lockTimeoutSeconds: number): Outcome {
  if (outcome.kind !== "fail") return outcome;
  const cause = classifyAptFailure(outcome.reason);
  if (cause.kind === "unknown") return outcome;
  const facts = outcome.reason
    .replace(/ — fix what the output names on the host.*$/, "")
    .replace(/\. Check the host \(network, apt mirrors\) and Retry$/, "");
  return fail(`${facts} — ${aptAdvice(cause, lockTimeoutSeconds)}`);
}
