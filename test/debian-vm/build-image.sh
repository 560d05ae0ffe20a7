#!/usr/bin/env bash
# The Debian VM of lib/steps/onboarding/debian-vm.int.test.ts (test/debian-vm.ts starts it): a Debian
# root built with mmdebstrap from Debian's packages only, as a plain install of a server leaves
# it (systemd, OpenSSH, ifupdown2 with a static address in /etc/network/interfaces, sudo, chrony,
# Debian's cloud kernel), written into an ext4 image by mkfs.ext4 -d (no mount, no loop device).
#
#   build-image.sh OUT SUITE MIRROR
#
# OUT (created, must not exist) receives disk.raw (the root file system, the whole disk),
# vmlinuz and initrd.img (the VM boots them directly), id_ed25519[.pub] (root's login) and
# build.log. Needs root (mmdebstrap --mode=root, the root file system's owners).
set -euo pipefail

out="$1" suite="$2" mirror="$3"
# The VM's network as QEMU's user networking gives it (the address its SSH forward reaches).
nic=ens3 address=10.0.2.15/24 gateway=10.0.2.2
hostname=debian

[ "$(id -u)" -eq 0 ] || {
	echo "build-image.sh: run as root" >&2
	exit 1
}
mkdir "$out"
root="$out/root"
log="$out/build.log"

packages=(
	systemd systemd-sysv dbus udev kmod
	openssh-server sudo chrony
	ifupdown2 iproute2
	linux-image-cloud-amd64
	# What the onboarding steps run on a host besides coreutils: curl (the keyring), gpg (its
	# fingerprint), procps (ps), python3 (ifupdown2's, and the test's stand-in repository server).
	curl ca-certificates gpg procps python3
)

ssh-keygen -q -t ed25519 -N '' -C clupilot-debian-vm-test -f "$out/id_ed25519"

# Documentation, manual pages and translations left out (as slim images do): less to unpack.
if ! mmdebstrap --variant=minbase --mode=root \
	--include="$(
		IFS=,
		echo "${packages[*]}"
	)" \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	"$suite" "$root" "$mirror" >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "build-image.sh: mmdebstrap of Debian $suite from $mirror failed (above)" >&2
	exit 1
fi

# As the Debian installer leaves a server with a static address.
echo "$hostname" >"$root/etc/hostname"
cat >"$root/etc/hosts" <<HOSTS
127.0.0.1	localhost
127.0.1.1	$hostname.vm.internal	$hostname

# The following lines are desirable for IPv6 capable hosts
::1     localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
HOSTS
cat >"$root/etc/network/interfaces" <<INTERFACES
# This file describes the network interfaces available on your system
# and how to activate them. For more information, see interfaces(5).

source /etc/network/interfaces.d/*

# The loopback network interface
auto lo
iface lo inet loopback

# The primary network interface
auto $nic
iface $nic inet static
	address $address
	gateway $gateway
INTERFACES
mkdir -p "$root/etc/network/interfaces.d"
# No name server: the VM reaches nothing but the console (QEMU's restricted user networking).
printf '# no name server: this VM has no network beyond its SSH forward\n' >"$root/etc/resolv.conf"
uuid=2b1f6c55-9d39-4c0e-8f0e-6a8c0d5e7a11
printf 'UUID=%s / ext4 errors=remount-ro 0 1\n' "$uuid" >"$root/etc/fstab"
install -d -m 700 "$root/root/.ssh"
install -m 600 "$out/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
# No Debian mirror is reachable from the VM: no Debian sources (the test adds its own repository).
rm -f "$root/etc/apt/sources.list" "$root"/etc/apt/sources.list.d/*
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
# apt's daily timers would take apt's locks at moments of their own choosing; the test takes
# them when it means to.
ln -sf /dev/null "$root/etc/systemd/system/apt-daily.timer"
ln -sf /dev/null "$root/etc/systemd/system/apt-daily-upgrade.timer"
# A machine id of its own on each boot of a fresh copy, as a cloned disk gets.
: >"$root/etc/machine-id"

kernel="$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -n 1)"
[ -n "$kernel" ] && [ -f "$root/boot/initrd.img-${kernel##*/vmlinuz-}" ] || {
	echo "build-image.sh: no kernel and initrd in the root's /boot" >&2
	exit 1
}
cp "$kernel" "$out/vmlinuz"
cp "$root/boot/initrd.img-${kernel##*/vmlinuz-}" "$out/initrd.img"

# 3 GiB, sparse: the root file system is the whole disk (/dev/vda), written by mkfs itself.
mke2fs -q -F -t ext4 -L root -U "$uuid" -d "$root" -E nodiscard "$out/disk.raw" 3G >/dev/null
rm -rf "$root"
echo "$suite" >"$out/suite"
