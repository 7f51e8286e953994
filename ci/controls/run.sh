#!/usr/bin/env bash
# Negative controls: each ci/controls/<name>.patch injects one defect into a
# scratch copy of the repository, and the test it names must then FAIL.
#
#   ci/controls/run.sh                 every ci/controls/*.patch
#   ci/controls/run.sh NAME...         only these (NAME or NAME.patch or a path)
#   ci/controls/run.sh --self-check    prove the runner rejects a control that injects nothing
#   ci/controls/run.sh --apply [NAME...]  only check that each control still applies (no tests)
#
# A control's header, before its first "diff --git", holds two lines:
#   Control: <the defect it injects, one line>
#   Target: <package, e.g. ./cc> <go test -run regexp>
# and may hold a third, for a defect only a build flag shows (a data race):
#   Flags: <go test flags, e.g. -race>
# The defect is a unified diff (git diff), or, sturdier against refactors, one
# or more marker-anchored mutations (ci/controls/mutate) in the header:
#   Mutate: <file> control:<name>     the file marks the spot with "// control:<name>"
#   -<the line(s) to replace, found within 30 lines of the marker>
#   +<their replacement>
# Both may be used together; the mutations run after the diff.
# Verdicts, one line a control:
#   control NAME: RED as required
#   control NAME: STILL GREEN — the test cannot catch: <Control line>
#   control NAME: BROKEN — <why: no header, does not apply, build failure, no matching test>
# then "controls: N red, M green" (", K broken" when any). The exit status is
# non-zero if any control stays green, is broken, or does not apply.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
controls_dir=${CONTROLS_DIR:-$here}
jobs=${CONTROLS_JOBS:-2}
if [ "$jobs" -gt 2 ] 2>/dev/null; then jobs=2; fi

# One shared build cache; -trimpath makes the scratch copies' paths irrelevant
# to it, so each control recompiles only what its patch changed.
export GOCACHE=${GOCACHE:-$(go env GOCACHE)}
export GOFLAGS="-trimpath -buildvcs=false -mod=readonly"
export GOTOOLCHAIN=local

self_check() {
	local tmp target out rc
	tmp=$(mktemp -d /tmp/netramp-controls-selfcheck.XXXXXX)
	target=""
	for p in "$here"/*.patch; do
		[ -e "$p" ] || continue
		target=$(sed -n 's/^Target:[[:space:]]*//p' "$p" | head -n1)
		[ -n "$target" ] && break
	done
	[ -n "$target" ] || target="./cc ."
	printf 'Control: nothing (a control with no diff)\nTarget: %s\n' "$target" >"$tmp/selfcheck-empty.patch"
	out=$(CONTROLS_DIR="$tmp" "$here/run.sh" selfcheck-empty 2>&1)
	rc=$?
	rm -rf "$tmp"
	printf '%s\n' "$out" | sed 's/^/  | /'
	if [ "$rc" -ne 0 ] && printf '%s\n' "$out" | grep -q '^control selfcheck-empty: STILL GREEN' &&
		printf '%s\n' "$out" | grep -q '^controls: 0 red, 1 green'; then
		echo "self-check: ok (an empty control is reported green and fails the run)"
	else
		echo "self-check: FAILED (an empty control must be reported STILL GREEN with a non-zero exit; exit was $rc)"
		return 1
	fi
	# A mutation whose marker is nowhere must read as broken, not as red.
	tmp=$(mktemp -d /tmp/netramp-controls-selfcheck.XXXXXX)
	printf 'Control: nothing (a marker that does not exist)\nTarget: %s\nMutate: go.mod control:selfcheck-no-such-marker\n-module\n+module\n' "$target" >"$tmp/selfcheck-stale.patch"
	out=$(CONTROLS_DIR="$tmp" "$here/run.sh" selfcheck-stale 2>&1)
	rc=$?
	rm -rf "$tmp"
	printf '%s\n' "$out" | sed 's/^/  | /'
	if [ "$rc" -ne 0 ] && printf '%s\n' "$out" | grep -q '^control selfcheck-stale: BROKEN — the mutation does not apply'; then
		echo "self-check: ok (a mutation without its marker is reported broken and fails the run)"
		return 0
	fi
	echo "self-check: FAILED (a mutation without its marker must be reported BROKEN with a non-zero exit; exit was $rc)"
	return 1
}

