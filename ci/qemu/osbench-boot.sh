#!/usr/bin/env bash
# The bench's metal path, demonstrated under QEMU: builds the boot:qemu image
# (osbench-image.sh), then runs the bench's runner with a boot row (the
# osbench-lan/3 source on netramp's stack over the I219/82574L driver in a
# TCG guest, dialling the runner's sink on 127.0.0.1 through slirp) beside a
# virtual-time row of the same arm, and prints the table. It fails unless the
# boot row ran and its sink counted every byte of every connection, and the
# guest printed its PASS line: an image that does not boot, a hook that stays
# unavailable or a short transfer all exit non-zero. The verdict is not
# asserted (one boot row against one virtual row is a demonstration, not a
# comparison). About 10 s with a warm build cache, within 2 minutes cold.
#
# Environment (all optional):
#   NETRAMP_OSBENCH_BOOT_ARM=D          the arm on both rows (A, B, P, D: the stack's default)
#   NETRAMP_OSBENCH_BOOT_CONNS=1        connections a row
#   NETRAMP_OSBENCH_BOOT_BYTES=8000000  payload bytes a connection
#   NETRAMP_OSBENCH_BOOT_LIMIT=240      seconds the runner may take
#   NETRAMP_QEMU_KEEP=1                 keep the work directory (image, console, evidence)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
ARM=${NETRAMP_OSBENCH_BOOT_ARM:-D}
CONNS=${NETRAMP_OSBENCH_BOOT_CONNS:-1}
BYTES=${NETRAMP_OSBENCH_BOOT_BYTES:-8000000}
LIMIT=${NETRAMP_OSBENCH_BOOT_LIMIT:-240}
WORK=$(mktemp -d /tmp/netramp-osbench-boot.XXXXXX)
RUNNER=

cleanup() {
	# The runner leads its own process group, QEMU included: end them all.
	if [ -n "$RUNNER" ] && kill -0 "$RUNNER" 2>/dev/null; then
		kill -- "-$RUNNER" 2>/dev/null || true
		sleep 0.5
		kill -9 -- "-$RUNNER" 2>/dev/null || true
	fi
	if [ "${NETRAMP_QEMU_KEEP:-0}" = 1 ]; then
		echo "osbench-boot: work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=ci/qemu/lib.sh
. "$ROOT/ci/qemu/lib.sh"
fail() { printf 'osbench-boot: FAIL: %s\n' "$*" >&2; exit 1; }

ensure_packages jq=jq
eval "$(ci/qemu/osbench-image.sh "$WORK/image")"
go build -o "$WORK/osbench" ./metal/cmd/osbench

cat >"$WORK/demo.rules" <<RULES
# A demonstration of the metal path, not a comparison: the boot row runs on
# QEMU's emulated e1000e in real time, the other on the t14 preset in virtual
# time, and one pair cannot reach p <= 0.05 (the exact p of one pair is 1/2).
demo: qemu > $ARM on goodput in every pair, p <= 0.05
RULES

export OSBENCH_QEMU_CONSOLE=$WORK/console
# setsid: the runner leads a process group holding the QEMU it starts, so
# cleanup ends both even if the runner is killed first.
setsid "$WORK/osbench" -arms "qemu,$ARM" -define "qemu=boot:qemu:$ARM" -conns "$CONNS" -bytes "$BYTES" \
	-preset t14 -rules "$WORK/demo.rules" -evidence "$WORK/evidence" -no-plot &
RUNNER=$!
deadline=$((SECONDS + LIMIT))
while kill -0 "$RUNNER" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
if kill -0 "$RUNNER" 2>/dev/null; then
	[ -f "$WORK/console" ] && { echo "---- guest console"; tail -30 "$WORK/console"; echo "----"; }
	fail "the runner did not finish within ${LIMIT}s"
fi
rc=0
wait "$RUNNER" || rc=$?
RUNNER=
[ "$rc" = 0 ] || fail "the runner exited $rc"

# The boot row: it ran (not unavailable, no error), with every connection.
ev=$WORK/evidence
row=$(jq -c '[.[] | select(.arm == "qemu")]' "$ev/rows.json")
[ "$(jq length <<<"$row")" = 1 ] || fail "rows.json has no single qemu row: $row"
why=$(jq -r '.[0] | [.unavailable, .error] | map(select(. != "")) | join("; ")' <<<"$row")
[ -z "$why" ] || fail "the boot row did not run: $why"
[ "$(jq '.[0].connections' <<<"$row")" = "$CONNS" ] || fail "the boot row has $(jq '.[0].connections' <<<"$row") of $CONNS connections"
# Each connection's report, as the runner's sink measured it: all the bytes.
got=$(jq -s --argjson b "$BYTES" '[.[] | select(.arm == "qemu" and .report.bytes == $b and .report.bytes_expected == $b and (.report.error // "") == "")] | length' "$ev/connections.jsonl")
[ "$got" = "$CONNS" ] || fail "$got of $CONNS boot connections delivered all $BYTES bytes: $(jq -c 'select(.arm == "qemu") | .report | {bytes, bytes_expected, error}' "$ev/connections.jsonl")"
vrow=$(jq -c --arg a "$ARM" '[.[] | select(.arm == $a and .error == "" and .unavailable == "")] | length' "$ev/rows.json")
[ "$vrow" = 1 ] || fail "the virtual row $ARM did not run: $(jq -c . "$ev/rows.json")"
# And the guest says it ran the arm on netramp's stack over the driver.
pass=$(tr -d '\r' <"$WORK/console" | grep -a "^OSBENCH RESULT PASS arm $ARM: $CONNS connection(s), $((CONNS * BYTES)) bytes" || true)
[ -n "$pass" ] || { tail -30 "$WORK/console"; fail "the guest printed no PASS line"; }
echo "osbench-boot: guest: ${pass#OSBENCH RESULT }"
echo "osbench-boot: PASS: the boot row delivered $CONNS x $BYTES bytes (total $SECONDS s)"
