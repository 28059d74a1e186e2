#!/bin/bash
# guest-e2e-packages.sh: runs INSIDE the lab VM as /mnt/host/run.sh (see e2e-packages.sh).
# Installs the two .debs from /mnt/host/debs, builds a pool with every vdev class, points the
# agent at the local collector and at journald, drives metadata + fsync load, and checks
# what the services did. Every check writes "PASS name" or "FAIL name: why" to
# /mnt/host/out/results.txt; the exit status is the number of failures (0: all passed).
set -u
H=/mnt/host; O=$H/out; mkdir -p "$O"
R=$O/results.txt; : > "$R"
LOAD_S=${LOAD_S:-90}        # seconds of load (walkers + fsync loop) with the agent watching
fails=0
pass() { echo "PASS $1" | tee -a "$R"; }
fail() { echo "FAIL $1: $2" | tee -a "$R"; fails=$((fails + 1)); }
check() { # NAME COMMAND...: PASS when the command succeeds
	local n=$1; shift
	if "$@" >> "$O/checks.log" 2>&1; then pass "$n"; else fail "$n" "$* (see checks.log)"; fi
}
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*"; }
set -x

# --- pool: HDD mirror, special mirror, unmirrored SSD log, SSD cache --------------------------
stamp pool
modprobe zfs
zpool create -f -o ashift=12 -O atime=off tank mirror sda sdb special mirror sdc sdd log sde cache sdf
zfs create -o recordsize=16k tank/files
zpool status tank > "$O/zpool-status.txt" 2>&1
ls -l /dev/zfs > "$O/dev-zfs.txt" 2>&1

