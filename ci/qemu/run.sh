#!/usr/bin/env bash
# Proves nic/i219 on QEMU's e1000e (an emulated 82574L) under TCG: builds a
# static guest test program, a busybox initramfs with the uio and vfio modules
# of Debian's kernel, boots it, and reads one "CHECK <name> PASS|FAIL" line per
# check from the guest console. Prints "qemu: N passed, M failed" and exits
# non-zero on any failure. Idempotent; installs its Debian packages if missing.
#
# Environment (all optional):
#   NETRAMP_QEMU_BOOTS="plain iommu ref"   the boots to run
#   NETRAMP_QEMU_PLAN_PLAIN / _IOMMU / _REF  a boot's plan: backend:check,.../backend:...
#   NETRAMP_QEMU_TCP=ours|gvisor           the TCP the end-to-end checks run on the driver
#   NETRAMP_QEMU_TIMEOUT=360               per-boot limit in seconds
#   NETRAMP_QEMU_KEEP=1                    keep the work directory (consoles, pcaps, logs)
#   NETRAMP_QEMU_CACHE=/var/tmp/netramp-qemu  where the extracted vmlinux is kept
# See ci/qemu/README.md for the checks.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

BOOT_TIMEOUT=${NETRAMP_QEMU_TIMEOUT:-360}
BOOTS=${NETRAMP_QEMU_BOOTS:-"plain iommu ref"}
PLAN_PLAIN=${NETRAMP_QEMU_PLAN_PLAIN:-"sysfs:regs,smoke,e2e,flap,rxflood/uio:regs,smoke,e2e"}
PLAN_IOMMU=${NETRAMP_QEMU_PLAN_IOMMU:-"vfio:regs,smoke,e2e,e2ecsum"}
PLAN_REF=${NETRAMP_QEMU_PLAN_REF:-"kernel:e2e,flap"}
TCP_IMPL=${NETRAMP_QEMU_TCP:-ours}
CACHE=${NETRAMP_QEMU_CACHE:-/var/tmp/netramp-qemu}
WORK=$(mktemp -d /tmp/netramp-qemu.XXXXXX)
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "${NETRAMP_QEMU_KEEP:-0}" = 1 ]; then
		echo "qemu: work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=ci/qemu/lib.sh
. "$ROOT/ci/qemu/lib.sh"

# ---------------------------------------------------------------- initramfs
MODULES="uio uio_pci_generic irqbypass vfio vfio_virqfd vfio_iommu_type1 vfio-pci-core vfio-pci"

build_initramfs() {
	local ver=$1 dir=$WORK/initramfs m f
	mkdir -p "$dir"/{bin,dev,proc,sys,etc,lib/modules,tmp}
	cp /bin/busybox "$dir/bin/busybox"
	cp "$WORK/i219check" "$dir/bin/i219check"
	: >"$dir/etc/modules"
	for m in $MODULES; do
		f=$(find "/lib/modules/$ver/kernel" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" -o -name "$m.ko.gz" | head -1)
		if [ -z "$f" ]; then
			# Built in or folded into another module in this kernel version.
			grep -q "/$m.ko" "/lib/modules/$ver/modules.builtin" 2>/dev/null || log "module $m absent in $ver (skipped)"
			continue
		fi
		case $f in
		*.xz) xz -dc "$f" >"$dir/lib/modules/$m.ko" ;;
		*.zst) zstd -dcq "$f" >"$dir/lib/modules/$m.ko" ;;
		*.gz) gzip -dc "$f" >"$dir/lib/modules/$m.ko" ;;
		*) cp "$f" "$dir/lib/modules/$m.ko" ;;
		esac
		echo "$m" >>"$dir/etc/modules"
	done
	# Loaded on demand by /init for the reference backend only.
	f=$(find "/lib/modules/$ver/kernel/drivers/net/ethernet/intel/e1000e" -name 'e1000e.ko*' | head -1)
	case $f in
	*.xz) xz -dc "$f" >"$dir/lib/modules/e1000e.ko" ;;
	*.zst) zstd -dcq "$f" >"$dir/lib/modules/e1000e.ko" ;;
	*) cp "$f" "$dir/lib/modules/e1000e.ko" ;;
	esac
	cp "$ROOT/ci/qemu/init.sh" "$dir/init"
	chmod +x "$dir/init" "$dir/bin/busybox" "$dir/bin/i219check"
	# Uncompressed: a decompressor under TCG costs seconds.
	(cd "$dir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$WORK/initramfs.cpio"
}

