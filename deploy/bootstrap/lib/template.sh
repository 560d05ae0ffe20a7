# shellcheck shell=bash
#
# The one library of template-building functions. BuildVmTemplate uploads this file byte for
# byte and template-run.sh sources it; nothing re-implements it elsewhere.
#
# Expects from the caller: log MESSAGE, die MESSAGE, http_download URL FILE, http_get URL,
# http_size URL (the Content-Length the server announces).
# Paths are the host's own (/etc/pve/storage.cfg), the same on every host: nothing here can be
# pointed elsewhere.

# Prints "<id> <type> <shared> <nodes>" for every enabled storage whose content list includes
# images, in file order. A missing content line is not read as "images": only what is written
# counts. <shared> is 1 for the types Proxmox always treats as shared (pve-storage's
# @SHARED_STORAGE in PVE/Storage/Plugin.pm) or a storage marked `shared 1`, else 0. <nodes> is
# the storage's `nodes` list, or "-" when it applies to every node (Proxmox ignores a nodes list
# on `local`).
storages_with_images() {
	[ -r /etc/pve/storage.cfg ] || return 0
	awk '
		function flush() {
			if (id != "" && !disabled && images) {
				always = (type ~ /^(iscsi|nfs|cifs|rbd|cephfs|iscsidirect|zfs|drbd|pbs)$/)
				print id, type, ((shared || always) ? 1 : 0), ((nodes == "" || id == "local") ? "-" : nodes)
			}
			id = ""
		}
		/^[[:space:]]*#/ { next }
		/^[a-z][a-z0-9]*:[[:space:]]*[^[:space:]]+/ {
			flush()
			type = $1; sub(/:$/, "", type); id = $2; disabled = 0; images = 0; shared = 0; nodes = ""
			next
		}
		/^[[:space:]]+disable([[:space:]]|$)/ { disabled = ($2 == "" || $2 == "1"); next }
		/^[[:space:]]+shared([[:space:]]|$)/ { shared = ($2 == "" || $2 == "1"); next }
		/^[[:space:]]+nodes[[:space:]]/ { nodes = $2; next }
		/^[[:space:]]+content[[:space:]]/ {
			n = split($2, kinds, ",")
			for (i = 1; i <= n; i++) if (kinds[i] == "images") images = 1
			next
		}
		END { flush() }
	' /etc/pve/storage.cfg
}

# This node's name as Proxmox names it (PVE::INotify::nodename: the host name up to its first dot).
node_name() {
	local name
	name="$(hostname)" || return 1
	printf '%s\n' "${name%%.*}"
}

# Whether this node is a cluster member: pmxcfs shows /etc/pve/corosync.conf only then.
in_cluster() {
	[ -e /etc/pve/corosync.conf ]
}

# The storage new templates go to. On a cluster member, a shared storage available on this node
# first, in file order: a template there can be cloned on every node (`qm clone --target` refuses
# a template on local storage). Then a local thin/ZFS/btrfs storage, then a directory or LVM
# storage, then anything else that accepts images. A storage whose `nodes` list leaves this node
# out is never chosen. Prints nothing when none is left.
detect_vm_storage() {
	local all kind id type shared nodes here
	all="$(storages_with_images)"
	[ -n "$all" ] || return 0
	# Could not ask is not "no storage": the callers die on a failure, never add images to local.
	here="$(node_name)" || return 1
	# The list is read by the shell itself: a fleet runs this on every build, and a process per
	# kind was most of what this function cost.
	all="$(
		while read -r id type shared nodes; do
			case "$nodes" in
			-) ;;
			*) case ",$nodes," in *",$here,"*) ;; *) continue ;; esac ;;
			esac
			printf '%s %s %s\n' "$id" "$type" "$shared"
		done <<-LIST
			$all
		LIST
	)"
	[ -n "$all" ] || return 0
	if in_cluster; then
		while read -r id type shared; do
			if [ "$shared" = 1 ]; then
				printf '%s\n' "$id"
				return 0
			fi
		done <<-LIST
			$all
		LIST
	fi
	for kind in lvmthin zfspool btrfs dir lvm; do
		while read -r id type shared; do
			if [ "$type" = "$kind" ]; then
				printf '%s\n' "$id"
				return 0
			fi
		done <<-LIST
			$all
		LIST
	done
	read -r id type shared <<-LIST
		$all
	LIST
	printf '%s\n' "$id"
}

