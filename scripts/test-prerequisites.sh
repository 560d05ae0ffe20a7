#!/usr/bin/env bash
# `npm test`'s first step: are the system programs the tests start installed? As root on Debian,
# the missing ones are installed (one line says so); otherwise this stops at once with the exact
# line to run, instead of a suite failing ten minutes in. Prints nothing when all are there.
set -euo pipefail

# The file system the absolute paths below are looked up in: `/`. Only this script's own test
# (scripts/test-prerequisites.test.ts) points it at a folder lacking some programs, so that the
# "missing" paths are proven without uninstalling anything from the machine.
root="${CLUPILOT_PREREQUISITES_ROOT:-}"

# What the tests start → the Debian package that installs it, one line each. A bare name is
# looked up in PATH (the tests run it by name); an absolute path is where the tests run it from.
prerequisites="
${CHROMIUM_PATH:-/usr/bin/chromium}  chromium                 e2e tests and benches (test/chromium.ts)
/usr/sbin/sshd                       openssh-server           OpenSSH parity tests (lab/openssh/sshd.ts)
ssh-keygen                           openssh-client           host key fingerprints
shellcheck                           shellcheck               the deploy scripts pass shellcheck
openssl                              openssl                  lab nodes run the deploy scripts
curl                                 curl                     lab nodes run the deploy scripts
ps                                   procps                   lab nodes run the deploy scripts
gpg                                  gpg                      lab nodes check the Proxmox keyring (gpg --show-keys)
/usr/sbin/upsd                       nut-server               power: a real NUT server
/usr/sbin/upsdrvctl                  nut-server               power: starts the UPS driver
/usr/lib/nut/dummy-ups               nut-server               power: the simulated UPS driver
/usr/sbin/upsmon                     nut-client               power: NUT's own monitor
/usr/sbin/snmpd                      snmpd                    power: a real SNMP agent
ipmitool                             ipmitool                 power controllers: the console's IPMI client (lib/power-controllers)
ipmi_sim                             openipmi                 power controllers: the lab's IPMI BMC (lab/power-controllers)
virt-customize                       libguestfs-tools         image tools: template.sh with the real libguestfs tools
virt-cat                             libguestfs-tools         image tools: verify_image_contents
virt-filesystems                     libguestfs-tools         image tools: verify_image_structure
qemu-img                             qemu-utils               image tools and the Debian VM test: disk images
mmdebstrap                           mmdebstrap               image tools and the Debian VM test: their Debian roots
/sbin/sgdisk                         gdisk                    image tools: the image's GPT
/sbin/mkfs.vfat                      dosfstools               image tools: the image's EFI partition
dpkg-scanpackages                    dpkg-dev                 image tools: the image's local repository
/boot/vmlinuz-*                      linux-image-cloud-amd64  image tools: a kernel for the libguestfs appliance (any installed one will do)
qemu-system-x86_64                   qemu-system-x86          the Debian VM test: runs the VM (test/debian-vm.ts)
/sbin/mke2fs                         e2fsprogs                the Debian VM test: its disk (mkfs.ext4 -d, no mount)
setpriv                              util-linux               the Debian VM test: QEMU ends with the test process
dpkg-deb                             dpkg                     the Debian VM test: the stand-in repository's packages
"

if [ -n "${CHROMIUM_PATH:-}" ] && [ ! -x "$root$CHROMIUM_PATH" ]; then
  echo "npm test: CHROMIUM_PATH=$CHROMIUM_PATH is not a program: point it at Chromium, or unset it to use Debian's /usr/bin/chromium" >&2
  exit 1
fi

present() {
  case "$1" in
    # A file whose name holds a version: any that matches, executable or not. (The kernel: any
    # installed one serves the libguestfs appliance. A machine without one, a container, gets
    # Debian's cloud kernel, the fastest to boot the appliance; a machine that boots its own
    # kernel is not given a second one its boot loader might start next time.)
    /*'*'*) compgen -G "$root$1" >/dev/null ;;
    /*) [ -f "$root$1" ] && [ -x "$root$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing=()
packages=()
find_missing() {
  missing=()
  packages=()
  local tool package
  while read -r tool package _; do
    [ -n "$tool" ] || continue
    present "$tool" && continue
    missing+=("$tool")
    [[ " ${packages[*]} " == *" $package "* ]] || packages+=("$package")
  done <<<"$prerequisites"
}

find_missing
[ "${#missing[@]}" -eq 0 ] && exit 0

install="apt-get install -y --no-install-recommends ${packages[*]}"
if [ "$EUID" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "npm test: not installed, and the tests run them: ${missing[*]}. On Debian, run:" >&2
  echo "  sudo $install" >&2
  exit 1
fi

echo "npm test: installing the Debian packages the tests need: ${packages[*]}"
# The packages' own services (sshd on port 22, NUT's upsd, snmpd) are not started: the tests
# start private ones on free loopback ports, and installing must not leave new daemons running.
# policy-rc.d is Debian's switch for that (invoke-rc.d and deb-systemd-invoke honour it); one
# that is already there (container images ship one) is left as it is.
policy="$root/usr/sbin/policy-rc.d"
if [ ! -e "$policy" ] && printf '#!/bin/sh\nexit 101\n' 2>/dev/null >"$policy"; then
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
if ! output=$({ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${packages[@]}"; } 2>&1); then
  printf '%s\n' "$output" | tail -n 20 >&2
  echo "npm test: installing failed (see above). Fix that, then run: $install" >&2
  exit 1
fi

find_missing
if [ "${#missing[@]}" -gt 0 ]; then
  echo "npm test: still missing after installing ${packages[*]}: ${missing[*]}" >&2
  exit 1
fi
