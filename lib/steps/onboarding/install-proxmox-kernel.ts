import type { Step } from "@/lib/pipeline/step";
import { sh } from "@/lib/ssh";
import { aptLockOption, withAptAdvice } from "./apt-failure";
import {
  abortRemoteJob,
  visitRemoteJob,
  type GoalCheck,
  type RemoteJob,
} from "../remote-job/remote-job";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";

/**
 * Package states as dpkg knows them: `name → db:Status-Status` (`installed`, `config-files`,
 * `half-installed`, …). Patterns (`linux-image-6.12*`) list every matching package dpkg has
 * heard of, also removed ones, so the status, not the presence of a line, says "installed".
 */

export const INSTALL_PROXMOX_KERNEL = "InstallProxmoxKernel";
export function packageStatesCommand(patterns: readonly string[]): string {
  return sh`dpkg-query -W -f='\${Package}\\t\${db:Status-Status}\\n' ${patterns} 2>/dev/null; true`;
}

export function parsePackageStates(stdout: string): Map<string, string> {
  const states = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const [name, status] = line.trim().split("\t");
    if (name && status) states.set(name, status.trim());
  }
  return states;
}

/** dpkg knows the package and it is not merely remembered (removed, config files left). */
export function isPresent(status: string | undefined): boolean {
  return status !== undefined && status !== "not-installed" && status !== "config-files";
}

/**
 * apt's options for unattended work: no prompts, keep changed config files, no debconf UI, and
 * wait up to `lockSeconds` for the dpkg lock (apt prints "Waiting for cache lock: … held by
 * process N (name)" meanwhile: the job's phase line).
 */
export function aptInstall(lockSeconds: number): string {
  return [
    "export DEBIAN_FRONTEND=noninteractive",
    `apt-get install -y ${aptLockOption(lockSeconds)} -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold`,
  ].join("\n");
}

/**
 * How long a job's apt waits for the dpkg lock: the configured bound, but never more than half
 * the job's own deadline (the install itself needs the rest).
 */
export function jobLockSeconds(configured: number, deadlineSeconds: number): number {
  return Math.max(0, Math.min(configured, Math.floor(deadlineSeconds / 2)));
}

export const KERNEL_PACKAGE = "proxmox-default-kernel";
const KERNEL_JOB_NAME = "install-proxmox-kernel";
export const KERNEL_PROBE = packageStatesCommand([KERNEL_PACKAGE]);
export const kernelJobBody = (lockSeconds: number) =>
  `${aptInstall(lockSeconds)} ${KERNEL_PACKAGE}\n`;

export function judgeKernelInstalled(states: Map<string, string>): GoalCheck {
  const status = states.get(KERNEL_PACKAGE);
  return status === "installed"
    ? { holds: true, detail: `${KERNEL_PACKAGE} installed` }
    : {
        holds: false,
        missing: `dpkg reports ${KERNEL_PACKAGE} as ${status ?? "not installed"}`,
      };
}

export const kernelJob = (
  deadlineSeconds: number,
  lockSeconds: number,
): RemoteJob<Map<string, string>> => ({
  name: KERNEL_JOB_NAME,
  step: INSTALL_PROXMOX_KERNEL,
  what: `installing ${KERNEL_PACKAGE}`,
  deadlineSeconds,
  probe: KERNEL_PROBE,
  parse: parsePackageStates,
  goal: judgeKernelInstalled,
  body: () => ({ body: kernelJobBody(lockSeconds) }),
});

/**
 * Goal: `proxmox-default-kernel` is installed (dpkg says `installed`), so the next boot can
 * run the Proxmox kernel. apt runs as a detached remote job: the visit only starts it and
 * polls; the phase line shows apt's last output line.
 */
export function installProxmoxKernel(
  options: { deadlineSeconds?: number } = {},
): Step<HostServices> {
  const deadlineSeconds = options.deadlineSeconds ?? 20 * 60;
  const name = KERNEL_JOB_NAME;
  return {
    name: INSTALL_PROXMOX_KERNEL,
    maxDuration: () => deadlineSeconds + 600,
    visit: (ctx) =>
      withPermanentSshFailures(async () => {
        const lock = jobLockSeconds(ctx.services.config.aptLockTimeoutSeconds, deadlineSeconds);
        return withAptAdvice(await visitRemoteJob(ctx, kernelJob(deadlineSeconds, lock)), lock);
      }),
    abort: async (ctx) => {
      ctx.log(`abort: the apt job was ${await abortRemoteJob(ctx, name)}`);
    },
  };
}