# Prints the content list of an enabled storage; fails when it is absent, disabled, or has no
# content line (then its content is Proxmox's default, which we must not overwrite by guessing).
storage_content() {
	[ -r /etc/pve/storage.cfg ] || return 1
	awk -v want="$1" '
		/^[[:space:]]*#/ { next }
		/^[a-z][a-z0-9]*:[[:space:]]*[^[:space:]]+/ { current = $2; next }
		current == want && /^[[:space:]]+disable([[:space:]]|$)/ && ($2 == "" || $2 == "1") { disabled = 1 }
		current == want && /^[[:space:]]+content[[:space:]]/ { content = $2; found = 1 }
		END { if (!found || disabled) exit 1; print content }
	' /etc/pve/storage.cfg
}

# Only acts when no storage accepts disk images (Proxmox installed over Debian: `local` is a
# directory storage without images). Appends images to local's own list through pvesm — never
# a fixed list (it would delete what an operator added), never into /etc/pve (pmxcfs).
ensure_image_storage() {
	local storage content
	storage="$(detect_vm_storage)" || die "cannot read this node's name (hostname) to choose a storage"
	if [ -n "$storage" ]; then
		log "storage $storage accepts disk images; storage configuration left as it is"
		return 0
	fi
	if ! content="$(storage_content local)"; then
		die "no storage accepts disk images, and 'local' is missing, disabled or has no content line; add images to a storage on the host (pvesm set <storage> --content <its list>,images) and retry"
	fi
	log "no storage accepts disk images; adding images to local (content was: ${content:-none})"
	pvesm set local --content "${content:+$content,}images" ||
		die "pvesm set local --content ${content:+$content,}images failed"
	storage="$(detect_vm_storage)" || die "cannot read this node's name (hostname) to choose a storage"
	[ -n "$storage" ] || die "pvesm set reported success but no storage accepts disk images"
	log "storage $storage now accepts disk images"
}

# Free MiB of the filesystem holding DIR, or dies: "could not read" never reads as "enough".
free_mb() {
	local available_kb
	available_kb="$(df -Pk "$1" | awk 'NR == 2 { print $4 }')"
	case "$available_kb" in
	'' | *[!0-9]*) die "cannot read the free space of $1 from df" ;;
	esac
	echo "$((available_kb / 1024))"
}

# Refuses up front when the image and its working copy (which customising grows) cannot fit:
# the image's size twice plus HEADROOM_MB, less what an already downloaded image takes.
check_build_space() {
	local dir="$1" url="$2" image="$3" headroom_mb="$4" size copies=2 need_mb free
	mkdir -p "$dir" || die "cannot create $dir"
	if [ -f "$image" ]; then
		size="$(stat -c %s "$image")" || die "cannot read the size of $image"
		copies=1
	else
		size="$(http_size "$url")" || die "could not ask $url for the image's size; check the host's network and the URL, then retry"
	fi
	case "$size" in
	'' | *[!0-9]*) die "$url announced no size (Content-Length); cannot size the build" ;;
	esac
	need_mb=$(((size * copies + 1048575) / 1048576 + headroom_mb))
	free="$(free_mb "$dir")"
	if [ "$free" -lt "$need_mb" ]; then
		die "only $free MiB free in $dir; the build needs $need_mb MiB there (image $(((size + 1048575) / 1048576)) MiB × $copies + $headroom_mb MiB headroom) — free space and retry"
	fi
	log "$free MiB free in $dir (need $need_mb MiB)"
}

