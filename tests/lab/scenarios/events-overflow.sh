#!/bin/bash
# A queue that overflows while a reader is not reading (docs/events.md, "What the kernel
# dropped is said"): the queue emptied (`zpool events -c`, for every reader) and held to 16
# events, then 60 posted between two captures whose cursor was not reading meanwhile:
#   series/000  a pool, the cursor kept       series/001  after 60 events: 44 never reached
#                                                          the capture's cursor
# `zpool events -v` beside each capture (cli/) is the ground truth.
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
P=/sys/module/zfs/parameters
CUR=/tmp/zevent-cursor
mkdir -p $O/series
modprobe zfs
cap() {
  local out=$O/$1; shift
  $Z capture "$out" --zevent-cursor $CUR || echo "capture $out failed"
  mkdir -p "$out/cli"
  zpool events -v > "$out/cli/zpool-events-v.txt" 2>&1
}
zpool create -f ovf sdf
zpool events -c
echo 16 > $P/zfs_zevent_len_max
zfs set zpulse:n=0 ovf
cap series/000
for i in $(seq 30); do zfs set "zpulse:n=$i" ovf; zpool clear ovf; done
cap series/001
zpool destroy ovf
echo scenario done
