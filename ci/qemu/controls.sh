#!/usr/bin/env bash
# Negative controls for ci/qemu/run.sh: each ci/qemu/controls/<name>.patch
# injects one defect into a scratch copy of the tree; run.sh, limited to the
# boot and plan its Env: line names, must then exit non-zero with the check
# its Expect: line names reported FAIL. Header lines before "diff --git":
#   Control: <the defect>
#   Expect: <check/backend>
#   Env: VAR=value ...
#   Script: <another harness, e.g. ci/qemu/osbench-boot.sh> (optional)
# With a Script: line that script runs instead of run.sh, and Expect: is an
# extended regular expression one line of its output must match.
# Prints "control NAME: RED as required" or "... STILL GREEN", then
# "qemu-controls: N red, M green"; exits non-zero unless all are red.
#
#   ci/qemu/controls.sh            every control
#   ci/qemu/controls.sh NAME...    only these
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

patches=()
if [ $# -eq 0 ]; then
	patches=("$here"/controls/*.patch)
else
	for n in "$@"; do patches+=("$here/controls/${n%.patch}.patch"); done
fi

red=0
green=0
for p in "${patches[@]}"; do
	name=$(basename "$p" .patch)
	control=$(sed -n '/^diff --git /q; s/^Control:[[:space:]]*//p' "$p" | head -1)
	expect=$(sed -n '/^diff --git /q; s/^Expect:[[:space:]]*//p' "$p" | head -1)
	envs=$(sed -n '/^diff --git /q; s/^Env:[[:space:]]*//p' "$p" | head -1)
	script=$(sed -n '/^diff --git /q; s/^Script:[[:space:]]*//p' "$p" | head -1)
	pattern="^qemu: check $expect +FAIL"
	if [ -n "$script" ]; then
		pattern=$expect
	else
		script=ci/qemu/run.sh
	fi
	dir=$(mktemp -d /tmp/netramp-qemu-control."$name".XXXXXX)
	(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
		while IFS= read -r -d '' f; do [ -f "$root/$f" ] && printf '%s\0' "$f"; done |
		(cd "$root" && tar --null --no-recursion -T - -cf -) | tar -xf - -C "$dir"
	# The driver moves fast: allow the context to have shifted a little.
	if ! (cd "$dir" && { git apply "$p" 2>/dev/null || patch -s -p1 -F3 <"$p"; }); then
		echo "control $name: BROKEN — the patch does not apply"
		green=$((green + 1))
		rm -rf "$dir"
		continue
	fi
	out=$(cd "$dir" && env $envs bash "$script" 2>&1)
	rc=$?
	rm -rf "$dir"
	if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -Eq "$pattern"; then
		echo "control $name: RED as required ($(printf '%s\n' "$out" | grep -E "$pattern" | head -1 | cut -c1-160))"
		red=$((red + 1))
	else
		echo "control $name: STILL GREEN — $script cannot catch: $control (exit $rc)"
		printf '%s\n' "$out" | grep -E '^(qemu: check|osbench-boot:)' | sed 's/^/  | /'
		green=$((green + 1))
	fi
done
echo "qemu-controls: $red red, $green green"
[ $green -eq 0 ]
