#!/bin/bash
# A log slower than the pool it serves (docs/checks/slog-usage.md): pool `fastlog` on an
# unthrottled "SSD" (sdc) with a throttled "HDD" (sda, ~150 IOPS) as its log, under four
# writers that fsync every 4 KiB write (each fsync a ZIL commit to the log). Four captures by
# `zpulse capture` 10 s apart while they write; each capture's cli/ holds `date +%s.%N` and
# `zpool iostat -vlp fastlog`. The disks' own counters (`/proc/diskstats`: write time over
# writes completed) are the ground truth for how fast each answers.
set -x
H=/mnt/host; O=$H/out
# shellcheck disable=SC2034 # lib/series.sh runs it
Z=$H/zpulse
mkdir -p $O/series
modprobe zfs
zpool create -f -o ashift=12 -O atime=off fastlog sdc log sda
fio --name=sync --directory=/fastlog --rw=randwrite --bs=4k --size=32m --fsync=1 \
    --numjobs=4 --time_based --runtime=600 > /dev/null 2>&1 &
sleep 8
# shellcheck source=lib/series.sh
. /mnt/host/lib/series.sh
iostat() { zpool iostat -vlp fastlog > "$1/cli/zpool-iostat-vlp.txt" 2>&1; }
series 4 10 iostat
kill %1; wait
zpool destroy fastlog
echo scenario done
