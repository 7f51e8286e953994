# Shell functions the QEMU harnesses share (sourced by run.sh and
# osbench-image.sh): Debian packages, the kernel to boot, and the vmlinux
# extracted from it for a PVH boot. The caller sets WORK (a scratch
# directory) and CACHE (where the extracted vmlinux is kept).

log() { printf 'qemu: %s\n' "$*"; }
die() { printf 'qemu: FATAL: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- packages
# ensure_packages [command=package ...]: installs what the boots need, and
# each extra package whose command is missing, with apt-get. Uses $WORK.
ensure_packages() {
	local need=() extra
	for extra in "$@"; do
		command -v "${extra%%=*}" >/dev/null || need+=("${extra#*=}")
	done
	command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
	dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
	command -v cpio >/dev/null || need+=(cpio)
	command -v xz >/dev/null || need+=(xz-utils)
	command -v zstd >/dev/null || need+=(zstd)
	command -v readelf >/dev/null || need+=(binutils)
	[ -n "$(pick_kernel)" ] || need+=(linux-image-amd64)
	[ ${#need[@]} -eq 0 ] && return 0
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# The guest boots without an initrd of Debian's making: skip building one.
	export INITRD=No
	if ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
		apt-get update -q >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log"; die "apt-get update failed"; }
	fi
	if ! apt-get install -y -q --no-install-recommends "${need[@]}" >>"$WORK/apt.log" 2>&1; then
		apt-get update -q >>"$WORK/apt.log" 2>&1 || true
		apt-get install -y -q --no-install-recommends "${need[@]}" >>"$WORK/apt.log" 2>&1 ||
			{ tail -20 "$WORK/apt.log"; die "apt-get install ${need[*]} failed"; }
	fi
	[ -n "$(pick_kernel)" ] || die "no kernel with VFIO modules under /boot and /lib/modules"
}

# pick_kernel prints the newest kernel version that has both an image in
# /boot and the vfio-pci module.
pick_kernel() {
	local v
	for v in $(ls /lib/modules 2>/dev/null | sort -V -r); do
		if [ -f "/boot/vmlinuz-$v" ] && compgen -G "/lib/modules/$v/kernel/drivers/vfio/pci/vfio-pci.ko*" >/dev/null; then
			echo "$v"
			return
		fi
	done
}

# ---------------------------------------------------------------- kernel
# kernel_image prints the image to boot: the uncompressed vmlinux when it can
# be extracted from the bzImage and carries the PVH entry note (boots in half
# the time under TCG, no decompressor), else the bzImage itself.
kernel_image() {
	local ver=$1 bz=/boot/vmlinuz-$1 out=$CACHE/vmlinux-$1
	mkdir -p "$CACHE"
	if [ -s "$out" ] && has_pvh_note "$out"; then
		echo "$out"
		return
	fi
	local off tmp=$out.tmp.$$
	# An xz stream starts FD 37 7A 58 5A 00, a zstd frame 28 B5 2F FD.
	for off in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bz" | cut -d: -f1); do
		if xz -dc --single-stream <(tail -c +$((off + 1)) "$bz") >"$tmp" 2>/dev/null && has_pvh_note "$tmp"; then
			mv "$tmp" "$out"
			echo "$out"
			return
		fi
	done
	for off in $(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$bz" | cut -d: -f1); do
		if zstd -dcq <(tail -c +$((off + 1)) "$bz") >"$tmp" 2>/dev/null && has_pvh_note "$tmp"; then
			mv "$tmp" "$out"
			echo "$out"
			return
		fi
	done
	rm -f "$tmp"
	echo "$bz"
}

# has_pvh_note: an ELF with XEN_ELFNOTE_PHYS32_ENTRY (type 18), which QEMU's
# -kernel needs to enter an uncompressed kernel through PVH.
has_pvh_note() {
	[ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ] || return 1
	readelf -n "$1" 2>/dev/null | grep -q '^  Xen .*(0x00000012)'
}


# ---------------------------------------------------------------- guest
# build_guest PACKAGE OUT: a static linux/amd64 guest program.
build_guest() {
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$2" "$1"
}
