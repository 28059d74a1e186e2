#!/bin/bash
# LAB_ENV: MEM=6144
# The vdev growth target against the live kernel: the sample bench's `--live-kernel` run on a
# pool of 200 leaf vdevs (100 two-way mirrors of files), then on one of 2,000 (1,000 mirrors),
# the synthetic captures' shapes. Its floor is the files the live reader reads and the round
# of /dev/zfs ioctls, whose kernel side (building and packing every vdev's config and
# statistics) a replayed capture does not pay. Needs the bench binary ($B) and the shipped
# checks (libzpulse_checks.so) beside it: record.sh copies both.
H=/mnt/host; O=$H/out; B=$H/sample-bench
mkdir -p $O
set -x
modprobe zfs
# The files on two ext4 disks, one side of each mirror on each: a 64 MiB file vdev writes
# about 1 MiB of labels and metadata, 2 GiB for 2,000 of them.
for d in sdc sdd; do mkfs.ext4 -q -F /dev/$d; mkdir -p /f/$d; mount /dev/$d /f/$d; done
pool() { # NAME LEAVES: a pool of LEAVES/2 two-way mirrors of 64 MiB files
  local args=() i
  for i in $(seq 0 $(($2 / 2 - 1))); do
    truncate -s 64M /f/sdc/$1-$i /f/sdd/$1-$i
    args+=(mirror /f/sdc/$1-$i /f/sdd/$1-$i)
  done
  zpool create -f "$1" "${args[@]}" 2> "$O/$1-create.err"
}
{ set +x; } 2>/dev/null
pool small 200
set -x
zpool list -v small | wc -l > $O/small-zpool-list-lines.txt
# Some I/O, so that the histograms and rates are not all zero.
dd if=/dev/urandom of=/small/blob bs=1M count=64 status=none; sync
$B --live-kernel --profile $H --iterations 10 --save $O/small.row > $O/small.txt 2>&1
zpool destroy small
{ set +x; } 2>/dev/null
pool large 2000
set -x
zpool list -v large | wc -l > $O/large-zpool-list-lines.txt
dd if=/dev/urandom of=/large/blob bs=1M count=64 status=none; sync
$B --live-kernel --profile $H --iterations 10 --save $O/large.row --compare $O/small.row \
  > $O/large.txt 2>&1
zpool destroy large
cat $O/small.txt $O/large.txt
