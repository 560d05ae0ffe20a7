import { describe, expect, it } from "vitest";
import { advance, fail } from "@/lib/pipeline/step";
import {
  aptAdvice,
  aptErrors,
  aptLockOption,
  classifyAptFailure,
  explainAptFailure,
  withAptAdvice,
} from "./apt-failure";

/**
 * apt's real messages. Format strings: apt's sources (salsa.debian.org/apt-team/apt):
 * apt-pkg/contrib/fileutl.cc GetLock ("Could not get lock %s. It is held by process %d (%s)"),
 * apt-pkg/deb/debsystem.cc ("Unable to acquire the dpkg frontend lock (%s), is another process
 * using it?", "Unable to lock the administration directory (%s), is another process using it?",
 * "dpkg was interrupted, you must manually run '%s' to correct the problem. "), cmdline output
 * as operators report it (apt 2.x–3.0): the unattended-upgrades holder ("unattended-upgr", the
 * 15-character comm), the lists lock of `apt update`, sqv's "Missing key" (Debian 13), gpgv's
 * NO_PUBKEY, the resolver's held broken packages.
 */
const LOCK_FRONTEND =
  "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 7141 (unattended-upgr)\n" +
  "N: Be aware that removing the lock file is not a solution and may break your system.\n" +
  "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?\n";
const LOCK_LISTS =
  "Reading package lists... Done\n" +
  "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 967 (apt)\n" +
  "N: Be aware that removing the lock file is not a solution and may break your system.\n" +
  "E: Unable to lock directory /var/lib/apt/lists/\n";
const LOCK_OLD =
  "E: Could not get lock /var/lib/dpkg/lock - open (11: Resource temporarily unavailable)\n" +
  "E: Unable to lock the administration directory (/var/lib/dpkg/), is another process using it?\n";
const UNREACHABLE =
  "W: Failed to fetch http://deb.debian.org/debian/dists/trixie/InRelease  Temporary failure resolving 'deb.debian.org'\n" +
  "W: Some index files failed to download. They have been ignored, or old ones used instead.\n";
const UNREACHABLE_INSTALL =
  "E: Failed to fetch http://download.proxmox.com/debian/pve/pool/pve-no-subscription/p/proxmox-default-kernel/proxmox-default-kernel_2.0.0_all.deb  Could not connect to download.proxmox.com:80 (212.224.123.70), connection timed out\n" +
  "E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?\n";
const SIGNATURE_SQV =
  "W: GPG error: http://download.proxmox.com/debian/pve trixie InRelease: Sub-process /usr/bin/sqv returned an error code (1), error message is: Missing key 24B30F06ECC1836A4E5EFECBA7BCD1420BFE778E, which is needed to verify signature.\n" +
  "E: The repository 'http://download.proxmox.com/debian/pve trixie InRelease' is not signed.\n";
const SIGNATURE_GPGV =
  "W: GPG error: http://download.proxmox.com/debian/pve bookworm InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 1140AF8F639E0C39\n" +
  "E: The repository 'http://download.proxmox.com/debian/pve bookworm InRelease' is not signed.\n";
const BROKEN =
  "Some packages could not be installed. This may mean that you have\n" +
  "The following packages have unmet dependencies:\n" +
  " proxmox-ve : Depends: pve-manager but it is not going to be installed\n" +
  "E: Unable to correct problems, you have held broken packages.\n";
const INTERRUPTED =
  "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem. \n";