# ---------------------------------------------------------------- boots
PASSED=0
FAILED=0
RESULTS=()

record() { # record NAME PASS|FAIL DETAIL
	RESULTS+=("$1 $2 $3")
	if [ "$2" = PASS ]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
	printf 'qemu: check %-18s %s %s\n' "$1" "$2" "$3"
}

# expected PLAN: the check/backend names a plan must report.
expected() {
	local item b c
	for item in ${1//\// }; do
		b=${item%%:*}
		local cs=${item#*:}
		for c in ${cs//,/ }; do echo "$c/$b"; done
	done
}

# boot NAME IOMMU PLAN: one guest boot; PLAN is
# backend:check,check/backend:check,...; each check must print PASS.
boot() {
	local name=$1 iommu=$2 plan=$3
	set -- $(expected "$plan")
	local con=$WORK/$name.console pcap=$WORK/$name.pcap mon=$WORK/$name.mon
	# no_timer_check: under a loaded TCG host the IO-APIC timer probe can miss
	# its window, and with interrupt remapping on the kernel then panics.
	local machine=q35 devs=() append="console=ttyS0 panic=-1 quiet loglevel=4 no_timer_check netramp.plan=$plan"
	append+=" netramp.args=-sink=10.0.2.2:$SINK_PORT,-tcp=$TCP_IMPL"
	if [ "$iommu" = 1 ]; then
		machine=q35,kernel-irqchip=split
		devs+=(-device intel-iommu,intremap=on)
		append+=" intel_iommu=on"
	fi
	local start
	start=$(date +%s%N)
	timeout "$BOOT_TIMEOUT" qemu-system-x86_64 -accel tcg -M "$machine" -m 512 -smp 1 \
		-nographic -no-reboot \
		-kernel "$KIMG" -initrd "$WORK/initramfs.cpio" -append "$append" \
		-monitor "unix:$mon,server=on,wait=off" \
		"${devs[@]}" \
		-netdev "user,id=n0,hostfwd=udp:127.0.0.1:$UDP_PORT-10.0.2.15:9" \
		-device e1000e,netdev=n0,romfile=,mac=52:54:00:12:34:56 \
		-object "filter-dump,id=f0,netdev=n0,file=$pcap" \
		</dev/null >"$con" 2>&1 &
	local qpid=$!
	PIDS+=("$qpid")
	react "$name" "$qpid" >"$WORK/$name.host" 2>&1 &
	local rpid=$!
	PIDS+=("$rpid")
	local rc=0
	wait "$qpid" || rc=$?
	wait "$rpid" || true
	sed 's/^/qemu:   host: /' "$WORK/$name.host"
	local ms=$((($(date +%s%N) - start) / 1000000))
	log "boot $name: qemu exit $rc after $((ms / 1000)).$((ms % 1000 / 100))s (console $con)"
	local c bad=0
	for c in "$@"; do
		local line
		line=$(grep -a "^CHECK $c " "$con" | tail -1 | tr -d '\r') || true
		case $line in
		"CHECK $c PASS"*) record "$c" PASS "${line#CHECK $c PASS }" ;;
		"CHECK $c FAIL"*) record "$c" FAIL "${line#CHECK $c FAIL }"; bad=1 ;;
		*) record "$c" FAIL "no result line (qemu exit $rc)"; bad=1 ;;
		esac
	done
	# A failure the plan did not name (a close that hung, bad arguments).
	local extra
	while IFS= read -r extra; do
		c=${extra#CHECK }
		c=${c%% *}
		case " $* " in *" $c "*) continue ;; esac
		record "$c" FAIL "${extra#CHECK $c FAIL }"
		bad=1
	done < <(grep -a '^CHECK [^ ]* FAIL' "$con" | tr -d '\r')
	# A program that crashed after its last result line (in a close, say).
	local b code
	while read -r b code; do
		grep -aq "^CHECK [^ ]*/$b FAIL" "$con" && continue
		record "exit/$b" FAIL "i219check exited $code after its result lines (see the console)"
		bad=1
	done < <(tr -d '\r' <"$con" | sed -n 's/^GUEST i219check \([^ ]*\) exit \([1-9][0-9]*\).*/\1 \2/p')
	# What crossed the card, as QEMU saw it: each smoke ARP exchange (by the
	# backend's sender address), TCP both ways, the flood's UDP.
	local exp=()
	for c in "$@"; do
		case $c in
		smoke/sysfs) exp+=(arp@10.0.2.21) ;;
		smoke/uio) exp+=(arp@10.0.2.22) ;;
		smoke/vfio) exp+=(arp@10.0.2.23) ;;
		e2e/* | e2ecsum/* | flap/*) exp+=(tcp) ;;
		rxflood/*) exp+=(udp-in) ;;
		esac
	done
	if [ ${#exp[@]} -gt 0 ]; then
		local out expect
		expect=$(printf '%s\n' "${exp[@]}" | sort -u | paste -sd, -)
		if out=$("$WORK/i219host" pcap -file "$pcap" -expect "$expect" 2>&1); then
			record "pcap/$name" PASS "$(echo "$out" | tr '\n' ' ')"
		else
			record "pcap/$name" FAIL "$(echo "$out" | tr '\n' ' ')"
			bad=1
		fi
	fi
	if [ $bad = 1 ] || [ $rc != 0 ]; then
		log "---- tail of $name console"
		tail -60 "$con" | tr -d '\r'
		log "----"
	fi
}

# react NAME QPID: while the guest runs, act on each "SYNC <what>" line it
# prints: take the link down and up through the monitor, or flood the
# guest's forwarded UDP port.
react() {
	local name=$1 qpid=$2 con=$WORK/$1.console mon=$WORK/$1.mon handled=0 syncs i
	while kill -0 "$qpid" 2>/dev/null; do
		mapfile -t syncs < <(grep -a '^SYNC ' "$con" | tr -d '\r')
		for ((i = handled; i < ${#syncs[@]}; i++)); do
			echo "guest asked: ${syncs[$i]}"
			case ${syncs[$i]} in
			"SYNC linkdown")
				"$WORK/i219host" mon -sock "$mon" "set_link n0 off"
				sleep 2
				"$WORK/i219host" mon -sock "$mon" "set_link n0 on"
				;;
			"SYNC flood"*)
				"$WORK/i219host" flood -addr "127.0.0.1:$UDP_PORT" -n "${syncs[$i]#SYNC flood }"
				;;
			esac
		done
		handled=${#syncs[@]}
		sleep 0.1
	done
}

# ---------------------------------------------------------------- main
command -v go >/dev/null || die "go not on PATH"
ensure_packages
KVER=$(pick_kernel)
KIMG=$(kernel_image "$KVER")
log "kernel $KVER, booting $KIMG"

build_guest ./metal/cmd/i219check "$WORK/i219check"
go build -o "$WORK/i219host" ./metal/cmd/i219host
"$WORK/i219host" sink -portfile "$WORK/sink.port" >"$WORK/sink.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -s "$WORK/sink.port" ] && break; sleep 0.1; done
SINK_PORT=$(cat "$WORK/sink.port") || die "the sink did not start: $(cat "$WORK/sink.log")"
UDP_PORT=$("$WORK/i219host" freeport)
build_initramfs "$KVER"
log "initramfs $(du -h "$WORK/initramfs.cpio" | cut -f1)"

for b in $BOOTS; do
	case $b in
	plain) boot plain 0 "$PLAN_PLAIN" ;;
	iommu) boot iommu 1 "$PLAN_IOMMU" ;;
	ref) boot ref 0 "$PLAN_REF" ;;
	*) die "unknown boot $b" ;;
	esac
done

log "summary (total $SECONDS s):"
printf '  %s\n' "${RESULTS[@]}"
echo "qemu: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
