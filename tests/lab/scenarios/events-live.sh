#!/bin/bash
# The live agent and kernel events (docs/events.md): `zpulse run` with the shipped checks,
# its stdout (JSON lines) stamped with the guest's wall clock as each line arrives, so that
# how long an event took to become a finding can be read off (run1.jsonl, run2.jsonl:
# "<unix time> <line>").
#   run 1: a side of a mirror goes OFFLINE and comes back while the agent runs
#   between: the agent stopped (SIGTERM); a scrub runs and the side goes OFFLINE again
#   run 2: the agent starts again from the kept cursor, the side comes back ONLINE
# `zpool events -v` after each run is the ground truth (zpool-events-v.1.txt, .2.txt), and
# the cursor file the agent kept (zevent-cursor.1, zevent-cursor.2).
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs
zpool create -f live mirror sdc sdd
dd if=/dev/urandom of=/live/x bs=1M count=16 status=none
zpool sync live
mkdir -p /opt/zpulse && cp $H/libzpulse_checks.so /opt/zpulse/ && chmod 755 /opt/zpulse
cat > /tmp/zpulse.toml <<TOML
interval = "10s"
[plugins]
dirs = []
paths = ["/opt/zpulse/libzpulse_checks.so"]
[events]
cursor = "/tmp/zevent-cursor"
[history]
enabled = false
TOML
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }

# --- run 1 ---------------------------------------------------------------------------------
# Traced: the events thread's ioctls (0x5a81 ZFS_IOC_EVENTS_NEXT) while the queue is idle.
( strace -f -qq -ttt -e trace=ioctl -o $O/strace1.log $Z run --config /tmp/zpulse.toml \
    2> $O/run1.err | stamp > $O/run1.jsonl ) &
sleep 4
date +%s.%N > $O/idle-from
sleep 20
date +%s.%N > $O/idle-to
zpool offline live sdd
sleep 3
zpool online live sdd
zpool wait -t resilver live
sleep 3
pkill -TERM -x zpulse
wait
zpool events -v > $O/zpool-events-v.1.txt 2>&1
cp /tmp/zevent-cursor $O/zevent-cursor.1

# --- while stopped -------------------------------------------------------------------------
sleep 1
zpool scrub live
zpool wait -t scrub live
zpool offline live sdd
sleep 2

# --- run 2 ---------------------------------------------------------------------------------
( $Z run --config /tmp/zpulse.toml 2> $O/run2.err | stamp > $O/run2.jsonl ) &
sleep 6
zpool online live sdd
zpool wait -t resilver live
sleep 3
pkill -TERM -x zpulse
wait
zpool events -v > $O/zpool-events-v.2.txt 2>&1
cp /tmp/zevent-cursor $O/zevent-cursor.2
zpool destroy live
echo scenario done
