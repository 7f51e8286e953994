#!/usr/bin/env bash
# The layer check: cc <- tcp <- stack <- metal, with nic/* under tcp and stack.
# A package may depend (directly or through others) only on layers below it.
# Each package's production dependencies and those of its in-package tests
# (files in the same package compile into it) are checked. External test
# packages (package foo_test) are exempt: nothing imports them, so they sit
# above everything, like host_tests, and may wire a link under a real stack.
# Prints every violation and exits 1, or prints "layers: ok (N packages)".
#
#   ci/layers.sh
set -euo pipefail -o noglob
cd "$(dirname "$0")/.."
mod=$(go list -m)

# One rule a line: packages (bash patterns joined by |, module prefix left
# off) : the patterns they must not depend on : why. stack/vclock is not an
# exception to the nic rule: it is a leaf (the last rule keeps it one) that
# lives under stack/ for its name, and nic/wire's tests drive time with it.
# internal/csum is the Internet checksum that tcp and the links share.
rules='
nic|nic/*             : stack|stack/vtest|tcp|tcp/*|cc|metal|metal/*|host_tests : nic/* is the link layer, under tcp and stack
cc                    : tcp|tcp/*|stack|stack/*|nic|nic/*|metal|metal/*         : cc is pure policy: events in, windows out
tcp|tcp/*             : stack|stack/*|metal|metal/*|host_tests                  : tcp is registered in a stack, never the other way
tcp/internal/*        : tcp|nic|nic/*                                           : the pure parts of tcp know nothing of links or the transport
stack|stack/*         : metal|metal/*|host_tests                                : the bench and the scenarios use the stack
counters|stack/vclock|internal/csum : *                                         : leaves: every layer may use them
'

# "pkg dep" pairs, module prefix stripped, for each package and for the test
# variant of each package ("pkg [pkg.test]"); external tests ("pkg_test") and
# test mains ("pkg.test") are left out.
pairs=$(go list -test -f '{{$p := .ImportPath}}{{range .Deps}}{{$p}}	{{.}}{{"\n"}}{{end}}' ./... |
	sed 's/ \[[^]]*\]//g' |
	awk -F'\t' -v m="$mod/" 'index($1, m) == 1 && index($2, m) == 1 && $1 !~ /(_test|\.test)$/ {
		print substr($1, length(m) + 1), substr($2, length(m) + 1) }' |
	sort -u)

bad=0
while IFS=: read -r pkgs forbidden why; do
	pkgs=$(echo $pkgs)
	forbidden=$(echo $forbidden)
	why=$(echo $why)
	[ -n "$pkgs" ] || continue
	last="" hits=""
	while read -r p d; do
		if [ "$p" != "$last" ]; then
			[ -z "$hits" ] || { echo "layers: $last depends on$hits ($why)"; bad=1; }
			last=$p hits=""
		fi
		in=0
		for pat in ${pkgs//|/ }; do
			# shellcheck disable=SC2053 # the rule's patterns are meant to match
			[[ $p == $pat ]] && in=1
		done
		[ $in = 1 ] || continue
		for pat in ${forbidden//|/ }; do
			# shellcheck disable=SC2053
			[[ $d == $pat ]] && { hits="$hits $d"; break; }
		done
	done <<<"$pairs"
	[ -z "$hits" ] || { echo "layers: $last depends on$hits ($why)"; bad=1; }
done <<<"$rules"

if [ $bad = 1 ]; then exit 1; fi
echo "layers: ok ($(go list ./... | wc -l) packages)"
