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
  /** SHA-256 (hex) the downloaded keyring must have: the value Proxmox publishes. */
  proxmoxKeyringSha256: string;
  /** Fingerprint of the key the keyring must hold (`gpg --show-keys`). */
  proxmoxKeyringFingerprint: string;
  proxmoxRepositoryUrl: string;
  /** How long one apt/dpkg command waits for the dpkg lock (`DPkg::Lock::Timeout`). */
  aptLockTimeoutSeconds: number;
  /** How often long remote work (apt, template build, reboot) is polled. */
  pollSeconds: number;
  /** BuildVmTemplate's own deadline, under its 3600 s maxDuration. */
  templateBuildDeadlineSeconds: number;
  /** RebootIntoPveKernel's own deadline for the host to come back. */
  rebootDeadlineSeconds: number;
};

/**
 * SHA-256 of `proxmox-archive-keyring-trixie.gpg` as Proxmox publishes it: Proxmox VE
 * Administration Guide, "Package Repositories" → "SecureApt"
 * (https://pve.proxmox.com/pve-docs/pve-admin-guide.html#sysadmin_package_repositories, PVE 9;
 * the same value as the wiki's "Install Proxmox VE on Debian 13 Trixie"). The guide says
 * "sha512sum" in its prose but prints `sha256sum` and this 64-digit value.
 */
export const PROXMOX_TRIXIE_KEYRING_SHA256 =
  "136673be77aba35dcce385b28737689ad64fd785a797e57897589aed08db6e45";

/**
 * The "Proxmox Trixie Release Key" that keyring holds (`gpg --show-keys`; it also carries the
 * Bookworm key F4E136C67CDCE41AE6DE6FC81140AF8F639E0C39). Not printed in the guide; the
 * fingerprint Proxmox signs its trixie ISOs and repositories with.
 */
export const PROXMOX_TRIXIE_KEY_FINGERPRINT = "24B30F06ECC1836A4E5EFECBA7BCD1420BFE778E";

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
  const hex = (name: string, fallback: string, digits: number) => {
    const value = (env[name] ?? "").replace(/\s+/g, "") || fallback;
    if (!new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(value))
      throw new Error(`${name} must be ${digits} hexadecimal digits, got "${env[name]}"`);
    return value;
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
    proxmoxKeyringSha256: hex(
      "CLUPILOT_PROXMOX_KEYRING_SHA256",
      PROXMOX_TRIXIE_KEYRING_SHA256,
      64,
    ).toLowerCase(),
    proxmoxKeyringFingerprint: hex(
      "CLUPILOT_PROXMOX_KEYRING_FINGERPRINT",
      PROXMOX_TRIXIE_KEY_FINGERPRINT,
      40,
    ).toUpperCase(),
    proxmoxRepositoryUrl:
      env.CLUPILOT_PROXMOX_REPOSITORY_URL ?? "http://download.proxmox.com/debian/pve",
    aptLockTimeoutSeconds: number("CLUPILOT_APT_LOCK_TIMEOUT_SECONDS", 5 * 60),
    pollSeconds: number("CLUPILOT_POLL_SECONDS", 30),
    templateBuildDeadlineSeconds: number("CLUPILOT_TEMPLATE_BUILD_DEADLINE_SECONDS", 45 * 60),
    rebootDeadlineSeconds: number("CLUPILOT_REBOOT_DEADLINE_SECONDS", 15 * 60),
  };
}
