#!/bin/bash
# Devices replaced between captures (docs/report.md, "Intervals left out": an interior vdev's
# counters are its devices' sums, so a device that leaves restarts them): pool `rp`, SSD
# mirror sdc (SSD0) + sdd (SSD1), under 1 MB/s of writes all along.
#   000 001   the mirror as created
#   (`zpool replace rp sdd sde`, resilvered: sdd leaves, sde takes its place)
#   002 003
#   (sdc offlined, its ZFS labels wiped, `zpool replace rp sdc`: a new vdev at the same path,
#   as when a failed disk is swapped for a blank one in its bay)
#   004 005
# Beside each capture, cli/ holds the guest's clock, `zpool status -gp` (vdev guids: the ground
# truth for which devices each capture saw) and `zpool status -Pp` (their paths).
set -x
H=/mnt/host; O=$H/out
# shellcheck disable=SC2034 # lib/series.sh runs it
Z=$H/zpulse
mkdir -p $O/series
modprobe zfs
# shellcheck source=lib/series.sh
. /mnt/host/lib/series.sh
views() {
  zpool status -gp rp > "$1/cli/zpool-status-g.txt" 2>&1
  zpool status -Pp rp > "$1/cli/zpool-status-P.txt" 2>&1
}
zpool create -f rp mirror sdc sdd
fio --name=w --directory=/rp --rw=write --bs=64k --size=256m --rate=1m --time_based \
    --runtime=1800 > /dev/null 2>&1 &
sleep 5
series 2 10 views 0

zpool replace rp sdd sde
zpool wait -t resilver rp
zpool status -p rp
sleep 5
series 2 10 views 2

zpool offline rp sdc
part=$(zpool status -Pp rp | awk '$1 ~ /^\/dev\/sdc/ {print $1}')
echo "sdc's vdev is $part"
sectors=$(blockdev --getsz "$part")
# ZFS keeps two labels in the first 512 KiB of the vdev and two in its last 512 KiB: with
# them gone the disk is a blank one, and `zpool replace POOL DEV` takes it as a new device.
dd if=/dev/zero of="$part" bs=512 count=8192 conv=fsync status=none
dd if=/dev/zero of="$part" bs=512 seek=$((sectors - 8192)) count=8192 conv=fsync status=none
zpool replace -f rp sdc
zpool wait -t resilver rp
zpool status -p rp
sleep 5
series 2 10 views 4

kill %1; wait
zpool destroy rp
echo scenario done
