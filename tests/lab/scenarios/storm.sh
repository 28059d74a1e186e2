#!/bin/bash
# The seed's situation, reproduced: an HDD mirror (sda, sdb: throttled to ~150 IOPS) whose ARC
# is too small for its metadata, under a sustained metadata storm (stat of 200k small files
# from two walkers) and an fsync loop on an unmirrored SLOG (sde), with an L2ARC (sdf).
# Recorded by zpulse itself: 10 captures 10 s apart, then a scrub in progress.
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs
echo $((96 << 20)) > /sys/module/zfs/parameters/zfs_arc_max
zpool create -f -o ashift=12 -O atime=off storm mirror sda sdb log sde cache sdf
zfs create -o recordsize=16k storm/files
python3 - <<'PY'
import os
base = "/storm/files"
for d in range(400):
    os.makedirs(f"{base}/d{d}", exist_ok=True)
    for f in range(500):
        with open(f"{base}/d{d}/f{f}", "w") as fh:
            fh.write("x" * (f % 700))
PY
zpool sync storm
zpool export storm && zpool import storm   # cold ARC: metadata comes from the HDDs
walk() { while :; do find /storm/files/d$1* -type f -exec stat -c %s {} + > /dev/null; done; }
walk 1 & W1=$!
walk 2 & W2=$!
python3 - <<'PY' &
import os, time
fd = os.open("/storm/files/journal", os.O_WRONLY | os.O_CREAT)
end = time.time() + 150
while time.time() < end:
    os.write(fd, os.urandom(8192)); os.fsync(fd)
PY
SYNC=$!
sleep 10
$Z capture $O/series --count 10 --interval 10
kill $W1 $W2 $SYNC 2>/dev/null; wait
zpool scrub storm
sleep 3
$H/guest/capture.sh $O/scrub/000 storm
zpool scrub -s storm 2>/dev/null
zpool destroy storm
