#!/bin/bash
# A metadata storm as a phase inside a quiet window, for `zpulse report`'s phases: an HDD
# mirror (sda, sdb: throttled to ~150 IOPS) whose ARC (96 MiB) is too small for the metadata
# of 200k small files; quiet, then two walkers stat every file for about 60 s, then quiet
# again. One series, captures by `zpulse capture` about 10 s apart plus what a capture takes:
#   000 … 003   quiet (nothing runs)
#   (the walkers start right after 003)
#   004 …       the storm: a capture every ~10 s until 60 s have passed since it started
#   (the walkers are stopped right after the storm's last capture)
#   … 4 more    quiet
# `out/phases.txt` names the last quiet capture before the storm and the storm's last
# capture; each capture's cli/ holds the guest's wall clock read right after it
# (`date +%s.%N`) and `zpool iostat -vlp phase`.
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O/series
modprobe zfs
echo $((96 << 20)) > /sys/module/zfs/parameters/zfs_arc_max
zpool create -f -o ashift=12 -O atime=off phase mirror sda sdb
zfs create -o recordsize=16k phase/files
python3 - <<'PY'
import os
base = "/phase/files"
for d in range(400):
    os.makedirs(f"{base}/d{d}", exist_ok=True)
    for f in range(500):
        with open(f"{base}/d{d}/f{f}", "w") as fh:
            fh.write("x" * (f % 700))
PY
zpool sync phase
zpool export phase && zpool import phase   # cold ARC: metadata comes from the HDDs

n=0
cap() {
  local out; out=$O/series/$(printf %03d $n); n=$((n + 1))
  $Z capture "$out" || echo "capture $out failed"
  mkdir -p "$out/cli"
  date +%s.%N > "$out/cli/date.txt"
  zpool iostat -vlp phase > "$out/cli/zpool-iostat-vlp.phase.txt" 2>&1
  last=$(basename "$out")
}
# A walker ends its find with itself, so that the storm stops when it is told to.
walk() {
  trap 'kill $F 2>/dev/null; exit 0' TERM
  while :; do find /phase/files/d$1* -type f -exec stat -c %s {} + > /dev/null & F=$!; wait $F; done
}

sleep 5
cap; for _ in 1 2 3; do sleep 10; cap; done
echo "before_storm=$last" > $O/phases.txt
walk 1 & W1=$!
walk 2 & W2=$!
started=$SECONDS
while (( SECONDS - started < 60 )); do sleep 10; cap; done
kill $W1 $W2; wait $W1 $W2 2>/dev/null
echo "storm_last=$last" >> $O/phases.txt
echo "storm_seconds=$((SECONDS - started))" >> $O/phases.txt
for _ in 1 2 3 4; do sleep 10; cap; done
zpool destroy phase