# run_one PATCH RESULTFILE: writes "<verdict>\t<line>" to RESULTFILE, and the
# go test log beside it.
run_one() {
	local patch=$1 result=$2 name control target flags pkg re dir out rc
	name=$(basename "$patch" .patch)
	control=$(sed -n '/^diff --git /q; s/^Control:[[:space:]]*//p' "$patch" | head -n1)
	target=$(sed -n '/^diff --git /q; s/^Target:[[:space:]]*//p' "$patch" | head -n1)
	flags=$(sed -n '/^diff --git /q; s/^Flags:[[:space:]]*//p' "$patch" | head -n1)
	if [ -z "$control" ] || [ -z "$target" ]; then
		printf 'broken\tcontrol %s: BROKEN — the header needs Control: and Target: lines before the diff\n' "$name" >"$result"
		return
	fi
	pkg=${target%%[[:space:]]*}
	re=${target#"$pkg"}
	re=${re#"${re%%[![:space:]]*}"}
	if [ -z "$re" ] || [ "$re" = "$target" ]; then
		printf 'broken\tcontrol %s: BROKEN — Target needs a package and a -run regexp: %s\n' "$name" "$target" >"$result"
		return
	fi

	dir=$(mktemp -d /tmp/netramp-control."$name".XXXXXX)
	# The tree as it stands: tracked files that exist, plus untracked files
	# that are not ignored.
	# With --apply, only the files the control names.
	if [ -n "$apply_only" ]; then
		{ sed -n 's|^diff --git a/\([^ ]*\) .*|\1|p' "$patch"; sed -n '/^diff --git /q; s/^Mutate:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$patch"; } | tr '\n' '\0'
	else
		(cd "$root" && git ls-files -z --cached --others --exclude-standard)
	fi |
		while IFS= read -r -d '' f; do [ -f "$root/$f" ] && printf '%s\0' "$f"; done |
		(cd "$root" && tar --null --no-recursion -T - -cf -) | tar -xf - -C "$dir"

	if grep -q '^diff --git ' "$patch"; then
		if ! out=$(cd "$dir" && git apply --whitespace=nowarn "$patch" 2>&1); then
			printf 'broken\tcontrol %s: BROKEN — the patch does not apply: %s\n' "$name" "$(printf '%s' "$out" | head -n1)" >"$result"
			rm -rf "$dir"
			return
		fi
	fi
	if sed '/^diff --git /q' "$patch" | grep -q '^Mutate:'; then
		if ! out=$("$mutator" "$patch" "$dir" 2>&1); then
			printf 'broken\tcontrol %s: BROKEN — the mutation does not apply: %s\n' "$name" "$(printf '%s' "$out" | head -n1)" >"$result"
			rm -rf "$dir"
			return
		fi
	fi
	if [ -n "$apply_only" ]; then
		printf 'applies\tcontrol %s: applies\n' "$name" >"$result"
		rm -rf "$dir"
		return
	fi

	# shellcheck disable=SC2086 # the flags are words
	out=$(cd "$dir" && go test -count=1 $flags -run "$re" "$pkg" 2>&1)
	rc=$?
	printf '%s\n' "$out" >"$result.log"
	rm -rf "$dir"

	if printf '%s\n' "$out" | grep -qE '\[(build|setup) failed\]|cannot find package|no Go files|matched no packages'; then
		printf 'broken\tcontrol %s: BROKEN — the target does not build with the patch (a build failure is not a red test)\n' "$name" >"$result"
		return
	fi
	if [ "$rc" -eq 0 ]; then
		if printf '%s\n' "$out" | grep -q 'no tests to run'; then
			printf 'broken\tcontrol %s: BROKEN — %s matches no test in %s\n' "$name" "$re" "$pkg" >"$result"
		else
			printf 'green\tcontrol %s: STILL GREEN — the test cannot catch: %s\n' "$name" "$control" >"$result"
		fi
		return
	fi
	# A failing test's top-level name must match the regexp's top-level part
	# (go test -run splits the regexp at unbracketed slashes, one per level).
	local failed top matched="" re_top=${re%%/*}
	failed=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*--- FAIL: \([^[:space:]]*\).*/\1/p')
	for top in $failed; do
		top=${top%%/*}
		if printf '%s\n' "$top" | grep -qE -- "$re_top"; then matched=$top; break; fi
	done
	if [ -n "$matched" ]; then
		printf 'red\tcontrol %s: RED as required\n' "$name" >"$result"
	else
		printf 'broken\tcontrol %s: BROKEN — go test failed (exit %d) without a --- FAIL line for %s\n' "$name" "$rc" "$re" >"$result"
	fi
}

if [ "${1:-}" = "--self-check" ]; then
	self_check
	exit $?
fi
apply_only=""
if [ "${1:-}" = "--apply" ]; then
	apply_only=1
	shift
fi

patches=()
if [ "$#" -eq 0 ]; then
	for p in "$controls_dir"/*.patch; do [ -e "$p" ] && patches+=("$p"); done
else
	for a in "$@"; do
		if [ -f "$a" ]; then p=$(cd "$(dirname "$a")" && pwd)/$(basename "$a")
		elif [ -f "$controls_dir/$a" ]; then p=$controls_dir/$a
		else p=$controls_dir/${a%.patch}.patch
		fi
		patches+=("$p")
	done
fi
if [ "${#patches[@]}" -eq 0 ]; then
	echo "controls: none found in $controls_dir"
	exit 1
fi

results=$(mktemp -d /tmp/netramp-controls.XXXXXX)
trap 'rm -rf "$results"' EXIT
mutator=$results/mutate
if ! out=$(cd "$root" && go build -o "$mutator" ./ci/controls/mutate 2>&1); then
	echo "controls: cannot build ci/controls/mutate: $out"
	exit 1
fi
i=0
for p in "${patches[@]}"; do
	i=$((i + 1))
	r="$results/$(printf '%03d' "$i")"
	if [ ! -f "$p" ]; then
		printf 'broken\tcontrol %s: BROKEN — no such control file %s\n' "$(basename "$p" .patch)" "$p" >"$r"
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run_one "$p" "$r" &
done
wait

red=0 green=0 broken=0 applied=0
for r in "$results"/[0-9][0-9][0-9]; do
	IFS=$'\t' read -r verdict line <"$r"
	echo "$line"
	case $verdict in
	applies) applied=$((applied + 1)) ;;
	red) red=$((red + 1)) ;;
	green) green=$((green + 1)) ;;
	*) broken=$((broken + 1))
		if [ -s "$r.log" ] && [ -n "${CONTROLS_VERBOSE:-}" ]; then sed 's/^/    /' "$r.log" | tail -n 20; fi ;;
	esac
done
summary="controls: $red red, $green green"
[ -n "$apply_only" ] && summary="controls: $applied apply"
[ "$broken" -gt 0 ] && summary="$summary, $broken broken"
echo "$summary"
[ "$green" -eq 0 ] && [ "$broken" -eq 0 ]
