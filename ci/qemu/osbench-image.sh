#!/usr/bin/env bash
# Builds the image the bench's boot:qemu arm boots: Debian's kernel (the
# vmlinux extracted for a PVH boot, as run.sh boots it) and an initramfs of
# busybox, ci/qemu/osbench-init.sh as /init and the static guest program
# metal/cmd/osbench-guest, which runs the osbench-lan/3 source on
# netramp's stack over the I219/82574L driver (sysfs backend). Prints
#
#	export OSBENCH_QEMU_KERNEL=...
#	export OSBENCH_QEMU_INITRD=...
#
# on stdout (progress on stderr), so:
#
#	eval "$(ci/qemu/osbench-image.sh [DIR])"   # DIR defaults to $NETRAMP_QEMU_CACHE/osbench
#	go run ./metal/cmd/osbench -arms qemu,D -define qemu=boot:qemu ...
#
# As root it installs the Debian packages it needs (see ci/qemu/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
CACHE=${NETRAMP_QEMU_CACHE:-/var/tmp/netramp-qemu}
OUT=${1:-$CACHE/osbench}
WORK=$(mktemp -d /tmp/netramp-osbench-image.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
# shellcheck source=ci/qemu/lib.sh
. "$ROOT/ci/qemu/lib.sh"

{
	command -v go >/dev/null || die "go not on PATH"
	ensure_packages
	KVER=$(pick_kernel)
	KIMG=$(kernel_image "$KVER")
	dir=$WORK/initramfs
	mkdir -p "$dir"/{bin,dev,proc,sys,tmp}
	cp /bin/busybox "$dir/bin/busybox"
	build_guest ./metal/cmd/osbench-guest "$dir/bin/osbench-guest"
	cp "$ROOT/ci/qemu/osbench-init.sh" "$dir/init"
	chmod +x "$dir/init" "$dir/bin/busybox" "$dir/bin/osbench-guest"
	mkdir -p "$OUT"
	# Uncompressed: a decompressor under TCG costs seconds.
	(cd "$dir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$OUT/initramfs.cpio.tmp"
	mv "$OUT/initramfs.cpio.tmp" "$OUT/initramfs.cpio"
	log "osbench image: kernel $KVER ($KIMG), initramfs $OUT/initramfs.cpio ($(du -h "$OUT/initramfs.cpio" | cut -f1))"
} >&2

printf 'export OSBENCH_QEMU_KERNEL=%q\nexport OSBENCH_QEMU_INITRD=%q\n' "$KIMG" "$OUT/initramfs.cpio"