# Refuses when the storage the disks are imported into cannot take one disk of the image's
# virtual size per template: `pvesm status` reports what the storage itself has left (an LVM
# thin pool is not the root filesystem).
check_storage_space() {
	local storage="$1" image="$2" count virtual need_mb available_kb
	shift 2
	count=$#
	virtual="$(qemu-img info --output=json "$image" | awk -F: '/"virtual-size"/ { gsub(/[^0-9]/, "", $2); print $2; exit }')"
	case "$virtual" in
	'' | *[!0-9]*) die "cannot read the virtual size of $image from qemu-img info" ;;
	esac
	available_kb="$(pvesm status --storage "$storage" | awk -v s="$storage" '$1 == s { print $6; exit }')"
	case "$available_kb" in
	'' | *[!0-9]*) die "cannot read the available space of storage $storage from pvesm status" ;;
	esac
	need_mb=$(((virtual * count + 1048575) / 1048576))
	if [ "$((available_kb / 1024))" -lt "$need_mb" ]; then
		die "storage $storage has $((available_kb / 1024)) MiB available; the templates need $need_mb MiB there ($count × $(((virtual + 1048575) / 1048576)) MiB disk) — free space on $storage or give a larger storage images content, then retry"
	fi
	log "storage $storage has $((available_kb / 1024)) MiB available (need $need_mb MiB)"
}

# Downloads to .part and renames only when the SHA-512 matches, so an interrupted download
# never looks finished. A verified image is kept (with its checksum) and reused next time.
fetch_cloud_image() {
	local url="$1" sums_url="$2" dest="$3" name expected actual
	name="${url##*/}"
	local sums
	# Fetched into a variable first: in a pipeline, a failed fetch would be hidden behind awk's
	# success and reported as "lists no checksum".
	sums="$(http_get "$sums_url")" || die "could not fetch $sums_url; check the host's network and the URL, then retry"
	expected="$(printf '%s\n' "$sums" | awk -v n="$name" '$2 == n || $2 == "*" n { print $1; exit }')"
	[ -n "$expected" ] || die "$sums_url lists no checksum for $name"
	if [ -f "$dest" ] && [ -f "$dest.sha512" ] && [ "$(cat "$dest.sha512")" = "$expected" ]; then
		log "reusing the verified image $dest"
		return 0
	fi
	rm -f "$dest.part"
	http_download "$url" "$dest.part" || {
		rm -f "$dest.part"
		die "download of $url was cut off or failed; nothing was kept"
	}
	actual="$(sha512sum "$dest.part" | awk '{ print $1 }')"
	if [ "$actual" != "$expected" ]; then
		rm -f "$dest.part"
		die "checksum mismatch for $name: SHA512SUMS says ${expected:0:16}…, the download has ${actual:0:16}…; nothing was kept"
	fi
	mv -f "$dest.part" "$dest"
	printf '%s\n' "$expected" >"$dest.sha512"
	log "downloaded and verified $name"
}

# Trap 2: the image must have the layout the cloud image is built with (GPT; p1 ext4 root,
# p15 EFI vfat), otherwise customising and growing the root filesystem go wrong silently.
verify_image_structure() {
	local image="$1" listing
	listing="$(virt-filesystems -a "$image" --all --long)" || die "virt-filesystems cannot read $image"
	printf '%s\n' "$listing" | awk '$1 == "/dev/sda1" && $2 == "filesystem" && $3 == "ext4" { ok = 1 } END { exit !ok }' ||
		die "$image has no ext4 root filesystem on /dev/sda1; not the expected Debian cloud image"
	printf '%s\n' "$listing" | awk '$1 == "/dev/sda15" && $2 == "filesystem" && $3 == "vfat" { ok = 1 } END { exit !ok }' ||
		die "$image has no EFI vfat filesystem on /dev/sda15; not the expected Debian cloud image"
	log "image structure as expected (sda1 ext4, sda15 vfat)"
}

# Works on a copy of the verified image (the caller makes it). Installs what the golden image
# must hold: the guest agent (trap 1: enabling it without installing hangs every agent call),
# growpart (trap 4: guest filesystems would never grow) and ping (trap 3).
customise_cloud_image() {
	local image="$1"
	virt-customize -a "$image" \
		--install qemu-guest-agent,cloud-guest-utils,iputils-ping \
		--truncate /etc/machine-id ||
		die "virt-customize failed on $image"
}

