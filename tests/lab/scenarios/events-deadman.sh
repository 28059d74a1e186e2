#!/bin/bash
# Stuck I/O (deadman) on a real kernel (docs/events.md): the pool's only disk behind a
# device-mapper `delay` target that holds every read for 4 s, under 16 outstanding random
# reads, with the deadman's thresholds lowered so that an I/O outstanding for 2 s counts as
# stuck (zfs_deadman_ziotime_ms, checked every second: zfs_deadman_checktime_ms) under the
# default zfs_deadman_failmode=wait (report, and wait for the I/O); zio_slow_io_ms lowered to
# 1 s makes the same reads `delay` reports:
#   series/000  the pool, quiet, thresholds lowered    series/001  after 15 s of reads:
#                                                                  deadman and delay reports
# `zpool events -v` beside each capture (cli/) is the ground truth.
# Throttling the emulated disk instead (HDD_IOPS=2) locked the TCG guest up twice (a soft
# lockup in z_wr_int); dm-delay delays without starving the guest. failmode=continue (the
# deadman reissues the I/O) ended in a general protection fault in the ZIO write path while
# the pool was destroyed: `wait` it is.
set -x
# shellcheck source=lib/events.sh
. /mnt/host/lib/events.sh

modprobe dm-delay
sectors=$(blockdev --getsz /dev/sda)
# No delay while the pool is made and filled; the delay is loaded once the data is on disk.
dmsetup create slow --table "0 $sectors delay /dev/sda 0 0"
zpool create -f -O compression=off -O primarycache=none dm /dev/mapper/slow
dd if=/dev/urandom of=/dm/f bs=1M count=64 status=none
zpool sync dm
echo 1000 > $P/zfs_deadman_checktime_ms
echo 2000 > $P/zfs_deadman_ziotime_ms
echo 2000 > $P/zfs_deadman_synctime_ms
echo wait > $P/zfs_deadman_failmode
echo 1000 > $P/zio_slow_io_ms
cap series/000 dm
dmsetup suspend slow
dmsetup reload slow --table "0 $sectors delay /dev/sda 0 4000 /dev/sda 0 0"
dmsetup resume slow
timeout 60 fio --name=r --filename=/dm/f --rw=randread --bs=4k --iodepth=16 --ioengine=libaio \
  --direct=1 --runtime=15 --time_based --numjobs=1 > /dev/null 2>&1
sleep 5
cap series/001 dm
grep -c 'class = "ereport.fs.zfs.deadman"' $O/series/001/cli/zpool-events-v.txt || true
grep -c 'class = "ereport.fs.zfs.delay"' $O/series/001/cli/zpool-events-v.txt || true
# Reads fast again before the pool goes, so that destroying it does not wait on the delay.
dmsetup suspend slow
dmsetup reload slow --table "0 $sectors delay /dev/sda 0 0"
dmsetup resume slow
zpool destroy dm
dmsetup remove slow
echo scenario done
