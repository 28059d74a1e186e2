# shellcheck shell=bash
# Sourced by the kernel-event scenarios (record.sh puts it beside run.sh as lib/events.sh):
# where things are in the guest, the capture with the CLI's view beside it, and a damaged
# file.
H=/mnt/host; O=$H/out; Z=$H/zpulse
# shellcheck disable=SC2034 # the scenarios use it
P=/sys/module/zfs/parameters
CUR=/tmp/zevent-cursor
mkdir -p $O
modprobe zfs

# cap PHASE/NNN POOL...: a capture with the events since the one before (one cursor for the
# run), and the CLI's view of the same moment: `zpool events -v`, the mount table, and
# `zpool status -v` of each POOL.
cap() {
  local out=$O/$1; shift
  mkdir -p "$(dirname "$out")"
  $Z capture "$out" --zevent-cursor $CUR || echo "capture $out failed"
  mkdir -p "$out/cli"
  zpool events -v > "$out/cli/zpool-events-v.txt" 2>&1
  cat /proc/self/mounts > "$out/cli/mounts.txt"
  for p in "$@"; do zpool status -v "$p" > "$out/cli/zpool-status-v.$p.txt" 2>&1; done
}

# damage_first_block POOL DATASET FILE DEVICE: overwrites the first level-0 block of FILE
# (in DATASET of POOL, whose only leaf is DEVICE's first partition) with random bytes while
# the pool is exported, then imports it again: a checksum error in a file with one copy.
# A block's DVA offset counts from the end of the vdev labels and boot area, 4 MiB into
# the partition (VDEV_LABEL_START_SIZE, include/sys/vdev_impl.h).
damage_first_block() {
  local pool=$1 dataset=$2 file=$3 dev=$4 obj off
  obj=$(stat -c %i "$file")
  off=$(zdb -ddddd "$dataset" "$obj" | awk '$2 == "L0" { print $3; exit }' | cut -d: -f2)
  echo "victim object $obj, first L0 block at $off"
  zpool export "$pool"
  dd if=/dev/urandom of="/dev/${dev}1" bs=4096 count=32 \
    seek=$(( (0x$off + 4194304) / 4096 )) conv=notrunc oflag=direct status=none
  zpool import -d /dev "$pool"
}
