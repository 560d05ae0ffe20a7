#!/usr/bin/env bash
# `npm run test:image-tools`: template.sh's image functions (verify_image_structure,
# customise_cloud_image, verify_image_contents) against Debian's real libguestfs tools, on a small
# real Debian disk image this script builds itself — the lab's stand-ins for virt-* prove the
# logic, this proves the real tools say what the functions expect.
#
# Needs root on Debian with network to a Debian mirror (debootstrap), and libguestfs-tools,
# debootstrap, gdisk, dpkg-dev installed. The image is built like Debian's cloud images (GPT, ext4
# root on partition 1, EFI vfat on 15); the packages customise_cloud_image installs come from a
# local repository inside the image (the appliance has no network). libguestfs runs with TCG
# (LIBGUESTFS_BACKEND_SETTINGS=force_tcg) unless a probe shows KVM really works: on some machines
# /dev/kvm opens but QEMU aborts on it ("failed to set MSR 0x10a").
#
# Prints one line per proven behaviour and the time each phase took; exits non-zero on the first
# behaviour that does not hold. Everything it made is removed at exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
suite="${CLUPILOT_IMAGE_TOOLS_SUITE:-bookworm}"
mirror="${CLUPILOT_IMAGE_TOOLS_MIRROR:-http://deb.debian.org/debian}"

for tool in virt-customize virt-cat virt-filesystems guestfish debootstrap sgdisk dpkg-scanpackages qemu-img; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "test:image-tools: $tool is missing; on Debian run: apt-get install -y libguestfs-tools debootstrap gdisk dpkg-dev qemu-utils" >&2
		exit 1
	}
done
[ "$(id -u)" -eq 0 ] || {
	echo "test:image-tools: run as root (debootstrap and chroot need it)" >&2
	exit 1
}

work="$(mktemp -d /var/tmp/clupilot-image-tools.XXXXXX)"
trap 'rm -rf "$work"' EXIT

started=$SECONDS
phase() {
	echo "time: $1: $((SECONDS - started)) s"
	started=$SECONDS
}

# KVM only where it works: a direct appliance run with KVM, else TCG.
if [ -z "${LIBGUESTFS_BACKEND_SETTINGS:-}" ]; then
	if [ -r /dev/kvm ] && timeout 30 guestfish -a /dev/null run >/dev/null 2>&1; then
		echo "libguestfs: KVM works"
	else
		export LIBGUESTFS_BACKEND_SETTINGS=force_tcg
		echo "libguestfs: KVM does not work here, using TCG (force_tcg)"
	fi
	phase "probe KVM"
fi

# What template.sh expects from its caller.
log() { echo "template.sh: $*"; }
die() {
	echo "template.sh died: $*" >&2
	exit 1
}
# shellcheck source=lib/template.sh
. "$here/lib/template.sh"

# A minimal Debian with apt, and the packages customise_cloud_image installs (with what they
# need beyond that) downloaded into a local repository inside it.
root="$work/root"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
	tail -n 20 "$work/debootstrap.log" >&2
	exit 1
}
phase "debootstrap $suite"
chroot "$root" apt-get install --download-only -y -q qemu-guest-agent cloud-guest-utils iputils-ping >"$work/download.log" 2>&1 || {
	tail -n 20 "$work/download.log" >&2
	exit 1
}
mkdir -p "$root/srv/repo"
mv "$root"/var/cache/apt/archives/*.deb "$root/srv/repo/"
(cd "$root/srv/repo" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages)
echo "deb [trusted=yes] file:/srv/repo ./" >"$root/etc/apt/sources.list"
# Debian's cloud images ship /etc/machine-id (customise_cloud_image truncates it); debootstrap
# leaves none, and the real virt-customize fails on a file that is not there.
: >"$root/etc/machine-id"
rm -rf "$root"/var/lib/apt/lists/*
phase "local repository ($(find "$root/srv/repo" -name '*.deb' | wc -l) packages)"

# The disk: GPT, partition 15 EFI (vfat), partition 1 the root (ext4), as Debian's cloud images.
make_disk() {
	local raw="$1" layout="$2"
	truncate -s 1536M "$raw"
	case "$layout" in
	cloud) sgdisk -o -n 15:2048:+100M -t 15:ef00 -n 1:0:0 -t 1:8300 "$raw" >/dev/null ;;
	root-only) sgdisk -o -n 1:2048:0 -t 1:8300 "$raw" >/dev/null ;;
	esac
}
tar -C "$root" -cf "$work/root.tar" .
make_disk "$work/cloud.raw" cloud
guestfish -a "$work/cloud.raw" <<-EOF
	run
	mkfs ext4 /dev/sda1
	mkfs vfat /dev/sda15
	mount /dev/sda1 /
	tar-in $work/root.tar /
EOF
qemu-img convert -f raw -O qcow2 "$work/cloud.raw" "$work/cloud.qcow2"
rm -f "$work/cloud.raw"
phase "disk image (qcow2, $(du -m "$work/cloud.qcow2" | cut -f1) MiB)"

# Runs a template.sh function in a subshell (die exits it); prints its output, returns its status.
call() {
	(set +e; "$@") 2>&1
}

expect_ok() {
	local what="$1" out
	shift
	if out="$(call "$@")"; then
		echo "ok - $what"
		[ -z "$out" ] || printf '     %s\n' "$out"
	else
		printf 'not ok - %s\n%s\n' "$what" "$out" >&2
		exit 1
	fi
}

expect_death() {
	local what="$1" message="$2" out
	shift 2
	if out="$(call "$@")"; then
		printf 'not ok - %s: it passed\n%s\n' "$what" "$out" >&2
		exit 1
	fi
	if [[ "$out" != *"$message"* ]]; then
		printf 'not ok - %s: died, but not saying "%s":\n%s\n' "$what" "$message" "$out" >&2
		exit 1
	fi
	echo "ok - $what"
}

expect_ok "verify_image_structure accepts the cloud layout (real virt-filesystems: sda1 ext4, sda15 vfat)" \
	verify_image_structure "$work/cloud.qcow2"
phase "verify_image_structure"

expect_death "verify_image_contents refuses an image without the agent, growpart and ping (real virt-cat of dpkg's status)" \
	"qemu-guest-agent is not installed" verify_image_contents "$work/cloud.qcow2"
phase "verify_image_contents (uncustomised)"

cp "$work/cloud.qcow2" "$work/custom.qcow2"
expect_ok "customise_cloud_image installs the packages with the real virt-customize" \
	customise_cloud_image "$work/custom.qcow2"
phase "customise_cloud_image"

expect_ok "verify_image_contents finds qemu-guest-agent, cloud-guest-utils and iputils-ping installed" \
	verify_image_contents "$work/custom.qcow2"
phase "verify_image_contents (customised)"

make_disk "$work/flat.raw" root-only
guestfish -a "$work/flat.raw" <<-EOF
	run
	mkfs ext4 /dev/sda1
EOF
expect_death "verify_image_structure refuses an image without the EFI partition" \
	"no EFI vfat filesystem on /dev/sda15" verify_image_structure "$work/flat.raw"
phase "verify_image_structure (no EFI partition)"
