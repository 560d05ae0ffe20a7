#!/bin/bash
#
# BuildVmTemplate's driver: runs on the host, started detached (nohup setsid) by the console,
# polled through the status files in $STATE_DIR. Usage: template-run.sh ENV_FILE
#
# The env file (written by the console, values shell-quoted) sets TEMPLATE_VMIDS ("9000 9001"),
# IMAGE_URL, SHA512SUMS_URL, and optionally TEMPLATE_NAME_PREFIX, HEADROOM_MB.

set -u

STATE_DIR=/var/lib/clupilot/template-build
IMAGE_DIR=/var/lib/clupilot/images
LIB_DIR="$(cd "$(dirname "$0")" && pwd)"

mkdir -p "$STATE_DIR"
# One driver per host, whatever the status files say: the lock is held for the driver's whole
# life (and by everything it starts, which inherits fd 9), so a second start gives up here,
# before it touches a single status file of the live build. The lock file names the holder.
exec 9>>"$STATE_DIR/lock"
if ! flock -n 9; then
	echo "another template build holds $STATE_DIR/lock (driver $(cat "$STATE_DIR/lock" 2>/dev/null)); not starting a second one" >&2
	exit 75
fi
echo "$$" >"$STATE_DIR/lock"
# Every process of the build carries this: the evidence a clean-up needs to kill a member that
# outlived the driver (lib/steps/remote-job/detached-process.ts).
export CLUPILOT_DETACHED="$STATE_DIR"
# Our own PID, not the starter's $!: with setsid in between, $! can name a process that is
# already gone. As the session leader, this PID is also the process group the console kills.
echo "$$" >"$STATE_DIR/pid"
echo running >"$STATE_DIR/state"
rm -f "$STATE_DIR/note"
exec >>"$STATE_DIR/build.log" 2>&1

# bash's own clock (printf %(…)T), not date(1): a log line costs the host no process.
log() { TZ=UTC0 printf '%(%H:%M:%S)T %s\n' -1 "$*"; }

finished=0
die() {
	log "FAILED: $*"
	printf '%s\n' "$*" >"$STATE_DIR/note"
	echo failed >"$STATE_DIR/state"
	finished=1
	exit 1
}

phase() {
	printf '%s\n' "$*" >"$STATE_DIR/phase"
	log "== $*"
}

on_exit() {
	if [ "$finished" = 0 ]; then
		printf 'the driver stopped unexpectedly during: %s\n' "$(cat "$STATE_DIR/phase" 2>/dev/null)" >"$STATE_DIR/note"
		echo failed >"$STATE_DIR/state"
	fi
}
trap on_exit EXIT
trap 'log "stopped by SIGTERM"; exit 143' TERM

http_get() { curl -fsSL --retry 3 --connect-timeout 20 "$1"; }
# The size the server announces for URL (its last response's Content-Length, after redirects).
# Fetched into a variable first: in a pipeline a failed request would read as "no size".
http_size() {
	local headers
	headers="$(curl -fsSIL --retry 3 --connect-timeout 20 "$1")" || return 1
	printf '%s\n' "$headers" | awk 'tolower($1) == "content-length:" { n = $2 } END { sub(/\r$/, "", n); print n }'
}
http_download() { curl -fSL --retry 3 --connect-timeout 20 --progress-bar -o "$2" "$1"; }

[ -r "${1:-}" ] || die "usage: template-run.sh ENV_FILE (got '${1:-}')"
# shellcheck source=/dev/null
. "$1"
# shellcheck source=template.sh
. "$LIB_DIR/template.sh"

: "${TEMPLATE_VMIDS:?TEMPLATE_VMIDS missing from the env file}"
: "${IMAGE_URL:?IMAGE_URL missing from the env file}"
: "${SHA512SUMS_URL:?SHA512SUMS_URL missing from the env file}"
TEMPLATE_NAME_PREFIX="${TEMPLATE_NAME_PREFIX:-clupilot-debian-13}"
HEADROOM_MB="${HEADROOM_MB:-1024}"

image="$IMAGE_DIR/${IMAGE_URL##*/}"
work="$IMAGE_DIR/golden-work.qcow2"
log "building templates $TEMPLATE_VMIDS from $IMAGE_URL"

phase "check space"
check_build_space "$IMAGE_DIR" "$IMAGE_URL" "$image" "$HEADROOM_MB"

phase "install libguestfs-tools"
if dpkg-query -W -f='${Status}' libguestfs-tools 2>/dev/null | grep -q 'install ok installed'; then
	log "libguestfs-tools already installed"
else
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libguestfs-tools ||
		die "apt-get install libguestfs-tools failed"
fi

phase "ensure image storage"
ensure_image_storage
storage="$(detect_vm_storage)" || die "cannot read this node's name (hostname) to choose a storage"

phase "fetch image"
fetch_cloud_image "$IMAGE_URL" "$SHA512SUMS_URL" "$image"

phase "verify structure"
verify_image_structure "$image"

phase "check storage space"
# shellcheck disable=SC2086 # TEMPLATE_VMIDS is a list of numbers
check_storage_space "$storage" "$image" $TEMPLATE_VMIDS

phase "make working copy"
rm -f "$work" "$work.part"
{ cp "$image" "$work.part" && mv -f "$work.part" "$work"; } || die "cannot copy $image to $work"

phase "customise image"
customise_cloud_image "$work"

phase "verify contents"
verify_image_contents "$work"

for vmid in $TEMPLATE_VMIDS; do
	phase "create template $vmid"
	create_proxmox_template "$vmid" "$storage" "$work" "$TEMPLATE_NAME_PREFIX-$vmid"
done

phase "verify templates"
for vmid in $TEMPLATE_VMIDS; do
	verify_template "$vmid"
done

rm -f "$work"
finished=1
echo ok >"$STATE_DIR/state"
log "all templates built"
