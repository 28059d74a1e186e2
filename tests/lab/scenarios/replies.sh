#!/bin/bash
# The live agent over several intervals on the real /dev/zfs, with the shipped checks:
#   wide - 24 two-way mirrors of files: a POOL_STATS reply of some 200 KiB, past both the
#          first 64 KiB buffer and glibc's first mmap threshold (128 KiB)
#   tank - one SSD
# Each pool's reply is kept and the next one is read into it (zpool::read::KeptReplies): after
# the first interval, one POOL_STATS ioctl per pool and interval (strace.log). The checks run
# on a lane held to the agent's CPU (plugins::placement); run.jsonl is what they said.
# `zpulse once --interval 1` reads twice through one reader (once-strace.log, zpulse-once.txt).
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O
modprobe zfs
mkdir -p /var/tmp/w
args=()
for i in $(seq 0 47); do truncate -s 128M /var/tmp/w/f$i; done
for i in $(seq 0 2 46); do args+=(mirror /var/tmp/w/f$i /var/tmp/w/f$((i + 1))); done
zpool create -f wide "${args[@]}"
zpool create -f tank /dev/sdc
dd if=/dev/urandom of=/wide/data bs=1M count=64 status=none
zpool sync wide
# Plugins must sit in root-owned directories nobody else may write (StrictModes).
mkdir -p /opt/zpulse && cp $H/libzpulse_checks.so /opt/zpulse/ && chmod 755 /opt/zpulse
cat > /tmp/zpulse.toml <<TOML
interval = "2s"
[plugins]
dirs = []
paths = ["/opt/zpulse/libzpulse_checks.so"]
TOML
strace -f -qq -e trace=ioctl -o $O/strace.log timeout -s TERM 15 \
  $Z run --config /tmp/zpulse.toml > $O/run.jsonl 2> $O/run.err
# Two readings by one reader: the second reads each pool's reply into the first one's memory,
# and the rates between them are what it prints.
zpool status wide tank > $O/zpool-status.txt
strace -f -qq -e trace=ioctl -o $O/once-strace.log $Z once --interval 1 > $O/zpulse-once.txt 2>&1
zpool destroy wide
zpool destroy tank
