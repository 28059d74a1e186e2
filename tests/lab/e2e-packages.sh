#!/bin/bash
# e2e-packages.sh [--no-build] [TIMEOUT_S]: the Debian packages end to end on a real
# OpenZFS kernel.
#
#  1. builds zpulse_*.deb and zpulse-collector_*.deb with packaging/build-deb.sh (release;
#     cargo reuses target/ when it is current; --no-build packages target/release as it is);
#  2. boots the ZFS lab VM (../shared/lab/run-vm.sh: Debian 12 kernel + OpenZFS 2.1 under
#     qemu TCG) with guest-e2e-packages.sh as its run.sh, which
#     - dpkg -i's both packages (no --force-depends: the image has libc6, libgcc-s1, adduser),
#     - creates tank = HDD mirror sda/sdb + special mirror sdc/sdd + log sde (unmirrored) +
#       cache sdf,
#     - configures the agent: the shipped conffile plus interval = "5s" and one sink line
#       (Forward to the collector on 127.0.0.1:24224, syslog to unix:///dev/log),
#     - restarts both services, drives 10k small files + two stat walkers + an fsync loop for
#       LOAD_S (default 90) seconds with strace attached to the agent,
#     - checks: services active as their own users, no exec/fork by the agent, the collector's
#       `hosts`/`open` show this host and the slog-usage findings, the journal shows them too
#       (syslog sink), /dev/zfs opens under DevicePolicy=closed + DeviceAllow, and records
#       `systemd-analyze security` of both units; then takes sdb offline and back, and checks
#       that the agent, as its user with the unit's one capability, read both state changes
#       from the kernel's event queue (zevents.vdev-state raised and cleared, at the collector
#       and in the journal);
#  3. checks the share's results and exits non-zero on any failure, with a summary.
#
# Needs the lab image (../shared/lab/build-image.sh, once per machine) and qemu-system-x86.
# Software emulation: the VM run took 3.6 minutes here (boot ~1 min, 90 s of load, checks);
# TIMEOUT_S (default 2400) is generous for slower or busier machines.
# The share (results, logs, console) is kept; its path is printed. Fixture copy of one
# passing run: tests/fixtures/lab/e2e-packages/ (set SAVE=1 to refresh it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
lab=${LAB_SHARED:-$repo/../shared/lab}
build=1
[[ ${1:-} == --no-build ]] && { build=0; shift; }
limit=${1:-2400}
t0=$(date +%s)

# 1. packages
share=$(mktemp -d /tmp/zpulse-e2e.XXXX)
mkdir -p "$share/debs"
args=(); [[ $build == 1 ]] || args=(--no-build)
"$repo/packaging/build-deb.sh" "${args[@]}" --out "$share/debs" | tee "$share/build-deb.out"
n=$(ls "$share"/debs/zpulse_*.deb "$share"/debs/zpulse-collector_*.deb 2>/dev/null | wc -l)
[[ $n == 2 ]] || { echo "e2e-packages: expected two .debs in $share/debs, got $n" >&2; exit 1; }
for d in "$share"/debs/*.deb; do echo "$(basename "$d"): $(dpkg-deb -f "$d" Depends)"; done
t1=$(date +%s)

# 2. the VM
cp "$here/guest-e2e-packages.sh" "$share/run.sh"; chmod +x "$share/run.sh"
echo "e2e-packages: booting the lab VM (share $share, timeout ${limit}s)"
"$lab/run-vm.sh" "$share" "$limit" || true
t2=$(date +%s)

# 3. verdict
rc=$(cat "$share/run.rc" 2>/dev/null || echo none)
res=$share/out/results.txt
echo
echo "== e2e-packages results (share $share)"
if [[ -f $res ]]; then cat "$res"; else echo "no results.txt: see $share/run.log and console.log"; fi
npass=$(grep -c '^PASS ' "$res" 2>/dev/null || true)
nfail=$(grep -c '^FAIL ' "$res" 2>/dev/null || true)
ok=1
[[ $rc == 0 ]] || { echo "guest run.sh exit status: $rc"; ok=0; }
[[ ${nfail:-0} == 0 && ${npass:-0} -ge 15 ]] || ok=0
for f in collector-hosts.json collector-open.json journal-syslog.txt strace-summary.txt security-zpulse.txt; do
	[[ -s $share/out/$f ]] || { echo "missing or empty: out/$f"; ok=0; }
done
[[ -f $share/out/security-zpulse.txt ]] && echo "security: $(tail -n 1 "$share/out/security-zpulse.txt")"
echo "build $((t1 - t0)) s, VM $((t2 - t1)) s, total $((t2 - t0)) s; ${npass:-0} passed, ${nfail:-0} failed"
if [[ $ok == 1 && ${SAVE:-0} == 1 ]]; then
	dest=$repo/tests/fixtures/lab/e2e-packages
	rm -rf "$dest"; mkdir -p "$dest"
	(cd "$share/out" && cp results.txt depends.txt zpool-status.txt collector-hosts.json collector-open.json \
		collector-open.txt journal-syslog-raised.txt strace-summary.txt dev-zfs.txt ps.txt security-zpulse.txt \
		collector-zevents.json zpool-events-v.txt "$dest/")
	echo "fixtures refreshed in $dest"
fi
if [[ $ok == 1 ]]; then echo "e2e-packages: PASS"; else echo "e2e-packages: FAIL"; exit 1; fi
