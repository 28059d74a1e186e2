#!/bin/bash
# Seed 003 of the project: a resilver that meets read errors it cannot repair. An HDD mirror
# (sda, sdb) with sdb offline while new data lands; blocks of that new data are then damaged
# on sda, the only copy; onlining sdb starts a resilver that reads them back and fails:
# checksum errors on sda while sdb is being resilvered, and permanent data errors.
# The resilver is held (zfs_scan_suspend_progress) around captures so that they see it run.
#   resilver/000 - DEGRADED, sdb offline       001 - resilver started, held
#   resilver/002 - resilver partly done, held  003 - finished, permanent errors
# Then scrub age (the guest clock moved 40 days on): age/000 before the jump, 001 and 002 after
# it: a scrubbed pool whose scrub is now old, a never-scrubbed pool imported before the jump,
# and one created after it.
set -x
H=/mnt/host; C=$H/guest/capture.sh; O=$H/out
P=/sys/module/zfs/parameters
mkdir -p $O
modprobe zfs

cap() { $C "$O/$1" rz1; zpool status -v rz1 > "$O/$1/cli/zpool-status-v.rz1.txt" 2>&1; }
capa() { local out=$O/$1; shift; $C "$out" "$@"; }

zpool create -f rz1 mirror sda sdb
zfs create -o compression=off -o recordsize=128k rz1/d
# Random data (8 MiB repeated: urandom is slow under emulation). Not zeros: a block of zeros
# read back from the never-written sectors of the offline side would pass its checksum.
dd if=/dev/urandom of=/tmp/r bs=1M count=8 status=none
for i in $(seq 12); do cat /tmp/r; done > /rz1/d/old
zpool sync rz1
zpool offline rz1 sdb
for i in $(seq 50); do cat /tmp/r; done > /rz1/d/new
zpool sync rz1
cap resilver/000
# Where the new file's data blocks are (zdb: L0 block pointers, DVA vdev:offset:asize in hex);
# every 8th is overwritten on sda, 4 MiB into the partition (after the front labels).
obj=$(stat -c %i /rz1/d/new)
zdb -ddddd rz1/d "$obj" | awk '$2 == "L0" { print $3 }' | cut -d: -f2 | awk 'NR % 8 == 1' > /tmp/dvas
wc -l < /tmp/dvas
zpool export rz1
while read -r off; do
  dd if=/dev/urandom of=/dev/sda1 bs=4096 count=32 seek=$(( (0x$off + 4194304) / 4096 )) \
    conv=notrunc oflag=direct status=none
done < /tmp/dvas
zpool import -d /dev rz1
echo 1 > $P/zfs_scan_suspend_progress
zpool online rz1 sdb
sleep 2
cap resilver/001
echo 0 > $P/zfs_scan_suspend_progress
sleep 4
echo 1 > $P/zfs_scan_suspend_progress
sleep 1
cap resilver/002
echo 0 > $P/zfs_scan_suspend_progress
zpool wait -t resilver rz1
zpool sync rz1; sleep 6; zpool sync rz1
cap resilver/003
zpool destroy rz1

# --- age: scrubs that grow old -------------------------------------------------------------------
zpool create -f scrubbed sdc
zpool create -f never sdd
# Imported, so its import time (initial_load_time) is on the wall clock that then jumps.
zpool export never; zpool import -d /dev never
dd if=/dev/urandom of=/scrubbed/x bs=1M count=20 status=none
zpool scrub scrubbed; zpool wait -t scrub scrubbed
capa age/000 scrubbed never
date -s "+40 days" >/dev/null
zpool create -f fresh sdf
capa age/001 scrubbed never fresh
sleep 3
capa age/002 scrubbed never fresh
zpool destroy scrubbed; zpool destroy never; zpool destroy fresh
echo scenario done
