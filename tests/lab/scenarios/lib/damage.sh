# shellcheck shell=bash
# Sourced by scenarios (record.sh puts it beside run.sh as lib/damage.sh).
#
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
