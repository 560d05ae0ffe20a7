import type { Step } from "@/lib/pipeline/step";
import { sh } from "@/lib/ssh";
import { abortRemoteJob, visitRemoteJob, type GoalCheck, type RemoteJob } from "./remote-job";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";

/**
 * Package states as dpkg knows them: `name → db:Status-Status` (`installed`, `config-files`,
 * `half-installed`, …). Patterns (`linux-image-6.12*`) list every matching package dpkg has
 * heard of, also removed ones, so the status, not the presence of a line, says "installed".
 */
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

/** apt's options for unattended work: no prompts, keep changed config files, no debconf UI. */
export const APT_INSTALL = [
  "export DEBIAN_FRONTEND=noninteractive",
  "apt-get install -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold",
].join("\n");

export const KERNEL_PACKAGE = "proxmox-default-kernel";
export const KERNEL_PROBE = packageStatesCommand([KERNEL_PACKAGE]);
export const KERNEL_JOB_BODY = `${APT_INSTALL} ${KERNEL_PACKAGE}\n`;

export function judgeKernelInstalled(states: Map<string, string>): GoalCheck {
  const status = states.get(KERNEL_PACKAGE);
  return status === "installed"
    ? { holds: true, detail: `${KERNEL_PACKAGE} installed` }
    : {
        holds: false,
        missing: `dpkg reports ${KERNEL_PACKAGE} as ${status ?? "not installed"}`,
      };
}

export const kernelJob = (deadlineSeconds: number): RemoteJob<Map<string, string>> => ({
  name: "install-proxmox-kernel",
  what: `installing ${KERNEL_PACKAGE}`,
  deadlineSeconds,
  probe: KERNEL_PROBE,
  parse: parsePackageStates,
  goal: judgeKernelInstalled,
  body: () => ({ body: KERNEL_JOB_BODY }),
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
  const job = kernelJob(deadlineSeconds);
  return {
    name: "InstallProxmoxKernel",
    maxDuration: () => deadlineSeconds + 600,
    visit: (ctx) => withPermanentSshFailures(() => visitRemoteJob(ctx, job)),
    abort: async (ctx) => {
      ctx.log(`abort: the apt job was ${await abortRemoteJob(ctx, job.name)}`);
    },
  };
}
