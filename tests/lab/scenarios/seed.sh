#!/bin/bash
# The first seed story end to end, for `zpulse report` and `report --compare`: an HDD mirror
# (sda, sdb: throttled to ~150 IOPS) with an L2ARC (sdf) and an unmirrored SLOG (sde), an ARC
# too small for its metadata, under a metadata storm (stat of every small file by two
# walkers) and an fsync loop. Recorded by zpulse itself as `before/` (2 minutes, 10 s apart).
# Then the admin's fix: a mirrored special vdev (sdc, sdd) is added and the files are written
# anew (metadata written before the special vdev existed stays on the HDDs), the ARC is
# emptied (export/import) and the same storm is recorded as `after/`.
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs
echo $((96 << 20)) > /sys/module/zfs/parameters/zfs_arc_max
zpool create -f -o ashift=12 -O atime=off seed mirror sda sdb log sde cache sdf
make_files() {
  zfs create -o recordsize=16k "seed/$1"
  python3 - "/seed/$1" <<'PY'
import os, sys
base = sys.argv[1]
for d in range(300):
    os.makedirs(f"{base}/d{d}", exist_ok=True)
    for f in range(400):
        with open(f"{base}/d{d}/f{f}", "w") as fh:
            fh.write("x" * (f % 700))
PY
  zpool sync seed
}
storm() {
  zpool export seed && zpool import seed   # cold ARC: metadata comes from the disks
  walk() { while :; do find "/seed/$1/d$2"* -type f -exec stat -c %s {} + > /dev/null; done; }
  walk "$1" 1 & W1=$!
  walk "$1" 2 & W2=$!
  python3 - "/seed/$1/journal" <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
block = open("/dev/urandom", "rb").read(8192)
end = time.time() + 170
while time.time() < end:
    os.write(fd, block); os.fsync(fd)
PY
  SYNC=$!
  sleep 10
  $Z capture "$O/$2" --count 13 --interval 10
  kill $W1 $W2 $SYNC 2>/dev/null; wait
}
make_files files
storm files before
zpool status -p seed > $O/before-status.txt
zpool add -f seed special mirror sdc sdd
make_files files2
zfs destroy -r seed/files
storm files2 after
zpool status -p seed > $O/after-status.txt
zpool iostat -vlp seed > $O/after-iostat.txt
zpool destroy seed
