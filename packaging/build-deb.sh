#!/bin/sh
# Builds the Debian packages zpulse and zpulse-collector from the workspace with dpkg-deb.
#
#   packaging/build-deb.sh [--no-build] [--out DIR]
#
# Binaries come from $CARGO_TARGET_DIR/release (default: target/release); without
# --no-build they are built first (cargo build --release --locked). The collector package is
# skipped, with a note, when target/release/zpulse-collector does not exist.
# Output: DIR (default $CARGO_TARGET_DIR/debian)/zpulse_<version>-1_<arch>.deb and
# zpulse-collector_<version>-1_<arch>.deb; their paths are printed, one per line, last.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
target=${CARGO_TARGET_DIR:-$top/target}
case $target in /*) ;; *) target=$top/$target ;; esac
out=$target/debian
build=1
while [ $# -gt 0 ]; do
	case $1 in
	--no-build) build=0 ;;
	--out) out=$2; shift ;;
	*) echo "usage: $0 [--no-build] [--out DIR]" >&2; exit 2 ;;
	esac
	shift
done
rel=$target/release

if [ $build = 1 ]; then
	(cd "$top" && cargo build --release --locked -p zpulse-agent -p zpulse-checks)
	if [ -f "$top/collector/Cargo.toml" ]; then
		(cd "$top" && cargo build --release --locked -p zpulse-collector) ||
			echo "build-deb: the collector did not build; its package will be skipped" >&2
	fi
fi

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$top/Cargo.toml")
debversion=$version-1
arch=$(dpkg --print-architecture)
# Reproducible: every timestamp is the last commit's (or now, outside git).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
maintainer="zpulse developers <zpulse@example.org>"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# install_file MODE SRC DEST
install_file() { install -D -m "$1" "$2" "$3"; }
strip_elf() { strip --strip-unneeded --remove-section=.comment --remove-section=.note "$1"; }
man_gz() { # SRC DEST
	mkdir -p "$(dirname "$2")"
	gzip -9nc "$1" >"$2"
	chmod 0644 "$2"
}
changelog() { # PKG ROOT
	d=$2/usr/share/doc/$1
	mkdir -p "$d"
	date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
	printf '%s (%s) unstable; urgency=medium\n\n  * Built from the zpulse workspace (packaging/build-deb.sh).\n\n -- %s  %s\n' \
		"$1" "$debversion" "$maintainer" "$date" | gzip -9n >"$d/changelog.Debian.gz"
	chmod 0644 "$d/changelog.Debian.gz"
	install_file 0644 "$here/debian/copyright" "$d/copyright"
	install_file 0644 "$here/debian/$1/lintian-overrides" "$2/usr/share/lintian/overrides/$1"
}
# shlibs_depends FILE...: the Depends: dpkg-shlibdeps computes for these ELF files.
shlibs_depends() {
	s=$work/shlibs
	rm -rf "$s"
	mkdir -p "$s/debian"
	printf 'Source: zpulse\n\nPackage: zpulse\nArchitecture: any\n' >"$s/debian/control"
	(cd "$s" && dpkg-shlibdeps -O "$@" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}
# finish PKG ROOT DEPENDS DESCRIPTION: control, md5sums, dpkg-deb.
finish() {
	pkg=$1 root=$2
	mkdir -p "$root/DEBIAN"
	for f in postinst prerm postrm; do
		install -m 0755 "$here/debian/$pkg/$f" "$root/DEBIAN/$f"
	done
	(cd "$root" && find etc -type f 2>/dev/null | sed 's|^|/|' | sort) >"$root/DEBIAN/conffiles"
	chmod 0644 "$root/DEBIAN/conffiles"
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	cat >"$root/DEBIAN/control" <<-EOF
	Package: $pkg
	Version: $debversion
	Architecture: $arch
	Maintainer: $maintainer
	Installed-Size: $size
	Depends: $3
	Section: admin
	Priority: optional
	$4
	EOF
	chmod 0644 "$root/DEBIAN/control"
	(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
		xargs md5sum) >"$root/DEBIAN/md5sums"
	chmod 0644 "$root/DEBIAN/md5sums"
	find "$root" -type d -exec chmod 0755 {} +
	find "$root" -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	deb=$out/${pkg}_${debversion}_$arch.deb
	dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
	echo "$deb"
}

# --- zpulse -----------------------------------------------------------------------------
for f in "$rel/zpulse" "$rel/libzpulse_checks.so"; do
	[ -f "$f" ] || { echo "build-deb: $f is missing: build it first (cargo build --release)" >&2; exit 1; }
done
r=$work/zpulse
install_file 0755 "$rel/zpulse" "$r/usr/bin/zpulse"
strip_elf "$r/usr/bin/zpulse"
# Every shipped check, in one bundle (plugins/checks).
install_file 0644 "$rel/libzpulse_checks.so" "$r/usr/lib/zpulse/plugins/libzpulse_checks.so"
strip_elf "$r/usr/lib/zpulse/plugins/libzpulse_checks.so"
install_file 0644 "$here/conf/zpulse.toml" "$r/etc/zpulse/zpulse.toml"
install_file 0644 "$here/systemd/zpulse.service" "$r/lib/systemd/system/zpulse.service"
man_gz "$here/man/zpulse.8" "$r/usr/share/man/man8/zpulse.8.gz"
man_gz "$here/man/zpulse.toml.5" "$r/usr/share/man/man5/zpulse.toml.5.gz"
changelog zpulse "$r"
for f in "$top"/docs/checks/*.md; do
	install_file 0644 "$f" "$r/usr/share/doc/zpulse/checks/$(basename "$f")"
done
# The Grafana dashboard over the prometheus sink's families (docs/metrics.md, "Grafana"):
# architecture-independent data, so under /usr/share/zpulse (Debian Policy 9.1.1).
install_file 0644 "$here/grafana/zpulse.json" "$r/usr/share/zpulse/grafana/zpulse.json"
for rules in zpulse-alerts.yml zpulse-node-exporter.yml; do
	install_file 0644 "$here/prometheus/$rules" "$r/usr/share/zpulse/prometheus/$rules"
done
deps=$(shlibs_depends "$r/usr/bin/zpulse" "$r"/usr/lib/zpulse/plugins/*.so)
finish zpulse "$r" "${deps:+$deps, }adduser" "$(cat <<'EOF'
Description: ZFS telemetry agent: ARC, ZIL, pools and disks, checked by plugins
 zpulse reads ARC and ZIL counters from the kernel's kstats, per-vdev statistics
 from /dev/zfs and disk statistics from /proc/diskstats, without ever spawning a
 process, and turns two readings into rates. Check plugins diagnose what they
 see (a degraded, failing or full pool, layout mistakes, saturated HDDs, a
 too-small ARC, a filling special vdev, SLOG and L2ARC usage) and their
 findings go to a Fluent Forward collector, syslog or stdout.
 .
 This package ships the agent as a systemd service running as the unprivileged
 user zpulse, the seven checks (one plugin file), and /etc/zpulse/zpulse.toml.
EOF
)"

# --- zpulse-collector --------------------------------------------------------------------
if [ ! -x "$rel/zpulse-collector" ]; then
	echo "build-deb: $rel/zpulse-collector does not exist: zpulse-collector package skipped" >&2
	exit 0
fi
r=$work/zpulse-collector
install_file 0755 "$rel/zpulse-collector" "$r/usr/bin/zpulse-collector"
strip_elf "$r/usr/bin/zpulse-collector"
install_file 0644 "$here/debian/zpulse-collector/default" "$r/etc/default/zpulse-collector"
install_file 0644 "$here/conf/zpulse-collector.toml" "$r/etc/zpulse-collector/zpulse-collector.toml"
install_file 0644 "$here/systemd/zpulse-collector.service" "$r/lib/systemd/system/zpulse-collector.service"
man_gz "$here/man/zpulse-collector.8" "$r/usr/share/man/man8/zpulse-collector.8.gz"
changelog zpulse-collector "$r"
deps=$(shlibs_depends "$r/usr/bin/zpulse-collector")
finish zpulse-collector "$r" "${deps:+$deps, }adduser" "$(cat <<'EOF'
Description: zpulse collector: stores the events of many zpulse agents
 zpulse-collector receives Fluent Forward events from zpulse agents (or any
 Forward sender), acknowledges them, drops duplicates, stores them in an
 embedded SQLite database and answers queries about them.
 .
 This package ships it as a systemd service running as the unprivileged user
 zpulse-collector, listening on 127.0.0.1:24224 until clients are authenticated
 in /etc/zpulse-collector/zpulse-collector.toml.
EOF
)"
