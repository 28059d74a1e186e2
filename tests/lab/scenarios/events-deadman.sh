#!/bin/bash
# Stuck I/O (deadman) on a real kernel (docs/events.md): an HDD throttled to 2 I/O a second
# under 32 outstanding random reads, with the deadman's thresholds lowered so that an I/O
# outstanding for 2 s counts as stuck (zfs_deadman_ziotime_ms, checked every second:
# zfs_deadman_checktime_ms; a txg sync taking over 2 s lets spa_deadman look at the leaves:
# zfs_deadman_synctime_ms) and zfs_deadman_failmode=continue (report, and reissue):
#   series/000  the pool, quiet, thresholds lowered    series/001  after 20 s of reads:
#                                                                  deadman (and delay) reports
# `zpool events -v` beside each capture (cli/) is the ground truth.
# Not recorded yet: on the first try zpool's labelling timed out at 2 I/O a second (hence the
# partition made first), on the second the emulated guest locked up under the host's load
# (a TLB-flush IPI that never came back) before fio ended. Record it on a quiet host.
# LAB_ENV: HDD_IOPS=2
set -x
# shellcheck source=lib/events.sh
. /mnt/host/lib/events.sh

# At 2 I/O a second, zpool's own labelling of a whole disk times out waiting for the new
# partition to appear (ENODEV); a partition made here first is given to it as it is.
sgdisk -Z /dev/sda > /dev/null 2>&1 || true
sgdisk -n1:0:0 /dev/sda
for _ in $(seq 120); do udevadm settle; [ -b /dev/sda1 ] && break; sleep 1; done
zpool create -f -O compression=off -O primarycache=none dm /dev/sda1
dd if=/dev/urandom of=/dm/f bs=1M count=16 status=none
zpool sync dm
echo 1000 > $P/zfs_deadman_checktime_ms
echo 2000 > $P/zfs_deadman_ziotime_ms
echo 2000 > $P/zfs_deadman_synctime_ms
echo continue > $P/zfs_deadman_failmode
echo 1000 > $P/zio_slow_io_ms
cap series/000 dm
timeout 60 fio --name=r --filename=/dm/f --rw=randread --bs=4k --iodepth=32 --ioengine=libaio \
  --direct=1 --runtime=20 --time_based --numjobs=1 > /dev/null 2>&1
sleep 3
cap series/001 dm
grep -c 'class = "ereport.fs.zfs.deadman"' $O/series/001/cli/zpool-events-v.txt || true
zpool destroy dm
echo scenario done
