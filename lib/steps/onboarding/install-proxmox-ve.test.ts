import { describe, expect, it } from "vitest";
import { judgeKernelInstalled, parsePackageStates } from "./install-proxmox-kernel";
import { judgePve, packagesToRemove, parsePveProbe, planPveJob } from "./install-proxmox-ve";

const FRESH = [
  "linux-image-amd64\tinstalled",
  "linux-image-6.12.57+deb13-amd64\tinstalled",
  "linux-image-6.12.41+deb13-amd64\tconfig-files",
  "os-prober\tinstalled",
].join("\n");
const INSTALLED = [
  "proxmox-ve\tinstalled",
  "postfix\tinstalled",
  "open-iscsi\tinstalled",
  "chrony\tinstalled",
].join("\n");

const probe = (packages: string, kernel = "6.17.2-1-pve", fqdn = "pve1.example.com") =>
  parsePveProbe(`${packages}\n--clupilot--\n${kernel}\n--clupilot--\n${fqdn}\n`);

describe("InstallProxmoxKernel goal", () => {
  it("holds only when dpkg says installed", () => {
    expect(judgeKernelInstalled(parsePackageStates("proxmox-default-kernel\tinstalled\n"))).toEqual(
      { holds: true, detail: "proxmox-default-kernel installed" },
    );
    expect(
      judgeKernelInstalled(parsePackageStates("proxmox-default-kernel\thalf-configured\n")),
    ).toEqual({ holds: false, missing: "dpkg reports proxmox-default-kernel as half-configured" });
    expect(judgeKernelInstalled(parsePackageStates("")).holds).toBe(false);
  });
});

describe("InstallProxmoxVe", () => {
  it("removes exactly the installed Debian kernels and os-prober (config-files entries are gone already)", () => {
    expect(packagesToRemove(probe(FRESH).states)).toEqual([
      "linux-image-6.12.57+deb13-amd64",
      "linux-image-amd64",
      "os-prober",
    ]);
  });

  it("goal: all four packages installed and nothing left to remove", () => {
    expect(judgePve(probe(INSTALLED)).holds).toBe(true);
    expect(judgePve(probe(`${INSTALLED}\n${FRESH}`))).toEqual({
      holds: false,
      missing: "linux-image-6.12.57+deb13-amd64, linux-image-amd64, os-prober still installed",
    });
    expect(judgePve(probe("postfix\tinstalled"))).toEqual({
      holds: false,
      missing: "proxmox-ve, open-iscsi, chrony not installed",
    });
  });

  it("preseeds postfix as local only, installs non-interactively, then removes the Debian kernel; apt waits for the dpkg lock", () => {
    const plan = planPveJob(probe(FRESH), 300);
    expect("body" in plan && plan.body).toBe(
      [
        "set -e",
        "printf '%s\\n' 'postfix postfix/main_mailer_type select Local only' 'postfix postfix/mailname string pve1.example.com' | debconf-set-selections",
        "export DEBIAN_FRONTEND=noninteractive",
        "apt-get install -y -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold proxmox-ve postfix open-iscsi chrony",
        "apt-get remove -y -o DPkg::Lock::Timeout=300 'linux-image-6.12.57+deb13-amd64' 'linux-image-amd64' 'os-prober'",
        "",
      ].join("\n"),
    );
  });

  it("refuses to remove the Debian kernel while it is the running kernel", () => {
    expect(planPveJob(probe(FRESH, "6.12.57+deb13-amd64"), 300)).toEqual({
      refuse: expect.stringMatching(
        /^the host runs kernel 6\.12\.57\+deb13-amd64, not a Proxmox kernel/,
      ) as string,
    });
  });

  it("a host name that is not a plain name never reaches debconf", () => {
    const plan = planPveJob(probe(FRESH, "6.17.2-1-pve", "evil\nname"), 300);
    expect("body" in plan && plan.body).not.toContain("mailname");
  });
});
