#!/bin/sh
# Checks the FreeBSD port without FreeBSD: the rc.d scripts, and the port's Makefile against
# the ports framework's conventions (Mk/Uses/cargo.mk, UIDs/GIDs).
#
# The rc.d scripts are checked against the rules of FreeBSD's rc.subr(8) that decide whether the
# service starts at all, by running each script with a stand-in for /etc/rc.subr that
# evaluates the script's variables the way run_rc_command does (libexec/rc/rc.subr in
# freebsd-src), and prints what rc.subr would execute instead of executing it:
#
#   * rc_flags is $flags when that is non-empty, else ${name}_flags; the start command is
#     "$command $rc_flags $command_args".
#   * ${name}_user set (and not the caller) wraps it in: su -m $user -c 'sh -c "..."'.
#   * an extra command X runs whatever "eval _cmd=\$${X}_cmd" yields.
#
# The command line is then parsed with daemon(8)'s option string (usr.sbin/daemon/daemon.c,
# shortopts "+cfHSp:P:ru:o:s:l:t:m:R:T:h": options stop at the first operand) to check that
# daemon(8) gets only its own options, runs as root (no su) and drops to the user with -u,
# and that the pid files are in /var/run, which root owns.
#   packaging/freebsd/test.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
files=$here/sysutils/zpulse/files
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# The stand-in for /etc/rc.subr: only what run_rc_command does before it executes.
cat >"$tmp/rc.subr" <<'EOF'
load_rc_config() { . "$RC_CONF"; }
checkyesno() {
	eval _value=\$${1}
	case $_value in
	[Yy][Ee][Ss]|[Tt][Rr][Uu][Ee]|[Oo][Nn]|1) return 0 ;;
	*) return 1 ;;
	esac
}
run_rc_command() {
	rc_arg=$1
	if [ -n "$flags" ]; then
		rc_flags=$flags
	else
		eval rc_flags=\$${name}_flags
	fi
	eval _user=\$${name}_user
	_keywords="start stop restart rcvar enable disable delete enabled describe extracommands $extra_commands"
	_found=
	for _elem in $_keywords; do
		[ "$_elem" = "$rc_arg" ] && _found=1
	done
	[ -n "$_found" ] || { echo "UNKNOWN $rc_arg"; return 1; }
	eval _cmd=\$${rc_arg}_cmd _precmd=\$${rc_arg}_precmd
	if [ -n "$_cmd" ]; then
		echo "CMD $_cmd"
		echo "PRECMD $_precmd"
		return 0
	fi
	case $rc_arg in
	start)
		_doit="$command $rc_flags $command_args"
		if [ -n "$_user" ]; then
			_doit="su -m $_user -c 'sh -c \"$_doit\"'"
		fi
		echo "PRECMD $start_precmd"
		echo "DOIT $_doit"
		;;
	*) echo "DEFAULT $rc_arg" ;;
	esac
}
EOF

# Runs one script with an rc.conf; prints what rc.subr would do.
run() { # script rc.conf-text command
	sed -e "s|^\. /etc/rc.subr$|. $tmp/rc.subr|" -e 's|%%PREFIX%%|/usr/local|g' \
		"$files/$1" >"$tmp/script"
	printf '%s\n' "$2" >"$tmp/rc.conf"
	RC_CONF=$tmp/rc.conf flags='' sh "$tmp/script" "$3"
}

# daemon(8)'s getopt over the words after /usr/sbin/daemon: prints "opt value" lines, then
# "operands <first operand> ...". An option outside shortopts prints "usage".
daemon_args() {
	awk -v shortopts="cfHSp:P:ru:o:s:l:t:m:R:T:h" '
	BEGIN { }
	{
		n = split($0, w, " ")
		i = 1
		while (i <= n && w[i] ~ /^-./ && w[i] != "--") {
			word = w[i]
			# No long option is used by the scripts: any is unexpected.
			if (word ~ /^--/) { print "usage " word; exit }
			for (j = 2; j <= length(word); j++) {
				c = substr(word, j, 1)
				k = index(shortopts, c)
				if (c == ":" || k == 0) { print "usage " c; exit }
				if (substr(shortopts, k + 1, 1) == ":") {
					if (j < length(word)) { v = substr(word, j + 1) }
					else { i++; v = w[i] }
					print c, v
					break
				}
				print c, ""
			}
			i++
		}
		if (w[i] == "--") i++
		line = "operands"
		for (; i <= n; i++) line = line " " w[i]
		print line
	}'
}

