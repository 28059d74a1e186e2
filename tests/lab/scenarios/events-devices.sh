#!/bin/bash
# Kernel events about files and devices (docs/events.md): each phase is a series of
# `zpulse capture`s with the events since the one before (one --zevent-cursor for the run),
# `zpool events -v`, `zpool status -v` and the mount table saved beside each under cli/.
#   named/000    one-SSD pool, a file         named/001  a block of the file damaged, a
#                                                        scrub: the reports name the file
#                                             named/002  the file system unmounted, a
#                                                        second scrub: named DATASET:PATH
#   devices/000  a one-disk pool              devices/001  a disk added, one attached
#                                                          (resilver), then detached
#                                             devices/002  a spare added, a disk replaced
#                                                          by it, then removed
#   probe/000    a mirror of two HDDs         probe/001    one side's SCSI device offline
#                                                          under writes: errors, a probe
#                                             probe/002    the device back, cleared
set -x
# shellcheck source=lib/events.sh
. /mnt/host/lib/events.sh

# --- named: the file a damaged block belongs to ----------------------------------------------
zpool create -f namep sde
zfs create -o compression=off -o recordsize=128k namep/d
dd if=/dev/urandom of=/namep/d/victim bs=1M count=8 status=none
zpool sync namep
cap named/000 namep
damage_first_block namep namep/d /namep/d/victim sde
zpool scrub namep
zpool wait -t scrub namep
sleep 1
cap named/001 namep
zfs unmount namep/d
zpool scrub namep
zpool wait -t scrub namep
sleep 1
cap named/002 namep
zpool destroy namep

# --- devices: add, attach, detach, spare, replace, remove -------------------------------------
zpool create -f devp sdc
dd if=/dev/urandom of=/devp/x bs=1M count=8 status=none
zpool sync devp
cap devices/000 devp
zpool add -f devp sdd
zpool attach -f devp sdc sde
zpool wait -t resilver devp
zpool detach devp sde
sleep 1
cap devices/001 devp
zpool add -f devp spare sdf
zpool replace -f devp sdd sdf
zpool wait -t resilver devp
zpool detach devp sdd
zpool remove devp sdf
zpool wait -t remove devp
sleep 1
cap devices/002 devp
zpool destroy devp

# --- probe: a side whose device stops answering -----------------------------------------------
zpool create -f -O compression=off probep mirror sda sdb
dd if=/dev/urandom of=/probep/x bs=1M count=8 status=none
zpool sync probep
cap probe/000 probep
echo offline > /sys/block/sdb/device/state
dd if=/dev/urandom of=/probep/y bs=1M count=16 status=none
timeout 120 zpool sync probep
timeout 60 zpool scrub probep; timeout 120 zpool wait -t scrub probep
sleep 2
cap probe/001 probep
echo running > /sys/block/sdb/device/state
timeout 60 zpool clear probep
timeout 60 zpool online probep sdb
timeout 120 zpool wait -t resilver probep
sleep 1
cap probe/002 probep
timeout 60 zpool destroy -f probep

zpool events -v > $O/zpool-events-v.final.txt 2>&1
echo scenario done
