/**
 * Settings of the onboarding pipeline. Real defaults (Debian's and Proxmox's own URLs); the lab
 * and tests point them at the lab's image server.
 */
export type OnboardingConfig = {
  minMemoryMiB: number;
  minFreeDiskGiB: number;
  /** Debian 13 generic cloud image and its SHA512SUMS. */
  cloudImageUrl: string;
  cloudImageSumsUrl: string;
  /** The Proxmox archive keyring for trixie, and the no-subscription repository. */
  proxmoxKeyringUrl: string;
  proxmoxRepositoryUrl: string;
  /** How often long remote work (apt, template build, reboot) is polled. */
  pollSeconds: number;
  /** BuildVmTemplate's own deadline, under its 3600 s maxDuration. */
  templateBuildDeadlineSeconds: number;
  /** RebootIntoPveKernel's own deadline for the host to come back. */
  rebootDeadlineSeconds: number;
};

export function onboardingConfigFromEnv(
  env: Record<string, string | undefined> = process.env,
): OnboardingConfig {
  const number = (name: string, fallback: number) => {
    const value = env[name];
    if (value === undefined || value === "") return fallback;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0)
      throw new Error(`${name} must be a non-negative number, got "${value}"`);
    return parsed;
  };
  return {
    minMemoryMiB: number("CLUPILOT_MIN_MEMORY_MIB", 2048),
    minFreeDiskGiB: number("CLUPILOT_MIN_FREE_DISK_GIB", 16),
    cloudImageUrl:
      env.CLUPILOT_CLOUD_IMAGE_URL ??
      "https://cloud.debian.org/images/cloud/trixie/latest/debian-13-genericcloud-amd64.qcow2",
    cloudImageSumsUrl:
      env.CLUPILOT_CLOUD_IMAGE_SUMS_URL ??
      "https://cloud.debian.org/images/cloud/trixie/latest/SHA512SUMS",
    proxmoxKeyringUrl:
      env.CLUPILOT_PROXMOX_KEYRING_URL ??
      "https://enterprise.proxmox.com/debian/proxmox-archive-keyring-trixie.gpg",
    proxmoxRepositoryUrl:
      env.CLUPILOT_PROXMOX_REPOSITORY_URL ?? "http://download.proxmox.com/debian/pve",
    pollSeconds: number("CLUPILOT_POLL_SECONDS", 30),
    templateBuildDeadlineSeconds: number("CLUPILOT_TEMPLATE_BUILD_DEADLINE_SECONDS", 45 * 60),
    rebootDeadlineSeconds: number("CLUPILOT_REBOOT_DEADLINE_SECONDS", 15 * 60),
  };
}