# --- packages --------------------------------------------------------------------------------
stamp dpkg
for d in "$H"/debs/*.deb; do dpkg-deb -f "$d" Package Version Depends; done > "$O/depends.txt"
if dpkg -i "$H"/debs/*.deb > "$O/dpkg.log" 2>&1; then
	pass dpkg-install
else
	fail dpkg-install "dpkg -i failed (dpkg.log); retrying with --force-depends"
	dpkg -i --force-depends "$H"/debs/*.deb >> "$O/dpkg.log" 2>&1
fi
dpkg -l zpulse zpulse-collector >> "$O/dpkg.log" 2>&1
# postinst: enabled and started like dh_installsystemd would (README: never ran under systemd).
sleep 3
for s in zpulse zpulse-collector; do
	check "postinst-enabled-$s" systemctl is-enabled "$s"
	check "postinst-started-$s" systemctl is-active "$s"
done

# --- configuration: the shipped conffile plus the collector, journald and a short interval -----
stamp config
conf=/etc/zpulse/zpulse.toml
cp "$conf" "$O/zpulse.toml.shipped"
{
	echo 'interval = "5s"'
	echo 'sink = [{ type = "forward", address = "127.0.0.1:24224" }, { type = "syslog", address = "unix:///dev/log" }]'
	cat "$O/zpulse.toml.shipped"
} > "$conf.new" && cat "$conf.new" > "$conf" && rm -f "$conf.new"   # keeps root:zpulse 0640
stat -c '%U:%G %a %n' "$conf" > "$O/conffile-mode.txt"
check conffile-mode grep -qx 'root:zpulse 640 /etc/zpulse/zpulse.toml' "$O/conffile-mode.txt"
check check-config runuser -u zpulse -- zpulse check-config --config "$conf"
# Restarting the collector too: the agent's first connection must find it up.
timeout 120 systemctl restart zpulse-collector
timeout 120 systemctl restart zpulse
sleep 3

# --- load ------------------------------------------------------------------------------------
stamp files
python3 - <<'PY'
import os
base = "/tank/files"
for d in range(40):
    os.makedirs(f"{base}/d{d}", exist_ok=True)
    for f in range(250):
        with open(f"{base}/d{d}/f{f}", "w") as fh:
            fh.write("x" * (f % 700))
PY
zpool sync tank
PID=$(systemctl show -p MainPID --value zpulse)
echo "zpulse MainPID $PID" > "$O/pids.txt"
stamp "strace on $PID"
strace -f -tt -e trace=execve,execveat,fork,vfork,clone,clone3,open,openat -o "$O/strace.log" -p "$PID" &
ST=$!
sleep 2
walk() { while :; do find /tank/files/d$1* -type f -exec stat -c %s {} + > /dev/null; done; }
walk 1 & W1=$!
walk 2 & W2=$!
python3 - "$LOAD_S" <<'PY' &
import os, sys, time
fd = os.open("/tank/files/journal", os.O_WRONLY | os.O_CREAT)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    os.write(fd, os.urandom(8192)); os.fsync(fd)
PY
SYNC=$!
wait $SYNC
kill $W1 $W2 2>/dev/null; wait $W1 $W2 2>/dev/null
sleep 12   # two more samples, and the Forward sink's acknowledgements
kill -INT $ST; wait $ST
stamp "load done"

# --- kernel events: an OFFLINE/ONLINE flap, read through the unit's one capability --------------
# The agent reads the event queue as the zpulse user with CAP_SYS_ADMIN (zpulse.service) and the
# zevents check raises zevents.vdev-state when sdb goes OFFLINE and clears it when it is back:
# both reach the collector (Forward) and the journal (syslog), about tank/sdb1: zpool gave the
# whole disk a partition, and the events name it. `zpool events -v` beside them is the ground
# truth.
stamp "flap sdb"
zpool offline tank sdb
sleep 3
zpool online tank sdb
sleep 10   # the Forward sink's acknowledgement
zpool events -v > "$O/zpool-events-v.txt"
zpulse-collector query --check zevents.vdev-state --format json > "$O/collector-zevents.json" \
	2>> "$O/collector.err"
check zevents-kernel-posted grep -q 'vdev_path = "/dev/sdb1"' "$O/zpool-events-v.txt"
for state in raised cleared; do
	check "zevents-flap-collector-$state" python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
assert any(x["host"] == sys.argv[2] and x["subject"] == "tank/sdb1" and x["state"] == sys.argv[3]
           for x in f), [(x["subject"], x["state"]) for x in f]
' "$O/collector-zevents.json" "$(hostname)" "$state"
done

# --- checks ----------------------------------------------------------------------------------
# Services: active, as their own users.
for s in zpulse zpulse-collector; do
	check "is-active-$s" systemctl is-active "$s"
	systemctl status --no-pager -n 0 "$s" >> "$O/services.txt" 2>&1
done
# (ps -C matches the 15-character comm: "zpulse-collecto"; the collector is found by its pid.)
CPID=$(systemctl show -p MainPID --value zpulse-collector)
ps -o user=,pid=,args= -C zpulse > "$O/ps.txt"; ps -o user=,pid=,args= -p "$CPID" >> "$O/ps.txt"
check user-zpulse test "$(ps -o user= -C zpulse | sort -u)" = zpulse
check user-zpulse-collector test "$(ps -o user= -p "$CPID")" = zpulse-collector
check restarts-zpulse test "$(systemctl show -p NRestarts --value zpulse)" = 0

# No process spawned by the agent during the load: no exec/fork, and every clone a thread.
# (open/openat are traced too, only to see /dev/zfs opened by the service: strace.log is big,
# strace-spawns.txt and strace-devzfs.txt are the extracts.)
grep -E '(execve|execveat|fork|vfork)\(' "$O/strace.log" > "$O/strace-spawns.txt"
grep -E 'clone3?\(' "$O/strace.log" | grep -v CLONE_THREAD >> "$O/strace-spawns.txt"
grep -F '"/dev/zfs"' "$O/strace.log" > "$O/strace-devzfs.txt"
{
	echo "# strace -f -e trace=execve,execveat,fork,vfork,clone,clone3,open,openat -p $PID (zpulse run), ${LOAD_S}s of load"
	echo "# lines: $(wc -l < "$O/strace.log"); exec/fork/non-thread clone: $(wc -l < "$O/strace-spawns.txt"); clone(CLONE_THREAD): $(grep -cE 'clone3?\(' "$O/strace.log"); open(/dev/zfs): $(wc -l < "$O/strace-devzfs.txt")"
	cat "$O/strace-spawns.txt"
	grep -E 'clone3?\(|attached|detached|\+\+\+' "$O/strace.log" | head -n 5
	head -n 3 "$O/strace-devzfs.txt"
} > "$O/strace-summary.txt"
check strace-attached grep -q . "$O/strace.log"
check strace-no-spawn test ! -s "$O/strace-spawns.txt"
check dev-zfs-opened-by-service grep -q '= [0-9]' "$O/strace-devzfs.txt"
check dev-zfs-no-eperm test -z "$(grep -E 'EPERM|EACCES' "$O/strace-devzfs.txt")"

# The collector: this host, and the expected findings.
zpulse-collector hosts --format json > "$O/collector-hosts.json" 2> "$O/collector.err"
zpulse-collector open --format json > "$O/collector-open.json" 2>> "$O/collector.err"
zpulse-collector open > "$O/collector-open.txt" 2>> "$O/collector.err"
host=$(hostname)
check collector-host python3 -c '
import json, sys
hosts = json.load(open(sys.argv[1]))
h = [x for x in hosts if x["host"] == sys.argv[2]]
assert h and h[0]["open_findings"] >= 3, hosts' "$O/collector-hosts.json" "$host"
# Certain with this layout (docs/checks/slog-usage.md): sde is a single unmirrored log under
# an fsync loop -> slog-usage.redundancy warning; 4 GiB log >> 2 txgs of dirty_data_max
# (10% of 3 GiB) x 4 -> slog-usage.size "oversized"; >= 3 samples -> a slog-usage verdict.
want='slog-usage.redundancy tank/log/sde warning
slog-usage.size tank/log info
slog-usage tank/log info'
echo "$want" > "$O/expected-findings.txt"
while read -r c s sev; do
	check "collector-finding-$c" python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
assert any(x["host"] == sys.argv[2] and x["check"] == sys.argv[3] and x["subject"] == sys.argv[4]
           and x["severity"] == sys.argv[5] for x in f), [(x["check"], x["subject"], x["severity"]) for x in f]
' "$O/collector-open.json" "$host" "$c" "$s" "$sev"
done <<< "$want"

# journald: the syslog sink's messages (identifier zpulse, through /dev/log), same findings.
journalctl --no-pager -t zpulse _TRANSPORT=syslog -o short-iso > "$O/journal-syslog.txt"
grep -F '(raised)' "$O/journal-syslog.txt" > "$O/journal-syslog-raised.txt"
journalctl --no-pager -u zpulse -o short-iso > "$O/journal-unit.txt"
journalctl --no-pager -u zpulse-collector -o short-iso > "$O/journal-collector.txt"
while read -r c s sev; do
	check "journal-finding-$c" grep -qF "$c on $s (" "$O/journal-syslog.txt"
done <<< "$want"
check journal-zevents-flap grep -qF "zevents.vdev-state on tank/sdb1 (raised)" "$O/journal-syslog.txt"
# The unit's capability is enough: the agent never said it could not read the queue.
check zevents-readable bash -c "! grep -q 'needs CAP_SYS_ADMIN' '$O/journal-unit.txt'"

# /dev/zfs for an unprivileged, device-restricted service: the service's own opens are in
# strace-devzfs.txt; here the same policy in a one-shot unit, and a control without
# DeviceAllow= (the device cgroup really is closed). Unit files, not systemd-run: the image
# has no D-Bus.
for u in allow closed; do
	{
		echo "[Service]"
		echo "Type=oneshot"
		echo "User=zpulse"
		echo "NoNewPrivileges=yes"
		echo "DevicePolicy=closed"
		[ $u = allow ] && echo "DeviceAllow=/dev/zfs rw"
		echo "ExecStart=/usr/bin/python3 -c \"import os; os.close(os.open('/dev/zfs', os.O_RDWR)); print('opened /dev/zfs')\""
	} > /run/systemd/system/e2e-devzfs-$u.service
done
systemctl daemon-reload
{ set +x; } 2> /dev/null   # the trace would land in dev-zfs.txt
for u in allow closed; do
	timeout 60 systemctl start e2e-devzfs-$u.service; rc=$?
	echo "# e2e-devzfs-$u.service: User=zpulse, DevicePolicy=closed$([ $u = allow ] && echo ', DeviceAllow=/dev/zfs rw'): systemctl start rc=$rc"
	journalctl --no-pager -u e2e-devzfs-$u -o cat | grep -E 'opened|Error|rror:'
done >> "$O/dev-zfs.txt" 2>&1
set -x
check dev-zfs-deviceallow grep -q '^opened /dev/zfs' "$O/dev-zfs.txt"
check dev-zfs-closed-control grep -q 'PermissionError: .*Operation not permitted' "$O/dev-zfs.txt"

systemd-analyze security --no-pager zpulse.service > "$O/security-zpulse.txt" 2>&1
systemd-analyze security --no-pager zpulse-collector.service > "$O/security-zpulse-collector.txt" 2>&1
for s in zpulse zpulse-collector; do echo "INFO systemd-analyze security $s.service: $(tail -n 1 "$O/security-$s.txt")" >> "$R"; done

# Reload: ExecReload sends SIGHUP; both keep running, same process, and say so in the journal.
for s in zpulse zpulse-collector; do
	before=$(systemctl show -p MainPID --value "$s")
	check "reload-$s" systemctl reload "$s"
	sleep 2
	check "reloaded-still-active-$s" systemctl is-active "$s"
	check "reloaded-same-pid-$s" test "$(systemctl show -p MainPID --value "$s")" = "$before"
done
journalctl --no-pager -u zpulse -u zpulse-collector | grep -E 'reload' > "$O/journal-reload.txt" || true
check reload-logged-zpulse grep -q 'configuration reloaded' "$O/journal-reload.txt"
check reload-logged-collector grep -q 'reloaded: forward listening' "$O/journal-reload.txt"

# Stop: SIGTERM flushes within the stop timeout.
timeout 60 systemctl stop zpulse zpulse-collector
check stopped-cleanly test "$(systemctl show -p Result --value zpulse)" = success
zpool destroy tank
stamp "done, $fails failure(s)"
echo "guest scenario: $(($(date +%s) - t0)) s, $fails failure(s)" >> "$R"
exit "$fails"
