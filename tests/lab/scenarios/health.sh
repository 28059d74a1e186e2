#!/bin/bash
# Pool health and layout, recorded for the pool-health and layout checks. Run with
# HDD_PBS=4096 (record.sh reads the scenario's LAB_ENV line): sda/sdb are 512e "AFT" HDDs.
# LAB_ENV: HDD_PBS=4096
# Series (each NNN is one capture by the lab's capture.sh, with zpool's own views in cli/):
#   cks    - SSD mirror; one side overwritten while exported; a scrub finds and repairs
#            checksum errors (001); `zpool clear` (002)
#   hm     - HDD mirror on partitions: one side offline while new data lands (DEGRADED, 000),
#            onlined: the resilver finished before the next capture (001, "resilvered …")
#   fill   - a pool on one SSD filled to ~84% (000), ~93% (001, 002), then emptied (003)
#   layout - ashift=9 on a 4K-sector partition that starts off alignment, a mirror of two
#            partitions of one disk, an HDD+SSD mirror, a raidz1 of ten files (one capture)
# Scrub age and a resilver that meets errors are tests/lab/scenarios/resilver.sh.
set -x
H=/mnt/host; C=$H/guest/capture.sh; O=$H/out
mkdir -p $O
modprobe zfs

# capture.sh plus what the layout check reads that it does not copy: partition starts, and
# zdb's view of each top-level vdev's ashift, and the error log's file list.
cap() { # SERIES/NNN POOL...
  local out=$O/$1; shift
  $C "$out" "$@"
  for p in /sys/block/*/*/start; do
    d=$out${p%/start}; mkdir -p "$d"; cat "$p" > "$d/start"; cat "${p%/start}/size" > "$d/size"
  done
  for p in "$@"; do
    zpool status -v "$p" > "$out/cli/zpool-status-v.$p.txt" 2>&1
    zdb -C "$p" > "$out/cli/zdb-C.$p.txt" 2>&1
  done
}

# --- cks: checksum errors found and repaired by a scrub --------------------------------------
zpool create -f cks mirror sdc sdd
zfs create -o compression=off cks/d
dd if=/dev/urandom of=/cks/d/data bs=1M count=300 status=none
zpool sync cks
cap cks/000 cks
zpool export cks
# Most of sdd1's data area (its labels are the first 4 MiB and the last 512 KiB): the data
# may sit in any of its 256 MiB metaslabs.
dd if=/dev/urandom of=/dev/sdd1 bs=1M seek=8 count=3500 conv=notrunc oflag=direct status=none
zpool import -d /dev cks
zpool scrub cks; zpool wait -t scrub cks
cap cks/001 cks
zpool clear cks
sleep 2
cap cks/002 cks
zpool destroy cks

# --- hm: DEGRADED mirror, then a resilver that meets unrecoverable errors ---------------------
sgdisk -o -n 1:2048:+5G /dev/sda
# sda2 starts one sector past a 4 KiB boundary (the layout check's misalignment case).
sgdisk -a 1 -n 2:10487809:+512M /dev/sda
sgdisk -o -n 1:2048:+5G -n 2:0:+256M -n 3:0:+256M -n 4:0:+512M /dev/sdb
blockdev --rereadpt /dev/sda; blockdev --rereadpt /dev/sdb; udevadm settle
ls -l /dev/sd[ab]*; cat /sys/block/sda/sda2/start
zpool create -f hm mirror sda1 sdb1
zfs create -o compression=off -o recordsize=128k hm/d
dd if=/dev/urandom of=/hm/d/old bs=1M count=200 status=none
zpool sync hm
zpool offline hm sdb1
dd if=/dev/urandom of=/hm/d/new bs=1M count=600 status=none
zpool sync hm
cap hm/000 hm
zpool export hm
# Corrupt a stretch of the only good copy of what sdb1 missed.
dd if=/dev/urandom of=/dev/sda1 bs=1M seek=300 count=120 conv=notrunc oflag=direct status=none
zpool import -d /dev hm
zpool online hm sdb1
n=1
while [ $n -lt 12 ]; do
  cap hm/$(printf %03d $n) hm
  n=$((n+1))
  zpool status hm | grep -q 'resilver in progress' || break
  sleep 1
done
zpool wait -t resilver hm
sleep 2
cap hm/$(printf %03d $n) hm
zpool destroy hm

# --- fill: a pool filling past 80% and 90% -------------------------------------------------------
zpool create -f fill sde
zfs set compression=off fill
size=$(zpool list -Hp -o size fill)
dd if=/dev/urandom of=/fill/a bs=1M count=$((size * 84 / 100 / 1048576)) status=none
zpool sync fill
cap fill/000 fill
dd if=/dev/urandom of=/fill/b bs=1M count=$((size * 9 / 100 / 1048576)) status=none
zpool sync fill
cap fill/001 fill
dd if=/dev/urandom of=/fill/c bs=1M count=$((size / 100 / 1048576)) status=none
zpool sync fill
cap fill/002 fill
rm /fill/a; zpool sync fill; sleep 6; zpool sync fill
cap fill/003 fill
zpool destroy fill

# --- layout: what is wrong by construction -------------------------------------------------------
zpool create -f -o ashift=9 ash sda2
zpool create -f same mirror sdb2 sdb3
zpool create -f mix mirror sdb4 sdf
mkdir -p /var/tmp/w; for i in 0 1 2 3 4 5 6 7 8 9; do truncate -s 256M /var/tmp/w/f$i; done
zpool create -f wide raidz1 /var/tmp/w/f0 /var/tmp/w/f1 /var/tmp/w/f2 /var/tmp/w/f3 /var/tmp/w/f4 \
  /var/tmp/w/f5 /var/tmp/w/f6 /var/tmp/w/f7 /var/tmp/w/f8 /var/tmp/w/f9
for p in ash same mix wide; do dd if=/dev/urandom of=/$p/x bs=1M count=20 status=none; done
zpool sync
cap layout/000 ash same mix wide
zpool destroy ash; zpool destroy same; zpool destroy mix; zpool destroy wide

echo scenario done
