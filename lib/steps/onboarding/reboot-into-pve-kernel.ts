import { pause } from "@/lib/pipeline/pause";
import { advance, fail, pollUntil, type Step, type StepContext } from "@/lib/pipeline/step";
import {
  HostKeyMismatchError,
  SshChannelError,
  SshCommandTimeoutError,
  SshConnectError,
  SshAuthError,
  SshError,
  type SshSession,
} from "@/lib/ssh";
import type { OnboardingConfig } from "./config";
import { KERNEL_PACKAGE, packageStatesCommand, parsePackageStates } from "./install-proxmox-kernel";
import type { Connect, HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { alreadyInPlace } from "../../pipeline/already-in-place";

const SEPARATOR = "--clupilot--";

/** Proxmox kernels name themselves `<version>-pve` (`6.17.2-1-pve`); Debian's end in `-amd64`. */
export function isProxmoxKernel(release: string): boolean {
  return /-pve$/.test(release.trim());
}

/**
 * The running kernel, the boot id (a new UUID on every boot: it tells "rebooted" from "not
 * gone down yet") and whether a Proxmox kernel is installed to boot into.
 */
export const REBOOT_PROBE = [
  "uname -r",
  `echo ${SEPARATOR}`,
  "cat /proc/sys/kernel/random/boot_id 2>/dev/null",
  `echo ${SEPARATOR}`,
  packageStatesCommand([KERNEL_PACKAGE]),
].join("\n");

/**
 * Detached, with a short delay, so this command returns its exit status over SSH (and the
 * visit commits its record) before sshd goes away; `setsid` keeps the session teardown from
 * taking the reboot with it.
 */
export const REBOOT_COMMAND =
  "nohup setsid sh -c 'sleep 1; systemctl reboot' < /dev/null > /dev/null 2>&1 &\necho reboot-requested";

export type HostAnswer = {
  kernel: string;
  bootId: string | null;
  kernelPackageInstalled: boolean;
};

export function parseRebootProbe(stdout: string): HostAnswer {
  const [kernel = "", bootId = "", packages = ""] = stdout.split(`${SEPARATOR}\n`);
  return {
    kernel: kernel.trim(),
    bootId: bootId.trim() || null,
    kernelPackageInstalled: parsePackageStates(packages).get(KERNEL_PACKAGE) === "installed",
  };
}

/** What the run context keeps: THIS run asked for the reboot, when, and what it saw since. */
export type RebootRecord = {
  requestedAt: string;
  deadlineAt: string;
  bootIdBefore: string | null;
  kernelBefore: string;
  lastSeen: string;
};

export type Seen = { kind: "answered"; answer: HostAnswer } | { kind: "unreachable"; what: string };

export type RebootDecision =
  | { kind: "advance"; detail: string }
  | { kind: "reboot" }
  | { kind: "poll"; lastSeen: string }
  | { kind: "fail"; reason: string }
  /** Unreachable without a reboot of ours pending: an ordinary transient error. */
  | { kind: "rethrow" };

export const REBOOT_CONTEXT_KEY = "rebootIntoPveKernel";

export function decideReboot(
  record: RebootRecord | null,
  seen: Seen,
  now: Date,
  deadlineSeconds: number,
): RebootDecision {
  // Running a Proxmox kernel → done, whoever rebooted: a visit after the reboot never reboots again.
  if (seen.kind === "answered" && isProxmoxKernel(seen.answer.kernel))
    return { kind: "advance", detail: `running ${seen.answer.kernel}` };

  if (record === null) {
    if (seen.kind === "unreachable") return { kind: "rethrow" };
    // Evidence before the destructive action: a reboot without a Proxmox kernel to boot
    // would only come back to the same Debian kernel.
    if (!seen.answer.kernelPackageInstalled)
      return {
        kind: "fail",
        reason: `the host runs ${seen.answer.kernel} and ${KERNEL_PACKAGE} is not installed, so a reboot would not change the kernel; InstallProxmoxKernel must succeed first`,
      };
    return { kind: "reboot" };
  }

  const waited = Math.round((now.getTime() - Date.parse(record.requestedAt)) / 1000);
  if (
    seen.kind === "answered" &&
    record.bootIdBefore !== null &&
    seen.answer.bootId !== null &&
    seen.answer.bootId !== record.bootIdBefore
  ) {
    return {
      kind: "fail",
      reason:
        `the host rebooted (after ${waited} s) but came back with kernel ${seen.answer.kernel}, not a Proxmox kernel; ` +
        "check the boot loader's default entry (GRUB) on the host's console, then Retry",
    };
  }
  const lastSeen =
    seen.kind === "unreachable"
      ? seen.what
      : `still answering with the old kernel ${seen.answer.kernel} (not rebooted yet)`;
  if (now.getTime() > Date.parse(record.deadlineAt)) {
    return {
      kind: "fail",
      reason:
        `the host did not come back with a Proxmox kernel within ${deadlineSeconds} s of the reboot ` +
        `(waited ${waited} s); last seen: ${lastSeen}. Check the host's console (boot loader, network), then Retry`,
    };
  }
  return { kind: "poll", lastSeen };
}

/** What an SSH failure while waiting says about the host, in the words of the fail reason. */
export function describeUnreachable(error: SshError): string {
  if (error instanceof SshConnectError) {
    switch (error.reason) {
      case "refused":
        return "connection refused";
      case "timeout":
        return "no SSH answer (timeout)";
      case "unreachable":
        return "host unreachable";
      case "closed":
        return "connection closed during the SSH handshake";
      default:
        return `connection failed (${error.message})`;
    }
  }
  if (error instanceof SshCommandTimeoutError) return "the command timed out";
  if (error instanceof SshChannelError) return "the connection was lost";
  return error.message;
}

/** How long one look for the rebooting host may take to connect, and how often it looks. */
const LOOK_CONNECT_MS = 5_000;
const LOOK_INTERVAL_MS = 1_000;

/**
 * The waiter of a reboot (docs/pipeline.md, "Waiting"): once a second, over the kept connection
 * while the host still answers on it (no new login), else by connecting with the pinned key,
 * read the boot id; a new one — or, without a boot id to compare, any answer after the host
 * was gone — means it is back, and the tick reads and decides. So does a changed host key or a
 * refused login, which the tick reports. Nothing runs on the host between two looks.
 */
export function waitForBoot(bootIdBefore: string | null, intervalMs = LOOK_INTERVAL_MS) {
  return async (connect: Connect, signal: AbortSignal): Promise<boolean> => {
    let wentAway = false;
    while (!signal.aborted) {
      let session: SshSession | null = null;
      try {
        session = await connect(LOOK_CONNECT_MS);
        const result = await session.exec(REBOOT_PROBE, { signal, timeoutMs: 10_000 });
        const bootId = result.code === 0 ? parseRebootProbe(result.stdout).bootId : null;
        if (bootIdBefore !== null && bootId !== null ? bootId !== bootIdBefore : wentAway)
          return true;
      } catch (error) {
        if (signal.aborted) return false;
        if (error instanceof HostKeyMismatchError || error instanceof SshAuthError) return true;
        wentAway = true;
      } finally {
        session?.close();
      }
      await pause(intervalMs, signal);
    }
    return false;
  };
}

/** Polls, with the worker looking for the host's return meanwhile. */
function pollForBoot(ctx: StepContext<HostServices>, bootIdBefore: string | null, phase: string) {
  return pollUntil(
    ctx.services.waiter("the host's return from its reboot", waitForBoot(bootIdBefore)),
    ctx.services.config.pollSeconds,
    phase,
  );
}

/**
 * Goal: the host runs the Proxmox kernel. Otherwise reboot it (detached), remember in the run
 * context that THIS run asked for it, and poll until SSH answers again — with the same pinned
 * host key (the SSH service refuses any other) — and a Proxmox kernel. While waiting, refused
 * and timed-out connections are the expected state, polled rather than thrown into the
 * engine's retry budget. Own deadline `rebootDeadlineSeconds`, under `maxDuration`.
 */
export function rebootIntoPveKernel(
  config: Pick<OnboardingConfig, "rebootDeadlineSeconds">,
  now: () => Date = () => new Date(),
): Step<HostServices> {
  const deadlineSeconds = config.rebootDeadlineSeconds;
  return {
    name: "RebootIntoPveKernel",
    maxDuration: () => deadlineSeconds + 300,
    visit: (ctx) =>
      withPermanentSshFailures(async () => {
        const record = ctx.context.get<RebootRecord>(REBOOT_CONTEXT_KEY) ?? null;
        let seen: Seen;
        try {
          const result = await ctx.services.exec(REBOOT_PROBE, {
            timeoutMs: 30_000,
            signal: ctx.signal,
          });
          if (result.code !== 0)
            throw new Error(
              `reading the kernel failed (exit ${result.code}): ${result.stderr.trim()}`,
            );
          seen = { kind: "answered", answer: parseRebootProbe(result.stdout) };
        } catch (error) {
          // A changed host key or refused credentials are never "still booting".
          if (!(error instanceof SshError) || error instanceof SshAuthError) throw error;
          if (record === null) throw error;
          seen = { kind: "unreachable", what: describeUnreachable(error) };
        }

        const decision = decideReboot(record, seen, now(), deadlineSeconds);
        switch (decision.kind) {
          case "advance":
            ctx.context.delete(REBOOT_CONTEXT_KEY);
            // No reboot asked by this run: the host was on the Proxmox kernel already.
            return record === null
              ? alreadyInPlace(ctx, decision.detail)
              : advance(decision.detail);
          case "fail":
            ctx.context.delete(REBOOT_CONTEXT_KEY);
            return fail(decision.reason);
          case "poll":
            ctx.context.set(REBOOT_CONTEXT_KEY, { ...record!, lastSeen: decision.lastSeen });
            return pollForBoot(
              ctx,
              record!.bootIdBefore,
              `waiting for the host: ${decision.lastSeen}`,
            );
          case "rethrow":
            throw new Error("unreachable host without a pending reboot"); // handled above
          case "reboot": {
            const answer = (seen as { kind: "answered"; answer: HostAnswer }).answer;
            const result = await ctx.services.exec(REBOOT_COMMAND, { timeoutMs: 30_000 });
            if (result.code !== 0 || !result.stdout.includes("reboot-requested"))
              throw new Error(
                `requesting the reboot failed (exit ${result.code}): ${result.stderr.trim()}`,
              );
            const at = now();
            ctx.context.set(REBOOT_CONTEXT_KEY, {
              requestedAt: at.toISOString(),
              deadlineAt: new Date(at.getTime() + deadlineSeconds * 1000).toISOString(),
              bootIdBefore: answer.bootId,
              kernelBefore: answer.kernel,
              lastSeen: `reboot requested (was running ${answer.kernel})`,
            } satisfies RebootRecord);
            ctx.log(
              `reboot requested; the host runs ${answer.kernel} and should come back with the Proxmox kernel`,
            );
            return pollForBoot(ctx, answer.bootId, "rebooting into the Proxmox kernel");
          }
        }
      }),
  };
}