# check_start script procname user flags rc.conf: the start command, as rc.subr builds it.
check_start() {
	script=$1 procname=$2 user=$3 extra=$4 conf=$5
	out=$(run "$script" "$conf" start)
	doit=$(printf '%s\n' "$out" | sed -n 's/^DOIT //p')
	case $doit in
	su\ *)
		fail "$script: rc.subr starts daemon(8) through su -m; daemon -u then fails as non-root"
		doit=${doit#*sh -c \"}
		doit=${doit%\"\'}
		;;
	esac
	case $doit in
	/usr/sbin/daemon\ *) ;;
	*) fail "$script: start runs '$doit', not /usr/sbin/daemon"; return ;;
	esac
	args=$(printf '%s\n' "${doit#/usr/sbin/daemon }" | tr '\t' ' ' | tr -s ' ' | daemon_args)
	if printf '%s\n' "$args" | grep -q '^usage'; then
		fail "$script: daemon(8) would print its usage: $(printf '%s\n' "$args" | grep '^usage')"
		return
	fi
	operands=$(printf '%s\n' "$args" | sed -n 's/^operands //p')
	case $operands in
	"$procname "*) ok "$script: daemon(8) options end where $procname starts" ;;
	*) fail "$script: daemon(8) would run '$operands', not $procname" ;;
	esac
	case $operands in
	*" $extra") ok "$script: ${name}_flags '$extra' go to ${procname##*/}, last" ;;
	*) fail "$script: '$extra' are not the last arguments of ${procname##*/}: $operands" ;;
	esac
	u=$(printf '%s\n' "$args" | sed -n 's/^u //p')
	if [ "$u" = "$user" ]; then ok "$script: daemon -u $user"; else fail "$script: daemon -u is '$u', expected $user"; fi
	for o in p P; do
		f=$(printf '%s\n' "$args" | sed -n "s/^$o //p")
		case $f in
		/var/run/*/*) fail "$script: -$o $f is in a subdirectory of /var/run" ;;
		/var/run/?*) ok "$script: -$o $f (root-owned /var/run)" ;;
		*) fail "$script: -$o '$f' is not in /var/run" ;;
		esac
	done
	if printf '%s\n' "$args" | grep -q '^R '; then ok "$script: daemon -R restarts"
	else fail "$script: daemon(8) does not restart the child"; fi
}

# check_extra script: every extra command dispatches to a function of the script.
check_extra() {
	script=$1 conf=$2
	sed -e "s|^\. /etc/rc.subr$|. $tmp/rc.subr|" -e 's|%%PREFIX%%|/usr/local|g' \
		"$files/$script" >"$tmp/script"
	extras=$(sed -n 's/^extra_commands="\(.*\)"$/\1/p' "$tmp/script")
	for x in $extras; do
		case $x in
		*[!A-Za-z0-9_]*) fail "$script: extra command '$x' is not a shell identifier; rc.subr evaluates \$${x}_cmd" ; continue ;;
		esac
		out=$(run "$script" "$conf" "$x" || true)
		case $out in
		"CMD "*)
			cmd=$(printf '%s\n' "$out" | sed -n 's/^CMD //p')
			# The function must exist in the script.
			if grep -q "^$cmd()" "$tmp/script"; then ok "$script: $x runs $cmd()"; else fail "$script: $x runs '$cmd', not a function of the script"; fi
			;;
		"DEFAULT $x") ok "$script: $x is rc.subr's own ($x)" ;;
		*) fail "$script: $x: $out" ;;
		esac
	done
}

echo "== shellcheck"
command -v shellcheck >/dev/null || { echo "test.sh: shellcheck is missing (apt-get install shellcheck)" >&2; exit 1; }
for s in "$here/test.sh" "$here/link-check.sh" "$here/gen-crates.sh"; do
	if shellcheck -s sh "$s"; then ok "${s#"$here"/}"; else fail "${s#"$here"/}"; fi
done
# rc.subr sets and reads their variables (SC2034/SC2154) and is not here (SC1091).
for s in "$files/zpulse.in" "$files/zpulse_collector.in"; do
	if shellcheck -s sh -e SC2034,SC2154,SC1091 "$s"; then ok "${s#"$here"/}"; else fail "${s#"$here"/}"; fi
done

echo "== zpulse"
conf='zpulse_enable=YES
zpulse_flags="--verbose"'
name=zpulse
check_start zpulse.in /usr/local/bin/zpulse zpulse "--verbose" "$conf"
check_start zpulse.in /usr/local/bin/zpulse zpulse2 "--verbose" "$conf
zpulse_user=zpulse2"
check_extra zpulse.in "$conf"
out=$(run zpulse.in "$conf" configtest || true)
case $out in
*"CMD zpulse_configtest"*) ok "zpulse.in: service zpulse configtest" ;;
*) fail "zpulse.in: configtest: $out" ;;
esac

echo "== zpulse_collector"
conf='zpulse_collector_enable=YES
zpulse_collector_flags="--http 127.0.0.1:8080"'
name=zpulse_collector
check_start zpulse_collector.in /usr/local/bin/zpulse-collector zpulse-collector \
	"--http 127.0.0.1:8080" "$conf"
check_extra zpulse_collector.in "$conf"
# shellcheck disable=SC2016 # the pattern is the script's literal text
agent_user=$(sed -n 's/^: "${zpulse_user:=\(.*\)}"$/\1/p' "$files/zpulse.in")
# shellcheck disable=SC2016
coll_user=$(sed -n 's/^: "${zpulse_collector_user:=\(.*\)}"$/\1/p' "$files/zpulse_collector.in")
if [ -n "$coll_user" ] && [ "$coll_user" != "$agent_user" ]; then
	ok "collector user $coll_user is not the agent's ($agent_user)"
else
	fail "the collector defaults to the agent's user ($coll_user)"
fi

# The collector's defaults, as the rc.d script passes them: no --listen and no --db unless
# set in rc.conf (the config file, else the binary's loopback and /var/db), the config file.
out=$(run zpulse_collector.in 'zpulse_collector_enable=YES' start)
doit=$(printf '%s\n' "$out" | sed -n 's/^DOIT //p' | tr '\t' ' ' | tr -s ' ' | sed 's/ *$//')
case $doit in
*"/usr/local/bin/zpulse-collector serve --config /usr/local/etc/zpulse-collector/zpulse-collector.toml")
	ok "zpulse_collector.in: by default serve --config /usr/local/etc/zpulse-collector/zpulse-collector.toml, nothing else" ;;
*) fail "zpulse_collector.in: the default start is '$doit'" ;;
esac
case $doit in
*0.0.0.0*) fail "zpulse_collector.in: the default listens beyond loopback: $doit" ;;
esac
# shellcheck disable=SC2016 # the script's literal text
if grep -q 'pwait -t [0-9]* "${_pid}" ${_child}' "$files/zpulse_collector.in"; then
	ok "zpulse_collector.in: stop waits for daemon(8) and the collector"
else
	fail "zpulse_collector.in: stop does not wait for the collector itself"
fi
if grep -q '^%%COLLECTOR%%@sample etc/zpulse-collector/zpulse-collector.toml.sample$' \
	"$here/sysutils/zpulse/pkg-plist"; then
	ok "pkg-plist installs the collector's sample config"
else
	fail "pkg-plist has no @sample of the collector's config"
fi

echo "== zpulse_collector: the binary, with exactly the rc.d script's arguments"
# PREFIX is the port's own variable: a tree below $tmp stands for /usr/local, with the
# collector's sample config as the port installs it (post-patch's substitutions), and the
# database (rc.conf's zpulse_collector_db) below $tmp too: the binary built for this Linux
# machine would default to /var/lib. The script's command line is run as daemon(8) would
# run it (its operands), in a network namespace of its own when unshare(1) allows, so the
# default port is free whatever else runs here.
bin=${ZPULSE_COLLECTOR:-$here/../../target/debug/zpulse-collector}
if [ ! -x "$bin" ]; then
	echo "test.sh: $bin is missing: cargo build -p zpulse-collector (or set ZPULSE_COLLECTOR)" >&2
	exit 1
fi
prefix=$tmp/usr/local
mkdir -p "$prefix/etc/zpulse-collector" "$tmp/var/db/zpulse-collector"
sed -e 's|/var/lib/zpulse-collector|/var/db/zpulse-collector|g' \
	-e "s|/etc/zpulse-collector|$prefix/etc/zpulse-collector|g" \
	"$here/../conf/zpulse-collector.toml" >"$prefix/etc/zpulse-collector/zpulse-collector.toml"
conf="zpulse_collector_enable=YES
zpulse_collector_db=$tmp/var/db/zpulse-collector/events.db"
sed -e "s|^\. /etc/rc.subr$|. $tmp/rc.subr|" -e "s|%%PREFIX%%|$prefix|g" \
	"$files/zpulse_collector.in" >"$tmp/script"
printf '%s\n' "$conf" >"$tmp/rc.conf"
doit=$(RC_CONF=$tmp/rc.conf flags='' sh "$tmp/script" start | sed -n 's/^DOIT //p')
operands=$(printf '%s\n' "${doit#/usr/sbin/daemon }" | tr '\t' ' ' | tr -s ' ' | daemon_args |
	sed -n 's/^operands //p')
args=${operands#"$prefix/bin/zpulse-collector "}
if [ "$args" = "$operands" ]; then
	fail "the script does not run $prefix/bin/zpulse-collector: $operands"
else
	netns=
	if unshare -rn sh -c 'ip link set lo up' 2>/dev/null; then
		netns=1
	else
		echo "note: no network namespace here (unshare -rn): 127.0.0.1:24224 must be free"
	fi
	# SC2086: the script's arguments, split as sh splits command_args; SC2016: $0 and $@ are
	# the inner shell's.
	# shellcheck disable=SC2086,SC2016
	if [ -n "$netns" ]; then
		unshare -rn sh -c 'ip link set lo up && exec "$0" "$@"' "$bin" $args \
			>"$tmp/collector.out" 2>&1 &
	else
		"$bin" $args >"$tmp/collector.out" 2>&1 &
	fi
	pid=$!
	sleep 3
	if kill -0 "$pid" 2>/dev/null; then
		ok "zpulse-collector $args: up after 3 s"
		if grep -q 'forward listening on 127.0.0.1:24224' "$tmp/collector.out"; then
			ok "it listens on loopback, 127.0.0.1:24224"
		else
			fail "it does not say it listens on 127.0.0.1:24224: $(cat "$tmp/collector.out")"
		fi
		kill -TERM "$pid"
		if wait "$pid"; then ok "SIGTERM: exit 0"; else fail "SIGTERM: exit status $?"; fi
	else
		wait "$pid" || true
		fail "zpulse-collector $args exited: $(cat "$tmp/collector.out")"
	fi
	if "$bin" check-config --config "$prefix/etc/zpulse-collector/zpulse-collector.toml" >/dev/null; then
		ok "service zpulse_collector configtest: the sample as installed is accepted"
	else
		fail "check-config refuses the sample as installed"
	fi
fi

echo "== pkg-message"
if grep -q 'check-config' "$files/pkg-message.in"; then
	fail "pkg-message.in names 'service zpulse check-config', which rc.subr cannot dispatch"
elif grep -q 'service zpulse configtest' "$files/pkg-message.in"; then
	ok "pkg-message.in names service zpulse configtest"
else
	fail "pkg-message.in does not say how to check the configuration"
fi

echo "== port Makefile"
mk=$here/sysutils/zpulse/Makefile
# Mk/Uses/cargo.mk puts CARGO_BUILD_TARGET into cargo's environment, so cargo writes to
# ${CARGO_TARGET_DIR}/${CARGO_BUILD_TARGET}/release, never ${CARGO_TARGET_DIR}/release.
# shellcheck disable=SC2016 # the Makefile's literal text
if grep -q 'CARGO_TARGET_DIR}/release' "$mk"; then
	fail "Makefile installs from \${CARGO_TARGET_DIR}/release, which USES=cargo never fills"
elif grep -q '^CARGO_OUT=.*${CARGO_TARGET_DIR}/${CARGO_BUILD_TARGET}/release' "$mk"; then
	ok "Makefile installs from \${CARGO_TARGET_DIR}/\${CARGO_BUILD_TARGET}/release"
else
	fail "Makefile: no CARGO_OUT below \${CARGO_BUILD_TARGET}"
fi
if grep -q '^ONLY_FOR_ARCHS=' "$mk"; then ok "ONLY_FOR_ARCHS set"; else fail "no ONLY_FOR_ARCHS"; fi
# Every user and group the port creates needs a UIDs/GIDs line (bsd.port.mk's
# create-users-groups looks them up there); ours are in packaging/freebsd/{UIDs,GIDs}.
# shellcheck disable=SC2013 # names are words
for u in $(sed -n 's/.*USERS+*=[[:space:]]*\([^ \\]*\).*/\1/p' "$mk"); do
	line=$(grep "^$u:" "$here/UIDs" || true)
	fields=$(printf '%s\n' "$line" | awk -F: '{ print NF }')
	gid=$(printf '%s\n' "$line" | cut -d: -f4)
	if [ "$fields" = 10 ] && grep -q "^$u:\*:$gid:" "$here/GIDs"; then
		ok "user $u: UIDs $(printf '%s\n' "$line" | cut -d: -f3), group $gid in GIDs"
	else
		fail "user $u has no well-formed UIDs line with a matching GIDs line"
	fi
done
plist=$here/sysutils/zpulse/pkg-plist
# shellcheck disable=SC2013
for f in $(sed -n 's/^%%COLLECTOR%%bin\/\(.*\)/\1/p; s/^bin\/\(.*\)/\1/p' "$plist"); do
	if grep -q "CARGO_OUT}/$f " "$mk"; then ok "pkg-plist bin/$f is installed from CARGO_OUT"
	else fail "pkg-plist bin/$f is not installed from CARGO_OUT"; fi
done

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