describe("apt failures, by cause", () => {
  it("apt waits for the lock with DPkg::Lock::Timeout, in whole seconds", () => {
    expect(aptLockOption(300)).toBe("-o DPkg::Lock::Timeout=300");
    expect(aptLockOption(1.9)).toBe("-o DPkg::Lock::Timeout=1");
    expect(aptLockOption(-5)).toBe("-o DPkg::Lock::Timeout=0");
  });

  it("a held lock names its holder: frontend lock, lists lock, and the old wording without a holder", () => {
    expect(classifyAptFailure(LOCK_FRONTEND)).toEqual({
      kind: "lock",
      holder: { pid: 7141, name: "unattended-upgr" },
    });
    expect(classifyAptFailure(LOCK_LISTS)).toEqual({
      kind: "lock",
      holder: { pid: 967, name: "apt" },
    });
    expect(classifyAptFailure(LOCK_OLD)).toEqual({ kind: "lock", holder: null });
  });

  it("apt that waited for the lock, got it, then failed otherwise is judged by that failure", () => {
    const waitedThenOffline =
      "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1873 (apt-get)... 5s ⏎ " +
      UNREACHABLE_INSTALL;
    expect(classifyAptFailure(waitedThenOffline)).toEqual({ kind: "unreachable" });
    // Stopped while still waiting (a job given up on): the lock it waited for is the cause.
    expect(
      classifyAptFailure(
        "last output: Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1873 (apt-get)... 600s",
      ),
    ).toEqual({ kind: "lock", holder: { pid: 1873, name: "apt-get" } });
  });

  it("unreachable mirrors, signatures and broken packages each have their cause", () => {
    expect(classifyAptFailure(UNREACHABLE).kind).toBe("unreachable");
    expect(classifyAptFailure(UNREACHABLE_INSTALL).kind).toBe("unreachable");
    expect(classifyAptFailure("E: Unable to locate package proxmox-ve\n").kind).toBe("unreachable");
    expect(classifyAptFailure(SIGNATURE_SQV).kind).toBe("signature");
    expect(classifyAptFailure(SIGNATURE_GPGV).kind).toBe("signature");
    expect(classifyAptFailure(BROKEN).kind).toBe("broken");
    expect(classifyAptFailure(INTERRUPTED).kind).toBe("broken");
    expect(classifyAptFailure("E: something apt never said before\n").kind).toBe("unknown");
  });

  it("each cause has its own advice; the lock's names the holder and never says to delete the lock", () => {
    const lock = aptAdvice(classifyAptFailure(LOCK_FRONTEND), 300);
    expect(lock).toBe(
      "the dpkg lock is held by process 7141 (unattended-upgr) for longer than the 300 s apt waited — " +
        "on a fresh machine usually apt-daily or unattended-upgrades; let it finish (see it with `ps -fp 7141`), " +
        "never delete the lock file, then Retry",
    );
    const advice = (["unreachable", "signature", "broken", "unknown"] as const).map((kind) =>
      aptAdvice({ kind }, 300),
    );
    expect(new Set([lock, ...advice]).size).toBe(5);
    expect(advice[0]).toMatch(/DNS and internet access/);
    expect(advice[1]).toMatch(/signature.*Signed-By/);
    expect(advice[2]).toMatch(/dpkg --configure -a/);
  });

  it("a reason is apt's E: lines (W: when there are none) and the advice", () => {
    expect(aptErrors(UNREACHABLE)).toBe(
      "Failed to fetch http://deb.debian.org/debian/dists/trixie/InRelease  Temporary failure resolving 'deb.debian.org'; Some index files failed to download. They have been ignored, or old ones used instead.",
    );
    expect(explainAptFailure("apt-get update", { stdout: "", stderr: LOCK_FRONTEND }, 60)).toBe(
      "apt-get update failed: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 7141 (unattended-upgr); " +
        "Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it? — " +
        aptAdvice({ kind: "lock", holder: { pid: 7141, name: "unattended-upgr" } }, 60),
    );
  });

  it("a remote job's generic advice is replaced by its cause's; unknown causes and successes pass through", () => {
    const generic =
      "installing proxmox-ve failed (exit 100): E: Unable to correct problems, you have held broken packages. — fix what the output names on the host (a running apt, the network, the mirrors), then Retry";
    expect(withAptAdvice(fail(generic), 300)).toEqual(
      fail(
        `installing proxmox-ve failed (exit 100): E: Unable to correct problems, you have held broken packages. — ${aptAdvice({ kind: "broken" }, 300)}`,
      ),
    );
    const unknown = fail("installing proxmox-ve died without reporting a result");
    expect(withAptAdvice(unknown, 300)).toEqual(unknown);
    expect(withAptAdvice(advance("ok"), 300)).toEqual(advance("ok"));
  });
});
