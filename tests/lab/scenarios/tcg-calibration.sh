#!/bin/bash
# How much the lab VM's software emulation slows libnvpair's work on a POOL_STATS reply (the
# synthetic captures' replies of 200 and 2,000 leaf vdevs): nvcal in the guest, against the
# same nvcal on the host (`tests/lab/tools/nvcal.c`; docs/performance.md). The kernel's side
# of ZFS_IOC_POOL_STATS is mostly this work (building the config with its statistics, packing
# it), so the factor turns the live-growth scenario's ioctl times into native estimates.
# record.sh builds nvcal and copies the replies (with sample-bench, which makes them).
H=/mnt/host; O=$H/out
mkdir -p $O
set -x
for n in 200 2000; do
  $H/nvcal $H/replies/$n.nvlist $((2000 / n)) >> $O/nvcal.txt 2>&1
done
cat $O/nvcal.txt
