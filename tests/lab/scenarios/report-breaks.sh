#!/bin/bash
# What an expert reading a window throws out before computing a rate: the restart of a pool's
# counters (export/import), a gap with no snapshot, a step of the wall clock; and, recorded by
# `zpulse run` itself, a history across an agent stop. One pool under a light, steady load all
# along (software emulation makes the guest's CPU the bottleneck: under four fsync writers one
# capture took 200 s):
#   pool `rs` = SSD mirror (sdc, sdd) + cache sde; zfs_arc_max 96 MiB on a 3 GiB guest (memory
#   to spare, an L2ARC there); 40 random 16 KiB reads a second of a 320 MiB file and 1 MB/s of
#   buffered writes.
# One series, captures by `zpulse capture` about 5 s apart (plus what a capture takes):
#   000 001 002   side A
#   (load stopped, `zpool export rs; zpool import rs`, load started again)
#   003 004 005   side B: every vdev, pool and dataset counter restarted
#   (120 s without a capture)
#   006 007       a gap of several intervals between 005 and 006
#   (`date -s "+21 days"`)
#   008 009       a clock step of three weeks between 007 and 008
# Each capture's cli/ holds the guest's wall clock and /proc/uptime (monotonic: not moved by
# date -s) read right after it, and `zpool iostat -vlp rs` (counters since import).
# Then history/: `zpulse run` (interval 5s, history on, no plugins) for ~30 s, stopped for
# ~60 s, run again ~30 s; the stop and start times in history-times.txt.
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
cap 000; sleep 5; cap 001; sleep 5; cap 002
load_stop
zpool export rs
zpool import rs
load_start
sleep 3
cap 003; sleep 5; cap 004; sleep 5; cap 005
sleep 120
cap 006; sleep 5; cap 007
date -s "+21 days"
sleep 5
cap 008; sleep 5; cap 009
free -b > $O/free-b.txt
zpool list -v rs > $O/zpool-list-v.txt

# --- history across an agent stop ---------------------------------------------------------
cat > /tmp/zpulse.toml <<TOML
interval = "5s"
[plugins]
dirs = []
paths = []
[history]
enabled = true
dir = "/tmp/history"
TOML
T=$O/history-times.txt
$Z run --config /tmp/zpulse.toml > /dev/null 2> $O/run1.err & A=$!
echo "start1 $(date +%s.%N) $(cut -d' ' -f1 /proc/uptime)" >> $T
sleep 30
kill -TERM $A; wait $A
echo "stop1 $(date +%s.%N) $(cut -d' ' -f1 /proc/uptime)" >> $T
sleep 60
$Z run --config /tmp/zpulse.toml > /dev/null 2> $O/run2.err & A=$!
echo "start2 $(date +%s.%N) $(cut -d' ' -f1 /proc/uptime)" >> $T
sleep 30
kill -TERM $A; wait $A
echo "stop2 $(date +%s.%N) $(cut -d' ' -f1 /proc/uptime)" >> $T
load_stop
cp -r /tmp/history $O/history
zpool destroy rs
