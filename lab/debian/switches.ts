import { booleanSwitch, optionalNumberSwitch, type SwitchRegistry } from "../control/switches";
import { readDebianFaults, writeDebianFaults, type DebianFaults } from "./lab-state";
import type { RebootControl } from "./reboot-controller";

/** The Debian side's switches (`debian.*`, `reboot.*`) and actions, backed by `.lab/faults.json`. */
export function registerDebianSwitches(
  registry: SwitchRegistry,
  root: string,
  power: RebootControl,
): SwitchRegistry {
  const bool = (key: keyof DebianFaults & string, name: string, description: string) =>
    booleanSwitch({
      name,
      description,
      get: () => readDebianFaults(root)[key] === true,
      set: (value) => {
        writeDebianFaults(root, { [key]: value });
      },
    });
  return registry
    .register(
      bool(
        "aptNetworkDown",
        "debian.aptNetworkDown",
        "apt cannot reach any mirror: update only warns (exit 0) and keeps old lists; installs fail (exit 100).",
      ),
    )
    .register(
      bool(
        "enterpriseRepositoryRefuses",
        "debian.enterpriseRepositoryRefuses",
        "enterprise.proxmox.com answers 401 even to an active subscription.",
      ),
    )
    .register(
      bool(
        "aptLocked",
        "debian.aptLocked",
        "Another apt (process 1873, apt-get) holds /var/lib/dpkg/lock-frontend while on: apt-get waits as long as its -o DPkg::Lock::Timeout allows (lab-scaled), then fails (exit 100).",
      ),
    )
    .register(
      bool(
        "ifreloadRejectsBridges",
        "debian.ifreloadRejectsBridges",
        "The kernel cannot make bridges: ifreload -a fails on any configuration with bridge-ports (exit 1).",
      ),
    )
    .register(
      bool(
        "bridgeDropsAddress",
        "debian.bridgeDropsAddress",
        "A broken bridge: ifreload -a applies vmbr0 (exit 0) but its address never comes up, so new SSH connections are refused until a configuration with an address is applied.",
      ),
    )
    .register(
      bool(
        "clockUnsynchronised",
        "debian.clockUnsynchronised",
        "No NTP server answers: timedatectl reports NTPSynchronized=no (corosync wants synchronised clocks).",
      ),
    )
    .register(
      bool(
        "virtCustomizeSkipsInstall",
        "debian.virtCustomizeSkipsInstall",
        "virt-customize --install reports success but installs nothing.",
      ),
    )
    .register(
      optionalNumberSwitch({
        name: "reboot.takesMs",
        description: "A reboot keeps SSH down this long (real ms); empty = the scaled default.",
        min: 0,
        max: 3_600_000,
        unit: "ms",
        get: () => readDebianFaults(root).rebootTakesMs,
        set: (value) => {
          writeDebianFaults(root, { rebootTakesMs: value });
        },
      }),
    )
    .register(
      bool(
        "rebootNeverReturns",
        "reboot.neverReturns",
        "After a reboot the host never answers SSH again.",
      ),
    )
    .registerAction({
      name: "reboot.reboot",
      description: "Reboot the host now (as `reboot` on it would).",
      run: () => {
        void power.reboot();
      },
    })
    .registerAction({
      name: "reboot.powerOn",
      description: "Power on a host that is down (after poweroff or a reboot that never returned).",
      run: () => power.powerOn(),
    });
}
