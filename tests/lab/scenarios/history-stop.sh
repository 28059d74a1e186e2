#!/bin/bash
# An agent stop read back through the history (docs/report.md, "Intervals left out"): `zpulse
# run` at a 10 s interval with its history on, stopped (SIGTERM) for about 150 s (more than 3
# intervals and 2 minutes) and started again, on pool `hs` (SSD mirror sdc, sdd) under a
# steady 1 MB/s of writes all along. The guest's wall clock at each start and stop is the
# ground truth (`times.txt`: `start1`, `stop1`, `start2`, `stop2`, Unix seconds); the
# history directory the two runs wrote is kept whole (`history/`), with each run's log.
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs
zpool create -f hs mirror sdc sdd
fio --name=w --directory=/hs --rw=write --bs=64k --size=1g --rate=1m --time_based \
    --runtime=900 > /dev/null 2>&1 &
cat > /tmp/zpulse.toml <<TOML
interval = "10s"
[plugins]
dirs = []
[history]
dir = "/tmp/history"
[[sink]]
type = "stdout"
TOML
run() {
  echo "start$1 $(date +%s.%N)" >> $O/times.txt
  $Z run --config /tmp/zpulse.toml > $O/run$1.jsonl 2> $O/run$1.err &
  local pid=$!
  sleep 65
  kill -TERM $pid
  wait $pid
  echo "stop$1 $(date +%s.%N)" >> $O/times.txt
}
run 1
sleep 150
run 2
cp -r /tmp/history $O/history
zpool destroy hs
echo scenario done
