import { advance, fail, type Outcome, type Step } from "@/lib/pipeline/step";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { alreadyInPlace } from "../../pipeline/already-in-place";

/** The floors CheckOperatingSystem holds the host to (from OnboardingConfig). */
export type OsRequirements = { minMemoryMiB: number; minFreeDiskGiB: number };

const SEPARATOR = "--clupilot--";

/** One round trip for every fact the decision needs. */
export const OS_PROBE = [
  "cat /etc/os-release",
  `echo ${SEPARATOR}`,
  "uname -m",
  `echo ${SEPARATOR}`,
  "grep MemTotal /proc/meminfo",
  `echo ${SEPARATOR}`,
  "df -Pk /var | tail -n 1",
].join("; ");

export type OsFacts = {
  id: string | null;
  versionId: string | null;
  codename: string | null;
  prettyName: string | null;
  machine: string;
  memoryMiB: number | null;
  freeDiskGiB: number | null;
};

export function parseOsProbe(stdout: string): OsFacts {
  const [osRelease = "", machine = "", meminfo = "", df = ""] = stdout.split(SEPARATOR + "\n");
  const fields = new Map<string, string>();
  for (const line of osRelease.split("\n")) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (match?.[1] && match[2] !== undefined)
      fields.set(match[1], match[2].replace(/^"(.*)"$/, "$1"));
  }
  const memKiB = /MemTotal:\s+(\d+)\s+kB/.exec(meminfo)?.[1];
  const availKiB = df.trim().split(/\s+/)[3];
  return {
    id: fields.get("ID") ?? null,
    versionId: fields.get("VERSION_ID") ?? null,
    codename: fields.get("VERSION_CODENAME") ?? null,
    prettyName: fields.get("PRETTY_NAME") ?? null,
    machine: machine.trim(),
    memoryMiB: memKiB ? Math.floor(Number(memKiB) / 1024) : null,
    freeDiskGiB: availKiB && /^\d+$/.test(availKiB) ? Number(availKiB) / 1024 / 1024 : null,
  };
}

/** The decision, separate from SSH so each refusal can be tested on its own. */
export function judgeOperatingSystem(facts: OsFacts, required: OsRequirements): Outcome {
  const found = facts.prettyName ?? `${facts.id ?? "unknown OS"} ${facts.versionId ?? ""}`.trim();
  if (facts.id !== "debian" || facts.versionId !== "13") {
    return fail(
      `found ${found}; CluPilot onboards Debian 13 (trixie) only — reinstall the host with Debian 13 and retry`,
    );
  }
  if (facts.machine !== "x86_64") {
    return fail(`found a ${facts.machine || "unknown"} CPU; Proxmox VE needs x86_64 (amd64)`);
  }
  if (facts.memoryMiB === null || facts.memoryMiB < required.minMemoryMiB) {
    return fail(
      `found ${facts.memoryMiB ?? "unknown"} MiB of RAM; at least ${required.minMemoryMiB} MiB are needed for Proxmox VE and its templates`,
    );
  }
  if (facts.freeDiskGiB === null || facts.freeDiskGiB < required.minFreeDiskGiB) {
    return fail(
      `found ${facts.freeDiskGiB === null ? "unknown" : facts.freeDiskGiB.toFixed(1)} GiB free on /var; at least ${required.minFreeDiskGiB} GiB are needed — free space and retry`,
    );
  }
  return advance(
    `${found}, ${facts.machine}, ${facts.memoryMiB} MiB RAM, ${facts.freeDiskGiB.toFixed(0)} GiB free`,
  );
}

/** Goal: the host is Debian 13 on x86_64 with enough RAM and disk; anything else is refused. */
export function checkOperatingSystem(required: OsRequirements): Step<HostServices> {
  return {
    name: "CheckOperatingSystem",
    maxDuration: () => 300,
    visit: (ctx) =>
      withPermanentSshFailures(async () => {
        const result = await ctx.services.exec(OS_PROBE, { timeoutMs: 30_000 });
        if (result.code !== 0) {
          throw new Error(
            `reading the operating system facts failed (exit ${result.code}): ${result.stderr.trim()}`,
          );
        }
        const judged = judgeOperatingSystem(parseOsProbe(result.stdout), required);
        // A check only: when it passes, the host already is what onboarding needs.
        return judged.kind === "advance" ? alreadyInPlace(ctx, judged.detail ?? "") : judged;
      }),
  };
}
