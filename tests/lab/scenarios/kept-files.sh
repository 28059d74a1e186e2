#!/bin/bash
# Kernel files kept open on a real kernel (docs/performance.md, `base::files::KeptFiles`): the
# live agent, sampling every second with a Prometheus textfile, reads each kstat file again
# from its start through the descriptor it kept; what it exports must move with the kernel.
#   000.prom  the agent's textfile, then 000.kstat the dataset's objset kstat
#   (32 MiB written to the dataset and synced)
#   001.kstat the objset kstat again, then (3 s later) 001.prom the agent's textfile
#   fd.txt    the agent's open descriptors (`ls -l /proc/PID/fd`) at the end
# The kstat files read by `cat` are the ground truth: 000.prom <= 000.kstat and
# 001.prom >= 001.kstat for every counter of the dataset.
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs
zpool create -f kept sdc
cat > /tmp/zpulse.toml <<TOML
interval = "1s"
[plugins]
dirs = []
[history]
enabled = false
[[sink]]
type = "prometheus"
listen = "127.0.0.1:9134"
textfile = "/tmp/zpulse.prom"
TOML
$Z run --config /tmp/zpulse.toml > $O/run.jsonl 2> $O/run.err &
pid=$!
sleep 4
objset() { for f in /proc/spl/kstat/zfs/kept/objset-*; do echo "== $f"; cat "$f"; done; }
cp /tmp/zpulse.prom $O/000.prom
objset > $O/000.kstat
dd if=/dev/urandom of=/kept/f bs=1M count=32 status=none
zpool sync kept
objset > $O/001.kstat
sleep 3
cp /tmp/zpulse.prom $O/001.prom
ls -l /proc/$pid/fd > $O/fd.txt
kill -TERM $pid
wait $pid
echo "agent exit $?"
zpool destroy kept
echo scenario done
