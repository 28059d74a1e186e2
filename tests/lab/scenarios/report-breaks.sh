#!/bin/bash
# What an expert reading a window throws out before computing a rate: the restart of a pool's
# counters (export/import), a gap with no snapshot, a step of the wall clock. One pool under a
# light, steady load all
# along (software emulation makes the guest's CPU the bottleneck: under four fsync writers one
# capture took 200 s):
#   pool `rs` = SSD mirror (sdc, sdd) + cache sde; zfs_arc_max 96 MiB on a 3 GiB guest (memory
#   to spare, an L2ARC there); 40 random 16 KiB reads a second of a 320 MiB file and 1 MB/s of
#   buffered writes.
# One series, captures by `zpulse capture` 5 s apart plus what a capture takes (about 90 s
# under emulation on a loaded host):
#   000 001       side A
#   (load stopped, `zpool export rs; zpool import rs`, load started again)
#   002 003       side B: every vdev, pool and dataset counter restarted
#   (330 s without a capture)
#   004 005       a gap of more than 3 usual intervals between 003 and 004
#   (`date -s "+21 days"`)
#   006 007       a clock step of three weeks between 005 and 006
# Each capture's cli/ holds the guest's wall clock and /proc/uptime (monotonic: not moved by
# date -s) read right after it, and `zpool iostat -vlp rs` (counters since import).
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O/series
modprobe zfs
echo $((96 << 20)) > /sys/module/zfs/parameters/zfs_arc_max
zpool create -f -o ashift=12 -O atime=off rs mirror sdc sdd cache sde
zfs create -o recordsize=16k rs/d
dd if=/dev/urandom of=/rs/d/big bs=1M count=320 status=none
zpool sync rs

load_start() {
  fio --name=r --filename=/rs/d/big --rw=randread --bs=16k --ioengine=psync \
      --time_based --runtime=1800 --rate_iops=40 > /dev/null 2>&1 &
  R=$!
  fio --name=w --directory=/rs/d --rw=write --bs=64k --size=32M --rate=1m \
      --time_based --runtime=1800 > /dev/null 2>&1 &
  W=$!
}
load_stop() { kill $R $W 2>/dev/null; wait $R $W 2>/dev/null; sleep 1; }

cap() {
  local out=$O/series/$1
  $Z capture "$out" || echo "capture $out failed"
  mkdir -p "$out/cli"
  date +%s.%N > "$out/cli/date.txt"
  cat /proc/uptime > "$out/cli/uptime.txt"
  zpool iostat -vlp rs > "$out/cli/zpool-iostat-vlp.rs.txt" 2>&1
  zpool status -p rs > "$out/cli/zpool-status.rs.txt" 2>&1
}

load_start
sleep 8
cap 000; sleep 5; cap 001
load_stop
zpool export rs
zpool import rs
load_start
sleep 3
cap 002; sleep 5; cap 003
sleep 330
cap 004; sleep 5; cap 005
date -s "+21 days"
sleep 5
cap 006; sleep 5; cap 007
load_stop
free -b > $O/free-b.txt
zpool list -v rs > $O/zpool-list-v.txt
zpool destroy rs
