#!/bin/bash
# A pool destroyed and created again under the same name between two captures (docs/report.md,
# "Intervals left out": a pool whose guid changed restarted every counter): pool `rc`, SSD
# mirror sdc+sdd, under 1 MB/s of writes; `series/000`, `001` 10 s apart; the writer stopped,
# the pool destroyed and made again on the same disks, the writer started again; `002`, `003`.
# Beside each capture, cli/ holds `date +%s.%N` and `zpool get -Hp guid rc` (the ground truth
# for which pool each capture saw).
set -x
H=/mnt/host; O=$H/out
# shellcheck disable=SC2034 # lib/series.sh runs it
Z=$H/zpulse
mkdir -p $O/series
modprobe zfs
# shellcheck source=lib/series.sh
. /mnt/host/lib/series.sh
guid() { zpool get -Hp guid rc > "$1/cli/zpool-guid.txt" 2>&1; }
writer() {
  fio --name=w --directory=/rc --rw=write --bs=64k --size=256m --rate=1m --time_based \
      --runtime=600 > /dev/null 2>&1 &
}
zpool create -f rc mirror sdc sdd
writer
sleep 5
series 2 10 guid
mv $O/series $O/before
kill %1; wait
zpool destroy rc
zpool create -f rc mirror sdc sdd
writer
sleep 5
series 2 10 guid
mv $O/series/000 $O/series/002; mv $O/series/001 $O/series/003
mv $O/before/000 $O/before/001 $O/series/
rmdir $O/before
kill %1; wait
zpool destroy rc
echo scenario done
