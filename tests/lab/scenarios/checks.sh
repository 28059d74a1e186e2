#!/bin/bash
# Scenarios for the shipped checks, each a series recorded by zpulse itself (live ioctls):
#   storm  - HDD mirror (sda, sdb: throttled to ~150 IOPS) with an unmirrored SLOG (sde) and an
#            L2ARC (sdf), a small ARC, and a metadata storm (stat of 30k small files) plus an
#            fsync loop: seek-bound HDDs, metadata-heavy ARC, an L2ARC that hardly hits
#   fill   - a special mirror on two 384 MiB loop devices with special_small_blocks, filling up
#   scrub  - the storm pool while a scrub runs (with the zpool CLI views)
#   quiet  - a healthy mirrored pool with a mirrored special vdev and no load
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs
echo $((384 << 20)) > /sys/module/zfs/parameters/zfs_arc_max

# storm
zpool create -f -o ashift=12 storm mirror sda sdb log sde cache sdf
zfs create -o recordsize=16k storm/files
python3 - <<'PY'
import os
base = "/storm/files"
for d in range(60):
    os.makedirs(f"{base}/d{d}", exist_ok=True)
    for f in range(500):
        with open(f"{base}/d{d}/f{f}", "w") as fh:
            fh.write("x" * (f % 900))
PY
zpool sync storm
zpool export storm && zpool import storm   # empty ARC: every stat goes to the disks
( for i in 1 2 3 4 5 6; do find /storm/files -type f -exec stat -c %s {} + > /dev/null; done ) &
STORM=$!
python3 - <<'PY' &
import os, time
fd = os.open("/storm/files/journal", os.O_WRONLY | os.O_CREAT)
end = time.time() + 90
while time.time() < end:
    os.write(fd, os.urandom(8192)); os.fsync(fd)
PY
SYNC=$!
sleep 5
$Z capture $O/storm --count 8 --interval 10
kill $STORM $SYNC 2>/dev/null; wait
# A scrub of 30k files' metadata on the throttled HDDs takes a while: catch it running.
zpool scrub storm
sleep 2
$H/guest/capture.sh $O/scrub/000 storm
$Z capture $O/scrub-zpulse
zpool scrub -s storm 2>/dev/null
zpool destroy storm

# fill
truncate -s 384M /var/tmp/s0 /var/tmp/s1
L0=$(losetup -f --show /var/tmp/s0); L1=$(losetup -f --show /var/tmp/s1)
zpool create -f -o ashift=12 fill mirror sda sdb special mirror "$L0" "$L1"
zfs create -o special_small_blocks=64k -o recordsize=64k -o compression=off fill/small
( for i in $(seq 1 40); do dd if=/dev/urandom of=/fill/small/blob$i bs=64k count=160 status=none; sleep 1; done ) &
FILL=$!
$Z capture $O/fill --count 6 --interval 8
wait $FILL
$Z capture $O/fill-end
zpool destroy fill
losetup -d "$L0" "$L1"

# quiet
zpool create -f -o ashift=12 quiet mirror sda sdb special mirror sdc sdd
zfs create quiet/d
dd if=/dev/urandom of=/quiet/d/blob bs=1M count=50 status=none
zpool sync quiet
sleep 5
$Z capture $O/quiet --count 4 --interval 5
zpool destroy quiet
