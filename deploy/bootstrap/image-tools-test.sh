#!/usr/bin/env bash
# `npm run test:image-tools`: template.sh's image functions (verify_image_structure,
# customise_cloud_image, verify_image_contents) against Debian's real libguestfs tools, on a small
# real Debian disk image this script builds itself — the lab's stand-ins for virt-* prove the
# logic, this proves the real tools say what the functions expect. Proven, each with the real
# tool: the cloud layout is accepted; the same disk without its EFI partition is refused; the
# uncustomised image is refused; customise_cloud_image installs the real Debian packages from a
# local repository inside the image (the appliance needs no network), and then the image passes.
#
# Needs root on Debian, an apt source for the machine's own Debian release (the image is built
# from it), and the packages npm test's prerequisites check installs (scripts/test-prerequisites.sh).
#
# What makes it fast enough for npm test (on 2 cores, TCG):
# - Each tool call is one libguestfs appliance launch, 15-35 s of CPU under TCG (~15 s to boot
#   the appliance, the rest the tool's own work: probing, inspecting, mounting), so there are
#   exactly the five the four checks need (template.sh runs one tool per function), none to
#   build the disk (mkfs writes the file systems straight into the partitions of the disk
#   file), and the independent checks run in two lanes side by side.
# - The image is mmdebstrap's `apt` variant plus the dependencies of the packages template.sh
#   installs (as a cloud image already has python3, glib, ...), so apt inside the appliance
#   installs just those packages, not a hundred.
# - The appliance boots Debian's cloud kernel (linux-image-cloud-amd64) when it is installed:
#   ~40 % less CPU per launch than the generic kernel, which probes far more hardware.
# - KVM is used only where it starts a machine faster than TCG does: on some machines /dev/kvm
#   opens but QEMU aborts on it ("failed to set MSR 0x10a"), on others it is slower than TCG.
#
# Prints one line per proven behaviour and the time each phase took (wall clock and CPU seconds,
# the load average with them: the machine may be shared); exits non-zero when a behaviour does
# not hold. Everything it made is removed at exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# What customise_cloud_image installs and verify_image_contents demands (template.sh).
packages=(qemu-guest-agent cloud-guest-utils iputils-ping)

[ "$(id -u)" -eq 0 ] || {
	echo "test:image-tools: run as root (mmdebstrap, chroot and the root file system's owners need it): sudo npm run test:image-tools" >&2
	exit 1
}
for tool in virt-customize virt-cat virt-filesystems mmdebstrap sgdisk mkfs.vfat mke2fs dpkg-scanpackages qemu-img qemu-system-x86_64; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "test:image-tools: $tool is missing; on Debian run: apt-get install -y --no-install-recommends libguestfs-tools mmdebstrap gdisk dosfstools dpkg-dev qemu-utils" >&2
		exit 1
	}
done
# supermin builds the appliance from a kernel in /boot; prefer Debian's cloud kernel.
cloud_kernel="$(find /boot -maxdepth 1 -name 'vmlinuz-*-cloud-amd64' 2>/dev/null | sort -V | tail -n 1)"
if [ -n "$cloud_kernel" ] && [ -d "/lib/modules/${cloud_kernel#/boot/vmlinuz-}" ]; then
	export SUPERMIN_KERNEL="$cloud_kernel" SUPERMIN_MODULES="/lib/modules/${cloud_kernel#/boot/vmlinuz-}"
elif ! compgen -G '/boot/vmlinuz-*' >/dev/null; then
	echo "test:image-tools: no kernel in /boot for the libguestfs appliance; on Debian run: apt-get install -y --no-install-recommends linux-image-cloud-amd64" >&2
	exit 1
fi

# The image is the machine's own Debian release, from the mirror the machine's apt uses for it.
# shellcheck source=/dev/null
suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
[ -n "$suite" ] || {
	echo "test:image-tools: /etc/os-release names no VERSION_CODENAME; this test runs on Debian" >&2
	exit 1
}

