#!/bin/bash
# A fast disk under low load, for the premise of "seek-bound": a disk that answers in well
# under a millisecond is not seeking, whatever its throughput. Two single-disk pools on the
# lab's unthrottled "SSDs": `fast` on sdc as it comes (non-rotational), `fastrot` on sdd
# with `echo 1 > /sys/block/sdd/queue/rotational` once the pool is made (the kernel then calls
# it rotational, as a VM's virtual disk often is). On each, 50 random 4 KiB reads a second
# of a 128 MiB file written in 4 KiB records, with `primarycache=metadata` (every data read
# reaches the disk): small requests, well under 1 MB/s. Four captures by `zpulse capture`
# 10 s apart; each capture's cli/ holds `date +%s.%N`, `cat /sys/block/sd[cd]/queue/rotational`
# and `zpool iostat -vlp`.
set -x
H=/mnt/host; O=$H/out
# shellcheck disable=SC2034 # lib/series.sh runs it
Z=$H/zpulse
mkdir -p $O/series
modprobe zfs
echo $((96 << 20)) > /sys/module/zfs/parameters/zfs_arc_max
zpool create -f -o ashift=12 -O atime=off -O primarycache=metadata -O recordsize=4k fast sdc
zpool create -f -o ashift=12 -O atime=off -O primarycache=metadata -O recordsize=4k fastrot sdd
# After the pool is made: partitioning it revalidates the disk, which resets the flag from
# the device's own rotation rate.
echo 1 > /sys/block/sdd/queue/rotational
for p in fast fastrot; do
  dd if=/dev/urandom of=/$p/big bs=1M count=128 status=none
done
zpool sync
for p in fast fastrot; do
  fio --name=$p --filename=/$p/big --rw=randread --bs=4k --ioengine=psync \
      --time_based --runtime=600 --rate_iops=50 > /dev/null 2>&1 &
done
sleep 8
# shellcheck source=lib/series.sh
. /mnt/host/lib/series.sh
views() {
  grep . /sys/block/sdc/queue/rotational /sys/block/sdd/queue/rotational > "$1/cli/rotational.txt"
  zpool iostat -vlp > "$1/cli/zpool-iostat-vlp.txt" 2>&1
}
series 4 10 views
kill %1 %2; wait
zpool destroy fast; zpool destroy fastrot
