#!/bin/sh
# Packaging checks, runnable in CI:
#   packaging/test.sh [--no-build] [--install]
# Builds the .debs (packaging/build-deb.sh), then: sh -n and shellcheck on every shell script,
# mandoc -T lint on the man pages, systemd-analyze verify and security (exposure threshold),
# the packages' contents (dpkg -c), the conffile (as shipped, with every setting uncommented,
# and the one-line collector setup) against the packaged zpulse and plugins, lintian, and
# Makefile.crates against Cargo.lock.
# --install (root, a throwaway machine such as CI): also dpkg -i the package, run the agent
# as the zpulse user, and purge it again.
# Needs: lintian mandoc systemd dpkg-dev binutils shellcheck (Debian packages).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=--build
install=0
for a in "$@"; do
	case $a in
	--no-build) build=--no-build ;;
	--install) install=1 ;;
	*) echo "usage: $0 [--no-build] [--install]" >&2; exit 2 ;;
	esac
done
# The highest `systemd-analyze security` exposure allowed (0 best .. 10 worst).
max_exposure=2.0

for t in lintian mandoc systemd-analyze dpkg-deb dpkg-shlibdeps strip shellcheck; do
	command -v "$t" >/dev/null || { echo "test.sh: $t is missing (apt-get install lintian mandoc systemd dpkg-dev binutils shellcheck)" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
step() { echo "== $*"; }

step "build the packages"
if [ $build = --no-build ]; then
	"$here/build-deb.sh" --no-build --out "$tmp/debs" >"$tmp/built"
else
	"$here/build-deb.sh" --out "$tmp/debs" >"$tmp/built"
fi
deb=$(grep '/zpulse_' "$tmp/built")
cdeb=$(grep '/zpulse-collector_' "$tmp/built" || true)
ok "$(tr '\n' ' ' <"$tmp/built")"
[ -n "$cdeb" ] || echo "note zpulse-collector package not built (no target/release/zpulse-collector)"

step "shell scripts: sh -n, shellcheck"
scripts="$here/build-deb.sh $here/test.sh $here/freebsd/gen-crates.sh
	$here/debian/zpulse/postinst $here/debian/zpulse/prerm $here/debian/zpulse/postrm
	$here/debian/zpulse-collector/postinst $here/debian/zpulse-collector/prerm
	$here/debian/zpulse-collector/postrm
	$here/freebsd/sysutils/zpulse/files/zpulse.in
	$here/freebsd/sysutils/zpulse/files/zpulse_collector.in"
for s in $scripts; do
	# rc.d scripts: rc.subr sets their variables (SC2034/SC2154) and is not here (SC1091).
	if sh -n "$s" && shellcheck -s sh -e SC2034,SC2154,SC1091 "$s"; then ok "${s#"$top"/}"; else fail "${s#"$top"/}"; fi
done

step "man pages: mandoc -T lint -W warning"
for m in "$here"/man/*.[58]; do
	if mandoc -T lint -W warning "$m"; then ok "${m#"$top"/}"; else fail "${m#"$top"/}"; fi
done

step "package contents"
dpkg-deb -x "$deb" "$tmp/root"
dpkg-deb -e "$deb" "$tmp/root/DEBIAN"
dpkg -c "$deb" | awk '{ print $1, $2, $6 }' | sed 's|\./|/|' | LC_ALL=C sort >"$tmp/contents"
cat >"$tmp/expected" <<'EOF'
-rw-r--r-- root/root /etc/zpulse/zpulse.toml
-rw-r--r-- root/root /lib/systemd/system/zpulse.service
-rw-r--r-- root/root /usr/lib/zpulse/plugins/libzpulse_checks.so
-rw-r--r-- root/root /usr/share/doc/zpulse/changelog.Debian.gz
-rw-r--r-- root/root /usr/share/doc/zpulse/copyright
-rw-r--r-- root/root /usr/share/lintian/overrides/zpulse
-rw-r--r-- root/root /usr/share/man/man5/zpulse.toml.5.gz
-rw-r--r-- root/root /usr/share/man/man8/zpulse.8.gz
-rw-r--r-- root/root /usr/share/zpulse/grafana/zpulse.json
-rw-r--r-- root/root /usr/share/zpulse/prometheus/zpulse-alerts.yml
-rw-r--r-- root/root /usr/share/zpulse/prometheus/zpulse-node-exporter.yml
-rwxr-xr-x root/root /usr/bin/zpulse
EOF
for f in "$top"/docs/checks/*.md; do
	echo "-rw-r--r-- root/root /usr/share/doc/zpulse/checks/$(basename "$f")" >>"$tmp/expected"
done
grep -v '^d' "$tmp/contents" >"$tmp/files"
LC_ALL=C sort -o "$tmp/expected" "$tmp/expected"
if diff -u "$tmp/expected" "$tmp/files"; then ok "zpulse.deb holds exactly the expected files, modes and owners"; else fail "zpulse.deb contents"; fi
if grep -q 'template\|test_plugin' "$tmp/contents"; then fail "template or test plugins packaged"; else ok "no template or test plugins"; fi
# The shared libraries the agent and its checks load: each one's pages count in the agent's
# resident memory (libm's load alone kept about half a MiB: docs/performance.md), so a new
# one is a decision, not an accident of a float function.
for f in usr/bin/zpulse usr/lib/zpulse/plugins/libzpulse_checks.so; do
	needed=$(readelf -d "$tmp/root/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^ld-linux' | LC_ALL=C sort | tr '\n' ' ')
	if [ "$needed" = "libc.so.6 libgcc_s.so.1 " ]; then ok "/$f loads libc and libgcc_s only"; else fail "/$f loads: $needed"; fi
done
if [ "$(cat "$tmp/root/DEBIAN/conffiles")" = /etc/zpulse/zpulse.toml ]; then ok "conffile /etc/zpulse/zpulse.toml"; else fail "conffiles: $(cat "$tmp/root/DEBIAN/conffiles")"; fi
if grep -q '^Depends:.*adduser' "$tmp/root/DEBIAN/control" && grep -q '^Depends:.*libc6' "$tmp/root/DEBIAN/control"; then ok "Depends: $(sed -n 's/^Depends: //p' "$tmp/root/DEBIAN/control")"; else fail "Depends"; fi
if grep -q 'adduser --system' "$tmp/root/DEBIAN/postinst"; then ok "postinst creates the zpulse system user"; else fail "postinst user"; fi
if [ -n "$cdeb" ]; then
	dpkg -c "$cdeb" >"$tmp/ccontents"
	for f in /usr/bin/zpulse-collector /lib/systemd/system/zpulse-collector.service \
		/etc/default/zpulse-collector /etc/zpulse-collector/zpulse-collector.toml \
		/usr/share/man/man8/zpulse-collector.8.gz; do
		if grep -q " \.$f\$" "$tmp/ccontents"; then ok "zpulse-collector.deb has $f"; else fail "zpulse-collector.deb lacks $f"; fi
	done
fi

step "the conffile against the packaged agent and plugins"
zp=$tmp/root/usr/bin/zpulse
if "$zp" check-config --config "$tmp/root/etc/zpulse/zpulse.toml" >/dev/null; then ok "as shipped: valid"; else fail "as shipped"; fi
# Every "#key = value" and "#[table]" line uncommented: each documented setting must exist
# with a valid value, for the agent and for the plugin that reads it.
sed -E 's/^#([a-z_]+ = |\[)/\1/' "$tmp/root/etc/zpulse/zpulse.toml" |
	sed "s|/var/lib/zpulse|$tmp/state|; s|\"/usr/lib/zpulse/plugins\"|\"$tmp/root/usr/lib/zpulse/plugins\"|" >"$tmp/all.toml"
if "$zp" check-config --config "$tmp/all.toml" >"$tmp/out" 2>&1; then ok "every setting uncommented: valid"; else cat "$tmp/out"; fail "every setting uncommented"; fi
# The shipped checks: one bundle holding every check that has its page in docs/checks.
shipped=$(find "$top/docs/checks" -name '*.md' | wc -l)
if "$zp" plugins --config "$tmp/all.toml" >"$tmp/out" 2>&1 && [ "$(grep -c ' loaded ' "$tmp/out")" = "$shipped" ]; then
	ok "every setting uncommented: the $shipped packaged plugins load with their tables"
else
	cat "$tmp/out"; fail "plugins with every setting uncommented"
fi
# Built with the agent, every shipped check reads its own sample (ABI 1.4), stripped as packaged.
if [ "$(grep -c ' loaded  *native ' "$tmp/out")" = "$shipped" ]; then
	ok "the $shipped packaged plugins take the agent's own sample (SAMPLE native)"
else
	cat "$tmp/out"; fail "packaged plugins not given the native sample"
fi
line=$(sed -n 's/^# \(sink = \[{ type = "forward".*\)$/\1/p' "$tmp/root/etc/zpulse/zpulse.toml")
printf '%s\n' "$line" | sed "s|}]|, spool_dir = \"$tmp/spool1\" }]|" >"$tmp/one.toml"
if [ -n "$line" ] && "$zp" check-config --config "$tmp/one.toml" | grep -q 'sinks forward collector.example.net:24224'; then
	ok "the one-line collector setup is valid"
else
	fail "the one-line collector setup"
fi

step "systemd units: systemd-analyze verify, security"
for u in zpulse zpulse-collector; do
	# The binaries are not installed here: point ExecStart at one that exists.
	sed "s|^ExecStart=/usr/bin/$u |ExecStart=$zp |" "$here/systemd/$u.service" >"$tmp/$u.service"
	if systemd-analyze verify --man=no "$tmp/$u.service"; then ok "verify $u.service"; else fail "verify $u.service"; fi
	score=$(systemd-analyze security --offline=yes "$tmp/$u.service" 2>/dev/null | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
	if [ -n "$score" ] && awk -v s="$score" -v m="$max_exposure" 'BEGIN { exit !(s <= m) }'; then
		ok "security $u.service: exposure $score (at most $max_exposure)"
	else
		fail "security $u.service: exposure $score > $max_exposure"
	fi
done

step "lintian"
for d in $deb $cdeb; do
	if lintian --pedantic --fail-on error,warning "$d" 2>&1 | grep -v 'running with root privileges'; then :; fi
	if lintian --pedantic --fail-on error,warning "$d" >/dev/null 2>&1; then ok "lintian $(basename "$d")"; else fail "lintian $(basename "$d")"; fi
done

step "FreeBSD port"
if "$here/freebsd/gen-crates.sh" "$top/Cargo.lock" | cmp -s - "$here/freebsd/sysutils/zpulse/Makefile.crates"; then
	ok "Makefile.crates matches Cargo.lock"
else
	fail "Makefile.crates is stale: run packaging/freebsd/gen-crates.sh > packaging/freebsd/sysutils/zpulse/Makefile.crates"
fi
for f in Makefile pkg-plist pkg-descr files/zpulse.in files/zpulse_collector.in files/pkg-message.in; do
	if [ -s "$here/freebsd/sysutils/zpulse/$f" ]; then ok "port has $f"; else fail "port lacks $f"; fi
done

if [ $install = 1 ]; then
	step "install, run as zpulse, purge"
	[ "$(id -u)" = 0 ] || { fail "--install needs root"; exit 1; }
	if dpkg -i "$deb" >"$tmp/out" 2>&1; then ok "dpkg -i"; else cat "$tmp/out"; fail "dpkg -i"; fi
	if getent passwd zpulse | grep -q ':/var/lib/zpulse:/usr/sbin/nologin$'; then ok "system user zpulse"; else fail "user zpulse: $(getent passwd zpulse)"; fi
	if [ "$(stat -c '%U:%G %a' /etc/zpulse/zpulse.toml)" = "root:zpulse 640" ]; then ok "conffile root:zpulse 0640"; else fail "conffile $(stat -c '%U:%G %a' /etc/zpulse/zpulse.toml)"; fi
	if runuser -u zpulse -- zpulse check-config >/dev/null; then ok "zpulse check-config as zpulse"; else fail "check-config as zpulse"; fi
	if runuser -u zpulse -- zpulse plugins >"$tmp/out" 2>&1 && [ "$(grep -c ' loaded ' "$tmp/out")" = "$shipped" ]; then ok "$shipped plugins load as zpulse"; else cat "$tmp/out"; fail "plugins as zpulse"; fi
	if runuser -u zpulse -- zpulse once >/dev/null 2>&1; then ok "zpulse once as zpulse"; else fail "once as zpulse"; fi
	if systemd-analyze verify /lib/systemd/system/zpulse.service; then ok "verify the installed unit (with man pages)"; else fail "verify installed unit"; fi
	if dpkg --purge zpulse >"$tmp/out" 2>&1 && [ ! -e /etc/zpulse ] && [ ! -e /usr/bin/zpulse ] &&
		! dpkg-statoverride --list /etc/zpulse/zpulse.toml >/dev/null; then
		ok "dpkg --purge leaves nothing but the user"
	else
		cat "$tmp/out"; fail "purge"
	fi
fi

echo
if [ $fails = 0 ]; then echo "packaging: all checks passed"; else echo "packaging: $fails check(s) failed"; exit 1; fi
