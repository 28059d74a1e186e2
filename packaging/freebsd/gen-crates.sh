#!/bin/sh
# Writes sysutils/zpulse/Makefile.crates (CARGO_CRATES, what "make cargo-crates" prints on
# FreeBSD) from the workspace's Cargo.lock. packaging/test.sh fails when it is out of date.
#   packaging/freebsd/gen-crates.sh [Cargo.lock] > packaging/freebsd/sysutils/zpulse/Makefile.crates
set -eu
lock=${1:-$(dirname "$0")/../../Cargo.lock}
printf 'CARGO_CRATES=\t'
awk '
	/^\[\[package\]\]/ { if (name != "" && reg) print name "-" ver; name = ""; ver = ""; reg = 0 }
	/^name = /    { name = $3; gsub(/"/, "", name) }
	/^version = / { ver = $3; gsub(/"/, "", ver) }
	/^source = "registry\+/ { reg = 1 }
	END { if (name != "" && reg) print name "-" ver }
' "$lock" | LC_ALL=C sort -u | awk '{ printf "%s%s", (NR > 1 ? " \\\n\t\t" : ""), $0 } END { print "" }'
