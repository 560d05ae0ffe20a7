import type { Step } from "@/lib/pipeline/step";
import { sh } from "@/lib/ssh";
import { aptLockOption, withAptAdvice } from "./apt-failure";
import {
  aptInstall,
  isPresent,
  jobLockSeconds,
  packageStatesCommand,
  parsePackageStates,
} from "./install-proxmox-kernel";
import { isProxmoxKernel } from "./reboot-into-pve-kernel";
import {
  abortRemoteJob,
  visitRemoteJob,
  type GoalCheck,
  type RemoteJob,
} from "../remote-job/remote-job";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";

/** What the Proxmox VE 9 "Install on Debian 13" guide installs. */

export const INSTALL_PROXMOX_VE = "InstallProxmoxVe";
export const PVE_PACKAGES = ["proxmox-ve", "postfix", "open-iscsi", "chrony"] as const;

/**
 * What the guide removes afterwards: the Debian kernel (meta package and image) — Proxmox
 * ships its own and a Debian kernel update would otherwise become the default boot entry —
 * and os-prober, which would list VM disks as boot entries.
 */
export const REMOVE_PATTERNS = ["linux-image-amd64", "linux-image-6.12*", "os-prober"] as const;

const SEPARATOR = "--clupilot--";

export const PVE_PROBE = [
  packageStatesCommand([...PVE_PACKAGES, ...REMOVE_PATTERNS]),
  `echo ${SEPARATOR}`,
  "uname -r",
  `echo ${SEPARATOR}`,
  "hostname -f 2>/dev/null || hostname",
].join("\n");

export type PveFacts = {
  states: Map<string, string>;
  runningKernel: string;
  fqdn: string;
};

export function parsePveProbe(stdout: string): PveFacts {
  const [packages = "", kernel = "", fqdn = ""] = stdout.split(`${SEPARATOR}\n`);
  return {
    states: parsePackageStates(packages),
    runningKernel: kernel.trim(),
    fqdn: fqdn.trim(),
  };
}

const REMOVE_MATCHERS = REMOVE_PATTERNS.map(
  (pattern) => new RegExp(`^${pattern.replace(/[.+]/g, "\\$&").replace(/\*/g, ".*")}$`),
);

/** Installed packages that the guide removes (exact names: apt fails on a glob matching nothing). */
export function packagesToRemove(states: Map<string, string>): string[] {
  return [...states.entries()]
    .filter(([name, status]) => isPresent(status) && REMOVE_MATCHERS.some((re) => re.test(name)))
    .map(([name]) => name)
    .sort();
}

export function missingPackages(states: Map<string, string>): string[] {
  return PVE_PACKAGES.filter((name) => states.get(name) !== "installed");
}

export function judgePve(facts: PveFacts): GoalCheck {
  const missing = missingPackages(facts.states);
  const leftover = packagesToRemove(facts.states);
  if (missing.length === 0 && leftover.length === 0)
    return { holds: true, detail: `${PVE_PACKAGES.join(", ")} installed; Debian kernel removed` };
  const parts = [
    ...(missing.length > 0 ? [`${missing.join(", ")} not installed`] : []),
    ...(leftover.length > 0 ? [`${leftover.join(", ")} still installed`] : []),
  ];
  return { holds: false, missing: parts.join("; ") };
}

const HOSTNAME =
  /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/**
 * The job: preseed postfix as "Local only" (otherwise its debconf question waits for an answer
 * that never comes over SSH), install, then remove the Debian kernel — only decided while the
 * Proxmox kernel runs (apt's kernel prerm refuses to remove the running kernel, and rightly).
 */
export function planPveJob(
  facts: PveFacts,
  lockSeconds: number,
): { body: string } | { refuse: string } {
  const remove = packagesToRemove(facts.states);
  if (
    remove.some((name) => name.startsWith("linux-image")) &&
    !isProxmoxKernel(facts.runningKernel)
  ) {
    return {
      refuse:
        `the host runs kernel ${facts.runningKernel || "(unknown)"}, not a Proxmox kernel, so the Debian kernel ` +
        "cannot be removed yet; RebootIntoPveKernel must boot the Proxmox kernel first — check the boot entry and Retry",
    };
  }
  const selections = [
    "postfix postfix/main_mailer_type select Local only",
    // A host-supplied name goes into debconf only when it is a plain host name.
    ...(HOSTNAME.test(facts.fqdn) ? [`postfix postfix/mailname string ${facts.fqdn}`] : []),
  ];
  const lines = [
    sh`printf '%s\\n' ${selections} | debconf-set-selections`,
    `${aptInstall(lockSeconds)} ${PVE_PACKAGES.join(" ")}`,
  ];
  if (remove.length > 0)
    lines.push(`apt-get remove -y ${aptLockOption(lockSeconds)} ${sh`${remove}`}`);
  return { body: `set -e\n${lines.join("\n")}\n` };
}

const PVE_JOB_NAME = "install-proxmox-ve";

export const pveJob = (deadlineSeconds: number, lockSeconds: number): RemoteJob<PveFacts> => ({
  name: PVE_JOB_NAME,
  step: INSTALL_PROXMOX_VE,
  what: "installing Proxmox VE",
  deadlineSeconds,
  probe: PVE_PROBE,
  parse: parsePveProbe,
  goal: judgePve,
  body: (facts) => planPveJob(facts, lockSeconds),
});

/**
 * Goal: proxmox-ve, postfix (local only), open-iscsi and chrony installed; the Debian kernel
 * (`linux-image-amd64`, `linux-image-6.12*`) and os-prober removed. Runs after the host booted
 * the Proxmox kernel; apt runs as a detached remote job.
 */
export function installProxmoxVe(options: { deadlineSeconds?: number } = {}): Step<HostServices> {
  const deadlineSeconds = options.deadlineSeconds ?? 40 * 60;
  return {
    name: INSTALL_PROXMOX_VE,
    maxDuration: () => deadlineSeconds + 600,
    visit: (ctx) =>
      withPermanentSshFailures(async () => {
        const lock = jobLockSeconds(ctx.services.config.aptLockTimeoutSeconds, deadlineSeconds);
        return withAptAdvice(await visitRemoteJob(ctx, pveJob(deadlineSeconds, lock)), lock);
      }),
    abort: async (ctx) => {
      ctx.log(`abort: the apt job was ${await abortRemoteJob(ctx, PVE_JOB_NAME)}`);
    },
  };
}
