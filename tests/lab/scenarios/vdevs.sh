#!/bin/bash
# Vdev layouts the basic scenario lacks, each recorded by the lab's capture.sh (with the
# zpool CLI views in cli/) and by zpulse itself through the live /dev/zfs ioctls:
#   rz  - raidz2 of four files, a dedup-class mirror of files, a spare file, a loop-device log
#   deg - HDD mirror with one side offline (DEGRADED), a single-disk special vdev, a scrub
set -x
H=/mnt/host; C=$H/guest/capture.sh; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs

zpulse_views() { # DIR POOL: what zpulse says live, traced for execs, and zpool's view
  mkdir -p "$1"
  strace -f -qq -e trace=execve,execveat,fork,vfork -o "$1/strace.log" $Z once > "$1/zpulse-once.txt" 2>&1
  $Z once --format json > "$1/zpulse-once.json"
  zpool iostat -vl "$2" > "$1/zpool-iostat-vl.txt"
  zpool status "$2" > "$1/zpool-status.txt"
}

mkdir -p /var/tmp/v
for i in 0 1 2 3 4 5 6; do truncate -s 1G /var/tmp/v/f$i; done
truncate -s 512M /var/tmp/v/log.img
L=$(losetup -f --show /var/tmp/v/log.img)
zpool create -f -o ashift=12 rz raidz2 /var/tmp/v/f0 /var/tmp/v/f1 /var/tmp/v/f2 /var/tmp/v/f3 \
  dedup mirror /var/tmp/v/f4 /var/tmp/v/f5 spare /var/tmp/v/f6 log "$L"
zfs create -o dedup=on rz/d
dd if=/dev/urandom of=/tmp/blk bs=1M count=8 status=none
for i in 1 2 3 4; do cp /tmp/blk /rz/d/copy$i; done
python3 -c '
import os
fd = os.open("/rz/d/synced", os.O_WRONLY | os.O_CREAT)
for i in range(200): os.write(fd, os.urandom(4096)); os.fsync(fd)'
zpool sync rz
$C $O/rz/000 rz
$Z capture $O/rz-zpulse/000
zpulse_views $O/rz-live rz
sleep 5
$C $O/rz/001 rz
$Z capture $O/rz-zpulse/001
zpool destroy rz
losetup -d "$L"

zpool create -f -o ashift=12 deg mirror sda sdb special sdc
zfs create deg/d
dd if=/dev/urandom of=/deg/d/big bs=1M count=600 status=none
for i in $(seq 1 2000); do echo $i > /deg/d/f$i; done
zpool sync deg
zpool offline deg sdb
zpool scrub deg
sleep 1
$C $O/deg/000 deg
$Z capture $O/deg-zpulse/000
zpulse_views $O/deg-live deg
sleep 3
$C $O/deg/001 deg
$Z capture $O/deg-zpulse/001
zpool destroy deg
