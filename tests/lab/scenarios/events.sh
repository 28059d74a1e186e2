#!/bin/bash
# Kernel events between samples (docs/events.md): each phase is a series of `zpulse capture`s,
# each capture holding the events posted since the one before (one --zevent-cursor for the
# whole run), with `zpool events -v` and `zpool status -v` saved beside it under cli/ as the
# ground truth. Meanwhile `zpulse events --follow` reads the queue beside ZED (phase flap)
# and `zpool events`, and must see every event they see (follow.jsonl).
#   flap/000     mirror of two SSDs, quiet     flap/001     after offline+online of one side
#   scrub/000    one-SSD pool with a file      scrub/001    a block of the file damaged, then
#                                                           a scrub: checksum and data errors
#   resilver/000 HDD mirror, one side offline  resilver/001 online: a resilver that meets the
#                with new data damaged on the               damage, runs and finishes between
#                other side                                 the two captures
#   slow/000     HDD pool, zio_slow_io_ms=20   slow/001     after random reads: delay reports
#   pools/000    a pool                        pools/001    exported and imported
#                                              pools/002    destroyed
#   overflow/000 a full queue, then            overflow/001 after 60 events: nothing lost
#                zfs_zevent_len_max = 16                    (see events-overflow.sh)
set -x
# shellcheck source=lib/events.sh
. /mnt/host/lib/events.sh

# The agent's own reader beside everyone else, for the whole run.
$Z events --follow --format json > $O/follow.jsonl 2> $O/follow.err &
FOLLOW=$!
sleep 1

# --- flap: a side goes OFFLINE and comes back between two samples, with ZED running ---------
systemctl start zfs-zed || zed -F &
sleep 2
zpool create -f flap mirror sdc sdd
dd if=/dev/urandom of=/flap/x bs=1M count=16 status=none
zpool sync flap
cap flap/000 flap
zpool offline flap sdd
dd if=/dev/urandom of=/flap/y bs=1M count=4 status=none
zpool sync flap
zpool online flap sdd
zpool wait -t resilver flap
sleep 1
cap flap/001 flap
zpool destroy flap
systemctl stop zfs-zed 2>/dev/null || pkill -x zed
sleep 1

# --- scrub: a damaged block of a named file on a pool with one copy --------------------------
zpool create -f scrubp sde
zfs create -o compression=off -o recordsize=128k scrubp/d
dd if=/dev/urandom of=/scrubp/d/victim bs=1M count=8 status=none
zpool sync scrubp
cap scrub/000 scrubp
damage_first_block scrubp scrubp/d /scrubp/d/victim sde
zpool scrub scrubp
zpool wait -t scrub scrubp
sleep 1
cap scrub/001 scrubp
zpool destroy scrubp

# --- resilver: unrepairable errors, the whole resilver between two captures ------------------
zpool create -f rz mirror sda sdb
zfs create -o compression=off -o recordsize=128k rz/d
dd if=/dev/urandom of=/tmp/r bs=1M count=8 status=none
zpool offline rz sdb
for i in $(seq 4); do cat /tmp/r; done > /rz/d/new
zpool sync rz
obj=$(stat -c %i /rz/d/new)
zdb -ddddd rz/d "$obj" | awk '$2 == "L0" { print $3 }' | cut -d: -f2 | awk 'NR % 8 == 1' > /tmp/dvas
wc -l < /tmp/dvas
zpool export rz
while read -r off; do
  dd if=/dev/urandom of=/dev/sda1 bs=4096 count=32 seek=$(( (0x$off + 4194304) / 4096 )) \
    conv=notrunc oflag=direct status=none
done < /tmp/dvas
zpool import -d /dev rz
cap resilver/000 rz
zpool online rz sdb
zpool wait -t resilver rz
sleep 1
cap resilver/001 rz
zpool destroy rz

# --- slow: delay reports from a throttled HDD -----------------------------------------------
old_slow=$(cat $P/zio_slow_io_ms)
echo 20 > $P/zio_slow_io_ms
zpool create -f -O compression=off -O primarycache=metadata slowp sda
dd if=/dev/urandom of=/slowp/f bs=1M count=64 status=none
zpool sync slowp
cap slow/000 slowp
fio --name=r --filename=/slowp/f --rw=randread --bs=4k --iodepth=16 --ioengine=libaio \
  --direct=1 --runtime=12 --time_based --numjobs=2 > /dev/null 2>&1
sleep 1
cap slow/001 slowp
echo "$old_slow" > $P/zio_slow_io_ms
zpool destroy slowp

# --- pools: export, import, destroy between samples ----------------------------------------
zpool create -f poolx sdf
cap pools/000 poolx
zpool export poolx
zpool import -d /dev poolx
cap pools/001 poolx
zpool destroy poolx
cap pools/002

# --- overflow: more events than the queue holds while the capture's cursor is not reading ---
old_len=$(cat $P/zfs_zevent_len_max)
zpool create -f ovf sdf
cap overflow/000 ovf
# Lowering the limit drains nothing by itself (zfs_zevent_insert drops one old event per new
# one): the 60 events leave a full queue of 512 and lose nothing here. The queue that
# overflows is events-overflow.sh's.
echo 16 > $P/zfs_zevent_len_max
for i in $(seq 30); do zfs set "zpulse:n=$i" ovf; zpool clear ovf; done
cap overflow/001 ovf
echo "$old_len" > $P/zfs_zevent_len_max
zpool destroy ovf

sleep 2
kill $FOLLOW
zpool events -v > $O/zpool-events-v.final.txt 2>&1
echo scenario done