# Installing is not enough: prove every package is installed in the image.
verify_image_contents() {
	local image="$1" status package
	status="$(virt-cat -a "$image" /var/lib/dpkg/status)" || die "virt-cat cannot read the package list of $image"
	for package in qemu-guest-agent cloud-guest-utils iputils-ping; do
		printf '%s\n' "$status" | awk -v p="$package" '
			/^Package: / { current = $2 }
			/^Status: / && current == p && $0 == "Status: install ok installed" { ok = 1 }
			END { exit !ok }
		' || die "$package is not installed in the customised image although virt-customize reported success"
	done
	log "image contains qemu-guest-agent, cloud-guest-utils and iputils-ping"
}

# What `qm create` writes into every VM the console makes, and what proves a VM is ours.
CLUPILOT_VM_TAG="clupilot"
CLUPILOT_VM_DESCRIPTION="Template built by the CluPilot console (BuildVmTemplate); the console replaces it when a build of this VMID is retried."

# The config's name, when the VM carries the console's marker (its tag and description line)
# and the name the console gives this VMID; fails otherwise.
made_by_console() {
	local config="$1" name="$2"
	printf '%s\n' "$config" | grep -qx "name: $name" || return 1
	printf '%s\n' "$config" | awk -v t="$CLUPILOT_VM_TAG" '
		$1 == "tags:" { n = split($2, tags, /[;, ]/); for (i = 1; i <= n; i++) if (tags[i] == t) ok = 1 }
		END { exit !ok }
	' || return 1
	printf '%s\n' "$config" | grep -qxF "description: $CLUPILOT_VM_DESCRIPTION"
}

# Replaces a VM at the VMID only with positive evidence the console made it (a leftover of an
# aborted build); never a template, never a VM someone else made. Creates the VM with the
# marker, imports the disk with import-from so Proxmox picks the volume name, adds cloud-init,
# converts to template.
create_proxmox_template() {
	local vmid="$1" storage="$2" image="$3" name="$4" config
	if config="$(qm config "$vmid" 2>/dev/null)"; then
		if printf '%s\n' "$config" | grep -qx 'template: 1'; then
			die "VM $vmid is already a template; refusing to destroy it"
		fi
		if ! made_by_console "$config" "$name"; then
			die "VMID $vmid holds a VM the console did not create (name $(printf '%s\n' "$config" | awk '$1 == "name:" { print $2; found = 1 } END { if (!found) print "none" }')): move it or choose another VMID"
		fi
		log "VM $vmid is a leftover of an earlier build by the console (name $name, tag $CLUPILOT_VM_TAG); destroying it"
		qm destroy "$vmid" --purge || die "qm destroy $vmid --purge failed"
	fi
	qm create "$vmid" --name "$name" --tags "$CLUPILOT_VM_TAG" --description "$CLUPILOT_VM_DESCRIPTION" \
		--memory 2048 --cores 2 --cpu x86-64-v2-AES \
		--net0 virtio,bridge=vmbr0 --scsihw virtio-scsi-pci --ostype l26 ||
		die "qm create $vmid failed"
	qm set "$vmid" --scsi0 "$storage:0,import-from=$image" || die "importing the disk of $vmid failed"
	qm set "$vmid" --ide2 "$storage:cloudinit" --boot order=scsi0 --serial0 socket --vga serial0 \
		--agent enabled=1 || die "configuring $vmid failed"
	qm template "$vmid" || die "qm template $vmid failed"
	verify_template "$vmid"
}

# qm template can exit 0 although the conversion failed: demand the flag and a base- disk.
verify_template() {
	local vmid="$1" config
	config="$(qm config "$vmid")" || die "qm config $vmid failed"
	printf '%s\n' "$config" | grep -qx 'template: 1' || die "VM $vmid is not marked as a template after qm template"
	printf '%s\n' "$config" | grep -Eq '^scsi0: [^,]*base-' ||
		die "VM $vmid is marked as a template but its disk was not converted to base-…"
	log "VM $vmid is a template ($(printf '%s\n' "$config" | awk '/^scsi0: / { print $2 }'))"
}