# Prints the URI of the first enabled apt source for "$suite" with component main, from the
# one-line (.list) and deb822 (.sources) files; nothing when there is none.
machine_mirror() {
	local suite="$1" found
	found="$(machine_sources "$suite")"
	printf '%s\n' "${found%%$'\n'*}"
}
# Every such URI, in the order apt reads the files.
machine_sources() {
	local suite="$1" file
	for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$file" ] || continue
		awk -v suite="$suite" '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i + 1) != suite) next
				for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit }
			}
		' "$file"
	done
	for file in /etc/apt/sources.list.d/*.sources; do
		[ -r "$file" ] || continue
		awk -v suite="$suite" '
			function has(list, word) { return index(" " list " ", " " word " ") > 0 }
			function flush() {
				if (enabled != "no" && has(field["types"], "deb") && has(field["suites"], suite) &&
					has(field["components"], "main")) { split(field["uris"], uri, " "); print uri[1] }
				delete field; enabled = ""; key = ""
			}
			/^[[:space:]]*#/ { next }
			/^[[:space:]]*$/ { flush(); next }
			/^[A-Za-z-]+:/ {
				key = tolower(substr($0, 1, index($0, ":") - 1))
				field[key] = substr($0, index($0, ":") + 1)
				if (key == "enabled") { enabled = field[key]; gsub(/[[:space:]]/, "", enabled) }
				next
			}
			key != "" { field[key] = field[key] " " $0 }
			END { flush() }
		' "$file"
	done
}
mirror="$(machine_mirror "$suite")"
[ -n "$mirror" ] || {
	echo "test:image-tools: no apt source on this machine serves Debian $suite main (looked in /etc/apt/sources.list and /etc/apt/sources.list.d/); add one (e.g. deb http://deb.debian.org/debian $suite main) and run again" >&2
	exit 1
}

work="$(mktemp -d /var/tmp/clupilot-image-tools.XXXXXX)"
jobs_running=()
cleanup() {
	local pid
	# A lane still running (this script failed or was interrupted) is its own process group
	# (set -m below): the template.sh function, its virt-* tool and that tool's QEMU; so is the
	# lanes' watchdog.
	for pid in "${jobs_running[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
# Wall clock and CPU seconds (this script's children: every tool it ran) since the last phase.
# `times` runs in this shell, not in a command substitution (a subshell has no children yet).
phase_wall=$SECONDS
phase_cpu=0
phase() {
	local cpu
	times >"$work/times"
	cpu="$(awk 'function s(t) { split(t, a, "m"); sub(/s$/, "", a[2]); return a[1] * 60 + a[2] }
		NR == 2 { printf "%.1f\n", s($1) + s($2) }' "$work/times")"
	echo "time: $1: $((SECONDS - phase_wall)) s (CPU $(awk -v a="$cpu" -v b="$phase_cpu" 'BEGIN { printf "%.1f", a - b }') s)"
	phase_wall=$SECONDS
	phase_cpu="$cpu"
}

# Seconds (with fraction) QEMU takes with ACCEL to run its BIOS to "no bootable disk" and stop,
# or fails within LIMIT seconds.
bios_seconds() {
	local accel="$1" cpu="$2" limit="$3" start=${EPOCHREALTIME/[.,]/}
	timeout "$limit" qemu-system-x86_64 -no-user-config -nodefaults -display none \
		-machine "accel=$accel,graphics=off" -cpu "$cpu" -m 64 -no-reboot -boot reboot-timeout=0 \
		-serial stdio </dev/null >"$work/bios.$accel" 2>&1 || return 1
	grep -aq 'Boot failed' "$work/bios.$accel" || return 1
	awk -v us="$((${EPOCHREALTIME/[.,]/} - start))" 'BEGIN { printf "%.2f\n", us / 1e6 }'
}

# libguestfs's own variable: a caller who set it has chosen. Otherwise KVM only where it runs a
# machine faster than TCG (within twice TCG's time plus half a second).
if [ -n "${LIBGUESTFS_BACKEND_SETTINGS:-}" ]; then
	echo "libguestfs: LIBGUESTFS_BACKEND_SETTINGS=$LIBGUESTFS_BACKEND_SETTINGS (set by the caller)"
else
	tcg="$(bios_seconds tcg max 30)" || {
		echo "test:image-tools: QEMU cannot run a machine with TCG here:" >&2
		cat "$work/bios.tcg" >&2
		exit 1
	}
	kvm_limit="$(awk -v t="$tcg" 'BEGIN { print 2 * t + 0.5 }')"
	if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
		why="no /dev/kvm this user may use"
	elif ! kvm="$(bios_seconds kvm host "$kvm_limit")"; then
		why="KVM does not run a machine here within $kvm_limit s (TCG: $tcg s)"
	elif ! awk -v k="$kvm" -v t="$tcg" 'BEGIN { exit !(k < t) }'; then
		why="KVM is slower than TCG here ($kvm s, TCG $tcg s)"
	else
		why=""
		echo "libguestfs: KVM (a machine's BIOS runs in $kvm s with KVM, $tcg s with TCG)"
	fi
	if [ -n "$why" ]; then
		export LIBGUESTFS_BACKEND_SETTINGS=force_tcg
		echo "libguestfs: TCG (force_tcg): $why"
	fi
fi
echo "libguestfs: appliance kernel ${SUPERMIN_KERNEL:-picked by supermin from /boot}"
phase "probe KVM"

# What template.sh expects from its caller.
log() { echo "template.sh: $*"; }
die() {
	echo "template.sh died: $*" >&2
	exit 1
}
# shellcheck source-path=SCRIPTDIR source=lib/template.sh
. "$here/lib/template.sh"

# A Debian with apt and what the packages need, but not the packages themselves: their .debs go
# into a local repository inside the image, the only apt source the image has. Documentation is
# left out (as in slim images): less to write into the disk and to unpack under TCG.
root="$work/root"
# shellcheck disable=SC2016 # "$1" in a hook is the hook's own argument (the root), for its sh
mmdebstrap --variant=apt --mode=root \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--customize-hook="chroot \"\$1\" apt-get install --download-only -y -q ${packages[*]}" \
	--customize-hook="mkdir -p \"\$1/srv/repo\" && for p in ${packages[*]}; do mv \"\$1\"/var/cache/apt/archives/\"\$p\"_*.deb \"\$1/srv/repo/\" || exit 1; done" \
	--customize-hook='if ls "$1"/var/cache/apt/archives/*.deb >/dev/null 2>&1; then chroot "$1" sh -c "apt-get install -y -q /var/cache/apt/archives/*.deb"; fi' \
	"$suite" "$root" "$mirror" >"$work/mmdebstrap.log" 2>&1 || {
	tail -n 20 "$work/mmdebstrap.log" >&2
	echo "test:image-tools: building the Debian $suite root from $mirror failed (log above)" >&2
	exit 1
}
(cd "$root/srv/repo" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages)
rm -f "$root/etc/apt/sources.list" "$root"/etc/apt/sources.list.d/*
echo "deb [trusted=yes] file:/srv/repo ./" >"$root/etc/apt/sources.list"
# Debian's cloud images ship /etc/machine-id (customise_cloud_image truncates it); mmdebstrap
# leaves none, and the real virt-customize fails on a file that is not there.
: >"$root/etc/machine-id"
phase "Debian $suite root from $mirror ($(du -sm "$root" | cut -f1) MiB; local repository: $(find "$root/srv/repo" -name '*.deb' -printf '%f ' | sed 's/ $//'))"

# The disk, as Debian's cloud images: GPT, partition 15 EFI (vfat), partition 1 the root (ext4).
# mkfs writes each file system straight into its partition of the disk file (no loop device, no
# appliance): p15 is sectors 2048-206847 (100 MiB), p1 from 206848 to the end.
disk_mib=1024
p15_start=2048 p15_end=206847 p1_start=206848
p1_end=$((disk_mib * 2048 - 34))
truncate -s "${disk_mib}M" "$work/cloud.raw"
sgdisk -o -n "15:$p15_start:$p15_end" -t 15:ef00 -n "1:$p1_start:$p1_end" -t 1:8300 "$work/cloud.raw" >/dev/null
# mkfs.vfat warns that the file is larger than the file system it was asked for: that is the point.
mkfs.vfat --offset="$p15_start" -F 16 -n UEFI "$work/cloud.raw" $(((p15_end - p15_start + 1) / 2)) >"$work/mkfs.log" 2>&1 || {
	cat "$work/mkfs.log" >&2
	exit 1
}
mke2fs -q -F -t ext4 -L root -d "$root" -E "offset=$((p1_start * 512)),nodiscard" \
	"$work/cloud.raw" "$(((p1_end - p1_start + 1) / 2))k"
# The same disk with partition 15 deleted from its table: everything else byte for byte alike.
cp --sparse=always "$work/cloud.raw" "$work/no-efi.raw"
sgdisk -d 15 "$work/no-efi.raw" >/dev/null
for disk in cloud no-efi; do
	qemu-img convert -f raw -O qcow2 "$work/$disk.raw" "$work/$disk.qcow2"
	rm -f "$work/$disk.raw"
done
cp "$work/cloud.qcow2" "$work/custom.qcow2"
phase "disk images (qcow2, $(du -m "$work/cloud.qcow2" | cut -f1) MiB)"

# Runs a template.sh function in a subshell (die exits it); prints its output, returns its status.
# While it runs, "$running" (the lane's file) names it: what a stopped lane was doing.
call() {
	[ -z "${running:-}" ] || printf '%s\n' "$*" >"$running"
	(set +e; "$@") 2>&1
}

indented() {
	[ -z "$1" ] || printf '%s\n' "$1" | sed 's/^/     /'
}

expect_ok() {
	local what="$1" out start=$SECONDS
	shift
	if out="$(call "$@")"; then
		echo "ok - $what ($((SECONDS - start)) s)"
		indented "$out"
	else
		echo "not ok - $what"
		indented "$out"
		return 1
	fi
}

expect_death() {
	local what="$1" message="$2" out start=$SECONDS
	shift 2
	if out="$(call "$@")"; then
		echo "not ok - $what: it passed"
		indented "$out"
		return 1
	fi
	if [[ "$out" != *"$message"* ]]; then
		echo "not ok - $what: died, but not saying \"$message\":"
		indented "$out"
		return 1
	fi
	echo "ok - $what ($((SECONDS - start)) s)"
	indented "$out"
}

# The checks are independent (the customised image is a copy), so they run in two lanes side by
# side: customising and verifying the result (the longest), and the three others one after the
# other. Each lane is its own process group; the reports are printed once both have ended.
lane_customised() {
	running="$work/customised.running"
	expect_ok "customise_cloud_image installs ${packages[*]} from the image's local repository (real virt-customize)" \
		customise_cloud_image "$work/custom.qcow2" &&
		expect_ok "verify_image_contents finds ${packages[*]} installed in the customised image" \
			verify_image_contents "$work/custom.qcow2"
}
lane_others() {
	local failed=0
	running="$work/others.running"
	expect_ok "verify_image_structure accepts the cloud layout (real virt-filesystems: sda1 ext4, sda15 vfat)" \
		verify_image_structure "$work/cloud.qcow2" || failed=1
	expect_death "verify_image_structure refuses the same disk without its EFI partition" \
		"no EFI vfat filesystem on /dev/sda15" verify_image_structure "$work/no-efi.qcow2" || failed=1
	expect_death "verify_image_contents refuses the image before customising (real virt-cat of dpkg's status)" \
		"qemu-guest-agent is not installed" verify_image_contents "$work/cloud.qcow2" || failed=1
	return "$failed"
}
lanes=(others customised)
# A hung appliance must not hang the suite: past the limit, both lanes are ended.
limit_seconds=900
set -m
for lane in "${lanes[@]}"; do
	(
		status=0
		"lane_$lane" || status=$?
		rm -f "$work/$lane.running"
		exit "$status"
	) >"$work/$lane.out" 2>&1 &
	jobs_running+=("$!")
done
(
	sleep "$limit_seconds"
	touch "$work/timed-out"
	for pid in "${jobs_running[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
) &
watchdog=$!
jobs_running+=("$watchdog")
set +m
failed=0
for i in "${!lanes[@]}"; do
	wait "${jobs_running[$i]}" || failed=1
	cat "$work/${lanes[$i]}.out"
done
kill -TERM -- "-$watchdog" 2>/dev/null || true
wait "$watchdog" 2>/dev/null || true
jobs_running=()
phase "the checks, in two lanes (5 appliance launches)"
if [ -e "$work/timed-out" ]; then
	echo "test:image-tools: the checks did not end within $limit_seconds s and were stopped; still running then:" >&2
	cat "$work"/*.running >&2 2>/dev/null || true
	exit 1
fi
[ "$failed" -eq 0 ] || {
	echo "test:image-tools: a check failed (not ok above)" >&2
	exit 1
}
echo "test:image-tools: all passed"
